"""Grad mode: whether ops record autograd history (``no_grad``, ``enable_grad``).

>>> import autograd_compile as acg
>>> x = acg.ones(2, requires_grad=True)
>>> with acg.no_grad():
...     y = x * 2
>>> y.requires_grad
False
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..dispatch.keys import TLS


def is_grad_enabled() -> bool:
    """True when ops record autograd history on this thread."""
    return TLS.grad_enabled


class _GradModeContext:
    """Base of no_grad / enable_grad / set_grad_enabled: context manager and decorator."""

    _target: bool

    def __enter__(self) -> None:
        self._prev = TLS.grad_enabled
        TLS.grad_enabled = self._target

    def __exit__(self, *exc: object) -> None:
        TLS.grad_enabled = self._prev

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)() if not isinstance(self, set_grad_enabled) else \
                    set_grad_enabled(self._target):
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Disable gradient recording inside the block (or decorated function)."""

    _target = False


class enable_grad(_GradModeContext):
    """Enable gradient recording inside the block, e.g. within ``no_grad``."""

    _target = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``; usable as a function call or a context manager."""

    def __init__(self, mode: bool) -> None:
        self._prev = TLS.grad_enabled
        self._target = bool(mode)
        TLS.grad_enabled = self._target

    def __enter__(self) -> None:
        pass
