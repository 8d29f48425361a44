"""Op-table cases for the tensor ops (selection, sorting, scatter/gather, masks, indexing assignment); test_ops.py runs them through every check."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F
from _op_spec import Arg, B, C, Case, I, P, T, U, V  # noqa: F401


def _put(x, index, value):
    """``x[index] = value`` on a fresh non-leaf copy (so the leaf ``x`` keeps its gradient)."""
    y = x * 1
    y[index] = value
    return y


def _ref_scatter(x, i, s):
    return x.at[jnp.arange(x.shape[0])[:, None], i].set(s[:, :i.shape[1]])


_PERM = V([[2, 0, 1, 3], [3, 1, 0, 2], [0, 3, 2, 1]], "int")  # unique per row: scatter is exact
_DISTINCT = V([[0.3, -1.2, 2.5, 0.9, -0.4], [1.1, 0.2, -2.0, 1.7, 0.6]])  # no ties: sort is smooth

TENSOR_CASES: list[Case] = [
    # triangles
    Case("tril", lambda x: x.tril(), jnp.tril, (T(4, 4),)),
    Case("tril_diag_batched", lambda x: acg.tril(x, -1), lambda x: jnp.tril(x, -1),
         (T(2, 3, 4),)),
    Case("triu_diag", lambda x: acg.triu(x, diagonal=1), lambda x: jnp.triu(x, 1), (T(3, 5),)),
    # masks
    Case("masked_fill_broadcast_mask", lambda x, m: x.masked_fill(m, float("-inf")).exp(),
         lambda x, m: jnp.exp(jnp.where(m, -jnp.inf, x)), (T(2, 3, 4), B(3, 1))),
    Case("masked_fill_tensor_value", lambda x, m, v: x.masked_fill(m, v),
         lambda x, m, v: jnp.where(m, v, x), (T(3, 4), B(3, 4), T())),
    Case("masked_fill_causal", lambda x: x.masked_fill(acg.ones(4, 4).triu(1).bool(), -1e9)
         .softmax(-1), lambda x: jax.nn.softmax(jnp.where(jnp.triu(jnp.ones((4, 4)), 1) > 0,
                                                          -1e9, x), -1), (T(2, 4, 4),)),
    Case("masked_select", lambda x, m: acg.masked_select(x, m), lambda x, m: x[m],
         (T(3, 4), B(3, 4)), fake=False),
    Case("masked_select_broadcast", lambda x, m: x.masked_select(m),
         lambda x, m: jnp.broadcast_to(x, (3, 4))[np.broadcast_to(np.asarray(m), (3, 4))],
         (T(1, 4), B(3, 1)), fake=False),
    # scans and reductions
    Case("cumsum_method", lambda x: x.cumsum(1), lambda x: jnp.cumsum(x, 1), (T(3, 4),)),
    Case("cumsum_neg_dim", lambda x: acg.cumsum(x, dim=-3), lambda x: jnp.cumsum(x, 0),
         (T(3, 2, 2),)),
    Case("logsumexp_last_dim", lambda x: x.logsumexp(-1), lambda x: jax.nn.logsumexp(x, -1), (T(3, 4),)),
    Case("logsumexp_dims_keepdim", lambda x: acg.logsumexp(x, (0, 2), keepdim=True),
         lambda x: jax.nn.logsumexp(x, (0, 2), keepdims=True), (T(2, 3, 4),)),
    Case("argmax_keepdim", lambda x: x.argmax(1, keepdim=True),
         lambda x: jnp.argmax(x, 1, keepdims=True), (T(3, 4),), grad=False),
    Case("argmin_flat", lambda x: acg.argmin(x), lambda x: jnp.argmin(x), (T(3, 4),),
         grad=False),
    # sorting and selection by value
    Case("topk", lambda x: x.topk(2), lambda x: (jax.lax.top_k(x, 2)[0],
                                                 jax.lax.top_k(x, 2)[1].astype(jnp.int64)),
         (_DISTINCT,)),
    Case("topk_smallest_dim0", lambda x: acg.topk(x, 1, dim=0, largest=False),
         lambda x: (-jax.lax.top_k(-x.T, 1)[0].T,
                    jax.lax.top_k(-x.T, 1)[1].T.astype(jnp.int64)),
         (_DISTINCT,)),
    Case("sort", lambda x: x.sort(), lambda x: (jnp.sort(x, -1), jnp.argsort(x, -1)),
         (_DISTINCT,)),
    Case("sort_descending_dim0", lambda x: acg.sort(x, 0, descending=True),
         lambda x: (-jnp.sort(-x, 0), jnp.argsort(-x, 0)), (_DISTINCT,)),
    Case("argsort_stable_ties", lambda x: x.argsort(stable=True),
         lambda x: jnp.argsort(x, stable=True), (V([3.0, 1.0, 3.0, 1.0, 2.0]),), grad=False),
    # gather / scatter / index_select
    Case("gather_dim0", lambda x, i: acg.gather(x, 0, i), lambda x, i: jnp.take_along_axis(
        x, i, 0), (T(3, 4), I(2, 4, hi=3))),
    Case("scatter_src", lambda x, i, s: x.scatter(1, i, s), _ref_scatter,
         (T(3, 4), _PERM, T(3, 4))),
    Case("scatter_value", lambda x, i: acg.scatter(x, 1, i[:, :2], 0.5),
         lambda x, i: x.at[jnp.arange(3)[:, None], i[:, :2]].set(0.5), (T(3, 4), _PERM)),
    Case("scatter_inplace", lambda x, i, s: (x * 1).scatter_(1, i, s), _ref_scatter,
         (T(3, 4), _PERM, T(3, 4))),
    Case("scatter_add_inplace", lambda x, i, s: (x * 1).scatter_add_(1, i, s),
         lambda x, i, s: x.at[jnp.arange(3)[:, None], i].add(s), (T(3, 4), I(3, 5, hi=4),
                                                                  T(3, 5))),
    Case("index_select_dim0", lambda x, i: acg.index_select(x, 0, i), lambda x, i: x[i],
         (T(3, 4), I(5, hi=3))),
    # one_hot, isclose, einsum
    Case("one_hot", lambda i: F.one_hot(i, 5), lambda i: jax.nn.one_hot(i, 5, dtype=jnp.int64),
         (I(2, 3, hi=5),), grad=False),
    Case("isclose", lambda x, y: acg.isclose(x, x + y * 1e-3, atol=1e-3),
         lambda x, y: jnp.isclose(x, x + y * 1e-3, atol=1e-3), (T(3, 4), T(4)), grad=False),
    Case("einsum_matmul", lambda a, b: acg.einsum("ij,jk->ik", a, b),
         lambda a, b: jnp.einsum("ij,jk->ik", a, b), (T(3, 4), T(4, 5)), double=True),
    Case("einsum_attention", lambda q, k: acg.einsum("bhqd,bhkd->bhqk", q, k),
         lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k), (T(2, 2, 3, 4), T(2, 2, 5, 4))),
    Case("einsum_ellipsis_implicit", lambda a, b: acg.einsum("...ij,jk", [a, b]),
         lambda a, b: jnp.einsum("...ij,jk", a, b), (T(2, 3, 4), T(4, 5))),
    Case("einsum_sum_out_one_operand", lambda a, b: acg.einsum("ij,k->j", a, b),
         lambda a, b: jnp.einsum("ij,k->j", a, b), (T(3, 4), T(5))),
    Case("einsum_outer_transpose", lambda a, b: acg.einsum("i,j->ji", a, b),
         lambda a, b: jnp.einsum("i,j->ji", a, b), (T(3), T(4))),
    Case("einsum_trace", lambda a: acg.einsum("ii", a), lambda a: jnp.einsum("ii", a),
         (T(3, 3),)),
    # flatten / unflatten
    Case("flatten_middle", lambda x: x.flatten(1, 2), lambda x: x.reshape(2, 12, 5),
         (T(2, 3, 4, 5),)),
    Case("unflatten_infer", lambda x: x.unflatten(1, (2, -1)), lambda x: x.reshape(3, 2, 2),
         (T(3, 4),)),
    # indexing assignment
    Case("setitem_last_position", lambda x, v: _put(x, (slice(None), -1, slice(None)), v),
         lambda x, v: x.at[:, -1, :].set(v), (T(2, 3, 4), T(2, 4))),
    Case("getitem_last_position", lambda x: x[:, -1, :], lambda x: x[:, -1, :], (T(2, 3, 4),)),
    Case("setitem_row_mask", lambda x, m, v: _put(x, m, v),
         lambda x, m, v: jnp.where(m[:, None], v, x), (T(4, 3), V([True, False, True, False],
                                                                   "bool"), T(3)),
         fake=False),
    Case("setitem_logits_below_kth", lambda x: _put(x, x < x.topk(2).values[..., -1:],
                                                     float("-inf")).softmax(-1),
         lambda x: jax.nn.softmax(jnp.where(x < jax.lax.top_k(x, 2)[0][..., -1:], -jnp.inf,
                                            x), -1), (_DISTINCT,)),
    Case("setitem_index_tensor", lambda x, i, v: _put(x, i, v),
         lambda x, i, v: x.at[i].set(v), (T(5, 3), V([4, 0], "int"), T(2, 3))),
]
