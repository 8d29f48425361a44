"""Rearranging entries along a dim: ``roll``, ``repeat_interleave`` (an int or a tensor of
repeats), ``take_along_dim`` and ``diff``.

A tensor of repeats makes the output's length data: the op takes it as ``output_size``, which
the Python surface reads from concrete repeats (eager); a fake or traced call must pass it.

>>> import autograd_compile as acg
>>> acg.tensor([1, 2, 3]).roll(1).tolist(), acg.tensor([1, 2]).repeat_interleave(2).tolist()
([3, 1, 2], [1, 1, 2, 2])
>>> acg.tensor([1, 4, 9]).diff().tolist()
[3, 5]
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.dispatch import DISPATCHER
from autograd_compile.errors import OpError, op_error
from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, reduce_grad
from ._dtypes import BOOL, category
from ._host import check_values, reduced, spans_processes
from ._shapes import numel, wrap_dim  # noqa: F401  (wrap_dim: also api_select)
from .elementwise import logical_xor
from .indexing import gather, slice_op
from .shape import cat, expand, reshape, unsqueeze


def _composite(name: str, fn: Callable) -> Callable:
    """A composite kernel whose own argument checks fail as an OpError naming the op (errors
    of the ops inside it already name theirs)."""
    def kernel(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (RuntimeError, IndexError) as e:
            if isinstance(e, OpError):
                raise
            raise op_error(DISPATCHER.ops[f"acg::{name}"], args, kwargs, e) from e
    kernel.__name__ = kernel.__qualname__ = f"{name}_composite"
    return kernel


# -- roll -------------------------------------------------------------------------------------
def _roll_rule(x: Any, shifts: Any, dims: Any = ()) -> TensorMeta:
    if len(shifts) != len(dims) and not (len(dims) == 0 and len(shifts) == 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    for d in dims:
        wrap_dim(d, x.ndim)
    return TensorMeta(tuple(x.shape), x.dtype)


def _roll(x: Any, shifts: Any, dims: Any = ()) -> Any:
    if not dims:  # PyTorch rolls the flattened tensor
        return jnp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return jnp.roll(x, tuple(shifts), tuple(wrap_dim(d, x.ndim) for d in dims))


def _host_roll(x: Any, shifts: Any, dims: Any = ()) -> Any:
    """``_roll`` on numpy (the host tier): makemore rolls its (batch, block) index tensor
    once per position, every step."""
    if not dims:
        return np.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return np.roll(x, tuple(shifts), tuple(wrap_dim(d, x.ndim) for d in dims))


roll = defop("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", _roll,
             shape=_roll_rule, check=True, save=(), host=_host_roll, cost="stream",
             backward=lambda g, x, shifts, dims, out: roll(g, [-s for s in shifts], dims))


# -- repeat_interleave ----------------------------------------------------------------------------
def _repeat_int(x: Any, repeats: Any, dim: int | None = None, *,
                output_size: Any = None) -> Any:
    """Each entry ``repeats`` times: a new dim of that size after ``dim``, folded into it."""
    if repeats < 0:
        raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {repeats}")
    if dim is None:
        x, dim = reshape(x, [-1]), 0
    d = wrap_dim(dim, x.ndim)
    if output_size is not None and output_size != x.shape[d] * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected "
                           f"{x.shape[d] * repeats} but got {output_size}")
    shape = list(x.shape)
    wide = expand(unsqueeze(x, d + 1), shape[:d + 1] + [repeats] + shape[d + 1:])
    return reshape(wide, shape[:d] + [shape[d] * repeats] + shape[d + 1:])


repeat_interleave_int = defop(
    "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, "
    "SymInt? output_size=None) -> Tensor",
    composite=_composite("repeat_interleave.self_int", _repeat_int))


def _repeats_rule(x: Any, repeats: Any, dim: int | None = None, *,
                  output_size: Any = None) -> TensorMeta:
    if repeats.ndim > 1:
        raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got "
                           f"shape {list(repeats.shape)}")
    if category(repeats.dtype) != 1:
        raise RuntimeError(f"repeat_interleave: repeats has to be Long or Int tensor, got "
                           f"{repeats.dtype.name}")
    shape, d = ((numel(x.shape),), 0) if dim is None else (tuple(x.shape), wrap_dim(dim, x.ndim))
    n = numel(repeats.shape)
    if not (isinstance(n, int) and n == 1) and n != (shape[d] if shape else 1):
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input along "
                           f"dim, but got repeats.size(0) = {n} and input.size({d}) = "
                           f"{shape[d] if shape else 1}")
    if output_size is None:
        raise RuntimeError("repeat_interleave: with a tensor of repeats the output size is "
                           "data, which a fake or traced tensor does not have: pass "
                           "output_size= (the sum of the repeats)")
    return TensorMeta(shape[:d] + (output_size,) + shape[d + 1:], x.dtype)


def _counts(repeats: Any, n: int) -> Any:
    return jnp.broadcast_to(repeats.reshape(-1), (n,)) if repeats.size == 1 else repeats


def _check_repeats(x: Any, repeats: Any, dim: int | None = None, *,
                   output_size: Any = None) -> None:
    """Eager: the values must be non-negative and add up to ``output_size``."""
    if isinstance(repeats, jax.core.Tracer) or output_size is None:
        return
    r = check_values(repeats)  # a global array: this process's shards
    if r.size and r.min() < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    n = numel(x.shape) if dim is None else (x.shape[wrap_dim(dim, x.ndim)] if x.ndim else 1)
    total = int(reduced(repeats, jnp.sum) if spans_processes(repeats) else r.sum()) * (n if r.size == 1 else 1)
    if total != output_size:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got "
                           f"{output_size}")


def _repeat_tensor(x: Any, repeats: Any, dim: int | None = None, *,
                   output_size: Any = None) -> Any:
    if dim is None:
        x, dim = x.reshape(-1), 0
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    return jnp.repeat(x, _counts(repeats, n), axis=d, total_repeat_length=output_size)


def _repeat_tensor_backward(g: Any, x: Any, repeats: Any, dim: int | None, output_size: Any,
                            out: Any) -> tuple:
    """Each input entry's gradient is the sum over its copies (a segment sum)."""
    if dim is None:
        gx = repeat_interleave_backward(g, repeats, 0, numel(x.shape))
        return reduce_grad(reshape(gx, list(x.shape)), x), None
    d = wrap_dim(dim, x.ndim)
    return reduce_grad(repeat_interleave_backward(g, repeats, d, x.shape[d]), x), None


repeat_interleave = defop(
    "repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, "
    "SymInt? output_size=None) -> Tensor", _repeat_tensor, shape=_repeats_rule, check=True,
    pre=_check_repeats, save=("self", "repeats"), backward=_repeat_tensor_backward)


def _segment_sum(g: Any, repeats: Any, dim: int, input_size: Any) -> Any:
    segment = jnp.repeat(jnp.arange(input_size), _counts(repeats, input_size),
                         total_repeat_length=g.shape[dim])
    summed = jax.ops.segment_sum(jnp.moveaxis(g, dim, 0), segment, num_segments=input_size)
    return jnp.moveaxis(summed, 0, dim)


repeat_interleave_backward = defop(
    "repeat_interleave_backward(Tensor grad, Tensor repeats, int dim, SymInt input_size) "
    "-> Tensor", _segment_sum,
    shape=lambda g, r, dim, n: TensorMeta(tuple(g.shape[:dim]) + (n,) + tuple(g.shape[dim + 1:]),
                                          g.dtype),
    save=("repeats",), backward=lambda gg, g, r, dim, n, out: (
        repeat_interleave(gg, r, dim, output_size=g.shape[dim]), None))


# -- take_along_dim -------------------------------------------------------------------------------
def _take_along_dim(x: Any, indices: Any, dim: int | None = None) -> Any:
    """``gather`` after broadcasting input and indices against each other outside ``dim``."""
    if category(indices.dtype) != 1:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int64 but got "
                           f"{indices.dtype.name}")
    if dim is None:
        return gather(reshape(x, [-1]), 0, reshape(indices, [-1]))
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = wrap_dim(dim, x.ndim)
    x_shape, i_shape = list(x.shape), list(indices.shape)
    for k in range(x.ndim):
        if k != d and x_shape[k] != i_shape[k]:
            size = i_shape[k] if isinstance(x_shape[k], int) and x_shape[k] == 1 else x_shape[k]
            x_shape[k] = i_shape[k] = size
    x = x if list(x.shape) == x_shape else expand(x, x_shape)
    indices = indices if list(indices.shape) == i_shape else expand(indices, i_shape)
    return gather(x, d, indices)


take_along_dim = defop("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor",
                       composite=_composite("take_along_dim", _take_along_dim))


# -- diff ------------------------------------------------------------------------------------------
def _edge(t: Any, x: Any, d: int, which: str) -> Any:
    """prepend/append as a tensor with x's rank (a number or 0-d tensor: one slice of it)."""
    if t.ndim == 0:
        return expand(reshape(t, [1] * x.ndim), list(x.shape[:d]) + [1] + list(x.shape[d + 1:]))
    if t.ndim != x.ndim:
        raise RuntimeError(f"diff expects {which} or its expanded 0-dim tensor to have the "
                           f"same number of dimensions as input, got {t.ndim} and {x.ndim}")
    return t


def _diff(x: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """``n``-th forward difference along ``dim`` (bool: logical xor), after joining the ends."""
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, x.ndim)
    parts = [_edge(prepend, x, d, "prepend")] if prepend is not None else []
    parts += [x] + ([_edge(append, x, d, "append")] if append is not None else [])
    x = cat(parts, d) if len(parts) > 1 else x
    for _ in range(n):
        size = x.shape[d]
        later, earlier = slice_op(x, d, 1, size, 1), slice_op(x, d, 0, size - 1, 1)
        x = logical_xor(later, earlier) if x.dtype == BOOL else later - earlier
    return x


diff = defop("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)"
             " -> Tensor", composite=_composite("diff", _diff))
