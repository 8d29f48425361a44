"""Indexing: reads (select, slice, index, gather) paired with their writes (the *_backward and
*_scatter ops, index_put, scatter_add), and ``x[...]`` / ``x[...] = v`` built from them.

``x[i, 1:3, None, idx]`` becomes select -> slice -> unsqueeze -> index; assignment reads the
same chain, then writes the value back up it (scatter of each step in reverse) and finally
``copy_``s the result into ``x``: one in-place primitive, and every step differentiable.
"""
from __future__ import annotations

import operator
from typing import Any

import jax
import numpy as np

from autograd_compile import runtime_checks
from autograd_compile.autograd.derivatives import alias_for_inplace
from autograd_compile.tracing.fake import TensorMeta
from autograd_compile.tracing.symbolic_shapes import SymInt
from autograd_compile.tensor import Tensor, _make

from . import _xp
from ._defop import NONDIFF, defop, inplace, reduce_grad
from ._dtypes import BOOL, DEFAULT_INT, cast, category, is_float
from ._host import check_values
from ._shapes import (broadcast_shapes, is_tensor_like, shape_of, shapes_equal, slice_length,
                      wrap_dim)
from .elementwise import where
from ._xp import jnp, lax
from .factories import full, zeros
from .shape import copy_
from .views import check_writable, view_of, write_through


def _at(d: int, i: Any) -> tuple:
    """The jnp index tuple that picks ``i`` (an int or slice) along dim ``d``."""
    return (slice(None),) * d + (i,)


def _scatter_rule(x: Any, part: TensorMeta) -> TensorMeta:
    """A write into ``part`` of ``x`` (already validated by the read's rule) keeps x's meta."""
    return TensorMeta(tuple(x.shape), x.dtype)


# -- select: one position along a dim ---------------------------------------------------------
def _position(index: Any, size: Any, d: int) -> Any:
    if not -size <= index < size:
        raise RuntimeError(f"select(): index {index} out of range for tensor of size {size} at "
                           f"dimension {d}")
    return index + size if index < 0 else index


def _selected(shape: tuple, dim: int, index: Any) -> tuple:
    d = wrap_dim(dim, len(shape))
    _position(index, shape[d], d)
    return shape[:d] + shape[d + 1:]


def _select_rule(x: Any, dim: int, index: Any) -> TensorMeta:
    return TensorMeta(_selected(tuple(x.shape), dim, index), x.dtype)


# the index is traced (one program serves every position: ``for row in x`` compiles once);
# the shape rule checks its bounds eagerly first (check=True)
def _select(x: Any, dim: int, index: Any) -> Any:
    d = wrap_dim(dim, x.ndim)
    i = jnp.where(index < 0, index + x.shape[d], index)
    return jax.lax.dynamic_index_in_dim(x, i, d, keepdims=False)


def _select_write(base: Any, src: Any, dim: int, index: Any) -> Any:
    d = wrap_dim(dim, base.ndim)
    i = jnp.where(index < 0, index + base.shape[d], index)
    part = jnp.broadcast_to(cast(src, base.dtype), base.shape[:d] + base.shape[d + 1:])
    return jax.lax.dynamic_update_index_in_dim(base, jnp.expand_dims(part, d), i, d)


def _select_backward_rule(g: Any, sizes: Any, dim: int, i: Any) -> TensorMeta:
    _selected(tuple(sizes), dim, i)
    return TensorMeta(tuple(sizes), g.dtype)


def _host_select(x: Any, dim: int, index: Any) -> Any:
    return x[_at(wrap_dim(dim, x.ndim), index)]


def _host_select_write(base: Any, src: Any, dim: int, index: Any) -> Any:
    out = base.copy()  # numpy writes in place; the op is functional
    out[_at(wrap_dim(dim, base.ndim), index)] = src
    return out


_INDEX = {"dynamic": ("index",), "check": True}
select = defop("select.int(Tensor self, int dim, SymInt index) -> Tensor", _select,
               host=_host_select, cost="part",
               shape=_select_rule, save=(), **_INDEX,
               backward=lambda g, x, dim, i, out: select_backward(g, list(x.shape), dim, i))
select_backward = defop(
    "select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor",
    lambda g, sizes, dim, i: _select_write(jnp.zeros(tuple(sizes), g.dtype), g, dim, i),
    host=lambda g, sizes, dim, i: _host_select_write(jnp.zeros(tuple(sizes), g.dtype), g, dim,
                                                     i),
    shape=_select_backward_rule, save=(), **_INDEX,
    backward=lambda gg, g, sizes, dim, i, out: select(gg, dim, i))
select_scatter = defop(
    "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", _select_write,
    host=_host_select_write,
    shape=lambda x, src, dim, i: _scatter_rule(x, _select_rule(x, dim, i)), save=(), **_INDEX,
    backward=lambda g, x, src, dim, i, out: (
        reduce_grad(select_scatter(g, 0, dim, i), x), reduce_grad(select(g, dim, i), src)))


# -- slice: start:end:step along a dim --------------------------------------------------------
def _bounds(shape: tuple, dim: int, start: Any, end: Any, step: Any) -> tuple:
    d = wrap_dim(dim, len(shape))
    return (d, *slice_length(shape[d], start, end, step))


def _slice_rule(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: Any = 1) -> Any:
    d, _, _, n = _bounds(tuple(x.shape), dim, start, end, step)
    return TensorMeta(tuple(x.shape[:d]) + (n,) + tuple(x.shape[d + 1:]), x.dtype)


def _slice(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: Any = 1) -> Any:
    d, s, e, _ = _bounds(x.shape, dim, start, end, step)
    return jax.lax.slice_in_dim(x, s, e, step, axis=d)


def _slice_write(base: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                 step: Any = 1) -> Any:
    d, s, e, _ = _bounds(base.shape, dim, start, end, step)
    return base.at[_at(d, slice(s, e, step))].set(cast(src, base.dtype))


def _host_slice(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: Any = 1) -> Any:
    d, s, e, _ = _bounds(x.shape, dim, start, end, step)
    return x[_at(d, slice(s, e, step))]


def _host_slice_write(base: Any, src: Any, dim: int = 0, start: Any = None, end: Any = None,
                      step: Any = 1) -> Any:
    d, s, e, _ = _bounds(base.shape, dim, start, end, step)
    out = base.copy()  # numpy writes in place; the op is functional
    out[_at(d, slice(s, e, step))] = src
    return out


_SLICE = "int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1"
slice_op = defop(f"slice.Tensor(Tensor self, {_SLICE}) -> Tensor", _slice, shape=_slice_rule,
                 host=_host_slice, cost="part",
                 save=(), backward=lambda g, x, dim, s, e, step, out: slice_backward(
                     g, list(x.shape), dim, s, e, step))
slice_backward = defop(
    f"slice_backward(Tensor grad_output, SymInt[] input_sizes, {_SLICE}) -> Tensor",
    lambda g, sizes, *a: _slice_write(jnp.zeros(tuple(sizes), g.dtype), g, *a),
    host=lambda g, sizes, *a: _host_slice_write(jnp.zeros(tuple(sizes), g.dtype), g, *a),
    shape=lambda g, sizes, *a: TensorMeta(tuple(sizes), g.dtype), save=(),
    backward=lambda gg, g, sizes, dim, s, e, step, out: slice_op(gg, dim, s, e, step))
slice_scatter = defop(
    f"slice_scatter(Tensor self, Tensor src, {_SLICE}) -> Tensor", _slice_write,
    host=_host_slice_write,
    shape=lambda x, src, *a: _scatter_rule(x, _slice_rule(x, *a)),
    save=(), backward=lambda g, x, src, dim, s, e, step, out: (
        reduce_grad(slice_scatter(g, 0, dim, s, e, step), x),
        reduce_grad(slice_op(g, dim, s, e, step), src)))


# -- index: integer tensors per leading dim (None = the whole dim) ----------------------------
def _index_shape(shape: tuple, indices: list) -> tuple:
    """numpy's advanced-indexing result shape: broadcast index shapes go where the indexed
    dims were if those are adjacent, else to the front."""
    if len(indices) > len(shape):
        raise RuntimeError(f"too many indices for tensor of dimension {len(shape)} (got "
                           f"{len(indices)})")
    used = [(d, t) for d, t in enumerate(indices) if t is not None]
    if not used:
        return shape
    for _, t in used:
        if category(t.dtype) != 1:
            raise RuntimeError(f"tensors used as indices must be long or int tensors (bool "
                               f"masks are turned into indices before), got {t.dtype.name}")
    try:
        b = broadcast_shapes(*(tuple(t.shape) for _, t in used))
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for _, t in used)
        raise RuntimeError(f"shape mismatch: indexing tensors could not be broadcast together "
                           f"with shapes {shapes}") from None
    dims = [d for d, _ in used]
    if dims == list(range(dims[0], dims[-1] + 1)):
        return shape[:dims[0]] + b + shape[dims[-1] + 1:]
    return b + tuple(s for d, s in enumerate(shape) if d not in dims)


def _check_bounds(x: Any, indices: list, *rest: Any) -> None:
    """jax would clamp an out-of-range index silently: checked on the host, or inside a
    compiled program (runtime_checks)."""
    shape = x.shape
    for d, t in enumerate(indices):
        if t is None or not t.size:
            continue
        if isinstance(t, jax.core.Tracer):
            if t.dtype != bool:
                runtime_checks.in_range(t, -shape[d], shape[d], _out_of_bounds(d, shape[d]),
                                        prefer="high")
            continue
        a = check_values(t)  # a global array: this process's shards
        bad = a.max() if a.max() >= shape[d] else a.min() if a.min() < -shape[d] else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                             f"{shape[d]}")


def _out_of_bounds(d: int, size: int) -> Any:
    return lambda i: IndexError(f"index {i} is out of bounds for dimension {d} with size {size}")


def _jnp_index(indices: list) -> tuple:
    return tuple(slice(None) if t is None else t for t in indices)


def _index(x: Any, indices: list) -> Any:
    return x[_jnp_index(indices)]


def _index_put_rule(x: Any, indices: list, values: Any, accumulate: bool = False) -> TensorMeta:
    target = _index_shape(tuple(x.shape), indices)
    if broadcast_shapes(shape_of(values), target) != target:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape_of(values))} "
                           f"cannot be broadcast to indexing result of shape {list(target)}")
    return TensorMeta(tuple(x.shape), x.dtype)


def _index_put(x: Any, indices: list, values: Any, accumulate: bool = False) -> Any:
    at = x.at[_jnp_index(indices)]
    return at.add(cast(values, x.dtype)) if accumulate else at.set(cast(values, x.dtype))


def _host_index_put(x: Any, indices: list, values: Any, accumulate: bool = False) -> Any:
    out, at = x.copy(), _jnp_index(indices)  # numpy writes in place; the op is functional
    if accumulate and len(indices) == 1 and x.ndim and np.ndim(indices[0]) and \
            indices[0].dtype.kind in "iu":  # rows picked by one index: embedding's backward
        add_rows(out, indices[0], np.asarray(values, x.dtype))
    elif accumulate:
        np.add.at(out, at, np.asarray(values, x.dtype))
    else:
        out[at] = values
    return out


_ONE_HOT_ROWS = 128  # up to here a one-hot matmul beats the sort (measured: 28, 65, 1000 rows)


def add_rows(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """``np.add.at(out, index, values)`` along dim 0 (np.add.at takes 330 us for 512 rows of
    64 here): for a few float rows, one matmul with the one-hot matrix of the indices (25
    us); else summed per row by one sort and one ``reduceat`` (75 us at 28 rows, less than
    the matmul from ~200)."""
    n = out.shape[0]
    idx = index.ravel()
    idx = np.where(idx < 0, idx + n, idx)
    rows = np.broadcast_to(values, index.shape + out.shape[1:]).reshape(len(idx), -1)
    if n <= _ONE_HOT_ROWS and out.dtype.kind == "f" and rows.dtype == out.dtype:
        hot = np.zeros((n, len(idx)), out.dtype)
        hot[idx, np.arange(len(idx))] = 1
        out.reshape(n, -1)[...] += hot @ rows
        return
    order = np.argsort(idx, kind="stable")  # stable: each row's terms in index order
    sidx = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], sidx[1:] != sidx[:-1])))
    flat = out.reshape(n, -1)
    flat[sidx[starts]] += np.add.reduceat(rows[order], starts, axis=0)


def _index_put_backward(g: Any, x: Any, indices: list, values: Any, accumulate: bool,
                        out: Any) -> tuple:
    gx = g if accumulate else index_put(g, indices, 0)  # overwritten entries get nothing
    gv = reduce_grad(index(g, indices), values) if hasattr(values, "shape") else None
    return reduce_grad(gx, x), [None] * len(indices), gv


index = defop("index.Tensor(Tensor self, Tensor[] indices) -> Tensor", _index, pre=_check_bounds,
              host=True,
              shape=lambda x, ix: TensorMeta(_index_shape(tuple(x.shape), ix), x.dtype),
              save=("indices",), backward=lambda g, x, ix, out: (
                  index_put(zeros(list(x.shape), dtype=g.dtype), ix, g, True), [None] * len(ix)))
index_put = defop("index_put(Tensor self, Tensor[] indices, Tensor values, bool accumulate=False)"
                  " -> Tensor", _index_put, host=_host_index_put, shape=_index_put_rule,
                  check=True,
                  pre=_check_bounds,
                  save=("indices",), backward=_index_put_backward)


# -- gather / scatter_add along one dim ---------------------------------------------------------
def _grid(index: Any, d: int) -> tuple:
    """Full coordinates for every entry of ``index``: ``index`` itself along ``d``."""
    return tuple(index if i == d else lax.broadcasted_iota(DEFAULT_INT, index.shape, i)
                 for i in range(index.ndim))


def _gather_rule(x: Any, dim: int, index: Any, *src: Any) -> TensorMeta:
    if index.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if category(index.dtype) != 1:
        raise RuntimeError(f"gather(): Expected dtype int64 for index, got {index.dtype.name}")
    wrap_dim(dim, x.ndim)
    return TensorMeta(tuple(index.shape) if not src else tuple(x.shape), x.dtype)


def _scatter_add(x: Any, dim: int, index: Any, src: Any) -> Any:
    part = src[tuple(slice(0, n) for n in index.shape)]
    return x.at[_grid(index, wrap_dim(dim, x.ndim))].add(cast(part, x.dtype))


def _host_scatter_add(x: Any, dim: int, index: Any, src: Any) -> Any:
    out = x.copy()  # numpy writes in place; the op is functional
    part = src[tuple(slice(0, n) for n in index.shape)]
    np.add.at(out, _grid(index, wrap_dim(dim, x.ndim)), part.astype(x.dtype))
    return out


def _check_index(x: Any, dim: int, index: Any, *rest: Any) -> None:
    """jax would drop an out-of-range scatter index silently: checked on the host, or
    inside a compiled program (runtime_checks)."""
    if not index.size:
        return
    d = wrap_dim(dim, x.ndim)
    size = x.shape[d] if x.ndim else 1
    if isinstance(index, jax.core.Tracer):
        return runtime_checks.in_range(index, -size, size, _out_of_bounds(d, size),
                                       prefer="high")
    a = check_values(index)  # a global array: this process's shards
    if a.min() < -size or a.max() >= size:
        bad = a.max() if a.max() >= size else a.min()
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")


gather = defop("gather(Tensor self, int dim, Tensor index) -> Tensor",
               lambda x, dim, ix: x[_grid(ix, wrap_dim(dim, x.ndim))], host=True, cost="stream",
               shape=_gather_rule,
               check=True, pre=_check_index,
               save=("index",), backward=lambda g, x, dim, ix, out: (scatter_add(
                   zeros(list(x.shape), dtype=g.dtype), dim, ix, g), None))
scatter_add = defop("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
                    _scatter_add, host=_host_scatter_add, shape=_gather_rule, save=("index",),
                    check=True,
                    pre=_check_index,
                    backward=lambda g, x, dim, ix, src, out: (
                        reduce_grad(g, x), None, reduce_grad(gather(g, dim, ix), src)))


def _scatter(x: Any, dim: int, index: Any, src: Any) -> Any:
    part = src[tuple(slice(0, n) for n in index.shape)] if hasattr(src, "shape") and \
        src.ndim else src
    return x.at[_grid(index, wrap_dim(dim, x.ndim))].set(cast(part, x.dtype))


scatter = defop("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
                _scatter, shape=_gather_rule, save=("index",), check=True, pre=_check_index,
                backward=lambda g, x, dim, ix, src, out: (
                    reduce_grad(scatter_value(g, dim, ix, 0), x), None,
                    reduce_grad(gather(g, dim, ix), src)))
scatter_value = defop("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
                      _scatter, shape=_gather_rule, save=("index",), check=True,
                      pre=_check_index, backward=lambda g, x, dim, ix, v, out: (
                          reduce_grad(scatter_value(g, dim, ix, 0), x), None))
scatter_ = inplace("scatter_", scatter)
scatter_value_ = inplace("scatter_", scatter_value)
scatter_add_ = inplace("scatter_add_", scatter_add)


# -- one_hot --------------------------------------------------------------------------------------
def _one_hot_rule(x: Any, num_classes: int) -> TensorMeta:
    if category(x.dtype) != 1:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor, got "
                           f"{x.dtype.name}")
    if num_classes < 0:
        raise RuntimeError(f"one_hot: num_classes must be given (>= 0) for a traced tensor, "
                           f"got {num_classes}")
    return TensorMeta(tuple(x.shape) + (num_classes,), DEFAULT_INT)


def _check_classes(x: Any, num_classes: int) -> None:
    if not x.size:
        return
    if isinstance(x, jax.core.Tracer):  # inside a compiled program: recorded there
        if runtime_checks.active():
            runtime_checks.enforce(jnp.min(x) < 0, 0, lambda _: RuntimeError(
                "one_hot: Class values must be non-negative."))
            runtime_checks.enforce(jnp.max(x) >= num_classes, jnp.max(x), lambda i: RuntimeError(
                f"one_hot: Class values must be smaller than num_classes ({num_classes}), "
                f"got {i}."))
        return
    a = check_values(x)  # a global array: this process's shards
    if a.min() < 0:
        raise RuntimeError("one_hot: Class values must be non-negative.")
    if a.max() >= num_classes:
        raise RuntimeError(f"one_hot: Class values must be smaller than num_classes "
                           f"({num_classes}), got {a.max()}.")


one_hot = defop("one_hot(Tensor self, int num_classes) -> Tensor",
                lambda x, n: jax.nn.one_hot(x, n, dtype=DEFAULT_INT), shape=_one_hot_rule,
                check=True, pre=_check_classes, backward=NONDIFF)


# -- masks ------------------------------------------------------------------------------------
def _masked_fill_rule(x: Any, mask: Any, value: Any) -> TensorMeta:
    if mask.dtype != BOOL:
        raise RuntimeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.name}")
    return TensorMeta(broadcast_shapes(tuple(x.shape), tuple(mask.shape)), x.dtype)


masked_fill = defop("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
                    lambda x, m, v: jnp.where(m, cast(v, x.dtype), x), host=True, cost="stream", shape=_masked_fill_rule,
                    check=True, save=("mask",),
                    backward=lambda g, x, m, v, out: (reduce_grad(masked_fill(g, m, 0), x), None))


def _masked_fill_tensor_rule(x: Any, mask: Any, value: Any) -> TensorMeta:
    if value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return _masked_fill_rule(x, mask, value)


def _masked_fill_tensor_backward(g: Any, x: Any, m: Any, v: Any, out: Any) -> tuple:
    gv = where(m, g, 0).sum() if is_tensor_like(v) and is_float(v.dtype) else None
    return reduce_grad(masked_fill(g, m, 0), x), None, reduce_grad(gv, v)


masked_fill_tensor = defop("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
                           lambda x, m, v: jnp.where(m, cast(v, x.dtype), x),
                           host=True, cost="stream", shape=_masked_fill_tensor_rule, check=True, save=("mask", "value"),
                           backward=_masked_fill_tensor_backward)


def _data_dependent(x: Any) -> TensorMeta:
    raise RuntimeError("nonzero(): the output size depends on the tensor's values, which a fake "
                       "or traced tensor does not have; use where() or masked_fill() instead")


nonzero = defop("nonzero(Tensor self) -> Tensor", lambda x: jnp.argwhere(x).astype(DEFAULT_INT),
                shape=_data_dependent, backward=NONDIFF, jit=False)  # data-dependent size
index_put_ = inplace("index_put_", index_put)
masked_fill_ = inplace("masked_fill_", masked_fill)
masked_fill_tensor_ = inplace("masked_fill_", masked_fill_tensor)


# -- x[index] and x[index] = value ----------------------------------------------------------
def _as_index_tensor(i: Any) -> Any:
    """Lists and numpy arrays of ints/bools become index tensors; other items stay."""
    if isinstance(i, (list, np.ndarray)):
        a = np.asarray(i)
        return Tensor(jnp.asarray(a if a.dtype == np.bool_ else a.astype(np.int64)))
    return i


def _consumed(i: Any) -> int:
    if i is None or i is Ellipsis:
        return 0
    return i.ndim if isinstance(i, Tensor) and i.dtype == BOOL else 1


def _normalise(shape: tuple, index: Any) -> tuple:
    items = tuple(_as_index_tensor(i) for i in (index if isinstance(index, tuple) else (index,)))
    if sum(i is Ellipsis for i in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(i) for i in items)
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    if Ellipsis in items:
        at = next(k for k, i in enumerate(items) if i is Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - used) + items[at + 1:]
    return items


def _mask_indices(mask: Tensor) -> list:
    """A bool mask as one index tensor per masked dim (eager only: the count is data)."""
    nz = nonzero(mask)
    return [select(nz, 1, k) for k in range(mask.ndim)]


def front(i: Any, size: Any) -> Any:
    """A position counted from the front: recorded index arguments are never negative
    (compiled autograd lifts them like sizes, which cannot be)."""
    return i + size if isinstance(i, int) and i < 0 else i


def _int_step(i: Any, shape: tuple, orig: int, d: int) -> tuple:
    """select(d, i); ``orig`` is the dim of the original tensor (for the message)."""
    i = i if isinstance(i, SymInt) else operator.index(i)
    size = shape[orig]
    if isinstance(i, int) and isinstance(size, int) and not -size <= i < size:
        raise IndexError(f"index {i} is out of bounds for dimension {orig} with size {size}")
    return ("select", d, front(i, size))


def steps_of(shape: tuple, index: Any) -> list[tuple]:
    """The op chain of ``x[index]``: ("select", d, i), ("slice", d, start, end, step),
    ("unsqueeze", d) and at most one final ("index", [tensor or None per dim])."""
    if type(index) is int and shape and type(shape[0]) is int:  # x[i]: one select
        return [_int_step(index, shape, 0, 0)]
    if type(index) is slice and index.step is None and shape and type(shape[0]) is int:
        if index.start is None and index.stop is None:  # x[:] (the data path's common
            return []  # indexes first, without the general walk)
        start, stop, _ = slice_length(shape[0], index.start, index.stop, 1)
        return [("slice", 0, start, stop, 1)]
    steps, adv, d, orig = [], {}, 0, 0
    for i in _normalise(shape, index):
        if i is None:
            steps.append(("unsqueeze", d))
            d += 1
        elif isinstance(i, slice):
            step = 1 if i.step is None else i.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            if (i.start, i.stop, step) != (None, None, 1):  # bounds as clamped positions
                start, stop, _ = slice_length(shape[orig], i.start, i.stop, step)
                steps.append(("slice", d, start, stop, step))
            d, orig = d + 1, orig + 1
        elif isinstance(i, Tensor) and i.dtype == BOOL:
            for k, t in enumerate(_mask_indices(i)):
                adv[d + k] = t
            d, orig = d + i.ndim, orig + i.ndim
        elif isinstance(i, Tensor):
            adv[d] = i
            d, orig = d + 1, orig + 1
        else:
            steps.append(_int_step(i, shape, orig, d))
            orig += 1
    if adv:
        steps.append(("index", [adv.get(k) for k in range(max(adv) + 1)]))
    return steps


def _read(x: Any, step: tuple) -> Any:
    kind, *a = step
    if kind == "select":
        return select(x, *a)
    if kind == "slice":
        return slice_op(x, *a)
    return x.unsqueeze(a[0]) if kind == "unsqueeze" else index(x, a[0])


def _write(base: Any, new: Any, step: tuple) -> Any:
    kind, *a = step
    if kind == "select":
        return select_scatter(base, new, *a)
    if kind == "slice":
        return slice_scatter(base, new, *a)
    return new.squeeze(a[0]) if kind == "unsqueeze" else index_put(base, a[0], new)


# -- the host fast path: a plain eager tensor holding a numpy value ---------------------------
# Basic indexing of a tensor without autograd history, outside any mode, is numpy's own
# basic indexing: the same elements, without three kernel dispatches per step (the issue's
# ``t[7]`` and ``y[5:] = -1``). Steps are still found by steps_of (its checks and errors).

def _host_value(x: Any) -> np.ndarray | None:
    """``x``'s value as a read-only numpy array when it is a CPU value the host tier may
    read and nothing could observe an op on it (no autograd history, no mode); else None."""
    if type(x) is not Tensor or x._requires_grad or x.grad_fn is not None or \
            not _xp.unobserved():
        return None
    store = x._store
    if type(store) is np.ndarray:
        return store
    if _xp.ENABLED and _xp.host_sig((store,)) is not None:  # an uncommitted CPU jax array
        return np.asarray(store)  # (a view of jax's buffer: results built from it copy)
    return None


def _np_step(arr: np.ndarray, step: tuple) -> np.ndarray:
    """One basic step of ``x[index]`` on a numpy array (a view)."""
    kind, d, *a = step
    if kind == "select":
        return arr[(slice(None),) * d + (a[0], Ellipsis)]  # Ellipsis: a 0-d array, no scalar
    if kind == "slice":
        return arr[(slice(None),) * d + (slice(*a),)]
    return np.expand_dims(arr, d)


def _host_read(x: Tensor, step: tuple) -> Tensor:
    """One basic step of ``x[index]`` on x's host value (``_host_value(x)`` is not None)."""
    store = x._store
    if type(store) is np.ndarray:
        out = _np_step(store, step)  # a view of a read-only host value: read-only itself
    else:  # never a view of a jax buffer XLA may reuse once donated: a copy
        out = _np_step(np.asarray(store), step).copy()
    out.setflags(write=False)
    return _make(out)


def _host_setitem(x: Tensor, steps: list, value: Any) -> bool:
    """``x[index] = value`` on a copy of x's numpy value, when x is plain, not a view, every
    step basic and the value a number or a plain tensor; False: nothing done."""
    if x._base_meta is not None or any(s[0] == "index" for s in steps):
        return False
    arr = _host_value(x)
    if arr is None:
        return False
    if isinstance(value, Tensor):
        value = _host_value(value)
        if value is None:
            return False
    elif type(value) not in (int, float, bool):
        return False
    arr = arr.copy()
    target = arr
    for step in steps:
        target = _np_step(target, step)
    try:
        if type(value) is np.ndarray and value.dtype != arr.dtype:
            with np.errstate(all="ignore"):  # a cast as PyTorch's .to(), without warnings
                target[...] = value
        else:  # a number, or the same dtype: nothing to warn about
            target[...] = value
    except (ValueError, TypeError, OverflowError):  # PyTorch's error comes from the ops
        return False
    arr.setflags(write=False)
    x._set_data(arr)
    return True


def _host_row(x: Tensor, i: int) -> Tensor | None:
    """``x[i]`` of a plain host value (a TensorDataset's read): the step getitem would take,
    without finding it; None: getitem's own path (bounds errors, jax values, history)."""
    store = x._store
    if type(store) is not np.ndarray or not store.ndim or x._requires_grad or \
            x.grad_fn is not None or not _xp.unobserved():
        return None
    n = store.shape[0]
    if not -n <= i < n:
        return None
    step = ("select", 0, i if i >= 0 else i + n)
    out = store[i, ...]  # a view of a read-only value (Ellipsis: a 0-d array, not a scalar)
    out.setflags(write=False)
    return view_of(_make(out), x, lambda b, v: _write(b, v, step))


def getitem(x: Tensor, index: Any) -> Tensor:
    """``x[index]``: ints, slices (positive steps), None, Ellipsis, int/bool tensors, lists.
    Basic steps give views (writes through them reach ``x``); an advanced index copies."""
    if type(index) is int and type(x) is Tensor:
        out = _host_row(x, index)
        if out is not None:
            return out
    steps = steps_of(tuple(x.shape), index)
    if not steps:
        return x.view(list(x.shape))  # x[...] / x[:]: a new tensor, as PyTorch's view
    host = _host_value(x) is not None
    for step in steps:
        host = host and step[0] != "index"
        base, x = x, (_host_read(x, step) if host else _read(x, step))
        if step[0] != "index":
            view_of(x, base, lambda b, v, step=step: _write(b, v, step))
    return x


class _Shaped:
    """The shape of an advanced-index write's target (index_put checks the indices, as
    in PyTorch, where ``x[i] = v`` reads nothing)."""

    def __init__(self, shape: tuple) -> None:
        self.shape, self.ndim = shape, len(shape)


def _value_like(value: Any, target: Any, dtype: Any, advanced: bool = False) -> Any:
    """The assigned value as a tensor of ``target``'s shape and ``x``'s dtype (a value that
    does not fit an advanced index's selection: PyTorch's "shape mismatch" error; a basic
    slice's: expand's own)."""
    if not isinstance(value, Tensor):
        return full(list(target.shape), value, dtype=dtype)
    value = value.to(dtype) if value.dtype != dtype else value
    while value.ndim > target.ndim and value.shape[0] == 1:  # PyTorch drops leading 1s
        value = value.squeeze(0)
    if advanced and not _broadcasts(tuple(value.shape), tuple(target.shape)):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(target.shape)}")
    return value.expand(list(target.shape)) if not shapes_equal(value.shape, target.shape) \
        else value


def _broadcasts(src: tuple, dst: tuple) -> bool:
    """Whether ``src`` broadcasts to ``dst`` (True where a size is symbolic: the expand
    decides)."""
    if len(src) > len(dst):
        return False
    return all(type(a) is not int or type(b) is not int or a in (1, b)
               for a, b in zip(reversed(src), reversed(dst)))


def _where_mask(mask: Tensor, value: Any, x: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return where(mask, value.to(x.dtype) if value.dtype != x.dtype else value, x)
    return masked_fill(x, mask, value)


def _basic_target(shape: tuple, step: tuple) -> _Shaped | None:
    """The shape a basic step (select, slice, unsqueeze) reads, computed without reading;
    None where a size is symbolic (the read's own shape rule knows those)."""
    kind, d, *a = step
    if not all(type(n) is int for n in shape) or not all(type(i) is int for i in a):
        return None
    if kind == "select":
        return _Shaped(shape[:d] + shape[d + 1:])
    if kind == "slice":
        start, stop, step_ = a
        return _Shaped(shape[:d] + (max(0, (stop - start + step_ - 1) // step_),) + shape[d + 1:])
    return _Shaped(shape[:d] + (1,) + shape[d:])  # unsqueeze


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value``: read the chain, write the value back up it, copy_ into x."""
    check_writable(x)
    if isinstance(index, Tensor) and index.dtype == BOOL and shapes_equal(index.shape, x.shape) \
            and (not isinstance(value, Tensor) or value.numel() == 1):
        copy_(x, _where_mask(index, value, alias_for_inplace(x)))  # x[mask] = v: no data-
        return write_through(x)                                     # dependent sizes needed
    steps = steps_of(tuple(x.shape), index)
    if _host_setitem(x, steps, value):
        return
    bases = [alias_for_inplace(x)]  # reads see the value before the write
    for step in steps:
        if step is steps[-1]:  # written, never read: its shape only (one kernel call less)
            shape = tuple(bases[-1].shape)
            last = _Shaped(_index_shape(shape, step[1])) if step[0] == "index" \
                else _basic_target(shape, step)
            bases.append(last if last is not None else _read(bases[-1], step))
        else:
            bases.append(_read(bases[-1], step))
    new = _value_like(value, bases[-1], x.dtype, bool(steps) and steps[-1][0] == "index")
    for step, base in zip(reversed(steps), reversed(bases[:-1])):
        new = _write(base, new, step)
    copy_(x, new)
    write_through(x)
