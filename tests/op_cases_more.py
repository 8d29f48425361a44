"""Op-table cases for the index writes and rearrangements real programs reach second
(index_add/copy/fill, scatter_reduce, roll, repeat_interleave, cumprod, diff, ...);
test_ops.py runs them through every check (forward vs jnp, backward vs jax.vjp and numerical
gradients in float64, fake and symbolic shapes).

References are written independently of our kernels: one-hot sums and products instead of
scatters, so a wrong position or a wrong combination shows.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
from _op_spec import Case, I, T, V


def _hits(idx, n):
    """[..., K, n] booleans: index entry k names position p."""
    return idx[..., :, None] == jnp.arange(n)


def _onehot(idx, n, dtype):
    return _hits(idx, n).astype(dtype)


# -- index_add / index_copy / index_fill references (dim 0 and dim 1 of a matrix) ---------------
def _index_add_rows(x, i, s, alpha=1):
    return x + alpha * (_onehot(i, x.shape[0], x.dtype).T @ s)


def _index_add_cols(x, i, s, alpha=1):
    return x + alpha * (s @ _onehot(i, x.shape[1], x.dtype))


def _index_copy_rows(x, i, s):  # indices unique
    hit = _onehot(i, x.shape[0], x.dtype)
    return x * (1 - hit.sum(0))[:, None] + hit.T @ s


def _filled(i, n):
    return _hits(i.reshape(-1) % n, n).any(0)


# -- scatter_reduce reference along dim 1 of a matrix --------------------------------------------
_NEUTRAL = {"sum": 0.0, "prod": 1.0, "mean": 0.0, "amax": -jnp.inf, "amin": jnp.inf}


def _scatter_reduce_ref(x, idx, src, reduce, include_self=True):
    hit = _hits(idx, x.shape[1])  # R, K, C
    s = src[:, :idx.shape[1], None]
    vals = jnp.where(hit, s, _NEUTRAL[reduce])
    landed = hit.any(1)
    base = x if include_self else jnp.where(landed, _NEUTRAL[reduce], x)
    if reduce == "sum":
        return base + vals.sum(1)
    if reduce == "prod":
        return base * vals.prod(1)
    if reduce == "mean":
        n = hit.sum(1) + (1 if include_self else 0)
        return (base + vals.sum(1)) / jnp.where(n == 0, 1, n)
    pick = jnp.maximum if reduce == "amax" else jnp.minimum
    return pick(base, vals.max(1) if reduce == "amax" else vals.min(1))


# prod with zeros: a group with one zero, one with two, one where only self is zero
ZX = V([[1.5, 0.0, -2.0, 0.5], [0.7, -1.2, 0.9, 2.0]])
ZI = V([[0, 0, 1], [3, 3, 2]], "int")
ZS = V([[0.0, 2.0, 3.0], [0.0, 0.0, -0.5]])
SORTED = V([-1.5, -0.2, 0.0, 0.7, 1.9])
SI = V([[1, 3, 1, 0], [2, 2, 2, 0], [3, 0, 1, 1]], "int")  # repeated targets per row


def _sr_case(name, reduce, include_self=True, args=(T(3, 4), SI, T(3, 5)), double=False):
    return Case(name, lambda x, i, s: x.scatter_reduce(1, i, s, reduce,
                                                       include_self=include_self),
                lambda x, i, s: _scatter_reduce_ref(x, i, s, reduce, include_self), args,
                double=double)


MORE_CASES: list[Case] = [
    # index_add
    Case("index_add_rows_repeated", lambda x, i, s: x.index_add(0, i, s), _index_add_rows,
         (T(3, 4), I(5, hi=3), T(5, 4)), double=True),
    Case("index_add_cols_alpha", lambda x, i, s: acg.index_add(x, -1, i, s, alpha=-2.5),
         lambda x, i, s: _index_add_cols(x, i, s, -2.5), (T(3, 4), I(2, hi=4), T(3, 2))),
    Case("index_add_inplace", lambda x, i, s: (x * 1).index_add_(0, i, s, alpha=2),
         lambda x, i, s: _index_add_rows(x, i, s, 2), (T(4, 2), V([3, 3, 0], "int"),
                                                      T(3, 2))),
    Case("index_add_ints", lambda x, i, s: x.index_add(0, i, s),
         lambda x, i, s: x + (_onehot(i, 4, jnp.int64).T @ s), (I(4, 2, hi=9), V([1, 1], "int"),
                                                                 I(2, 2, hi=5)), grad=False),
    # index_copy
    Case("index_copy_rows", lambda x, i, s: x.index_copy(0, i, s), _index_copy_rows,
         (T(4, 3), V([2, 0], "int"), T(2, 3))),
    Case("index_copy_inplace_cols", lambda x, i, s: (x * 1).index_copy_(1, i, s),
         lambda x, i, s: _index_copy_rows(x.T, i, s.T).T, (T(2, 4), V([3, 1, 0], "int"),
                                                           T(2, 3))),
    # index_fill
    Case("index_fill_scalar_neg_repeated", lambda x, i: x.index_fill(1, i, -0.5),
         lambda x, i: jnp.where(_filled(i, 4), -0.5, x), (T(3, 4), V([-1, 0, 3], "int"))),
    Case("index_fill_tensor_value", lambda x, i, v: acg.index_fill(x, 0, i, v),
         lambda x, i, v: jnp.where(_filled(i, 3)[:, None], v, x),
         (T(3, 4), V([2, 2, 0], "int"), T())),
    Case("index_fill_inplace", lambda x, i, v: (x * 1).index_fill_(0, i, v),
         lambda x, i, v: jnp.where(_filled(i, 3)[:, None], v, x), (T(3, 2), V(1, "int"), T())),
    # scatter_reduce: every reduction, with and without self
    _sr_case("scatter_reduce_sum", "sum"),
    _sr_case("scatter_reduce_prod", "prod", double=True),
    _sr_case("scatter_reduce_mean", "mean", double=True),
    _sr_case("scatter_reduce_amax", "amax"),
    _sr_case("scatter_reduce_amin", "amin"),
    _sr_case("scatter_reduce_sum_exclude_self", "sum", False),
    _sr_case("scatter_reduce_mean_exclude_self", "mean", False),
    _sr_case("scatter_reduce_amax_exclude_self", "amax", False),
    _sr_case("scatter_reduce_prod_zeros", "prod", True, (ZX, ZI, ZS), double=True),
    _sr_case("scatter_reduce_prod_zeros_exclude_self", "prod", False, (ZX, ZI, ZS), double=True),
    Case("scatter_reduce_dim0_inplace", lambda x, i, s: (x * 1).scatter_reduce_(
        0, i, s, "amin"), lambda x, i, s: _scatter_reduce_ref(x.T, i.T, s.T, "amin").T,
        (T(4, 3), V([[1, 3, 1], [1, 0, 2]], "int"), T(2, 3))),
    Case("scatter_reduce_mean_ints", lambda x, i, s: x.scatter_reduce(1, i, s, "mean"),
         lambda x, i, s: (x + jnp.where(_hits(i, 4), s[:, :, None], 0).sum(1))
         // (1 + _hits(i, 4).sum(1)), (I(3, 4, hi=9), SI, I(3, 4, hi=9)), grad=False),
    Case("scatter_reduce_legacy_add", lambda x, i, s: x.scatter(1, i, s, reduce="add"),
         lambda x, i, s: _scatter_reduce_ref(x, i, s, "sum"), (T(3, 4), SI, T(3, 4))),
    Case("scatter_reduce_legacy_multiply_value", lambda x, i: acg.scatter(
        x, 1, i, 1.5, reduce="multiply"), lambda x, i: _scatter_reduce_ref(
        x, i, jnp.full(i.shape, 1.5), "prod"), (T(3, 4), SI)),
    Case("scatter_reduce_legacy_inplace", lambda x, i, s: (x * 1).scatter_(
        1, i, s, reduce="multiply"), lambda x, i, s: _scatter_reduce_ref(x, i, s, "prod"),
        (T(3, 4), SI, T(3, 4))),
    # roll
    Case("roll_dims", lambda x: x.roll((1, -2), (0, -1)),
         lambda x: jnp.roll(x, (1, -2), (0, 2)), (T(3, 2, 4),)),
    Case("roll_flat", lambda x: acg.roll(x, 5), lambda x: jnp.roll(x.ravel(), 5).reshape(3, 4),
         (T(3, 4),), double=True),
    # repeat_interleave
    Case("repeat_interleave_int_dim", lambda x: x.repeat_interleave(3, dim=1),
         lambda x: jnp.repeat(x, 3, 1), (T(2, 3),)),
    Case("repeat_interleave_int_flat", lambda x: acg.repeat_interleave(x, 2),
         lambda x: jnp.repeat(x.ravel(), 2), (T(2, 3),)),
    Case("repeat_interleave_tensor", lambda x, r: x.repeat_interleave(r, dim=0, output_size=6),
         lambda x, r: jnp.repeat(x, np.array([2, 0, 4]), 0), (T(3, 2), V([2, 0, 4], "int")),
         double=True),
    Case("repeat_interleave_tensor_eager_size", lambda x, r: acg.repeat_interleave(x, r, -1),
         lambda x, r: jnp.repeat(x, np.array([1, 3]), -1), (T(3, 2), V([1, 3], "int")),
         fake=False),
    Case("repeat_interleave_one_count_flat", lambda x, r: x.repeat_interleave(
        r, output_size=12), lambda x, r: jnp.repeat(x.ravel(), 2), (T(2, 3), V([2], "int"))),
    # cumprod: no zeros, and rows with one, two and a leading zero
    Case("cumprod", lambda x: x.cumprod(1), lambda x: jnp.cumprod(x, 1), (T(3, 4),),
         double=True),
    Case("cumprod_zeros", lambda x: acg.cumprod(x, -1), lambda x: jnp.cumprod(x, -1),
         (V([[0.5, -1.0, 0.0, 1.5, 2.0], [0.0, 3.0, -0.25, 0.0, 1.0],
             [1.2, 0.7, -0.9, 1.1, 0.0]]),), double=True),
    Case("cumprod_inplace_dim0", lambda x: (x * 1).cumprod_(0), lambda x: jnp.cumprod(x, 0),
         (T(3, 2),)),
    Case("cumprod_ints", lambda x: x.cumprod(0), lambda x: jnp.cumprod(x, 0),
         (I(4, hi=5),), grad=False),
    # take_along_dim
    Case("take_along_dim", lambda x, i: acg.take_along_dim(x, i, 1),
         lambda x, i: jnp.take_along_axis(x, i, 1), (T(3, 4), I(3, 2, hi=4))),
    Case("take_along_dim_broadcast", lambda x, i: x.take_along_dim(i, dim=-1),
         lambda x, i: jnp.take_along_axis(jnp.broadcast_to(x, (2, 3, 4)),
                                          jnp.broadcast_to(i, (2, 3, 5)), -1),
         (T(2, 1, 4), I(1, 3, 5, hi=4))),
    Case("take_along_dim_flat", lambda x, i: acg.take_along_dim(x, i),
         lambda x, i: x.ravel()[i.ravel()], (T(3, 4), I(2, 3, hi=12))),
    # nan_to_num
    Case("nan_to_num", lambda x, c: (x + c).nan_to_num(posinf=3.0, neginf=-4.0),
         lambda x, c: jnp.nan_to_num(x + c, posinf=3.0, neginf=-4.0),
         (T(2, 3), V([[1.0, np.inf, np.nan], [-np.inf, 0.0, 2.0]], "const"))),
    Case("nan_to_num_values_inplace", lambda x, c: (x + c).nan_to_num_(1.5, 7.0, -8.0),
         lambda x, c: jnp.nan_to_num(x + c, nan=1.5, posinf=7.0, neginf=-8.0),
         (T(4), V([np.nan, 1.0, -np.inf, np.inf], "const"))),
    # diff
    Case("diff", lambda x: x.diff(), lambda x: jnp.diff(x), (T(3, 5),)),
    Case("diff_n2_dim0_ends", lambda x, p, a: acg.diff(x, 2, 0, prepend=p, append=a),
         lambda x, p, a: jnp.diff(x, 2, 0, prepend=p, append=a), (T(3, 4), T(1, 4), T(2, 4))),
    Case("diff_scalar_prepend", lambda x, p: x.diff(dim=1, prepend=p),
         lambda x, p: jnp.diff(x, 1, 1, prepend=jnp.broadcast_to(p, (3, 1))), (T(3, 4), T())),
    Case("diff_bool", lambda m: m.diff(), lambda m: jnp.logical_xor(m[:, 1:], m[:, :-1]),
         (T(3, 4, kind="bool"),), grad=False),
    # positions by value: searchsorted / bucketize (counts of smaller entries as reference)
    Case("searchsorted", lambda s, v: acg.searchsorted(s, v),
         lambda s, v: (s < v[..., None]).sum(-1), (SORTED, T(3, 4)), grad=False),
    Case("searchsorted_rows_right_int32", lambda s, v: acg.searchsorted(s, v, right=True,
                                                                        out_int32=True),
         lambda s, v: (s[:, None, :] <= v[..., None]).sum(-1).astype(jnp.int32),
         (V([[0.0, 1.0, 1.0, 3.0], [-2.0, -1.0, 0.5, 0.5]]), V([[1.0, -5.0, 3.5],
                                                                [0.5, 0.0, -1.0]])),
         grad=False),
    Case("searchsorted_sorter_side", lambda s, v, o: acg.searchsorted(s, v, side="right",
                                                                      sorter=o),
         lambda s, v, o: (s <= v[..., None]).sum(-1), (V([3.0, -1.0, 0.5, 2.0]), T(5),
                                                       V([1, 2, 3, 0], "int")), grad=False),
    Case("bucketize", lambda x, b: acg.bucketize(x, b), lambda x, b: (b < x[..., None]).sum(-1),
         (T(2, 3), SORTED), grad=False),
    Case("bucketize_right_ints", lambda x, b: acg.bucketize(x, b, right=True),
         lambda x, b: (b <= x[..., None]).sum(-1), (I(6, hi=6), V([1, 3, 3, 5], "int")),
         grad=False),
    Case("bincount", lambda x: x.bincount(), lambda x: _onehot(x, 6, jnp.int64).sum(0),
         (V([0, 5, 2, 2, 5, 5], "int"),), grad=False, fake=False),
    Case("bincount_weights_minlength", lambda x, w: acg.bincount(x, w, minlength=7),
         lambda x, w: w @ _onehot(x, 7, w.dtype), (V([3, 1, 1, 0], "int"), T(4)), grad=False,
         fake=False),
    Case("where_condition_only", lambda m: acg.where(m), lambda m: jnp.nonzero(m, size=3),
         (V([[True, False, True], [False, False, True]], "bool"),), grad=False, fake=False),
    Case("nonzero_as_tuple", lambda x: (x > 0).nonzero(as_tuple=True),
         lambda x: jnp.nonzero(x > 0, size=2), (V([0.5, -1.0, 2.0, 0.0]),), grad=False,
         fake=False),
]
