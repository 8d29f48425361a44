"""Compiled autograd's switch and bookkeeping: :class:`enable`/:class:`disable`, the
compiler in force, :data:`counters`, :func:`pure_hook`, and the registry of named
compilers (``"jax"``, ``"eager"``) that the backends fill.

Nothing here imports the backends: a backend registers itself by name
(:func:`register_backend`), so the dependency goes one way, backends -> this package.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

class Counters(dict):
    """captures, cache_hits, compiles (XLA programs built), eager_runs (backwards run by
    the eager engine), evictions, eager_shapes (JAX-backend program calls run op by op at
    sizes not worth compiling yet: see ``backends.ops.Tiered``)."""

    def __init__(self) -> None:
        super().__init__(captures=0, cache_hits=0, compiles=0, eager_runs=0, evictions=0,
                         eager_shapes=0)

    def clear(self) -> None:
        for k in self:
            self[k] = 0


counters = Counters()
_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str, compiler_fn: Callable) -> Callable:
    """Make ``enable(name)`` mean ``enable(compiler_fn)``; returns ``compiler_fn``."""
    _BACKENDS[name] = compiler_fn
    return compiler_fn


def lookup_backend(name: str) -> Callable:
    """The compiler registered as ``name`` (``"jax"``, ``"eager"``)."""
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown compiled-autograd backend {name!r}; choose one of "
                         f"{sorted(_BACKENDS)} or pass a compiler_fn") from None


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: list[Any] = []


_STATE = _State()


def _resolve(compiler_fn: Any) -> Callable:
    if isinstance(compiler_fn, str):
        return lookup_backend(compiler_fn)
    if not callable(compiler_fn):
        raise TypeError(f"compiled_autograd.enable() expects a compiler_fn (a callable "
                        f"GraphModule -> callable) or a backend name such as 'jax' or 'eager', "
                        f"got {type(compiler_fn).__name__}")
    return compiler_fn


class enable:
    """Compile every backward inside the block with ``compiler_fn``.

    ``compiler_fn`` is ``"jax"``, ``"eager"`` or any callable taking the captured
    GraphModule and returning a callable with the same signature. Nested
    blocks must exit in order; the innermost one wins.
    """

    def __init__(self, compiler_fn: Any = "jax") -> None:
        self.compiler_fn = _resolve(compiler_fn)

    def __enter__(self) -> "enable":
        _STATE.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if not _STATE.stack or _STATE.stack[-1] is not self:
            raise RuntimeError("Nested Compiled Autograd Contexts must return before their "
                               "parent context (compiled_autograd contexts must exit in the "
                               "reverse order they were entered)")
        _STATE.stack.pop()


class disable(enable):
    """Run backwards inside the block eagerly, even within ``enable``."""

    def __init__(self) -> None:
        self.compiler_fn = None


def current_compiler() -> Callable | None:
    return _STATE.stack[-1].compiler_fn if _STATE.stack else None


def pure_hook(fn: Callable) -> Callable:
    """Mark a hook as a pure tensor function: compiled autograd traces it into the
    program instead of calling it from Python (it must have no side effects; the
    graph specialises on its code and on scalar values in its closure).

    >>> @pure_hook
    ... def clip(g):
    ...     return g.clamp(-1.0, 1.0)
    """
    fn._acg_pure = True
    return fn
