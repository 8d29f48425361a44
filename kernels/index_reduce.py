"""Writes along one dim: ``index_add`` / ``index_copy`` / ``index_fill`` (a vector of positions
picks whole slices) and ``scatter_reduce`` (an index tensor like ``gather``'s picks single
entries, combined by sum, prod, mean, amax or amin).

Backward formulas follow PyTorch's: ``index_copy``/``index_fill`` give no gradient to the
overwritten slices; ``scatter_reduce``'s "prod" is exact with zeros (a zero's gradient is the
product of the others), its double backward too (where PyTorch raises for two zeros in a
group); "amax"/"amin" split the gradient evenly among ties.

>>> import autograd_compile as acg
>>> acg.zeros(3).index_add(0, acg.tensor([0, 2, 0]), acg.tensor([1.0, 2.0, 3.0])).tolist()
[4.0, 0.0, 2.0]
>>> acg.tensor([5.0, 1.0]).scatter_reduce(0, acg.tensor([0, 0, 1]), acg.tensor([7.0, 2.0, 3.0]),
...                                       "amax").tolist()
[7.0, 3.0]
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from autograd_compile import runtime_checks
from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, inplace, reduce_grad, scaled, wants
from ._dtypes import category, cast, is_float
from ._host import check_values
from ._shapes import numel, shapes_equal, wrap_dim
from .elementwise import eq, logical_and, where
from .factories import ones, zeros
from .indexing import _grid, gather, index, scatter_add, scatter_value, slice_backward, slice_op


def _at(d: int, i: Any) -> tuple:
    """The jnp index tuple that picks positions ``i`` along dim ``d``."""
    return (slice(None),) * d + (i,)


def _index_dtype(name: str, index: Any, exc: type = RuntimeError, what: str = "") -> None:
    if category(index.dtype) != 1:
        raise exc(f"{name}(): Expected dtype int32/int64 for index{what} but got: "
                  f"{index.dtype.name}")


def _check_vector(name: str, index: Any) -> None:
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, got shape "
                         f"{list(index.shape)}")


def _slices_rule(name: str, x: Any, dim: int, index: Any, source: Any) -> TensorMeta:
    """index_add/index_copy: ``source`` is ``x`` with dim ``dim`` resized to len(index)."""
    d = wrap_dim(dim, x.ndim)
    _check_vector(name, index)
    _index_dtype(name, index)
    if source.dtype != x.dtype:
        raise RuntimeError(f"{name}(): self ({x.dtype.name}) and source ({source.dtype.name}) "
                           f"must have the same scalar type")
    mine, theirs = tuple(x.shape) or (1,), tuple(source.shape) or (1,)  # 0-d acts as 1-d
    if len(mine) != len(theirs) or not shapes_equal(mine[:d] + mine[d + 1:],
                                                    theirs[:d] + theirs[d + 1:]):
        raise RuntimeError(f"{name}(): source tensor shape must match self tensor shape, "
                           f"excluding the specified dimension. Got self.shape = "
                           f"{list(x.shape)} source.shape = {list(source.shape)}")
    n = numel(index.shape)
    if theirs[d] != n:
        raise IndexError(f"{name}(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({theirs[d]}), for dim={d}")
    return TensorMeta(tuple(x.shape), x.dtype)


def _bounds(message: str, negatives: bool):
    """A check of the index values (jax would clip or drop an out-of-range one), on the
    host or inside a compiled program (runtime_checks)."""
    def check(x: Any, dim: int, index: Any, *rest: Any, **kw: Any) -> None:
        if not index.size:
            return
        d = wrap_dim(dim, x.ndim)
        size = x.shape[d] if x.ndim else 1
        low = -size if negatives else 0
        if isinstance(index, jax.core.Tracer):
            return runtime_checks.in_range(index, low, size, lambda i: IndexError(
                message.format(i=i, d=d, size=size)))
        a = check_values(index)  # a global array: this process's shards
        bad = a[(a < low) | (a >= size)]
        if bad.size:
            raise IndexError(message.format(i=int(bad[0]), d=d, size=size))
    return check


def _write(x: Any, dim: int, index: Any, how: str, value: Any) -> Any:
    """``x`` with ``value`` added/set at positions ``index`` along ``dim`` (0-d x as 1-d)."""
    flat = x.reshape(-1) if x.ndim == 0 else x
    d = wrap_dim(dim, flat.ndim)
    at = flat.at[_at(d, index.reshape(-1))]
    out = at.add(value) if how == "add" else at.set(value)
    return out.reshape(x.shape)


def _select(g: Any, dim: int, idx: Any) -> Any:
    """``g.index_select(dim, idx)`` in our ops (the gradient read of a slice write)."""
    if g.ndim == 0:
        return g.reshape([1]) if numel(idx.shape) == 1 else g
    d = wrap_dim(dim, g.ndim)
    return index(g, [None] * d + [idx.reshape([-1]) if idx.ndim == 0 else idx])


def _source_grad(g: Any, dim: int, idx: Any, source: Any) -> Any:
    if not wants(source):
        return None
    gs = _select(g, dim, idx)
    return reduce_grad(gs.reshape(list(source.shape)) if source.ndim == 0 else gs, source)


# -- index_add ----------------------------------------------------------------------------------
def _index_add(x: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    src = cast(source, x.dtype)
    src = src if (type(alpha) in (int, bool) and alpha == 1) else src * cast(alpha, x.dtype)
    return _write(x, dim, index, "add", src.reshape(-1) if x.ndim == 0 else src)


def _index_add_backward(g: Any, x: Any, dim: int, idx: Any, source: Any, alpha: Any,
                        out: Any) -> tuple:
    gs = _source_grad(g, dim, idx, source)
    return reduce_grad(g, x), None, None if gs is None else scaled(gs, alpha)


index_add = defop(
    "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
    _index_add, shape=lambda x, dim, i, s, alpha=1: _slices_rule("index_add", x, dim, i, s),
    check=True, pre=_bounds("index_add_(): index {i} is out of bounds for dimension {d} with size "
                            "{size}", False),
    save=("index",), backward=_index_add_backward)


# -- index_copy ---------------------------------------------------------------------------------
def _index_copy_rule(x: Any, dim: int, index: Any, source: Any) -> TensorMeta:
    if category(index.dtype) != 1:
        raise IndexError(f"index_copy_(): Expected a long tensor for index, but got "
                         f"{index.dtype.name}")
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    return _slices_rule("index_copy", x, dim, index, source)


index_copy = defop(
    "index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
    lambda x, dim, i, s: _write(x, dim, i, "set", cast(s, x.dtype).reshape(-1) if x.ndim == 0
                                else cast(s, x.dtype)),
    shape=_index_copy_rule, check=True,
    pre=_bounds("index_copy_(): index {i} is out of bounds for dimension {d} with size {size}",
                False),
    save=("index",), backward=lambda g, x, dim, i, s, out: (
        reduce_grad(index_fill(g, dim, i, 0), x), None, _source_grad(g, dim, i, s)))


# -- index_fill ---------------------------------------------------------------------------------
def _index_fill_rule(x: Any, dim: int, index: Any, value: Any) -> TensorMeta:
    wrap_dim(dim, x.ndim)
    if category(index.dtype) != 1:
        raise IndexError(f"index_fill_(): Expected dtype int64 for index, got {index.dtype.name}")
    if index.ndim > 1:
        raise IndexError(f"index_fill_(): Index has to be a vector/scalar, got shape "
                         f"{list(index.shape)}")
    if hasattr(value, "shape") and value.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return TensorMeta(tuple(x.shape), x.dtype)


def _index_fill_value_grad(g: Any, dim: int, idx: Any, value: Any) -> Any:
    """Every filled entry once (repeated positions are filled once): g minus g with them
    zeroed, summed."""
    if not wants(value):
        return None
    return reduce_grad((g - index_fill(g, dim, idx, 0)).sum(), value)


_FILL_BOUNDS = _bounds("index_fill_(): index {i} is out of bounds for dimension {d} with size "
                       "{size}", True)
_fill = lambda x, dim, i, v: _write(x, dim, i, "set", cast(v, x.dtype))  # noqa: E731
index_fill = defop("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) "
                   "-> Tensor", _fill, shape=_index_fill_rule, check=True, pre=_FILL_BOUNDS,
                   save=("index",), backward=lambda g, x, dim, i, v, out: (
                       reduce_grad(index_fill(g, dim, i, 0), x), None))
index_fill_tensor = defop(
    "index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor", _fill,
    shape=_index_fill_rule, check=True, pre=_FILL_BOUNDS, save=("index",),
    backward=lambda g, x, dim, i, v, out: (reduce_grad(index_fill(g, dim, i, 0), x), None,
                                           _index_fill_value_grad(g, dim, i, v)))
index_add_ = inplace("index_add_", index_add)
index_copy_ = inplace("index_copy_", index_copy)
index_fill_ = inplace("index_fill_", index_fill)
index_fill_tensor_ = inplace("index_fill_", index_fill_tensor)


# -- scatter_reduce ------------------------------------------------------------------------------
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_rule(x: Any, dim: int, index: Any, src: Any, reduce: str, *,
                         include_self: bool = True) -> TensorMeta:
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d = wrap_dim(dim, x.ndim)
    if category(index.dtype) != 1:
        raise RuntimeError(f"scatter_reduce(): Expected dtype int64 for index, got "
                           f"{index.dtype.name}")
    if src.dtype != x.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, "
                           f"got {x.dtype.name} and {src.dtype.name}")
    if not index.ndim == src.ndim == x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self and "
                           "src tensors")
    for k, n in enumerate(index.shape):
        if n > src.shape[k] or (k != d and n > x.shape[k]):
            raise RuntimeError(f"Expected index {list(index.shape)} to be smaller than self "
                               f"{list(x.shape)} apart from dimension {d} and to be smaller "
                               f"size than src {list(src.shape)}")
    return TensorMeta(tuple(x.shape), x.dtype)


def _identity(reduce: str, dtype: Any) -> Any:
    """The value an excluded ``self`` entry starts from: neutral for the reduction."""
    if reduce == "amax":
        return -jnp.inf if is_float(dtype) else jnp.iinfo(dtype).min
    if reduce == "amin":
        return jnp.inf if is_float(dtype) else jnp.iinfo(dtype).max
    return 1 if reduce == "prod" else 0


def _scatter_reduce(x: Any, dim: int, index: Any, src: Any, reduce: str, *,
                    include_self: bool = True) -> Any:
    at = _grid(index, wrap_dim(dim, x.ndim))
    part = cast(src[tuple(slice(0, n) for n in index.shape)], x.dtype)
    base = x if include_self else x.at[at].set(_identity(reduce, x.dtype))
    if reduce == "mean":
        count = jnp.full(x.shape, 1 if include_self else 0, x.dtype).at[at].add(1)
        count = jnp.where(count == 0, 1, count)
        total = base.at[at].add(part)
        return total / count if is_float(x.dtype) else total // count
    how = {"sum": "add", "prod": "multiply", "amax": "max", "amin": "min"}[reduce]
    return getattr(base.at[at], how)(part)


def _part(src: Any, index: Any) -> Any:
    """The entries of ``src`` that ``index`` reads (its leading block)."""
    for k, n in enumerate(index.shape):
        if src.shape[k] != n:
            src = slice_op(src, k, 0, n, 1)
    return src


def _grow(g: Any, shape: tuple) -> Any:
    """A gradient of ``src``'s leading block as one of all of ``src`` (zeros elsewhere)."""
    for k, n in enumerate(shape):
        if g.shape[k] != n:
            g = slice_backward(g, list(g.shape[:k]) + [n] + list(g.shape[k + 1:]), k, 0,
                               g.shape[k], 1)
    return g


def _others_product(v: Any, zeros_in: Any, product: Any, zero_sum: Any) -> Any:
    """The product of the other members of each entry's group, from the group's count of
    zeros, the product of its non-zero members and the sum of its zero members (0, but its
    derivative is 1 at each zero): exact, and so is its own derivative, with zeros."""
    zero = eq(v, 0)
    rest = product / where(zero, 1, v)
    if_nonzero = where(eq(zeros_in, 0), rest, where(eq(zeros_in, 1), zero_sum * rest, 0))
    if_zero = where(eq(zeros_in, 1), product, where(eq(zeros_in, 2),
                                                    (zero_sum - v) * product, 0))
    return where(zero, if_zero, if_nonzero)


def _prod_grads(g: Any, x: Any, dim: int, idx: Any, s: Any, incl: bool, out: Any) -> tuple:
    """Each entry's gradient is the product of the others in its group, zeros included."""
    ones_at = ones(list(idx.shape), dtype=g.dtype)
    own = eq(scatter_add(zeros(list(x.shape), dtype=g.dtype), dim, idx, ones_at), 0)
    zero_x = eq(x, 0) if incl else logical_and(eq(x, 0), own)  # self a member: zero?
    zero_s = eq(s, 0)
    zeros_in = scatter_add(zero_x.to(g.dtype), dim, idx, zero_s.to(g.dtype))
    product = scatter_reduce(where(zero_x, 1, x), dim, idx, where(zero_s, 1, s), "prod",
                             include_self=incl)
    zero_sum = scatter_add(where(zero_x, x, 0), dim, idx, where(zero_s, s, 0))
    gx = g * _others_product(x, zeros_in, product, zero_sum)
    at = [gather(t, dim, idx) for t in (zeros_in, product, zero_sum)]
    return gx, gather(g, dim, idx) * _others_product(s, *at)


def _extremum_grads(g: Any, x: Any, dim: int, idx: Any, s: Any, incl: bool,
                    out: Any) -> tuple:
    """Ties (self and src entries equal to the result) share the gradient evenly."""
    self_hit = eq(x, out).to(g.dtype)
    if not incl:  # an excluded self entry is no candidate
        self_hit = scatter_value(self_hit, dim, idx, 0)
    src_hit = eq(s, gather(out, dim, idx)).to(g.dtype)
    share = g / scatter_add(self_hit, dim, idx, src_hit)
    return self_hit * share, src_hit * gather(share, dim, idx)


def _scatter_reduce_backward(g: Any, x: Any, dim: int, idx: Any, src: Any, reduce: str,
                             include_self: bool, out: Any) -> tuple:
    s = _part(src, idx)
    if reduce == "sum":
        gx, gs = g, gather(g, dim, idx)
    elif reduce == "mean":
        count = scatter_add((ones if include_self else zeros)(list(x.shape), dtype=g.dtype),
                            dim, idx, ones(list(idx.shape), dtype=g.dtype))
        gx = g / where(eq(count, 0), 1, count)
        gs = gather(gx, dim, idx)
    elif reduce == "prod":
        gx, gs = _prod_grads(g, x, dim, idx, s, include_self, out)
    else:
        gx, gs = _extremum_grads(g, x, dim, idx, s, include_self, out)
    if not include_self:  # self's entries at written positions did not take part
        gx = scatter_value(gx, dim, idx, 0)
    gs = _grow(gs, tuple(src.shape)) if wants(src) else None
    return reduce_grad(gx, x), None, reduce_grad(gs, src)


_SCATTER_BOUNDS = _bounds("scatter_reduce(): index {i} is out of bounds for dimension {d} with "
                          "size {size}", False)
scatter_reduce = defop(
    "scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
    "bool include_self=True) -> Tensor", _scatter_reduce, shape=_scatter_reduce_rule,
    check=True, pre=_SCATTER_BOUNDS, save=("self", "index", "src", "out"),
    backward=_scatter_reduce_backward)
scatter_reduce_ = inplace("scatter_reduce_", scatter_reduce)
