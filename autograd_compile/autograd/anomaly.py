"""Anomaly detection: a backward node that returns NaN raises, naming the node.

>>> import autograd_compile as acg
>>> with acg.autograd.detect_anomaly():   # doctest: +SKIP
...     loss.backward()                    # RuntimeError: Function 'LogBackward0' returned nan ...
"""
from __future__ import annotations

from .engine import STATE


class detect_anomaly:
    """Check every backward node's outputs for NaN inside the block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._prev = STATE.anomaly
        STATE.anomaly = self.check_nan

    def __exit__(self, *exc: object) -> None:
        STATE.anomaly = self._prev


class set_detect_anomaly(detect_anomaly):
    """Like detect_anomaly, but takes effect when called (and as a context)."""

    def __init__(self, mode: bool) -> None:
        self._prev = STATE.anomaly
        self.check_nan = mode
        STATE.anomaly = mode

    def __enter__(self) -> None:
        pass
