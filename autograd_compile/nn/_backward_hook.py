"""Module backward hooks on top of autograd node hooks.

A module call wrapped with full backward hooks passes its tensor inputs and outputs
through an identity autograd Function (:class:`BackwardHookFunction`). A node
pre-hook on the outputs' node sees ``grad_output`` (and runs the backward pre-hooks);
a node post-hook on the inputs' node sees ``grad_input`` and runs the user hooks.
Both are ordinary node hooks, so compiled autograd records them as ``call_hook``
nodes like any other hook.
"""
from __future__ import annotations

from typing import Any, Callable

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor


class BackwardHookFunction(Function):
    """Identity on any number of tensors; its node is where module hooks attach."""

    @staticmethod
    def forward(ctx: Any, *args: Tensor) -> tuple[Tensor, ...]:
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        return grads


def _pack(indices: list[int], values: Any, size: int) -> tuple:
    out: list = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """One forward call's backward-hook state: ``grad_output`` is kept between the
    output node's pre-hook and the input node's post-hook."""

    def __init__(self, module: Any, user_hooks: list[Callable], user_pre_hooks: list[Callable]
                 ) -> None:
        self.module, self.user_hooks, self.user_pre_hooks = module, user_hooks, user_pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = self.n_outputs = -1
        self.input_index: list[int] | None = None
        self.output_index: list[int] | None = None

    def _wrap(self, args: tuple, attach: Callable[[Any], None]) -> tuple[tuple, list[int] | None]:
        """Route the tensors of ``args`` through the identity Function; ``attach`` its node."""
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        if not (is_grad_enabled() and any(args[i].requires_grad for i in index)):
            return args, None
        new = BackwardHookFunction.apply(*[args[i] for i in index])
        node = next(t.grad_fn for t in new if t.grad_fn is not None)
        attach(node)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out), index

    def setup_input_hook(self, args: tuple) -> tuple:
        args, self.input_index = self._wrap(args, lambda node: node.register_hook(
            self._input_hook))
        self.n_inputs = len(args)
        return args

    def setup_output_hook(self, result: Any) -> Any:
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        outs, self.output_index = self._wrap(outs, lambda node: node.register_prehook(
            self._output_hook))
        self.n_outputs = len(outs)
        return outs[0] if single else outs

    def _output_hook(self, grad_outputs: tuple) -> tuple | None:
        self.grad_outputs = _pack(self.output_index, grad_outputs, self.n_outputs)
        for hook in self.user_pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            new = new if isinstance(new, tuple) else (new,)
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        replaced = tuple(self.grad_outputs[i] for i in self.output_index)
        if self.input_index is None:  # no input needs a gradient: the hooks run here
            self._call_without_inputs()
        return replaced if self.user_pre_hooks else None

    def _call_without_inputs(self) -> None:
        grad_inputs = (None,) * self.n_inputs
        for hook in self.user_hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    def _input_hook(self, grad_inputs: tuple, _grad_outputs: tuple) -> tuple | None:
        if self.grad_outputs is None:
            return None  # the gradient reached the inputs without passing the outputs
        res = _pack(self.input_index, grad_inputs, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            out = out if isinstance(out, tuple) else (out,)
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)
