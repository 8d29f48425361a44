"""Custom autograd Functions: a forward and a hand-written backward.

>>> import autograd_compile as acg
>>> class Square(acg.autograd.Function):
...     @staticmethod
...     def forward(ctx, x):
...         ctx.save_for_backward(x)
...         return x * x
...     @staticmethod
...     def backward(ctx, g):
...         x, = ctx.saved_tensors
...         return 2 * x * g
>>> x = acg.tensor([3.0], requires_grad=True)
>>> Square.apply(x).sum().backward(); x.grad.tolist()
[6.0]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import jax.numpy as jnp

from ..tensor import Tensor, is_floating
from .grad_mode import is_grad_enabled, no_grad
from .node import ErrorNode, Node, TensorMeta, gradient_edge
from .saved import SavedVariable


class FunctionCtx:
    """What ``forward`` gets as ``ctx``: saving tensors, marking outputs, flags."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        saved = getattr(self, "_saved", None)
        if saved is None:
            return tuple(getattr(self, "_to_save", ()))
        return tuple(s.unpack(self if s.is_output else None) if s is not None else None
                     for s in saved)

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self._non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors: Tensor) -> None:
        self._dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node of one custom Function call; it is also the ``ctx`` (as in PyTorch)."""

    def __init__(self, cls: type) -> None:
        Node.__init__(self)
        self.fn_cls = cls
        self.materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        self._arg_is_tensor: tuple[bool, ...] = ()
        self._out_is_tensor: tuple[bool, ...] = ()  # non-tensor outputs get None, never zeros

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        if self.materialize_grads:
            from ..dispatch.library import ops
            is_t = self._out_is_tensor or (True,) * len(grad_outputs)
            grad_outputs = [g if g is not None or not t or not is_floating(m.dtype) else
                            ops.acg.zeros(list(m.shape), dtype=m.dtype)
                            for g, m, t in zip(grad_outputs, self.input_meta, is_t)]
        result = self.fn_cls.backward(self, *grad_outputs)
        return self._per_tensor_input(result)

    def _per_tensor_input(self, result: Any) -> list[Tensor | None]:
        result = list(result) if isinstance(result, (tuple, list)) else [result]
        n = len(self._arg_is_tensor)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(result)})")
        grads = []
        for i, (r, is_t) in enumerate(zip(result, self._arg_is_tensor)):
            if is_t:
                grads.append(r)
            elif r is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   "input was not a Variable")
        return grads

    def release_variables(self) -> None:
        for s in getattr(self, "_saved", None) or ():
            if s is not None:
                s.release()


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = BackwardCFunction(cls)
        ctx._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        recording = is_grad_enabled() and any(ctx.needs_input_grad)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if not recording:
            ctx._to_save = ()
            return out
        return _wire(ctx, [a for a in args if isinstance(a, Tensor)], out)


def _wire(ctx: BackwardCFunction, inputs: list[Tensor], out: Any) -> Any:
    """Connect the outputs to ``ctx`` and freeze what forward saved."""
    ctx.next_edges = tuple(gradient_edge(t) for t in inputs)
    outs = list(out) if isinstance(out, tuple) else [out]
    non_diff = getattr(ctx, "_non_differentiable", set())
    input_ids = {id(t) for t in inputs}
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            continue
        if id(o) in input_ids and id(o) not in getattr(ctx, "_dirty", set()):
            outs[i] = o = o._shallow_alias()  # returning an input: a new tensor gets the history
        if id(o) in non_diff or not is_floating(o.dtype):
            o._requires_grad = False
            continue
        o.grad_fn, o._output_nr, o._requires_grad = ctx, i, True
    ctx._out_is_tensor = tuple(isinstance(o, Tensor) for o in outs)
    ctx.input_meta = [TensorMeta(tuple(o.shape), o.dtype) if isinstance(o, Tensor)
                      else TensorMeta((), jnp.float32) for o in outs]
    out_ids = {id(o) for o in outs}
    ctx._saved = [None if t is None else SavedVariable(t, is_output=id(t) in out_ids)
                  for t in getattr(ctx, "_to_save", ())]
    ctx._to_save = ()
    return tuple(outs) if isinstance(out, tuple) else outs[0]


def once_differentiable(backward: Callable) -> Callable:
    """Mark a backward that is not itself differentiable: it runs without recording,
    and differentiating its result again raises instead of giving a wrong answer."""
    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        if not is_grad_enabled() or not any(isinstance(g, Tensor) and g.requires_grad
                                            for g in grads):
            return result
        edges = [gradient_edge(g) for g in grads if isinstance(g, Tensor)]
        err = ErrorNode("trying to differentiate twice a function that was marked with "
                        "@once_differentiable", edges)
        items = list(result) if isinstance(result, tuple) else [result]
        for r in items:
            if isinstance(r, Tensor) and is_floating(r.dtype):
                err.input_meta.append(TensorMeta(tuple(r.shape), r.dtype))
                r.grad_fn, r._output_nr, r._requires_grad = err, len(err.input_meta) - 1, True
        return result
    return wrapper
