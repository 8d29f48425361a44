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

from ..dispatch.keys import INFERENCE_LOCK, INFERENCE_OPEN, TLS


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


class _NoParamDecorator(_GradModeContext):
    """Also usable as a bare decorator: ``@acg.no_grad`` as well as ``@acg.no_grad()``."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Disable gradient recording inside the block (or decorated function).

    >>> import autograd_compile as acg
    >>> @acg.no_grad
    ... def double(t): return t * 2
    >>> double(acg.ones(1, requires_grad=True)).requires_grad
    False
    """

    _target = False


class enable_grad(_NoParamDecorator):
    """Enable gradient recording inside the block, e.g. within ``no_grad``."""

    _target = True


class inference_mode(_GradModeContext):
    """PyTorch's ``inference_mode(mode=True)``: no autograd recording inside (here the same
    as ``no_grad``); ``inference_mode(False)`` turns it off and grad mode on (as PyTorch's
    ``InferenceMode(false)`` guard). A context manager
    and a decorator (``@acg.inference_mode`` or ``@acg.inference_mode()``).

    >>> import autograd_compile as acg
    >>> with acg.inference_mode():
    ...     y = acg.ones(1, requires_grad=True) * 2
    >>> y.requires_grad, acg.is_inference_mode_enabled()
    (False, False)
    """

    def __new__(cls, mode: Any = True) -> Any:
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):  # bare decorator: mode is the function
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode: Any = True) -> None:
        self.mode = mode if isinstance(mode, bool) else True

    def __enter__(self) -> None:
        self._prev, self._prev_inference = TLS.grad_enabled, TLS.inference
        TLS.grad_enabled, TLS.inference = not self.mode, self.mode  # as PyTorch's guard
        if self.mode:
            with INFERENCE_LOCK:
                INFERENCE_OPEN[0] += 1

    def __exit__(self, *exc: object) -> None:
        TLS.grad_enabled, TLS.inference = self._prev, self._prev_inference
        if self.mode:
            with INFERENCE_LOCK:
                INFERENCE_OPEN[0] -= 1

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` on this thread."""
    return TLS.inference


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``; usable as a function call or a context manager."""

    def __init__(self, mode: bool) -> None:
        self._prev = TLS.grad_enabled
        self._target = bool(mode)
        TLS.grad_enabled = self._target

    def __enter__(self) -> None:
        pass
