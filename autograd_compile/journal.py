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
from typing import Any


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


def entries() -> list | None:
    """The innermost transaction's log (None outside a backward): a loop of writes appends
    ``(obj, slot, old value)`` to it once per write, as :func:`record` does."""
    stack = _STATE.stack
    return stack[-1] if stack else None


class transaction:
    """Run a block; if it raises, undo every recorded write (newest first). (A class,
    not a generator context manager: it wraps every backward.)"""

    __slots__ = ("entries",)

    def __enter__(self) -> None:
        self.entries: list[tuple[Any, str, Any]] = []
        _STATE.stack.append(self.entries)

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> bool:
        stack = _STATE.stack
        stack.pop()
        if kind is not None:
            for obj, slot, old in reversed(self.entries):
                object.__setattr__(obj, slot, old)
            return False
        if stack:  # a nested backward succeeded: the outer one may still fail
            stack[-1].extend(self.entries)
        return False
