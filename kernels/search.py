"""Positions by value, no gradient: ``searchsorted`` / ``bucketize`` (where values would go in
sorted boundaries) and ``bincount`` (counts, or summed weights, per non-negative integer).

``bincount``'s length is the largest value + 1: data, so like ``nonzero`` it runs eagerly on
concrete tensors only; a fake or traced call raises a RuntimeError saying so.

>>> import autograd_compile as acg
>>> acg.searchsorted(acg.tensor([1, 3, 5]), acg.tensor([3, 6])).tolist()
[1, 3]
>>> acg.bincount(acg.tensor([0, 2, 2])).tolist()
[1, 0, 2]
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.tracing.fake import TensorMeta

from ._defop import NONDIFF, defop
from ._dtypes import DEFAULT_INT, cast, category, result_type
from ._shapes import shapes_equal

_INT32 = np.dtype("int32")


def _is_right(right: bool, side: str | None) -> bool:
    if side not in (None, "left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                           "side of left while right was True")
    return right or side == "right"


def _searchsorted_rule(seq: Any, x: Any, *, out_int32: bool = False, right: bool = False,
                       side: str | None = None, sorter: Any = None) -> TensorMeta:
    _is_right(right, side)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if seq.ndim > 1 and (seq.ndim != x.ndim or not shapes_equal(seq.shape[:-1], x.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           f"first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor {list(seq.shape)} and "
                           f"input value tensor {list(x.shape)}")
    if sorter is not None and (category(sorter.dtype) != 1 or
                               not shapes_equal(sorter.shape, seq.shape)):
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size "
                           f"and sorter a long dtype, but got boundary tensor {list(seq.shape)} "
                           f"and sorter tensor {list(sorter.shape)} {sorter.dtype.name}")
    result_type(seq, x)  # the two must promote
    return TensorMeta(tuple(x.shape), _INT32 if out_int32 else DEFAULT_INT)


def _searchsorted(seq: Any, x: Any, *, out_int32: bool = False, right: bool = False,
                  side: str | None = None, sorter: Any = None) -> Any:
    dtype = result_type(seq, x)
    seq, x = cast(seq, dtype), cast(x, dtype)
    if sorter is not None:
        seq = jnp.take_along_axis(seq, sorter, -1)
    where = "right" if _is_right(right, side) else "left"
    if seq.ndim == 1:
        out = jnp.searchsorted(seq, x, side=where)
    else:  # one search per leading index
        rows = seq.reshape(-1, seq.shape[-1])
        out = jax.vmap(lambda s, v: jnp.searchsorted(s, v, side=where))(
            rows, x.reshape(rows.shape[0], -1)).reshape(x.shape)
    return out.astype(_INT32 if out_int32 else DEFAULT_INT)


searchsorted = defop("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, "
                     "bool out_int32=False, bool right=False, str? side=None, "
                     "Tensor? sorter=None) -> Tensor", _searchsorted, shape=_searchsorted_rule,
                     check=True, backward=NONDIFF)


def _bucketize_rule(x: Any, boundaries: Any, *, out_int32: bool = False,
                    right: bool = False) -> TensorMeta:
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return _searchsorted_rule(boundaries, x, out_int32=out_int32, right=right)


bucketize = defop("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
                  "bool right=False) -> Tensor",
                  lambda x, b, *, out_int32=False, right=False: _searchsorted(
                      b, x, out_int32=out_int32, right=right),
                  shape=_bucketize_rule, check=True, backward=NONDIFF)


# -- bincount -----------------------------------------------------------------------------------
def _bincount_length(x: Any, weights: Any = None, minlength: int = 0) -> int:
    """The output length, after PyTorch's checks; needs ``x``'s values (a concrete array)."""
    if x.ndim != 1 or category(x.dtype) != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got "
                           f"{x.ndim}-d {x.dtype.name}")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != x.shape[0]):
        raise RuntimeError(f"weights should be 1-d and have the same length as input, got "
                           f"{list(weights.shape)} for input {list(x.shape)}")
    if minlength < 0:
        raise RuntimeError(f"minlength should be >= 0, got {minlength}")
    if not isinstance(x, jax.Array) or isinstance(x, jax.core.Tracer):
        raise RuntimeError("bincount(): the output length is the largest value + 1, which a "
                           "fake or traced tensor does not have; count on concrete tensors "
                           "(eagerly)")
    if x.size and int(x.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs, got a "
                           "negative value")
    return max(int(x.max()) + 1 if x.size else 0, minlength)


def _bincount_dtype(weights: Any) -> np.dtype:
    """PyTorch: float32 weights sum in float32, any other weights in float64."""
    if weights is None:
        return DEFAULT_INT
    return np.dtype("float32") if weights.dtype == np.dtype("float32") else np.dtype("float64")


def _bincount(x: Any, weights: Any = None, minlength: int = 0) -> Any:
    length = _bincount_length(x, weights, minlength)
    w = None if weights is None else weights.astype(_bincount_dtype(weights))
    return jnp.bincount(x, w, length=length).astype(_bincount_dtype(weights))


bincount = defop("bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor",
                 _bincount, shape=lambda x, w=None, n=0: TensorMeta(
                     (_bincount_length(x, w, n),), _bincount_dtype(w)),
                 backward=NONDIFF, jit=False)  # the length is data: no program per length
