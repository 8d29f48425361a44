"""Functions a captured backward graph calls at run time, with eager semantics.

Hooks are arbitrary Python: the graph calls them through these functions
(``call_hook`` nodes), which apply exactly the eager engine's rules (a
returned tensor replaces the gradient, None keeps it, wrong returns raise).
``.grad`` writes go through the engine's own accumulate functions, so they are
journaled and a failing backward still undoes them. All are impure: dead-code
elimination keeps them, and the JAX backend runs them on the host.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ..autograd.engine import (accumulate_into_grad, accumulate_retained, check_hook_result,
                              run_post_acc_hooks, run_post_hooks, run_pre_hooks)
from ..tensor import Tensor


def _impure(fn: Callable) -> Callable:
    fn._acg_impure = True
    return fn


@_impure
def call_tensor_pre_hook(hook: Callable, grad: Tensor) -> Tensor:
    """A tensor hook: its result replaces ``grad`` unless it is None."""
    new = hook(grad)
    if new is None:
        return grad
    check_hook_result(hook, grad, new)
    return new


@_impure
def call_pre_hook(hook: Callable, grads: tuple) -> tuple:
    """A node pre-hook on the node's incoming gradients."""
    return tuple(run_pre_hooks([hook], list(grads)))


@_impure
def call_post_hook(hook: Callable, grad_inputs: tuple, grad_outputs: tuple) -> tuple:
    """A node post-hook on the node's results."""
    return tuple(run_post_hooks([hook], list(grad_inputs), list(grad_outputs)))


@_impure
def call_stolen_post_hook(hook: Callable, leaf: Tensor) -> None:
    """An AccumulateGrad post-hook where ``.grad`` took the incoming gradient: the hook's
    ``grad_outputs`` is ``(leaf.grad,)``, so it sees what post-accumulate hooks did to it."""
    run_post_hooks([hook], [], [leaf.grad])


@_impure
def call_post_acc_hook(hook: Callable, leaf: Tensor) -> None:
    """A post-accumulate-grad hook, after ``leaf.grad`` was written."""
    run_post_acc_hooks(leaf, [hook])


@_impure
def call_unpack_hook(saved: tuple) -> Tensor:
    """A saved tensor's unpack hook, where its node runs (after the node's hooks, as
    eager); the graph was captured for the shape and dtype it had when packed."""
    sv, node = saved
    t = sv.unpack(node)
    shape, dtype = sv.meta
    if tuple(t.shape) != shape or t.dtype != dtype:
        raise RuntimeError(f"saved_tensors_hooks: the unpack hook returned a tensor of shape "
                           f"{list(t.shape)} and dtype {t.dtype.name} for a tensor saved as "
                           f"{list(shape)} {dtype} ({node.name()}); compiled autograd needs "
                           "the shape and dtype that were packed")
    return t


@_impure
def accumulate_grad(leaf: Tensor, grad: Tensor) -> None:
    """What AccumulateGrad does: set or add into ``leaf.grad``."""
    accumulate_into_grad(leaf, grad)


@_impure
def retain_grad(tensor: Tensor, grad: Tensor) -> None:
    """What retain_grad does: set or add into a non-leaf's ``.grad``."""
    accumulate_retained(tensor, grad)


def picker(keys: list) -> Callable[[Any], tuple]:
    """``container -> tuple(container[k] for k in keys)`` at C speed (itemgetter): how
    guards and backends gather their values on every backward.

    >>> picker([2, 0])(["a", "b", "c"]), picker([1])(["a", "b"]), picker([])(["a"])
    (('c', 'a'), ('b',), ())
    """
    if not keys:
        return lambda container: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda container: (container[key],)
    return operator.itemgetter(*keys)


# the kinds of graph node the JAX backend must run on the host, in Python
HOST_CALLS = frozenset({call_tensor_pre_hook, call_pre_hook, call_post_hook, call_post_acc_hook,
                        call_stolen_post_hook, call_unpack_hook})
WRITES = frozenset({accumulate_grad, retain_grad})


def is_host_call(target: Any) -> bool:
    return target in HOST_CALLS
