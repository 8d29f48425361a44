"""``torch.signal``: signal-processing helpers; today its ``windows`` (Hann, Kaiser, ...).

>>> import autograd_compile as acg
>>> acg.signal.windows.hann(4, sym=False).tolist()
[0.0, 0.5, 1.0, 0.5]
"""
from __future__ import annotations

from . import windows

__all__ = ["windows"]
