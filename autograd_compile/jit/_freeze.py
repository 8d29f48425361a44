"""``jit.freeze`` and ``jit.optimize_for_inference``: parameters become constants.

PyTorch inlines a frozen module's parameters and buffers into its graph as constants. Here the
frozen copy keeps its structure and code, and holds each parameter and buffer as a plain
attribute: a detached clone, no longer a parameter (``parameters()`` and ``state_dict()`` are
empty, as PyTorch's) and independent of later changes to the original.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable

from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from ._script import ScriptModule, _state
from ._trace import _attach_compiled

__all__ = ["freeze", "optimize_for_inference", "run_frozen_optimizations"]

_NOT_SCRIPTED = ("{} expects a ScriptModule as input. Please use torch.jit.script or "
                 "torch.jit.trace to script your 'nn.Module'.")


def _frozen(module: Module, keep: frozenset[str], memo: dict[int, Module]) -> Module:
    if id(module) in memo:
        return memo[id(module)]
    cls = type(module)
    new = cls.__new__(cls)
    memo[id(module)] = new
    state = {k: v for k, v in _state(module).items() if k != "_jit_compiled"}
    params, buffers = OrderedDict(), OrderedDict()
    with no_grad():
        for registry, kept in (("_parameters", params), ("_buffers", buffers)):
            for name, t in getattr(module, registry).items():
                if name in keep:
                    kept[name] = t
                else:  # a constant now: an attribute of its own, no longer state
                    state[name] = None if t is None else t.detach().clone()
    state["_parameters"], state["_buffers"] = params, buffers
    state["_non_persistent_buffers_set"] = module._non_persistent_buffers_set & set(buffers)
    state["_modules"] = OrderedDict(
        (name, child if child is None or name in keep else _frozen(child, frozenset(), memo))
        for name, child in module._modules.items())
    new.__dict__.update(state)
    if "_jit_compiled" in module.__dict__:
        _attach_compiled(new)
    return new


def freeze(mod: ScriptModule, preserved_attrs: Iterable[str] | None = None,
           optimize_numerics: bool = True) -> ScriptModule:
    """A frozen copy of a scripted or traced module in eval mode: its parameters and buffers
    are constants (outputs are the same; gradients reach the inputs only). Names in
    ``preserved_attrs`` stay as they are.

    >>> import autograd_compile as acg
    >>> m = acg.jit.script(acg.nn.Linear(2, 2).eval())
    >>> f = acg.jit.freeze(m)
    >>> list(f.parameters()), acg.equal(f(acg.ones(1, 2)), m(acg.ones(1, 2)))
    ([], True)
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(_NOT_SCRIPTED.format("Freezing"))
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return _frozen(mod, frozenset(preserved_attrs or ()), {})


def run_frozen_optimizations(mod: ScriptModule, optimize_numerics: bool = True,
                             preserved_methods: Any = None) -> None:
    """PyTorch's graph passes on a frozen module: nothing to rewrite here."""
    return None


def optimize_for_inference(mod: ScriptModule, other_methods: list[str] | None = None
                           ) -> ScriptModule:
    """``mod`` set to eval mode (in place, as PyTorch) and frozen.

    >>> import autograd_compile as acg
    >>> m = acg.jit.optimize_for_inference(acg.jit.script(acg.nn.Linear(2, 2)))
    >>> m.training, list(m.state_dict())
    (False, [])
    """
    if not isinstance(mod, ScriptModule):
        raise RuntimeError(_NOT_SCRIPTED.format("optimize_for_inference"))
    return freeze(mod.eval(), preserved_attrs=other_methods)
