"""Dispatch modes and tensor subclasses: Python code that sees every op.

A mode intercepts every op called inside its ``with`` block:

>>> import autograd_compile as acg
>>> class Log(acg.DispatchMode):
...     def __init__(self): self.names = []
...     def __acg_dispatch__(self, func, types, args=(), kwargs=None):
...         self.names.append(func.name)
...         return func(*args, **(kwargs or {}))
>>> with Log() as log:
...     y = acg.ones(2) * 3
>>> log.names
['ones', 'mul']

Modes nest as a stack; while a handler runs its mode is popped, so calling
``func(*args)`` reaches the next mode down (then autograd, then the kernel).
A Tensor subclass with a classmethod ``__acg_dispatch__`` handles the ops of
its instances; ``enable_python_mode(Cls)`` sends every op, factories
included, to ``Cls.__acg_dispatch__``.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from .dispatch.dispatcher import OpOverload, boxed
from .dispatch.keys import PYTHON_KEYS, TLS, DispatchKey, exclude_keys


class DispatchMode:
    """Base class of dispatch modes; override ``__acg_dispatch__``."""

    def __acg_dispatch__(self, func: OpOverload, types: tuple[type, ...], args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __acg_dispatch__")

    def __enter__(self) -> "DispatchMode":
        TLS.mode_stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        stack = TLS.mode_stack
        if not stack or stack[-1] is not self:
            raise RuntimeError(f"dispatch modes must exit in the reverse order they entered; "
                               f"{type(self).__name__} is not the innermost active mode")
        stack.pop()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> "DispatchMode":
        """Construct and enter in one step (``with M.push():``)."""
        return cls(*args, **kwargs)


def current_modes() -> tuple[DispatchMode, ...]:
    """The active mode stack, outermost first."""
    return tuple(TLS.mode_stack)


def _tensor_types(args: tuple, kwargs: dict) -> tuple[type, ...]:
    from .tensor import Tensor
    seen: dict[type, None] = {}

    def visit(v: Any) -> None:
        if isinstance(v, Tensor):
            seen[type(v)] = None
        elif type(v) in (list, tuple):
            for x in v:
                visit(x)
    for v in (*args, *kwargs.values()):
        visit(v)
    return tuple(seen)


@boxed
def python_mode_fallback(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """PythonMode key: hand the op to the innermost mode, popped while it runs."""
    stack = TLS.mode_stack
    mode = stack.pop()
    try:
        return mode.__acg_dispatch__(op, _tensor_types(args, kwargs), args, kwargs)
    finally:
        stack.append(mode)


@boxed
def python_key_fallback(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """Python key: the most derived subclass handler that does not return NotImplemented."""
    types = _tensor_types(args, kwargs)
    handlers = [t for t in types if t._acg_keys & DispatchKey.Python.bit]
    handlers.sort(key=lambda t: -len(t.__mro__))  # subclasses before their bases
    for cls in handlers:
        result = cls.__acg_dispatch__(op, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(f"no __acg_dispatch__ handled {op.qualname} for argument types "
                    f"{[t.__name__ for t in types]}")


class enable_python_mode(DispatchMode):
    """Send every op (factories too) to ``cls.__acg_dispatch__`` inside the block."""

    def __init__(self, cls: type) -> None:
        if not hasattr(cls, "__acg_dispatch__"):
            raise TypeError(f"enable_python_mode: {cls.__name__} has no __acg_dispatch__")
        self.cls = cls

    def __acg_dispatch__(self, func: OpOverload, types: tuple[type, ...], args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        return self.cls.__acg_dispatch__(func, types, args, kwargs or {})


@contextmanager
def no_dispatch() -> Iterator[None]:
    """Ops inside skip every mode and subclass handler (used inside handlers)."""
    with exclude_keys(PYTHON_KEYS):
        yield
