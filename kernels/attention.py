"""Attention and embedding: scaled dot-product attention as one fused op (forward and backward
each one JAX program) and the embedding lookup whose backward is a scatter-add.

Attention's forward returns the output and the row log-sum-exp of the scores; the backward op
recomputes the probabilities from q, k and that log-sum-exp (flash-attention style: nothing of
size L x S is saved), so both must come from one library: where a gradient flows the forward
stays in XLA; ``sdpa_nograd`` (no backward) is the one the host tier may run. Dropout's mask
is drawn from a PRNG key that is an input of both ops, so the backward regenerates the same
mask and a captured graph takes the key as an input.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from autograd_compile import runtime_checks
from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, reduce_grad
from ._dtypes import BOOL, FLOAT32, category, is_float, promote
from ._host import check_values
from ._shapes import broadcast_shapes, shapes_equal
from .elementwise import ne, wants
from .factories import zeros
from .indexing import add_rows
from ._xp import HostUnsupported, jnp


# -- scaled_dot_product_attention ------------------------------------------------------------
def _sdpa_rule(q: Any, k: Any, v: Any, mask: Any = None, rng: Any = None,
               dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None
               ) -> tuple[TensorMeta, TensorMeta]:
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"scaled_dot_product_attention: query, key and value must be at least "
                           f"2-D (..., L, E), got {q.ndim}-D, {k.ndim}-D and {v.ndim}-D")
    if not (q.dtype == k.dtype == v.dtype) or not is_float(q.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same floating dtype, but "
                           f"got query.dtype: {q.dtype.name} key.dtype: {k.dtype.name} and "
                           f"value.dtype: {v.dtype.name} instead.")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: expected query [..., L, E], key "
                           f"[..., S, E] and value [..., S, Ev], got {list(q.shape)}, "
                           f"{list(k.shape)} and {list(v.shape)}")
    batch = broadcast_shapes(tuple(q.shape[:-2]), tuple(k.shape[:-2]), tuple(v.shape[:-2]))
    scores = batch + (q.shape[-2], k.shape[-2])
    if mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        if mask.dtype != BOOL and mask.dtype != q.dtype:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {mask.dtype.name} and "
                               f"query.dtype: {q.dtype.name} instead.")
        if not shapes_equal(broadcast_shapes(scores, tuple(mask.shape)), scores):
            raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape "
                               f"{list(mask.shape)} does not broadcast to the attention scores' "
                               f"shape {list(scores)}")
    return (TensorMeta(batch + (q.shape[-2], v.shape[-1]), q.dtype),
            TensorMeta(batch + (q.shape[-2],), promote(q.dtype, FLOAT32)))


def _compute_dtype(q: Any) -> Any:
    return promote(q.dtype, FLOAT32)  # scores and softmax in at least float32


def _scores(q: Any, k: Any, mask: Any, is_causal: bool, scale: Any) -> Any:
    """Scaled, masked scores in the compute dtype; masked-out entries are -inf."""
    ct = _compute_dtype(q)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = jnp.matmul(q.astype(ct), jnp.swapaxes(k, -1, -2).astype(ct)) * scale
    if mask is not None:
        s = jnp.where(mask, s, -jnp.inf) if mask.dtype == BOOL else s + mask.astype(ct)
    if is_causal:  # top-left aligned lower triangle, as PyTorch
        s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
    return s


def _probs(s: Any, lse: Any) -> Any:
    """Softmax rows from the log-sum-exp; a fully masked row (lse = -inf) is all zeros."""
    finite = jnp.isfinite(lse)[..., None]
    return jnp.where(finite, jnp.exp(s - jnp.where(finite, lse[..., None], 0.0)), 0.0)


def _keep(rng: Any, dropout_p: Any, shape: tuple) -> Any:
    return jax.random.bernoulli(jax.random.wrap_key_data(rng), 1.0 - dropout_p, shape)


def _sdpa(q: Any, k: Any, v: Any, mask: Any = None, rng: Any = None, dropout_p: float = 0.0,
          is_causal: bool = False, scale: Any = None) -> tuple[Any, Any]:
    s = _scores(q, k, mask, is_causal, scale)
    m = jnp.max(s, -1, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, 0.0)  # max-subtracted; a fully masked row stays finite
    lse = (m + jnp.log(jnp.sum(jnp.exp(s - m), -1, keepdims=True)))[..., 0]
    p = _probs(s, lse)
    if rng is not None:
        p = jnp.where(_keep(rng, dropout_p, p.shape), p / (1.0 - dropout_p), 0.0)
    return jnp.matmul(p, v.astype(p.dtype)).astype(q.dtype), lse


def _sdpa_bwd_rule(go: Any, glse: Any, q: Any, k: Any, v: Any, out: Any, lse: Any,
                   mask: Any = None, rng: Any = None, dropout_p: float = 0.0,
                   is_causal: bool = False, scale: Any = None, mask_grad: bool = False
                   ) -> tuple:
    scores = tuple(lse.shape) + (k.shape[-2],)
    batch = tuple(lse.shape[:-1])
    ds = TensorMeta(scores if mask_grad else (), _compute_dtype(q))
    return (TensorMeta(batch + tuple(q.shape[-2:]), q.dtype),
            TensorMeta(batch + tuple(k.shape[-2:]), q.dtype),
            TensorMeta(batch + tuple(v.shape[-2:]), q.dtype), ds)


def _sdpa_bwd(go: Any, glse: Any, q: Any, k: Any, v: Any, out: Any, lse: Any, mask: Any = None,
              rng: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
              scale: Any = None, mask_grad: bool = False) -> tuple:
    """Gradients of q, k, v (over the broadcast batch) and, if asked, of the scores."""
    ct = _compute_dtype(q)
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    p = _probs(_scores(q, k, mask, is_causal, scale), lse)
    go = go.astype(ct)
    dp = jnp.matmul(go, jnp.swapaxes(v, -1, -2).astype(ct))
    pd = p
    if rng is not None:
        keep = _keep(rng, dropout_p, p.shape)
        pd = jnp.where(keep, p / (1.0 - dropout_p), 0.0)
        dp = jnp.where(keep, dp / (1.0 - dropout_p), 0.0)
    dv = jnp.matmul(jnp.swapaxes(pd, -1, -2), go)
    ds = p * (dp - jnp.sum(dp * p, -1, keepdims=True)) + glse.astype(ct)[..., None] * p
    dq = jnp.matmul(ds, k.astype(ct)) * sc
    dk = jnp.matmul(jnp.swapaxes(ds, -1, -2), q.astype(ct)) * sc
    dt = q.dtype
    return (dq.astype(dt), dk.astype(dt), dv.astype(dt),
            ds if mask_grad else jnp.zeros((), ct))


def _sdpa_backward(g: tuple, q: Any, k: Any, v: Any, mask: Any, rng: Any, dropout_p: Any,
                   is_causal: bool, scale: Any, out: tuple) -> tuple:
    mask_grad = wants(mask) and bool(getattr(mask, "requires_grad", False))
    dq, dk, dv, ds = sdpa_backward(g[0], g[1], q, k, v, out[0], out[1], mask, rng, dropout_p,
                                   is_causal, scale, mask_grad)
    return (reduce_grad(dq, q), reduce_grad(dk, k), reduce_grad(dv, v),
            reduce_grad(ds.to(mask.dtype), mask) if mask_grad else None, None)


_SDPA_ARGS = ("Tensor? attn_mask=None, Tensor? rng=None, float dropout_p=0.0, "
              "bool is_causal=False, float? scale=None")
# hyperparameters, not data: compile-time values, so the shape rule runs once per program
# (a traced float makes it run on every call) and the host tier keys on them
_SDPA_STATIC = ("dropout_p", "scale")
sdpa = defop(f"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
             f"{_SDPA_ARGS}) -> (Tensor, Tensor)", _sdpa, shape=_sdpa_rule, check=True,
             static=_SDPA_STATIC, save=("query", "key", "value", "attn_mask", "rng", "out"),
             backward=_sdpa_backward)
# the same computation where no gradient flows (generation, evaluation): numpy runs it at
# small sizes (a new length compiles nothing); with a gradient, forward and backward both
# stay in XLA, so a training step's eager and compiled rounding stay alike
def _sdpa_host(q: Any, k: Any, v: Any, mask: Any = None, rng: Any = None,
               dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None
               ) -> tuple[Any, Any]:
    """:func:`_sdpa` on numpy in place on one scores buffer (the jnp spelling makes ~15
    temporaries: 62 us for a 2-head, 40-token generation step, 30 here)."""
    if rng is not None:  # dropout draws from jax's PRNG: XLA
        raise HostUnsupported("dropout")
    s = _scores(q, k, mask, False, scale)
    if is_causal:  # top-left aligned lower triangle: above it -inf
        np.copyto(s, -np.inf, where=_above(*s.shape[-2:]))  # (a boolean index: 8x this)
    m = s.max(-1, keepdims=True)
    np.copyto(m, 0, where=~np.isfinite(m))  # a fully masked row: exp gives zeros, its lse -inf
    s -= m
    np.exp(s, out=s)
    total = s.sum(-1, keepdims=True)
    lse = (m + np.log(total))[..., 0]
    s /= np.where(total > 0, total, 1)
    return np.matmul(s, v.astype(s.dtype, copy=False)).astype(q.dtype, copy=False), lse


_ABOVE: dict[tuple[int, int], np.ndarray] = {}


def _above(rows: int, cols: int) -> np.ndarray:
    """The causal mask's masked entries (above the diagonal), read-only, made once a shape."""
    mask = _ABOVE.get((rows, cols))
    if mask is None:
        if len(_ABOVE) > 1024:
            _ABOVE.clear()
        mask = _ABOVE[rows, cols] = np.arange(rows)[:, None] < np.arange(cols)
        mask.flags.writeable = False
    return mask


sdpa_nograd = defop(f"scaled_dot_product_attention_nograd(Tensor query, Tensor key, "
                    f"Tensor value, {_SDPA_ARGS}) -> (Tensor, Tensor)", _sdpa, host=_sdpa_host,
                    shape=_sdpa_rule, check=True, static=_SDPA_STATIC)
# its own op (one program); no derivative registered: double backward raises, naming it
sdpa_backward = defop(f"scaled_dot_product_attention_backward(Tensor grad_out, Tensor grad_lse, "
                      f"Tensor query, Tensor key, Tensor value, Tensor out, Tensor lse, "
                      f"{_SDPA_ARGS}, bool mask_grad=False) -> (Tensor, Tensor, Tensor, Tensor)",
                      _sdpa_bwd, shape=_sdpa_bwd_rule, static=_SDPA_STATIC)


# -- embedding --------------------------------------------------------------------------------
def _embedding_rule(w: Any, idx: Any, padding_idx: int = -1, scale_grad_by_freq: bool = False,
                    sparse: bool = False) -> TensorMeta:
    if category(idx.dtype) != 1:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {idx.dtype.name} instead "
                           f"(while checking arguments for embedding)")
    if w.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got a {w.ndim}-D weight {list(w.shape)}")
    return TensorMeta(tuple(idx.shape) + (w.shape[1],), w.dtype)


def _check_indices(w: Any, idx: Any, *rest: Any, **kwargs: Any) -> None:
    """jax would clamp an out-of-range index silently: checked on the host, or inside a
    compiled program (runtime_checks)."""
    if not idx.size:
        return
    rows = w.shape[0]
    error = lambda i: IndexError(f"index out of range in self: embedding of {rows} rows got "  # noqa: E731
                                 f"index {i}")
    if isinstance(idx, jax.core.Tracer):
        return runtime_checks.in_range(idx, 0, rows, error, prefer="low")
    a = check_values(idx)  # a global array: this process's shards
    if a.min() < 0 or a.max() >= rows:
        raise error(a.min() if a.min() < 0 else a.max())


def _add_rows_at(base: Any, flat: Any, rows: Any) -> Any:
    """``base`` with ``rows`` added at row indices ``flat``: ``.at[].add`` in jax, numpy's
    :func:`.indexing.add_rows` (in place; numpy has no ``.at``) on the host tier."""
    if type(base) is np.ndarray:
        add_rows(base, flat, rows)
        return base
    return base.at[flat].add(rows)


def _embedding_grad(g: Any, idx: Any, num_weights: int, padding_idx: int = -1,
                    scale_grad_by_freq: bool = False) -> Any:
    """PyTorch's embedding_dense_backward: each output gradient row added into the weight row
    it was read from (none into padding_idx; divided by that row's count if scaled)."""
    flat = idx.reshape(-1)
    rows = g.reshape(flat.shape[0], g.shape[-1])
    if padding_idx >= 0:
        rows = jnp.where((flat == padding_idx)[:, None], jnp.zeros((), g.dtype), rows)
    if scale_grad_by_freq:
        counts = _add_rows_at(jnp.zeros((num_weights,), g.dtype), flat,
                              jnp.ones(flat.shape, g.dtype))
        rows = rows / counts[flat][:, None]
    return _add_rows_at(jnp.zeros((num_weights, g.shape[-1]), g.dtype), flat, rows)


def _embedding_grad_rule(g: Any, idx: Any, num_weights: int, padding_idx: int = -1,
                         scale_grad_by_freq: bool = False) -> TensorMeta:
    return TensorMeta((num_weights, g.shape[-1]), g.dtype)


def _embedding_grad_backward(gg: Any, g: Any, idx: Any, num_weights: int, padding_idx: int,
                             scale_grad_by_freq: bool, out: Any) -> tuple:
    """The rows of ``gg`` read back (a double backward through embedding)."""
    rows = embedding(gg, idx)
    if padding_idx >= 0:
        rows = rows * ne(idx, padding_idx).unsqueeze(-1).to(rows.dtype)
    if scale_grad_by_freq:
        ones = zeros(list(idx.shape) + [1], dtype=gg.dtype) + 1
        rows = rows / embedding(embedding_dense_backward(ones, idx, num_weights), idx)
    return rows, None


embedding_dense_backward = defop(
    "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
    "int padding_idx=-1, bool scale_grad_by_freq=False) -> Tensor",
    _embedding_grad, host=True, shape=_embedding_grad_rule, save=("indices",),
    backward=_embedding_grad_backward)


def _embedding_backward(g: Any, w: Any, idx: Any, padding_idx: int, scale_grad_by_freq: bool,
                        sparse: bool, out: Any) -> tuple:
    """One op, as PyTorch's EmbeddingBackward0: the rows scatter-added (none at padding_idx)."""
    return embedding_dense_backward(g, idx, w.shape[0], padding_idx, scale_grad_by_freq), None


embedding = defop("embedding(Tensor weight, Tensor indices, int padding_idx=-1, "
                  "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                  lambda w, idx, *a, **k: jnp.take(w, idx, axis=0), host=True, cost="part",
                  shape=_embedding_rule,
                  check=True, pre=_check_indices, save=("indices",),
                  backward=_embedding_backward)
