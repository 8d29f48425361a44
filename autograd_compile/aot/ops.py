"""The one op compiled regions add: ``aot::once_differentiable(grad, inputs)``.

It returns ``grad`` (free in XLA); each gradient a region's backward graph
returns goes through it, with the region's inputs that require grad and its
tangents as ``inputs``. Under ``create_graph=True`` autograd then records it
(some input requires grad), and its derivative raises: the backward graph reads
forward intermediates without their history, so differentiating it again
would silently drop terms. PyTorch's compiled regions refuse double backward
too ("torch.compile with aot_autograd does not currently support double
backward"); ours refuse when the second backward reaches them, in every mode
(eager, and inlined into a compiled-autograd graph).

>>> import autograd_compile as acg
>>> x = acg.ones(2, requires_grad=True)
>>> y = once_differentiable(acg.ones(2), [x])
>>> y.tolist(), y.grad_fn.name()
([1.0, 1.0], 'OnceDifferentiableBackward0')
"""
from __future__ import annotations

from typing import Any

from ..autograd.derivatives import register_derivative
from ..dispatch.dispatcher import DISPATCHER
from ..dispatch.library import Library
from ..tracing.fake import TensorMeta, register_shape_rule

DOUBLE_BACKWARD = ("acg.compile does not currently support double backward: the backward of a "
                   "compiled region was built from its forward trace and cannot be "
                   "differentiated again (the same limit as torch.compile with aot_autograd). "
                   "Run this region without acg.compile to take higher-order gradients.")

_LIB = Library("aot", "DEF")
_LIB.define("once_differentiable(Tensor self, Tensor[] inputs) -> Tensor")
_LIB.impl("once_differentiable", lambda x, inputs: x, "Backend")
once_differentiable = DISPATCHER.ops["aot::once_differentiable"]
register_shape_rule(once_differentiable, lambda x, inputs: TensorMeta(tuple(x.shape), x.dtype))


def _refuse(grad: Any, x: Any, inputs: Any, out: Any) -> Any:
    raise RuntimeError(DOUBLE_BACKWARD)


register_derivative(once_differentiable, _refuse, save=())
