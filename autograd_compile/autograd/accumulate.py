"""Writing gradients into leaves: ``.grad`` accumulation and post-accumulate hooks.

The engine's state (``STATE``: create_graph, anomaly, depth) lives here, below both the
engine and the graph nodes: ``AccumulateGrad`` (node.py) writes ``.grad`` through these
functions and the engine re-exports them, so node.py needs no import of the engine.

>>> import autograd_compile as acg
>>> w = acg.ones(2, requires_grad=True)
>>> (w * 3).sum().backward(); (w * 3).sum().backward()
>>> w.grad.tolist()
[6.0, 6.0]
"""
from __future__ import annotations

import threading
from typing import Callable

from .. import journal
from ..dispatch.keys import TLS
from ..tensor import Tensor, _make


class _EngineState(threading.local):
    def __init__(self) -> None:
        self.create_graph = False
        self.anomaly = False
        self.depth = 0


STATE = _EngineState()


def _plain(*ts: Tensor) -> bool:
    """Plain tensors and no mode active: the engine may use jax directly (faster);
    otherwise it goes through ops, so tracing and subclasses see every step."""
    return not STATE.create_graph and not TLS.mode_stack and all(type(t) is Tensor for t in ts)


def _add(a: Tensor, b: Tensor) -> Tensor:
    """Two gradients summed. The op, not jax's ``+`` (an op-by-op jax call outside a
    program costs 30-75 us): numpy for host values, one cached program otherwise."""
    if _plain(a, b) and TLS.grad_enabled and (a._requires_grad or b._requires_grad):
        return _make(a._data + b._data)  # (outside the engine's no-grad scope: not recorded)
    return a + b


def _hook_name(hook: Callable) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


POST_ACC_RETURNED = "Tensor post accumulate grad hooks should return None."


def run_post_acc_hooks(variable: Tensor, hooks: list[Callable]) -> None:
    for hook in hooks:
        result = hook(variable)
        if result is not None:
            raise RuntimeError(f"{POST_ACC_RETURNED} (hook '{_hook_name(hook)}' returned "
                               f"{type(result).__name__})")


# -- writing gradients ----------------------------------------------------------------

def accumulate_into_grad(variable: Tensor, g: Tensor) -> Tensor | None:
    """``.grad = g`` the first time, else add (in place unless building a graph).
    Returns the new ``.grad`` when it took the incoming gradient (PyTorch "steals" it:
    AccumulateGrad's post-hooks then see ``.grad`` itself), else None."""
    if not STATE.create_graph:
        g = g.detach()  # a fresh object over the same (immutable) value: safe to own
    old = variable._grad
    if old is None:
        journal.record(variable, "_grad")
        variable._grad = g
        return None if STATE.create_graph else g
    if STATE.create_graph:
        journal.record(variable, "_grad")
        variable._grad = old + g
    elif _plain(old, g):
        old._set_data(_add(old, g)._store)  # in place: the same .grad object, a new value
    else:
        old.add_(g)
    return None


def accumulate_retained(t: Tensor, g: Tensor) -> None:
    """retain_grad: ``.grad`` is set, then summed out of place across backwards."""
    journal.record(t, "_grad")
    new = g if STATE.create_graph else g.detach()
    t._grad = new if t._grad is None else _add(t._grad, new)
