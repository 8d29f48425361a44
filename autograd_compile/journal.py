"""Undo journal: a backward that raises leaves every tensor as it found it.

While a backward runs, every write the engine or a hook makes to a tensor
(``.grad`` assignments, in-place ops that swap ``_data``) first records the
old value here. jax arrays are immutable, so the old reference *is* the
backup: recording costs one tuple, rolling back restores the references.

>>> with transaction():          # doctest: +SKIP
...     run_backward()           # raises -> every recorded slot restored
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator


class _JournalState(threading.local):
    def __init__(self) -> None:
        self.stack: list[list[tuple[Any, str, Any]]] = []


_STATE = _JournalState()


def active() -> bool:
    return bool(_STATE.stack)


def record(obj: Any, slot: str) -> None:
    """Remember ``obj.<slot>`` before it is overwritten (no-op outside a backward)."""
    stack = _STATE.stack
    if stack:
        stack[-1].append((obj, slot, getattr(obj, slot)))


@contextmanager
def transaction() -> Iterator[None]:
    """Run a block; if it raises, undo every recorded write (newest first)."""
    entries: list[tuple[Any, str, Any]] = []
    _STATE.stack.append(entries)
    try:
        yield
    except BaseException:
        _STATE.stack.pop()
        for obj, slot, old in reversed(entries):
            object.__setattr__(obj, slot, old)
        raise
    _STATE.stack.pop()
    if _STATE.stack:  # a nested backward succeeded: the outer one may still fail
        _STATE.stack[-1].extend(entries)
