"""Steps for sparse gradients (``nn.Embedding(sparse=True)``): PyTorch's ``SparseAdam`` and
the sparse branch of ``SGD``, written as PyTorch's own per-parameter loops. They touch only
the rows the gradient names (a gather and an ``index_add``), never the whole parameter.

>>> import autograd_compile as acg
>>> emb = acg.nn.Embedding(4, 2, sparse=True)
>>> opt = acg.optim.SparseAdam(emb.parameters(), lr=0.1)
>>> before = emb.weight.detach().clone()
>>> emb(acg.tensor([1])).sum().backward(); opt.step()
>>> [bool((emb.weight[r] != before[r]).any()) for r in range(4)]
[False, True, False, False]
"""
from __future__ import annotations

import math
from typing import Any

from ..autograd.grad_mode import no_grad
from ..kernels import sparse as K
from ..sparse import SparseTensor
from ..sparse._build import coalesce
from ..sparse._math import add, mul
from ..tensor import Tensor

ADAM_SPARSE = "Adam does not support sparse gradients, please consider SparseAdam instead"
SPARSE_ADAM_DENSE = "SparseAdam does not support dense gradients, please consider Adam instead"


def has_sparse_grad(params: list[Tensor]) -> bool:
    return any(type(p._grad) is SparseTensor for p in params)


def _at(t: Tensor, indices: Tensor) -> Tensor:
    """``t.sparse_mask(grad)._values()``: the entries of dense ``t`` at a (coalesced) pattern."""
    return t[indices[0]] if indices.shape[0] == 1 else K.sparse_gather(t, indices)


def _add_at(t: Tensor, indices: Tensor, values: Tensor) -> None:
    """``t += sparse(indices, values)`` in place, touching only those entries."""
    if indices.shape[0] == 1:
        t.index_add_(0, indices[0], values)
    else:
        t.add_(K.sparse_to_dense(indices, values, list(t.shape)))


def sparse_adam(p: Tensor, state: dict, lr: float, betas: tuple[float, float], eps: float,
                maximize: bool) -> None:
    """One parameter's SparseAdam step, as ``torch.optim._functional.sparse_adam``."""
    grad = p._grad if not maximize else mul(p._grad, -1)
    grad = coalesce(grad)  # the update is non-linear: indices must be unique
    idx, vals = grad._indices_t, grad._values_t
    if vals.numel() == 0:
        return
    beta1, beta2 = betas
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    old = _at(exp_avg, idx)
    avg_update = (vals - old) * (1 - beta1)
    _add_at(exp_avg, idx, avg_update)
    old_sq = _at(exp_avg_sq, idx)
    sq_update = (vals * vals - old_sq) * (1 - beta2)
    _add_at(exp_avg_sq, idx, sq_update)
    numer = avg_update + old
    denom = (sq_update + old_sq).sqrt() + eps
    step = state["step"]
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    _add_at(p, idx, (numer / denom) * -step_size)


def sparse_sgd(p: Tensor, state: dict, group: dict) -> None:
    """One parameter's SGD step with a sparse gradient, as ``_single_tensor_sgd``: the
    momentum buffer is sparse too (entries appended each step, as PyTorch's)."""
    grad = p._grad if not group["maximize"] else mul(p._grad, -1)
    if group["weight_decay"] != 0:
        grad = add(grad, p, alpha=group["weight_decay"])  # raises PyTorch's error
    momentum = group["momentum"]
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.detach()
        else:
            buf = state["momentum_buffer"] = add(mul(buf, momentum), grad,
                                                 alpha=1 - group["dampening"])
        grad = add(grad, buf, alpha=momentum) if group["nesterov"] else buf
    _add_at(p, grad._indices_t, grad._values_t * -group["lr"])


def step_sparse(params: list[Tensor], rule: Any) -> None:
    """Run ``rule(p)`` for each parameter whose gradient is sparse (outside autograd)."""
    with no_grad():
        for p in params:
            if type(p._grad) is SparseTensor:
                rule(p)


__all__ = ["ADAM_SPARSE", "SPARSE_ADAM_DENSE", "has_sparse_grad", "sparse_adam", "sparse_sgd",
           "step_sparse"]
