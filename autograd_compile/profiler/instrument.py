"""Ranges around what the op observer cannot see as ops: autograd nodes and compiled programs.

A compiled program (``acg.compile``, a compiled-autograd backward) runs as one XLA call,
not op by op, so the dispatch mode never sees it; and PyTorch users read the per-node
``autograd::engine::evaluate_function: MulBackward0`` rows of a backward. While any
profiler records, these entry points are wrapped (one table, :func:`_patches`), and each
wrapper opens a range in the calling thread's session, or just calls through where that
thread records nothing. A compiled program's range runs it as if no profiler were active
(the library picks its paths by the mode stack): one event, the same results. The last
profiler to stop puts the originals back.

- ``autograd.engine.call_node``: ``autograd::engine::evaluate_function: <Node name>``
- ``aot.api.CompiledFunction.__call__``: ``CompiledFunction: <function qualname>``
- ``aot.program.CompiledFunctionBackward.apply``: ``CompiledFunctionBackward``
- ``autograd.engine.COMPILED_FAST[0]`` and ``COMPILED_RUNNER[0]``: ``CompiledAutograd``
  (only while compiled autograd is enabled, and only when a program ran)

>>> from autograd_compile.profiler import instrument
>>> undo = instrument.acquire(); undo()
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from ._session import active_session

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"users": 0, "undo": []}
_NODE_NAMES = {"AccumulateGrad": "torch::autograd::AccumulateGrad"}  # PyTorch's names


def _ranged(name_of: Callable[..., str | None], fn: Callable, *, hide: bool = False,
            keep: Callable[[Any], bool] | None = None) -> Callable:
    """``fn`` inside a range named ``name_of(*args)`` (None: no range). ``hide``: ``fn``
    runs as if unprofiled (a compiled program: one event, the same paths and bits);
    ``keep(result)`` False drops a childless range (an attempt that ran nothing)."""
    @functools.wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        s = active_session()
        name = None if s is None or s.paused else name_of(*args)
        if name is None:
            return fn(*args, **kwargs)
        e = s.open_event(name)
        try:
            if not hide:
                result = fn(*args, **kwargs)
            else:
                with s.hidden():
                    result = fn(*args, **kwargs)
        finally:
            s.close_event(e)
        if keep is not None and not keep(result) and not e.cpu_children:
            s.discard(e)
        return result
    recorded.__acg_profiler_wrapped__ = fn
    return recorded


def _node_name(task: Any, node: Any, grads: Any) -> str | None:
    from ..autograd.node import GraphRoot
    if isinstance(node, GraphRoot):
        return None  # the engine's own root, not a node of the user's graph
    name = node.name()
    return f"autograd::engine::evaluate_function: {_NODE_NAMES.get(name, name)}"


def _compiled_name(cf: Any, *args: Any) -> str:
    return f"CompiledFunction: {getattr(cf, '__qualname__', type(cf).__name__)}"


def _backward_name(node: Any, *args: Any) -> str:
    return node.name()


def _compiled_autograd_name(*args: Any) -> str | None:
    from ..compiled_autograd.api import current_compiler
    return "CompiledAutograd" if current_compiler() is not None else None


def _swap(owner: Any, key: str | int, make: Callable[[Callable], Callable]) -> Callable[[], None]:
    """Wrap ``owner.key`` (or ``owner[key]`` for a list); returns the undo."""
    is_list = isinstance(owner, list)
    if is_list and len(owner) <= key:  # nothing installed there: nothing to wrap
        return lambda: None
    old = owner[key] if is_list else owner.__dict__[key]
    new = make(old)
    owner.__setitem__(key, new) if is_list else setattr(owner, key, new)

    def undo() -> None:
        now = owner[key] if is_list else owner.__dict__.get(key)
        if now is new:  # (someone replaced it since: theirs stays)
            owner.__setitem__(key, old) if is_list else setattr(owner, key, old)
    return undo


def _patches() -> list[tuple[Any, str | int, Callable[[Callable], Callable]]]:
    """(owner, attribute or index, wrapper maker) of every wrapped entry point."""
    from ..aot.api import CompiledFunction
    from ..aot.program import CompiledFunctionBackward
    from ..autograd import engine
    def ranged(name_of: Callable[..., str | None], **how: Any) -> Callable[[Callable], Callable]:
        return lambda fn: _ranged(name_of, fn, **how)
    ca = ranged(_compiled_autograd_name, hide=True, keep=lambda r: r is True)
    return [(engine, "call_node", ranged(_node_name)),
            (CompiledFunction, "__call__", ranged(_compiled_name, hide=True)),
            (CompiledFunctionBackward, "apply", ranged(_backward_name, hide=True)),
            (engine.COMPILED_FAST, 0, ca), (engine.COMPILED_RUNNER, 0, ca)]


def acquire() -> Callable[[], None]:
    """Install the wrappers (if no profiler has); the returned callable releases them."""
    with _LOCK:
        if _STATE["users"] == 0:
            _STATE["undo"] = [_swap(owner, key, make) for owner, key, make in _patches()]
        _STATE["users"] += 1
    released = [False]

    def release() -> None:
        with _LOCK:
            if released[0]:
                return
            released[0] = True
            _STATE["users"] -= 1
            if _STATE["users"] == 0:
                for undo in reversed(_STATE["undo"]):
                    undo()
                _STATE["undo"] = []
    return release
