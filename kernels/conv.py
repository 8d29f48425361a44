"""Convolution and pooling over N spatial dims, channels first (NCL / NCHW / NCDHW, as PyTorch).

Convolution is bilinear, so its backward is two more convolutions, each its own op:
``conv_input_backward`` (the transpose in the input) and ``conv_weight_backward`` (the transpose
in the weight). The three derivatives close over each other, so double backward is exact.
Average pools and padding are linear in the input: :func:`linear_pair` defines such an op
together with its transpose (via ``jax.linear_transpose``), each the other's derivative.
Max pooling returns flat argmax indices (PyTorch's) and routes gradients there by scatter-add.
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, holomorphic, reduce_grad
from ._dtypes import DEFAULT_INT, is_float
from .elementwise import wants
from .factories import zeros
from .indexing import scatter_add

_SPATIAL = {1: "H", 2: "HW", 3: "DHW"}


def _err(op: str, msg: str) -> RuntimeError:
    return RuntimeError(f"{op}: {msg}")


def out_size(size: Any, k: int, s: int, lo: Any, hi: Any, d: int = 1, ceil: bool = False
             ) -> Any:
    """Output length of a window of k taps (dilation d) at stride s over lo+size+hi elements."""
    span = size + lo + hi - d * (k - 1) - 1
    if not ceil:
        return span // s + 1
    n = -((-span) // s) + 1
    return n - 1 if (n - 1) * s >= size + lo else n  # the last window must start inside


# -- convolution ------------------------------------------------------------------------------
def _conv_out_shape(x: Any, w: Any, stride: Any, padding: Any, dilation: Any) -> tuple:
    nd = x.ndim - 2
    out = []
    for i in range(nd):
        lo, hi = padding[2 * i], padding[2 * i + 1]
        k = (w.shape[2 + i] - 1) * dilation[i] + 1
        if x.shape[2 + i] + lo + hi < k:
            padded = " x ".join(str(x.shape[2 + j] + padding[2 * j] + padding[2 * j + 1])
                                for j in range(nd))
            raise RuntimeError(f"Calculated padded input size per channel: ({padded}). Kernel "
                               f"size: ({' x '.join(str(s) for s in w.shape[2:])}). Kernel size "
                               f"can't be greater than actual input size")
        out.append(out_size(x.shape[2 + i], w.shape[2 + i], stride[i], lo, hi, dilation[i]))
    return (x.shape[0], w.shape[0], *out)


def _conv_rule(x: Any, w: Any, b: Any, stride: Any, padding: Any, dilation: Any,
               groups: int) -> TensorMeta:
    if x.ndim < 3 or w.ndim != x.ndim:
        raise RuntimeError(f"Expected {w.ndim}D (batched) input to conv{w.ndim - 2}d for weight "
                           f"of size {list(w.shape)}, but got input of size: {list(x.shape)}")
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype) or not is_float(x.dtype):
        bias = None if b is None else b.dtype.name
        raise RuntimeError(f"Input type ({x.dtype.name}), weight type ({w.dtype.name}) and bias "
                           f"type ({bias}) should be the same floating type")
    if groups < 1 or w.shape[0] % groups != 0:
        raise RuntimeError(f"non-positive groups or out_channels {w.shape[0]} not divisible by "
                           f"groups={groups}")
    if x.shape[1] != w.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected "
                           f"input{list(x.shape)} to have {w.shape[1] * groups} channels, but "
                           f"got {x.shape[1]} channels instead")
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise RuntimeError(f"Given weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {w.shape[0]} elements, but got bias of size "
                           f"{list(b.shape)}")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise RuntimeError(f"conv: expected positive stride and dilation and non-negative "
                           f"padding, got stride={list(stride)}, dilation={list(dilation)}, "
                           f"padding={list(padding)}")
    return TensorMeta(_conv_out_shape(x, w, stride, padding, dilation), x.dtype)


def _conv_raw(x: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int,
              accumulate: Any = None) -> Any:
    sp = _SPATIAL[x.ndim - 2]
    return jax.lax.conv_general_dilated(
        x, w, tuple(stride), [(padding[2 * i], padding[2 * i + 1]) for i in range(x.ndim - 2)],
        rhs_dilation=tuple(dilation), dimension_numbers=("NC" + sp, "OI" + sp, "NC" + sp),
        feature_group_count=groups, preferred_element_type=accumulate)


def _conv(x: Any, w: Any, b: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> Any:
    if b is None:
        return _conv_raw(x, w, stride, padding, dilation, groups)
    bias = b.reshape((-1,) + (1,) * (x.ndim - 2))
    if x.dtype.itemsize == 2 and x.dtype.kind in "fV":  # bfloat16 / float16: one rounding,
        out = _conv_raw(x, w, stride, padding, dilation, groups, np.float32)  # as torch's
        return (out + bias.astype(np.float32)).astype(x.dtype)
    return _conv_raw(x, w, stride, padding, dilation, groups) + bias


def _conv_input_bwd(g: Any, w: Any, size: Any, stride: Any, padding: Any, dilation: Any,
                    groups: int) -> Any:
    fn = lambda x: _conv_raw(x, w, stride, padding, dilation, groups)  # noqa: E731
    return jax.linear_transpose(fn, jax.ShapeDtypeStruct(tuple(size), g.dtype))(g)[0]


def _conv_weight_bwd(g: Any, x: Any, size: Any, stride: Any, padding: Any, dilation: Any,
                     groups: int) -> Any:
    fn = lambda w: _conv_raw(x, w, stride, padding, dilation, groups)  # noqa: E731
    return jax.linear_transpose(fn, jax.ShapeDtypeStruct(tuple(size), g.dtype))(g)[0]


def _conv_backward(g: Any, x: Any, w: Any, b: Any, stride: Any, padding: Any, dilation: Any,
                   groups: int, out: Any) -> tuple:
    gx = conv_input_backward(g, w, list(x.shape), stride, padding, dilation, groups) \
        if wants(x) else None
    gw = conv_weight_backward(g, x, list(w.shape), stride, padding, dilation, groups) \
        if wants(w) else None
    gb = reduce_grad(g.sum([0] + list(range(2, g.ndim))), b) if wants(b) else None
    return gx, gw, gb


def _input_bwd_backward(gg: Any, g: Any, w: Any, size: Any, stride: Any, padding: Any,
                        dilation: Any, groups: int, out: Any) -> tuple:
    """d/dg of <conv^T_w(g), gg> is conv(gg, w); d/dw is the weight transpose at (g, gg)."""
    return (conv(gg, w, None, stride, padding, dilation, groups),
            conv_weight_backward(g, gg, list(w.shape), stride, padding, dilation, groups))


def _weight_bwd_backward(gg: Any, g: Any, x: Any, size: Any, stride: Any, padding: Any,
                         dilation: Any, groups: int, out: Any) -> tuple:
    return (conv(x, gg, None, stride, padding, dilation, groups),
            conv_input_backward(g, gg, list(x.shape), stride, padding, dilation, groups))


_GEOMETRY = "int[] stride, int[] padding, int[] dilation, int groups"
conv = defop(f"convolution(Tensor input, Tensor weight, Tensor? bias, {_GEOMETRY}) -> Tensor",
             _conv, shape=_conv_rule, check=True, backward=holomorphic(_conv_backward),
             save={"input": ("weight",), "weight": ("input",)})
conv_input_backward = defop(
    f"convolution_input_backward(Tensor grad_output, Tensor weight, SymInt[] input_size, "
    f"{_GEOMETRY}) -> Tensor", _conv_input_bwd,
    shape=lambda g, w, size, *a: TensorMeta(tuple(size), g.dtype),
    backward=holomorphic(_input_bwd_backward))
conv_weight_backward = defop(
    f"convolution_weight_backward(Tensor grad_output, Tensor input, SymInt[] weight_size, "
    f"{_GEOMETRY}) -> Tensor", _conv_weight_bwd,
    shape=lambda g, x, size, *a: TensorMeta(tuple(size), g.dtype),
    backward=holomorphic(_weight_bwd_backward))


# -- linear ops and their transposes ---------------------------------------------------------
def linear_pair(name: str, args: str, fn: Callable, rule: Callable,
                linear: Callable = lambda *a: a, static: tuple = ()) -> tuple[Any, Any]:
    """Op ``name(Tensor self, <args>)`` linear in self, and ``name_backward(grad_output,
    input_size, <args>)`` its transpose; each is the other's derivative. For an affine ``fn``
    (constant padding's fill value), ``linear`` maps <args> to those of its linear part.
    ``static``: float arguments that decide the program (interpolation scales)."""
    def transpose(g: Any, size: Any, *a: Any) -> Any:
        shape = jax.ShapeDtypeStruct(tuple(size), g.dtype)
        return jax.linear_transpose(lambda x: fn(x, *linear(*a)), shape)(g)[0]
    fwd = defop(f"{name}(Tensor self, {args}) -> Tensor", fn, shape=rule, check=True, save=(),
                backward=lambda g, x, *a: bwd(g, list(x.shape), *a[:-1]), static=static)
    bwd = defop(f"{name}_backward(Tensor grad_output, SymInt[] input_size, {args}) -> Tensor",
                transpose, shape=lambda g, size, *a: TensorMeta(tuple(size), g.dtype), save=(),
                static=static,
                backward=lambda gg, g, size, *a: fwd(gg, *linear(*a[:-1])))
    return fwd, bwd


def _pool_check(op: str, x: Any, k: Any, s: Any, p: Any, d: Any = (1, 1)) -> None:
    if x.ndim not in (3, 4):
        raise _err(op, f"Expected 3D or 4D (batch mode) tensor for input, got {list(x.shape)}")
    if len(k) != 2 or min(k) < 1 or min(s) < 1 or min(d) < 1 or min(p) < 0:
        raise _err(op, f"expected positive kernel_size {list(k)}, stride {list(s)} and "
                       f"dilation {list(d)}, and non-negative padding {list(p)}")
    for i in range(2):
        if p[i] * 2 > (k[i] - 1) * d[i] + 1:
            raise _err(op, f"pad should be at most half of effective kernel size, but got "
                           f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")


def _pool_shape(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool) -> tuple:
    hw = [out_size(x.shape[-2 + i], k[i], s[i], p[i], p[i], d[i], ceil) for i in range(2)]
    if min(hw) < 1:
        raise RuntimeError(f"Given input size: {list(x.shape)}. Calculated output size: "
                           f"{hw}. Output size is too small")
    return tuple(x.shape[:-2]) + tuple(hw)


def _pads(x: Any, k: Any, s: Any, p: Any, d: Any, out: tuple) -> list:
    """(lo, hi) per spatial dim: hi grows so that ceil_mode's last window fits."""
    pads = []
    for i in range(2):
        need = (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - x.shape[-2 + i] - p[i]
        pads.append((p[i], max(need, p[i])))
    return pads


def _taps(xp: Any, k: Any, s: Any, d: Any, out: Any) -> list:
    """Each window tap as a strided slice of the padded input (row-major over the kernel):
    linear in xp, so it transposes, and cheap to fuse for the small kernels pools use."""
    return [xp[..., i * d[0]: i * d[0] + (out[0] - 1) * s[0] + 1: s[0],
               j * d[1]: j * d[1] + (out[1] - 1) * s[1] + 1: s[1]]
            for i in range(k[0]) for j in range(k[1])]


# -- avg_pool2d, adaptive_avg_pool2d ---------------------------------------------------------
def _avg_rule(x: Any, k: Any, s: Any, p: Any, ceil: bool = False, include_pad: bool = True,
              divisor: Any = None) -> TensorMeta:
    _pool_check("avg_pool2d", x, k, s, p)
    if divisor is not None and divisor == 0:
        raise _err("avg_pool2d", "divisor must be not zero")
    return TensorMeta(_pool_shape(x, k, s, p, (1, 1), ceil), x.dtype)


def _avg_divisor(size: int, k: int, s: int, p: int, n: int, include_pad: bool) -> np.ndarray:
    """PyTorch's per-window count along one dim: padding counts, the ceil overhang does not."""
    start = np.arange(n) * s - p
    end = np.minimum(start + k, size + p)
    full = end - start
    inside = np.minimum(end, size) - np.maximum(start, 0)
    return full if include_pad else inside


def _avg_pool(x: Any, k: Any, s: Any, p: Any, ceil: bool = False, include_pad: bool = True,
              divisor: Any = None) -> Any:
    out = _pool_shape(x, k, s, p, (1, 1), ceil)[-2:]
    pads = [(0, 0, 0)] * (x.ndim - 2) + [(lo, hi, 0)
                                         for lo, hi in _pads(x, k, s, p, (1, 1), out)]
    total = sum(_taps(jax.lax.pad(x, jnp.zeros((), x.dtype), pads), k, s, (1, 1), out))
    if divisor is not None:
        return total / divisor
    dh, dw = (_avg_divisor(x.shape[-2 + i], k[i], s[i], p[i], out[i], include_pad)
              for i in range(2))
    return total / jnp.asarray(np.outer(dh, dw), x.dtype)


avg_pool2d, avg_pool2d_backward = linear_pair(
    "avg_pool2d", "int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode=False, "
    "bool count_include_pad=True, int? divisor_override=None", _avg_pool, _avg_rule)


def _adaptive_matrix(size: int, out: int, dtype: Any) -> Any:
    """Row i averages input [floor(i*size/out), ceil((i+1)*size/out)), as PyTorch's bins."""
    m = np.zeros((out, size))
    for i in range(out):
        lo, hi = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return jnp.asarray(m, dtype)


def _adaptive_rule(x: Any, output_size: Any) -> TensorMeta:
    if x.ndim not in (3, 4) or len(output_size) != 2 or min(output_size) < 0:
        raise _err("adaptive_avg_pool2d", f"expected a 3D or 4D input and 2 non-negative output "
                                          f"sizes, got input {list(x.shape)} and output_size "
                                          f"{list(output_size)}")
    return TensorMeta(tuple(x.shape[:-2]) + tuple(output_size), x.dtype)


def _adaptive(x: Any, output_size: Any) -> Any:
    mh = _adaptive_matrix(x.shape[-2], output_size[0], x.dtype)
    mw = _adaptive_matrix(x.shape[-1], output_size[1], x.dtype)
    return jnp.einsum("ih,...hw,jw->...ij", mh, x, mw)


adaptive_avg_pool2d, adaptive_avg_pool2d_backward = linear_pair(
    "adaptive_avg_pool2d", "SymInt[2] output_size", _adaptive, _adaptive_rule)


# -- max_pool2d with indices -------------------------------------------------------------------
def _max_rule(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool = False) -> tuple:
    _pool_check("max_pool2d", x, k, s, p, d)
    shape = _pool_shape(x, k, s, p, d, ceil)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _max_pool(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool = False) -> tuple:
    """Every window tap as a strided slice of the -inf-padded input; max and first argmax."""
    oh, ow = _pool_shape(x, k, s, p, d, ceil)[-2:]
    pads = [(0, 0, 0)] * (x.ndim - 2) + [(lo, hi, 0)
                                         for lo, hi in _pads(x, k, s, p, d, (oh, ow))]
    fill = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    taps = _taps(jax.lax.pad(x, jnp.asarray(fill, x.dtype), pads), k, s, d, (oh, ow))
    stack = jnp.stack(taps, -3)
    tap = jnp.argmax(stack, -3)
    rows = jnp.arange(oh)[:, None] * s[0] - p[0] + (tap // k[1]) * d[0]
    cols = jnp.arange(ow)[None, :] * s[1] - p[1] + (tap % k[1]) * d[1]
    return jnp.max(stack, -3), (rows * x.shape[-1] + cols).astype(DEFAULT_INT)


def _max_pool_backward(g: tuple, x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool,
                       out: tuple) -> Any:
    """The gradient goes to each window's argmax (a scatter-add over the flattened plane)."""
    go, idx = g[0], out[1]
    lead = list(x.shape[:-2])
    plane = zeros(lead + [x.shape[-2] * x.shape[-1]], dtype=go.dtype)
    flat = lead + [go.shape[-2] * go.shape[-1]]
    return scatter_add(plane, -1, idx.reshape(flat), go.reshape(flat)).reshape(list(x.shape))


max_pool2d = defop("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride, "
                   "int[2] padding, int[2] dilation, bool ceil_mode=False) -> (Tensor, Tensor)",
                   _max_pool, shape=_max_rule, check=True, save=("out[1]",),
                   backward=_max_pool_backward)
