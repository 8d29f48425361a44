"""``torch.compiler``: reset the compiled functions' caches, ask whether code is being
traced, keep a function out of compiled regions.

>>> import autograd_compile as acg
>>> @acg.compiler.disable
... def logged(x):
...     return x + 1
>>> acg.compile(lambda x: logged(x) * 2)(acg.ones(1)).tolist()  # the region runs eagerly
[4.0]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "disable"]


def reset() -> None:
    """Forget every ``acg.compile`` trace and compiled-autograd capture."""
    from . import aot, compiled_autograd
    aot.reset()
    compiled_autograd.reset()


def is_compiling() -> bool:
    """True while ``acg.compile`` traces (the code runs on traced values, once)."""
    from .aot.wholestep import _TRACING
    from .tracing.fake import FakeTensorMode
    return FakeTensorMode.current is not None or getattr(_TRACING, "active", False)


is_dynamo_compiling = is_compiling


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None
            ) -> Any:
    """A function that never runs inside a compiled program: a region that calls it runs
    eagerly (logged once with the reason), where PyTorch would break the graph around it."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager_only(*args: Any, **kwargs: Any) -> Any:
        if is_compiling():
            from .aot.trace import NotTraceable
            why = f": {reason}" if reason else ""
            raise NotTraceable(f"{getattr(fn, '__qualname__', fn)} is marked "
                               f"torch.compiler.disable{why}")
        return fn(*args, **kwargs)
    return eager_only
