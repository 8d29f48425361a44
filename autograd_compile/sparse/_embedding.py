"""``F.embedding(..., sparse=True)``: the weight's ``.grad`` a sparse COO tensor whose rows
are the looked-up indices (uncoalesced, as PyTorch's), so ``optim.SparseAdam`` and ``SGD``
update only those rows.

The rows looked up are a fresh leaf; when autograd has written its gradient, a post-accumulate
hook turns it into the sparse gradient of the weight. Autograd, compiled autograd and hooks see
ordinary tensors only.

>>> import autograd_compile as acg
>>> emb = acg.nn.Embedding(5, 2, sparse=True)
>>> emb(acg.tensor([1, 3, 1])).sum().backward()
>>> emb.weight.grad._indices().tolist()
[[1, 3, 1]]
"""
from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..kernels import api as A
from ..kernels import attention as _attn
from ..tensor import Tensor
from ..tracing.fake import FakeTensor
from ._math import add
from ._tensor import SparseTensor, make

TRACED = ("embedding(sparse=True) makes a sparse .grad, which a compiled region cannot "
          "return: the region runs eagerly")


def embedding(input: Tensor, weight: Tensor, padding_idx: int, scale_grad_by_freq: bool
              ) -> Tensor:
    """Rows of ``weight`` at ``input``; ``weight.grad`` becomes sparse (see module doc)."""
    with no_grad():
        rows = _attn.embedding(weight, input, padding_idx, scale_grad_by_freq, True)
    if isinstance(rows, FakeTensor):
        raise RuntimeError(TRACED)
    leaf = rows.detach().requires_grad_(True)
    leaf.register_post_accumulate_grad_hook(
        lambda r: _to_weight(r, weight, input, padding_idx, scale_grad_by_freq))
    return leaf.view(list(leaf.shape))


def _to_weight(rows: Tensor, weight: Tensor, input: Tensor, padding_idx: int,
               scale_grad_by_freq: bool) -> None:
    g, rows.grad = rows.grad, None
    flat = input.reshape(-1)
    vals = g.reshape(-1, weight.shape[1])
    if scale_grad_by_freq:
        counts = A.zeros(weight.shape[0], dtype=vals.dtype).index_add(
            0, flat, A.ones(flat.shape[0], dtype=vals.dtype))
        vals = vals / counts[flat].unsqueeze(1)
    if padding_idx >= 0:  # as PyTorch: those entries are left out of the sparse gradient
        keep = flat != padding_idx
        flat, vals = flat[keep], vals[keep]
    _accumulate(weight, make(flat.unsqueeze(0), vals, tuple(weight.shape), False))


def _accumulate(weight: Tensor, grad: SparseTensor) -> None:
    """``.grad`` set, or summed with the one there (sparse + sparse stays sparse)."""
    old = weight._grad
    if old is None:
        weight.grad = grad
    elif isinstance(old, SparseTensor):
        weight.grad = add(old, grad)
    else:
        weight.grad = old + grad.to_dense()


__all__ = ["embedding"]
