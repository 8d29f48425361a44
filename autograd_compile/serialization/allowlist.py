"""Globals a ``weights_only`` load admits beyond its defaults, as ``torch.serialization``'s.

A weights-only load refuses every global outside a short list (tensor rebuild functions,
dtypes, ``OrderedDict``...). A program that trusts a class names it here, and the restricted
unpickler may then look it up, call it, make instances of it and set their state. Each entry
is a class or function, or ``(obj, "module.qualname")`` when the file names it differently.

>>> import argparse
>>> with safe_globals([argparse.Namespace]):
...     sorted(user_table())
['argparse.Namespace']
>>> get_safe_globals()
[]
"""
from __future__ import annotations

from typing import Any

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "user_table", "canonical"]

_marked: set[Any] = set()  # a set, as PyTorch's: adding twice keeps one entry


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Let ``acg.load(..., weights_only=True)`` use these classes and functions.

    >>> import argparse
    >>> add_safe_globals([argparse.Namespace]); argparse.Namespace in get_safe_globals()
    True
    >>> clear_safe_globals()
    """
    global _marked
    _marked = _marked.union(safe_globals)  # a new set: a load in progress keeps its snapshot


def get_safe_globals() -> list[Any]:
    """The globals added by :func:`add_safe_globals` (or a :class:`safe_globals` block).

    >>> get_safe_globals()
    []
    """
    return list(_marked)


def clear_safe_globals() -> None:
    """Forget every added global.

    >>> add_safe_globals([dict]); clear_safe_globals(); get_safe_globals()
    []
    """
    global _marked
    _marked = set()


class safe_globals:  # noqa: N801  (PyTorch's name)
    """``with safe_globals([cls, ...]):`` the globals are admitted inside the block only.

    >>> import collections
    >>> with safe_globals([collections.defaultdict]):
    ...     len(get_safe_globals())
    1
    >>> get_safe_globals()
    []
    """

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: object) -> None:
        global _marked
        _marked = _marked - set(self.safe_globals)  # as PyTorch: removed even if added before


def canonical(path: str) -> str:
    """One spelling per global: numpy 1 files name ``numpy.core``, numpy 2 ``numpy._core``."""
    return "numpy._core." + path[len("numpy.core."):] if path.startswith("numpy.core.") else path


def user_table() -> dict[str, Any]:
    """``{"module.qualname": obj}`` of the added globals; a malformed entry raises as PyTorch's."""
    table = {}
    for entry in _marked:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                                 f"but got tuple of length: {len(entry)}")
            if type(entry[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full path, "
                                f"but got: {type(entry[1])}")
            obj, path = entry
        else:
            obj, path = entry, f"{entry.__module__}.{entry.__qualname__}"
        table[canonical(path)] = obj
    return table
