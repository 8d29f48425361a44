"""Shape and copy ops: view/reshape, permutes, (un)squeeze, expand, cat/stack/split, to, copy_.

JAX arrays are immutable, so a view op returns a new tensor over a reshaped value; the
Python surface marks it as a view of its input (views.py), so in-place ops on it still
write through to the base, as in PyTorch.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np

from autograd_compile._dtype import scalar_type_name
from autograd_compile.tracing.fake import TensorMeta

from ._defop import NONDIFF, defop, inplace, reduce_grad, same_shape
from ._dtypes import BOOL, as_dtype, cast, result_type
from ._xp import jnp
from ._shapes import expand_shape, infer_size, numel, split_sizes, wrap_dim, wrap_dims


# -- copies and conversions -------------------------------------------------------------------
def _copy_rule(x: Any, src: Any) -> TensorMeta:
    if hasattr(src, "shape"):
        expand_shape(tuple(src.shape), tuple(x.shape))  # src must broadcast to self
    return TensorMeta(tuple(x.shape), x.dtype)


copy_ = defop("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)",
              lambda x, src: jnp.broadcast_to(cast(src, x.dtype), x.shape),
              shape=_copy_rule, host=True, cost="stream", save=(),
              backward=lambda g, x, src, out: (None, reduce_grad(g, src)))
to = defop("to(Tensor self, ScalarType dtype) -> Tensor",
           lambda x, dtype: x.astype(as_dtype(dtype)),
           shape=lambda x, dtype: TensorMeta(tuple(x.shape), as_dtype(dtype)), host=True, cost="stream", save=(),
           backward=lambda g, x, dtype, out: reduce_grad(g, x))
zero_ = defop("zero_(Tensor(a!) self) -> Tensor(a!)", composite=lambda x: copy_(x, 0))
fill_ = defop("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
              composite=lambda x, value: copy_(x, value))
clone = defop("clone(Tensor self) -> Tensor", lambda x: x,  # jax arrays are immutable: no copy
              shape=same_shape, save=(), backward=lambda g, x, out: g, jit=False)
detach = defop("detach(Tensor self) -> Tensor", lambda x: x,  # same value, cut from the graph
               shape=same_shape, backward=NONDIFF, jit=False)


# -- reshaping ----------------------------------------------------------------------------------
def _reshape_rule(x: Any, size: Any) -> TensorMeta:
    return TensorMeta(infer_size(size, numel(x.shape)), x.dtype)


def _reshape(x: Any, size: Any) -> Any:
    return jnp.reshape(x, infer_size(size, x.size))


view = defop("view(Tensor self, SymInt[] size) -> Tensor", _reshape, shape=_reshape_rule,
             host=True, cost="stream", save=(), backward=lambda g, x, size, out: g.reshape(x.shape))
def _view_dtype_rule(x: Any, dtype: Any) -> TensorMeta:
    """``x.view(dtype)``: the same bytes read as ``dtype``; a wider or narrower type changes
    the last size by the ratio of the item sizes, as PyTorch's."""
    old, new = np.dtype(x.dtype), as_dtype(dtype)
    shape = tuple(x.shape)
    if old.itemsize == new.itemsize:
        return TensorMeta(shape, new)
    name = f"{scalar_type_name(old)} as {scalar_type_name(new)}"
    if not shape:
        raise RuntimeError(f"self.dim() cannot be 0 to view {name} (different element sizes)")
    if new.itemsize < old.itemsize:
        return TensorMeta(shape[:-1] + (shape[-1] * (old.itemsize // new.itemsize),), new)
    ratio = new.itemsize // old.itemsize
    if shape[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {name} "
                           f"(different element sizes), but got {shape[-1]}")
    return TensorMeta(shape[:-1] + (shape[-1] // ratio,), new)


def _view_dtype(x: Any, dtype: Any) -> Any:
    old, new = np.dtype(x.dtype), as_dtype(dtype)
    if old == new:
        return x
    if BOOL in (old, new):  # XLA has no bool bitcast: bool and uint8 share their bytes
        return x != 0 if new == BOOL else x.astype(new)
    if new.itemsize > old.itemsize:  # group the last axis into the wider items
        x = x.reshape(*x.shape[:-1], x.shape[-1] * old.itemsize // new.itemsize,
                      new.itemsize // old.itemsize)
    out = jax.lax.bitcast_convert_type(x, new)
    return out.reshape(*out.shape[:-2], -1) if new.itemsize < old.itemsize else out


view_dtype = defop("view.dtype(Tensor self, ScalarType dtype) -> Tensor", _view_dtype,
                   shape=_view_dtype_rule, check=True, save=(), backward=NONDIFF)
reshape = defop("reshape(Tensor self, SymInt[] size) -> Tensor", _reshape, shape=_reshape_rule,
                host=True, cost="stream", save=(), backward=lambda g, x, size, out: g.reshape(x.shape))
expand = defop("expand(Tensor self, SymInt[] size) -> Tensor",
               lambda x, size: jnp.broadcast_to(x, expand_shape(x.shape, size)),
               shape=lambda x, size: TensorMeta(expand_shape(tuple(x.shape), size), x.dtype),
               host=True, cost="stream", save=(), backward=lambda g, x, size, out: g.sum_to_size(x.shape))


def _sum_to_rule(x: Any, size: Any) -> TensorMeta:
    try:
        expand_shape(tuple(size), tuple(x.shape))
    except RuntimeError:
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(x.shape)}") \
            from None
    return TensorMeta(tuple(size), x.dtype)


def _sum_to(x: Any, size: Any) -> Any:
    lead = x.ndim - len(size)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size)
                                      if s == 1 and x.shape[i + lead] != 1)
    return jnp.sum(x, axis=axes, keepdims=True).reshape(tuple(size)) if axes else x


sum_to_size = defop("sum_to_size(Tensor self, SymInt[] size) -> Tensor", _sum_to,
                    shape=_sum_to_rule, host=True, cost="stream", save=(),
                    backward=lambda g, x, size, out: g.expand(x.shape))


# -- permuting and (un)squeezing ----------------------------------------------------------------
def permutation(dims: Any, ndim: int) -> tuple[int, ...]:
    """``dims`` of a permute as non-negative axes, with PyTorch's error for a wrong count."""
    if len(dims) != ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    return wrap_dims(dims, ndim) if ndim else ()


def _inverse(perm: tuple[int, ...]) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


permute = defop("permute(Tensor self, int[] dims) -> Tensor",
                lambda x, dims: jnp.transpose(x, permutation(dims, x.ndim)),
                shape=lambda x, dims: TensorMeta(tuple(x.shape[d] for d in permutation(dims, x.ndim)),
                                                 x.dtype),
                host=True, cost="stream", save=(), backward=lambda g, x, dims, out: g.permute(_inverse(permutation(dims, x.ndim))))


def _swap(shape: tuple, a: int, b: int) -> tuple:
    a, b = wrap_dim(a, len(shape)), wrap_dim(b, len(shape))
    s = list(shape)
    if s:
        s[a], s[b] = s[b], s[a]
    return tuple(s)


transpose = defop("transpose.int(Tensor self, int dim0, int dim1) -> Tensor",
                  lambda x, a, b: jnp.swapaxes(x, wrap_dim(a, x.ndim), wrap_dim(b, x.ndim))
                  if x.ndim else x,
                  shape=lambda x, a, b: TensorMeta(_swap(tuple(x.shape), a, b), x.dtype),
                  host=True, cost="stream", save=(), backward=lambda g, x, a, b, out: g.transpose(a, b))


def _unsqueezed(shape: tuple, dim: int) -> tuple:
    d = wrap_dim(dim, len(shape) + 1)
    return shape[:d] + (1,) + shape[d:]


unsqueeze = defop("unsqueeze(Tensor self, int dim) -> Tensor",
                  lambda x, dim: jnp.reshape(x, _unsqueezed(x.shape, dim)),
                  shape=lambda x, dim: TensorMeta(_unsqueezed(tuple(x.shape), dim), x.dtype),
                  host=True, cost="stream", save=(), backward=lambda g, x, dim, out: g.reshape(x.shape))


def _squeezed(shape: tuple, dims: Any) -> tuple:
    """Drop the given dims (all dims if None) that have size 1; others are kept silently."""
    dims = range(len(shape)) if dims is None else wrap_dims(dims, len(shape))
    return tuple(s for i, s in enumerate(shape) if not (i in dims and isinstance(s, int)
                                                         and s == 1))


def _squeeze_op(schema: str) -> Any:
    return defop(schema, lambda x, dim=None: jnp.reshape(x, _squeezed(x.shape, dim)),
                 shape=lambda x, dim=None: TensorMeta(_squeezed(tuple(x.shape), dim), x.dtype),
                 host=True, cost="stream", save=(), backward=lambda g, x, *dim_out: g.reshape(x.shape))


squeeze = _squeeze_op("squeeze(Tensor self) -> Tensor")
squeeze_dim = _squeeze_op("squeeze.dim(Tensor self, int dim) -> Tensor")
squeeze_dims = _squeeze_op("squeeze.dims(Tensor self, int[] dim) -> Tensor")
def _flip_rule(x: Any, dims: Any) -> TensorMeta:
    wrap_dims(dims, x.ndim)  # validates the dims
    return same_shape(x)


flip = defop("flip(Tensor self, int[] dims) -> Tensor",
             lambda x, dims: jnp.flip(x, wrap_dims(dims, x.ndim)) if dims else x,
             shape=_flip_rule,
             host=True, cost="stream", save=(), backward=lambda g, x, dims, out: g.flip(dims))


# -- repeat ---------------------------------------------------------------------------------
def _repeat_rule(x: Any, repeats: Any) -> TensorMeta:
    if len(repeats) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    return TensorMeta(tuple(s * r for s, r in zip(shape, repeats)), x.dtype)


def _repeat_backward(g: Any, x: Any, repeats: Any, out: Any) -> Any:
    """Fold each repeated dim into (repeat, size) and sum the repeats away."""
    shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    folded = [v for r, s in zip(repeats, shape) for v in (r, s)]
    summed = g.reshape(folded).sum(list(range(0, len(folded), 2)))
    return summed.reshape(x.shape)


repeat = defop("repeat(Tensor self, SymInt[] repeats) -> Tensor",
               lambda x, repeats: jnp.tile(x, tuple(repeats)), shape=_repeat_rule, host=True, cost="stream", save=(),
               backward=_repeat_backward)


# -- joining and splitting ----------------------------------------------------------------------
def _total(sizes: Any) -> Any:
    total = 0
    for s in sizes:
        total = total + s
    return total


def _cat_rule(tensors: Any, dim: int = 0) -> TensorMeta:
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    first = tuple(tensors[0].shape)
    d = wrap_dim(dim, len(first))
    for i, t in enumerate(tensors[1:], 1):
        shape = tuple(t.shape)
        if len(shape) != len(first):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(first)} "
                               f"and {len(shape)}")
        for j, (a, b) in enumerate(zip(first, shape)):
            if j != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {i} "
                                   f"in the list.")
    total = _total(t.shape[d] for t in tensors)
    return TensorMeta(first[:d] + (total,) + first[d + 1:], result_type(*tensors))


def _cat_backward(g: Any, tensors: list, dim: int, out: Any) -> list:
    d, start, grads = wrap_dim(dim, g.ndim), 0, []
    for t in tensors:
        n = t.shape[d]
        grads.append(reduce_grad(g.narrow(d, start, n), t))
        start = start + n
    return grads


def _common(ts: list) -> list:
    """The tensors in their promoted dtype (found once: once per input made cat and stack
    quadratic in the number of inputs)."""
    dt = result_type(*ts)
    return [cast(t, dt) for t in ts]


cat = defop("cat(Tensor[] tensors, int dim=0) -> Tensor",
            lambda ts, dim=0: jnp.concatenate(_common(ts), wrap_dim(dim, ts[0].ndim)),
            shape=_cat_rule, check=True, host=True, cost="stream", save=(), backward=_cat_backward)


def _stack_rule(tensors: Any, dim: int = 0) -> TensorMeta:
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tuple(tensors[0].shape)
    for i, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first)} at entry 0 and {list(t.shape)} at entry {i}")
    return TensorMeta(_stacked(first, dim, len(tensors)), result_type(*tensors))


def _stacked(shape: tuple, dim: int, n: int) -> tuple:
    d = wrap_dim(dim, len(shape) + 1)
    return shape[:d] + (n,) + shape[d:]


stack = defop("stack(Tensor[] tensors, int dim=0) -> Tensor",
              lambda ts, dim=0: jnp.stack(_common(ts), wrap_dim(dim, ts[0].ndim + 1)),
              shape=_stack_rule, check=True, host=True, cost="stream", save=(),
              backward=lambda g, ts, dim, out: [reduce_grad(g.select(dim, i), t)
                                                for i, t in enumerate(ts)])


def _split_rule(x: Any, sizes: Any, dim: int = 0) -> tuple[TensorMeta, ...]:
    d = wrap_dim(dim, x.ndim)
    total = _total(sizes)
    if total != x.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{x.shape[d]} (input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(sizes)}")
    shape = tuple(x.shape)
    return tuple(TensorMeta(shape[:d] + (s,) + shape[d + 1:], x.dtype) for s in sizes)


def split_pieces(x: Any, sizes: Any, dim: int = 0) -> tuple:
    d, start, out = wrap_dim(dim, x.ndim), 0, []
    for s in sizes:
        out.append(x[(slice(None),) * d + (slice(start, start + s),)])  # numpy or jax
        start += s
    return tuple(out)


split_with_sizes = defop("split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) "
                         "-> Tensor[]", split_pieces, shape=_split_rule, host=True, cost="stream", save=(), check=True,
                         backward=lambda gs, x, sizes, dim, out: cat(list(gs), dim))
def _unbind_rule(x: Any, dim: int = 0) -> tuple[TensorMeta, ...]:
    d = wrap_dim(dim, x.ndim)
    shape = tuple(x.shape)
    return tuple(TensorMeta(shape[:d] + shape[d + 1:], x.dtype) for _ in range(shape[d]))


split = defop("split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
              composite=lambda x, size, dim=0: split_with_sizes(
                  x, split_sizes(x.shape[wrap_dim(dim, x.ndim)], size), dim))
unbind = defop("unbind.int(Tensor self, int dim=0) -> Tensor[]",
               lambda x, dim=0: tuple(jnp.moveaxis(x, wrap_dim(dim, x.ndim), 0)),
               shape=_unbind_rule,
               host=True, cost="stream", save=(), backward=lambda gs, x, dim, out: stack(list(gs), dim))


# -- triangles: tril / triu ---------------------------------------------------------------------
def _triangle(name: str, fn: Any) -> Any:
    def rule(x: Any, diagonal: int = 0) -> TensorMeta:
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got a "
                               f"{x.ndim}-d tensor of shape {list(x.shape)}")
        return TensorMeta(tuple(x.shape), x.dtype)
    op = defop(f"{name}(Tensor self, int diagonal=0) -> Tensor",
               lambda x, diagonal=0: getattr(jnp, fn)(x, diagonal), shape=rule, check=True,
               host=True, cost="stream", save=(),
               backward=lambda g, x, diagonal, out: op(g, diagonal))
    return op


tril = _triangle("tril", "tril")
triu = _triangle("triu", "triu")
tril_ = inplace("tril_", tril)
triu_ = inplace("triu_", triu)


# -- devices: a copy onto another jax device (gradients travel back) -----------------------------
def _to_device(x: Any, device: str) -> Any:
    from autograd_compile.devices import to_jax
    target = to_jax(device)
    if isinstance(x, np.ndarray):  # a host value (a graph run op by op): on the CPU already
        return x if target.platform == "cpu" else jax.device_put(x, target)
    if not isinstance(x, jax.core.Tracer) and target in x.devices():
        return x
    return jax.device_put(x, target)


def _device_name(x: Any) -> str:
    from autograd_compile.devices import as_device
    return str(as_device(x.device))  # a fake tensor may report a jax Device


to_device = defop("to_device(Tensor self, str device) -> Tensor", _to_device,
                  shape=lambda x, device: TensorMeta(tuple(x.shape), x.dtype), save=("self",),
                  jit=False, backward=lambda g, x, device, out: to_device(g, _device_name(x)))
