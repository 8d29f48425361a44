"""Vision ops over N spatial dims, channels first: transposed convolution, N-d pools (max with
indices, average, adaptive max), interpolation in every mode, and im2col (unfold) with its
transpose (fold).

Transposed convolution is the transpose of convolution in its input, so its kernel is
``jax.linear_transpose`` of the forward convolution (XLA emits one convolution with
``lhs_dilation``) and its derivatives are the existing convolution ops. Interpolation is linear
in the input and separable: per spatial dim, each output position reads a few input positions
(1 for nearest, 2 for linear, 4 for cubic) with fixed weights, computed on the host from the
static sizes; area mode averages PyTorch's adaptive bins. Linear ops come with their transpose
(:func:`conv.linear_pair`), so every derivative of every order is exact.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, holomorphic, reduce_grad
from ._dtypes import DEFAULT_INT, is_float
from .conv import _adaptive_matrix, _conv_raw, conv, conv_weight_backward, linear_pair, out_size
from .elementwise import wants
from .factories import zeros
from .indexing import scatter_add


# -- transposed convolution --------------------------------------------------------------------
def _convt_out(x: Any, w: Any, stride: Any, padding: Any, output_padding: Any, dilation: Any,
               groups: int) -> tuple:
    """PyTorch's output shape: (in - 1) * s - 2p + d (k - 1) + output_padding + 1 per dim."""
    sizes = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i]
             + dilation[i] * (w.shape[2 + i] - 1) + output_padding[i] + 1
             for i in range(x.ndim - 2)]
    return (x.shape[0], w.shape[1] * groups, *sizes)


def _convt_rule(x: Any, w: Any, b: Any, stride: Any, padding: Any, output_padding: Any,
                dilation: Any, groups: int) -> TensorMeta:
    n = w.ndim - 2
    op = f"conv_transpose{n}d"
    if x.ndim != w.ndim:
        raise RuntimeError(f"{op}: expected {w.ndim}D (batched) input for weight of size "
                           f"{list(w.shape)}, but got input of size: {list(x.shape)}")
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype) or not is_float(x.dtype):
        bias = None if b is None else b.dtype.name
        raise RuntimeError(f"Input type ({x.dtype.name}), weight type ({w.dtype.name}) and bias "
                           f"type ({bias}) should be the same floating type")
    if groups < 1 or w.shape[0] % groups != 0:
        raise RuntimeError(f"{op}: non-positive groups or weight of size {list(w.shape)} not "
                           f"divisible by groups={groups}")
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected "
                           f"input{list(x.shape)} to have {w.shape[0]} channels, but got "
                           f"{x.shape[1]} channels instead")
    if b is not None and tuple(b.shape) != (w.shape[1] * groups,):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected bias "
                           f"to be 1-dimensional with {w.shape[1] * groups} elements, but got "
                           f"bias of size {list(b.shape)} instead")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(output_padding) < 0:
        raise RuntimeError(f"{op}: expected positive stride and dilation and non-negative "
                           f"padding and output_padding, got stride={list(stride)}, "
                           f"dilation={list(dilation)}, padding={list(padding)}, "
                           f"output_padding={list(output_padding)}")
    for i in range(n):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                               f"dilation, but got output_padding={list(output_padding)}, "
                               f"stride={list(stride)}, dilation={list(dilation)}")
    shape = _convt_out(x, w, stride, padding, output_padding, dilation, groups)
    if min(shape[2:]) < 1:
        raise RuntimeError(f"{op}: given input size {list(x.shape[2:])}, calculated output "
                           f"size {list(shape[2:])} is too small")
    return TensorMeta(shape, x.dtype)


def _pairs(padding: Any) -> list:
    return [p for v in padding for p in (v, v)]


def _convt(x: Any, w: Any, b: Any, stride: Any, padding: Any, output_padding: Any,
           dilation: Any, groups: int) -> Any:
    size = _convt_out(x, w, stride, padding, output_padding, dilation, groups)
    fn = lambda y: _conv_raw(y, w, stride, _pairs(padding), dilation, groups)  # noqa: E731
    out = jax.linear_transpose(fn, jax.ShapeDtypeStruct(size, x.dtype))(x)[0]
    return out if b is None else out + b.reshape((-1,) + (1,) * (x.ndim - 2))


def _convt_backward(g: Any, x: Any, w: Any, b: Any, stride: Any, padding: Any,
                    output_padding: Any, dilation: Any, groups: int, out: Any) -> tuple:
    """<convT_w(x), g> = <x, conv_w(g)>: the input's gradient is a convolution of g, the
    weight's the convolution weight-gradient with g as input and x as its output gradient."""
    pads = _pairs(padding)
    gx = conv(g, w, None, stride, pads, dilation, groups) if wants(x) else None
    gw = conv_weight_backward(x, g, list(w.shape), stride, pads, dilation, groups) \
        if wants(w) else None
    gb = reduce_grad(g.sum([0] + list(range(2, g.ndim))), b) if wants(b) else None
    return gx, gw, gb


conv_transpose = defop(
    "conv_transpose(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, "
    "int[] output_padding, int[] dilation, int groups) -> Tensor", _convt, shape=_convt_rule,
    check=True, backward=holomorphic(_convt_backward),
    save={"input": ("weight",), "weight": ("input",)})


# -- N-d pooling geometry ----------------------------------------------------------------------
def _check_pool(op: str, x: Any, k: Any, s: Any, p: Any, d: Any) -> int:
    n = len(k)
    if x.ndim not in (n + 1, n + 2) or any(v == 0 for v in x.shape[1:]):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D (batch mode) tensor with "
                           f"non-zero spatial dims for input, got {list(x.shape)}")
    if not len(s) == len(p) == len(d) == n:
        raise RuntimeError(f"{op}: kernel_size, stride, padding and dilation must each have "
                           f"{n} values, got {list(k)}, {list(s)}, {list(p)}, {list(d)}")
    if min(k) < 1 or min(s) < 1 or min(d) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}: expected positive kernel_size {list(k)}, stride {list(s)} "
                           f"and dilation {list(d)}, and non-negative padding {list(p)}")
    for i in range(n):
        if p[i] * 2 > (k[i] - 1) * d[i] + 1:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but "
                               f"got pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    return n


def _pool_out(op: str, x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool) -> tuple:
    n = len(k)
    sizes = [out_size(x.shape[-n + i], k[i], s[i], p[i], p[i], d[i], ceil) for i in range(n)]
    if min(sizes) < 1:
        raise RuntimeError(f"{op}: Given input size: {list(x.shape)}. Calculated output size: "
                           f"{sizes}. Output size is too small")
    return tuple(sizes)


def _padded(x: Any, k: Any, s: Any, p: Any, d: Any, out: tuple, fill: Any) -> Any:
    """x padded by p on the low side and enough on the high side for ceil_mode's last window."""
    n = len(k)
    pads = [(0, 0, 0)] * (x.ndim - n)
    for i in range(n):
        need = (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - x.shape[-n + i] - p[i]
        pads.append((p[i], max(need, p[i]), 0))
    return jax.lax.pad(x, jnp.asarray(fill, x.dtype), pads)


def _taps(xp: Any, k: Any, s: Any, d: Any, out: Any) -> list:
    """Each window tap (row-major over the kernel) as a strided slice of the padded input."""
    n = len(k)
    lead = (slice(None),) * (xp.ndim - n)
    return [xp[lead + tuple(slice(o[i] * d[i], o[i] * d[i] + (out[i] - 1) * s[i] + 1, s[i])
                            for i in range(n))]
            for o in np.ndindex(*k)]


def _flat_index(offsets: tuple, starts: list, sizes: tuple) -> Any:
    """Flat spatial index of (start_i + offset_i) per dim, start_i broadcast along dim i."""
    n = len(starts)
    flat = 0
    for i in range(n):
        shape = [1] * n
        shape[i] = -1
        pos = jnp.asarray(starts[i]).reshape(shape) + offsets[i]
        flat = flat * sizes[i] + pos
    return flat.astype(DEFAULT_INT)


def _scatter_back(go: Any, idx: Any, shape: list, n: int) -> Any:
    """Gradient routed to the flat spatial positions ``idx`` (scatter-add over the plane)."""
    lead = list(shape[:-n])
    plane = zeros(lead + [math.prod(shape[-n:])], dtype=go.dtype)
    flat = lead + [-1]
    return scatter_add(plane, -1, idx.reshape(flat), go.reshape(flat)).reshape(list(shape))


# -- max pool with indices ---------------------------------------------------------------------
def _max_rule(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool = False) -> tuple:
    op = f"max_pool{len(k)}d"
    n = _check_pool(op, x, k, s, p, d)
    shape = tuple(x.shape[:-n]) + _pool_out(op, x, k, s, p, d, ceil)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _max_pool(x: Any, k: Any, s: Any, p: Any, d: Any, ceil: bool = False) -> tuple:
    n = len(k)
    out = _pool_out("max_pool", x, k, s, p, d, ceil)
    fill = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    stack = jnp.stack(_taps(_padded(x, k, s, p, d, out, fill), k, s, d, out), -n - 1)
    tap = jnp.argmax(stack, -n - 1)
    offsets = tuple(o * d[i] for i, o in enumerate(jnp.unravel_index(tap, tuple(k))))
    starts = [np.arange(out[i]) * s[i] - p[i] for i in range(n)]
    return jnp.max(stack, -n - 1), _flat_index(offsets, starts, tuple(x.shape[-n:]))


max_pool_nd = defop("max_pool_nd_with_indices(Tensor self, int[] kernel_size, int[] stride, "
                    "int[] padding, int[] dilation, bool ceil_mode=False) -> (Tensor, Tensor)",
                    _max_pool, shape=_max_rule, check=True, save=("out[1]",),
                    backward=lambda g, x, k, *a: _scatter_back(g[0], a[-1][1], list(x.shape),
                                                               len(k)))


# -- average pool ------------------------------------------------------------------------------
def _avg_rule(x: Any, k: Any, s: Any, p: Any, ceil: bool = False, include_pad: bool = True,
              divisor: Any = None) -> TensorMeta:
    op = f"avg_pool{len(k)}d"
    n = _check_pool(op, x, k, s, p, [1] * len(k))
    if divisor is not None and divisor == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    return TensorMeta(tuple(x.shape[:-n]) + _pool_out(op, x, k, s, p, [1] * n, ceil), x.dtype)


def _avg_count(size: int, k: int, s: int, p: int, n: int, include_pad: bool) -> np.ndarray:
    """PyTorch's per-window count along one dim: padding counts, the ceil overhang does not."""
    start = np.arange(n) * s - p
    end = np.minimum(start + k, size + p)
    return end - start if include_pad else np.minimum(end, size) - np.maximum(start, 0)


def _avg_pool(x: Any, k: Any, s: Any, p: Any, ceil: bool = False, include_pad: bool = True,
              divisor: Any = None) -> Any:
    n, ones = len(k), [1] * len(k)
    out = _pool_out("avg_pool", x, k, s, p, ones, ceil)
    total = sum(_taps(_padded(x, k, s, p, ones, out, 0), k, s, ones, out))
    if divisor is not None:
        return total / divisor
    count = np.ones(())
    for i in range(n):
        count = np.multiply.outer(count, _avg_count(x.shape[-n + i], k[i], s[i], p[i], out[i],
                                                    include_pad))
    return total / jnp.asarray(count, x.dtype)


avg_pool_nd, avg_pool_nd_backward = linear_pair(
    "avg_pool_nd", "int[] kernel_size, int[] stride, int[] padding, bool ceil_mode=False, "
    "bool count_include_pad=True, int? divisor_override=None", _avg_pool, _avg_rule)


# -- adaptive max pool -------------------------------------------------------------------------
def _adaptive_bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray, int]:
    """PyTorch's bins [floor(i*size/out), ceil((i+1)*size/out)): starts, lengths, max length."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    return start, end - start, int((end - start).max()) if out else 0


def _adaptive_check(op: str, x: Any, output_size: Any) -> int:
    n = len(output_size)
    if x.ndim not in (n + 1, n + 2) or any(v == 0 for v in x.shape[-n:]):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D tensor with non-zero spatial "
                           f"dims for input, but got: {list(x.shape)}")
    if min(output_size) < 0:
        raise RuntimeError(f"{op}: output_size must be non-negative, got {list(output_size)}")
    return n


def _adaptive_max_rule(x: Any, output_size: Any) -> tuple:
    n = _adaptive_check(f"adaptive_max_pool{len(output_size)}d", x, output_size)
    shape = tuple(x.shape[:-n]) + tuple(output_size)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _adaptive_max(x: Any, output_size: Any) -> tuple:
    """Each dim gathered to [out, longest bin] (short bins masked with -inf), then one max
    over the bins' taps; the argmax tap maps back to its flat spatial index."""
    n = len(output_size)
    lead = x.ndim - n
    sizes = tuple(x.shape[-n:])
    fill = -jnp.inf if jnp.issubdtype(x.dtype, jnp.floating) else jnp.iinfo(x.dtype).min
    bins = [_adaptive_bins(sizes[i], output_size[i]) for i in range(n)]
    y, mask = x, np.ones((), bool)
    for i, (start, length, longest) in enumerate(bins):
        j = np.arange(longest)
        idx = np.minimum(start[:, None] + j, sizes[i] - 1)
        ax = lead + 2 * i
        y = jnp.take(y, jnp.asarray(idx.reshape(-1)), axis=ax)
        y = y.reshape(y.shape[:ax] + idx.shape + y.shape[ax + 1:])
        mask = np.multiply.outer(mask, j[None, :] < length[:, None])
    y = jnp.where(jnp.asarray(mask), y, jnp.asarray(fill, x.dtype))
    perm = list(range(lead)) + [lead + 2 * i for i in range(n)] + \
        [lead + 2 * i + 1 for i in range(n)]
    y = jnp.transpose(y, perm)
    y = y.reshape(y.shape[:lead + n] + (-1,))
    tap = jnp.argmax(y, -1)
    offsets = jnp.unravel_index(tap, tuple(b[2] for b in bins))
    return jnp.max(y, -1), _flat_index(offsets, [b[0] for b in bins], sizes)


adaptive_max_pool_nd = defop(
    "adaptive_max_pool_nd(Tensor self, SymInt[] output_size) -> (Tensor, Tensor)",
    _adaptive_max, shape=_adaptive_max_rule, check=True, save=("out[1]",),
    backward=lambda g, x, size, out: _scatter_back(g[0], out[1], list(x.shape), len(size)))


def _adaptive_avg_rule(x: Any, output_size: Any) -> TensorMeta:
    n = _adaptive_check(f"adaptive_avg_pool{len(output_size)}d", x, output_size)
    return TensorMeta(tuple(x.shape[:-n]) + tuple(output_size), x.dtype)


def _along(x: Any, ax: int, m: Any) -> Any:
    """The matrix m [out, in] applied along axis ax."""
    return jnp.moveaxis(jnp.tensordot(x, m, axes=([ax], [1])), -1, ax)


def _adaptive_avg(x: Any, output_size: Any) -> Any:
    n = len(output_size)
    for i in range(n):
        ax = x.ndim - n + i
        x = _along(x, ax, _adaptive_matrix(x.shape[ax], output_size[i], x.dtype))
    return x


adaptive_avg_pool_nd, adaptive_avg_pool_nd_backward = linear_pair(
    "adaptive_avg_pool_nd", "SymInt[] output_size", _adaptive_avg, _adaptive_avg_rule)


# -- interpolation -----------------------------------------------------------------------------
_MODES = ("nearest", "nearest-exact", "linear", "cubic", "area", "linear-aa", "cubic-aa")


def _scale(size: int, out: int, align: bool, scale: Any, dt: Any) -> Any:
    """PyTorch's source step per output step (area_pixel_compute_scale), in dtype dt."""
    if align:
        return dt(size - 1) / dt(out - 1) if out > 1 else dt(0)
    if scale is not None and scale > 0:
        return dt(1.0 / scale)
    return dt(size) / dt(out)


def _taps_1d(mode: str, size: int, out: int, align: bool, scale: Any, dt: Any
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """Input positions [out, taps] each output reads, and their weights (None: weight 1)."""
    i = np.arange(out)
    if mode in ("nearest", "nearest-exact"):
        if mode == "nearest" and out == size:
            return i[:, None], None
        if mode == "nearest" and out == 2 * size:
            return (i >> 1)[:, None], None
        f32 = np.float32
        step = _scale(size, out, False, scale, f32)
        shift = f32(0.5) if mode == "nearest-exact" else f32(0)
        src = np.floor((i.astype(f32) + shift) * step).astype(np.int64)
        return np.minimum(src, size - 1)[:, None], None
    step = _scale(size, out, align, scale, dt)
    idx = i.astype(dt)
    real = step * idx if align else step * (idx + dt(0.5)) - dt(0.5)
    if mode == "linear":
        real = real if align else np.maximum(real, dt(0))
    lo = np.minimum(np.floor(real).astype(np.int64), size - 1)
    t = np.clip(real - lo.astype(dt), dt(0), dt(1)).astype(dt)
    if mode == "linear":
        hi = lo + (lo < size - 1)
        return np.stack([lo, hi], 1), np.stack([dt(1) - t, t], 1).astype(dt)
    a = dt(-0.75)  # PyTorch's cubic convolution coefficient

    def near(v: Any) -> Any:
        return ((a + 2) * v - (a + 3)) * v * v + 1

    def far(v: Any) -> Any:
        return ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1).astype(dt)
    idx4 = np.clip(lo[:, None] + np.arange(-1, 3), 0, size - 1)
    return idx4, w


def _aa_filter(mode: str, v: np.ndarray) -> np.ndarray:
    """Antialiasing filters: the triangle, or Keys' cubic with a = -0.5 (PyTorch's choice
    here, where plain bicubic uses -0.75)."""
    v = np.abs(v)
    if mode == "linear-aa":
        return np.where(v < 1, 1 - v, 0)
    a = -0.5
    near = ((a + 2) * v - (a + 3)) * v * v + 1
    far = ((a * v - 5 * a) * v + 8 * a) * v - 4 * a
    return np.where(v < 1, near, np.where(v < 2, far, 0))


def _aa_matrix(mode: str, size: int, out: int, align: bool, scale: Any, dt: Any) -> np.ndarray:
    """The [out, in] weights of antialiased resampling: when shrinking, the filter widens by
    the scale so every input pixel contributes; each row's weights are normalised."""
    step = _scale(size, out, align, scale, dt)
    support = (2.0 if mode == "linear-aa" else 4.0) * 0.5 * max(float(step), 1.0)
    inv = dt(1) / step if step >= 1 else dt(1)
    m = np.zeros((out, size), dt)
    for i in range(out):
        center = step * dt(i + 0.5)
        lo = max(int(center - support + 0.5), 0)  # int(): C's truncation, as PyTorch
        hi = min(int(center + support + 0.5), size)
        w = _aa_filter(mode, (np.arange(lo, hi, dtype=dt) - center + dt(0.5)) * inv).astype(dt)
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0 else w
    return m


def _upsample_rule(x: Any, output_size: Any, mode: str, align_corners: bool = False,
                   scales: str = "") -> TensorMeta:
    n = len(output_size)
    if mode not in _MODES:
        raise RuntimeError(f"upsample: unknown mode {mode!r}, expected one of {list(_MODES)}")
    if x.ndim < n + 1 or not is_float(x.dtype) and mode not in ("nearest", "nearest-exact"):
        raise RuntimeError(f"upsample_{mode}{n}d: expected a floating input with {n} spatial "
                           f"dims, got {list(x.shape)} of {x.dtype.name}")
    if min(output_size) < 1 or min(x.shape[-n:]) < 1:
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, x.shape[-n:]))}) and output "
                           f"({', '.join(map(str, output_size))})")
    return TensorMeta(tuple(x.shape[:-n]) + tuple(output_size), x.dtype)


def encode_scales(scales: Any) -> str:
    """Scale factors as the op's ``scales`` string (exact float reprs, "" for none): a string
    stays a compile-time constant where compiled autograd would lift a float to a traced
    scalar, and these decide host-side index tables."""
    return "" if scales is None else ",".join(repr(float(v)) for v in scales)


def _select(x: Any, idx: np.ndarray, ax: int) -> Any:
    """``x`` indexed by the host table ``idx`` along ``ax``: a repeat (integer upscale) or a
    strided slice (integer downscale) where the table has that form, as those are many times
    cheaper than a gather on every backend; else a gather that skips the bounds handling."""
    size, out = x.shape[ax], len(idx)
    if out % size == 0 and np.array_equal(idx, np.arange(out) // (out // size)):
        r = out // size  # each element r times: a broadcast and a reshape, no gather
        wide = jnp.expand_dims(x, ax + 1)
        wide = jnp.broadcast_to(wide, wide.shape[:ax + 1] + (r,) + wide.shape[ax + 2:])
        return wide.reshape(x.shape[:ax] + (out,) + x.shape[ax + 1:])
    step = int(idx[1] - idx[0]) if out > 1 else 1
    if step >= 1 and np.array_equal(idx, idx[0] + step * np.arange(out)):
        return jax.lax.slice_in_dim(x, int(idx[0]), int(idx[0]) + step * (out - 1) + 1, step,
                                    axis=ax)
    return jnp.take(x, jnp.asarray(idx), axis=ax, mode="clip")  # the table is in bounds


def _upsample(x: Any, output_size: Any, mode: str, align_corners: bool = False,
              scales: str = "") -> Any:
    n = len(output_size)
    scales = [float(v) for v in scales.split(",")] if scales else None
    dt = np.float64 if x.dtype == jnp.float64 else np.float32
    for i in range(n):
        ax = x.ndim - n + i
        if mode == "area":
            x = _along(x, ax, _adaptive_matrix(x.shape[ax], output_size[i], x.dtype))
            continue
        scale = None if scales is None else scales[i]
        if mode.endswith("-aa"):
            m = _aa_matrix(mode, x.shape[ax], output_size[i], align_corners, scale, dt)
            x = _along(x, ax, jnp.asarray(m, x.dtype))
            continue
        idx, w = _taps_1d(mode, x.shape[ax], output_size[i], align_corners, scale, dt)
        if w is None:
            x = _select(x, idx[:, 0], ax)
            continue
        bshape = [1] * (x.ndim - ax)
        bshape[0] = -1
        x = sum(_select(x, idx[:, j], ax) * jnp.asarray(w[:, j], x.dtype).reshape(bshape)
                for j in range(idx.shape[1]))
    return x


upsample, upsample_backward = linear_pair(
    "upsample_nd", "SymInt[] output_size, str mode, bool align_corners=False, "
    "str scales=''", _upsample, _upsample_rule)


# -- im2col (unfold) and its transpose (fold) --------------------------------------------------
def _im2col_rule(x: Any, k: Any, d: Any, p: Any, s: Any) -> TensorMeta:
    if x.ndim != 4:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(x.shape)}")
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise RuntimeError(f"im2col: expected positive kernel_size {list(k)}, dilation "
                           f"{list(d)} and stride {list(s)}, and non-negative padding {list(p)}")
    out = [out_size(x.shape[2 + i], k[i], s[i], p[i], p[i], d[i]) for i in range(2)]
    if min(out) < 1:
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
                           f"padding=({p[0]}, {p[1]}), calculated shape of the array of "
                           f"sliding blocks as ({out[0]}, {out[1]}), but its components must "
                           f"be at least one.")
    return TensorMeta((x.shape[0], x.shape[1] * k[0] * k[1], out[0] * out[1]), x.dtype)


def _im2col(x: Any, k: Any, d: Any, p: Any, s: Any) -> Any:
    out = tuple(out_size(x.shape[2 + i], k[i], s[i], p[i], p[i], d[i]) for i in range(2))
    taps = _taps(_padded(x, k, s, p, d, out, 0), k, s, d, out)
    cols = jnp.stack(taps, 2)  # [N, C, kh*kw, oh, ow]: channel-major, as PyTorch
    return cols.reshape(x.shape[0], -1, out[0] * out[1])


im2col, col2im = linear_pair(
    "im2col", "int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride",
    _im2col, _im2col_rule)


# -- fractional max pool -----------------------------------------------------------------------
def _fractional_rule(x: Any, k: Any, output_size: Any, samples: Any) -> tuple:
    n = len(k)
    op = f"fractional_max_pool{n}d"
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}: Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    batch = 1 if x.ndim == n + 1 else x.shape[0]
    if tuple(samples.shape) != (batch, x.shape[-n - 1], n):
        raise RuntimeError(f"{op}: expected _random_samples of shape {[batch, x.shape[-n - 1], n]},"
                           f" got {list(samples.shape)}")
    for i in range(n):
        if output_size[i] + k[i] - 1 > x.shape[-n + i]:
            raise RuntimeError(f"{op}(): pool size {k[i]} and output size {output_size[i]} are "
                               f"too large for input size {x.shape[-n + i]} in dim {i}")
    shape = tuple(x.shape[:-n]) + tuple(output_size)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _intervals(u: Any, size: int, out: int, k: int) -> Any:
    """PyTorch's window starts [..., out] from samples u: int((i + u) * alpha) - int(u * alpha),
    the last window flush with the end (alpha computed in the input's dtype)."""
    if out == 1:
        return jnp.full(u.shape + (1,), size - k, DEFAULT_INT)
    alpha = jnp.asarray(size - k, u.dtype) / jnp.asarray(out - 1, u.dtype)
    i = jnp.arange(out - 1, dtype=u.dtype)
    starts = (jnp.trunc((i + u[..., None]) * alpha) - jnp.trunc(u * alpha)[..., None])
    last = jnp.full(u.shape + (1,), size - k, DEFAULT_INT)
    return jnp.concatenate([starts.astype(DEFAULT_INT), last], -1)


def _fractional(x: Any, k: Any, output_size: Any, samples: Any) -> tuple:
    """Window starts per (batch, channel) and dim from the samples (dims ordered as PyTorch
    reads them: W first for 2-D, T first for 3-D), then a gather of every window tap."""
    n = len(k)
    unbatched = x.ndim == n + 1
    xb = x[None] if unbatched else x
    sizes = tuple(xb.shape[2:])
    order = [1, 0] if n == 2 else list(range(n))  # which sample drives which spatial dim
    starts = [_intervals(samples[..., order[i]].astype(xb.dtype), sizes[i], output_size[i], k[i])
              for i in range(n)]  # each [N, C, out_i]
    flat = 0
    for i in range(n):  # [N, C, o_1..o_n, k_1..k_n] flat input positions
        shape = [xb.shape[0], xb.shape[1]] + [1] * (2 * n)
        shape[2 + i] = output_size[i]
        tap = jnp.arange(k[i]).reshape([1] * (2 + n + i) + [k[i]] + [1] * (n - i - 1))
        flat = flat * sizes[i] + starts[i].reshape(shape) + tap
    flat = jnp.broadcast_to(flat, tuple(xb.shape[:2]) + tuple(output_size) + tuple(k))
    lead = tuple(xb.shape[:2]) + tuple(output_size)
    vals = jnp.take_along_axis(xb.reshape(xb.shape[:2] + (-1,)),
                               flat.reshape(xb.shape[:2] + (-1,)), -1).reshape(lead + (-1,))
    pos = flat.reshape(lead + (-1,))
    best = jnp.argmax(vals, -1)
    out = jnp.take_along_axis(vals, best[..., None], -1)[..., 0]
    idx = jnp.take_along_axis(pos, best[..., None], -1)[..., 0].astype(DEFAULT_INT)
    return (out[0], idx[0]) if unbatched else (out, idx)


fractional_max_pool_nd = defop(
    "fractional_max_pool_nd(Tensor self, int[] kernel_size, int[] output_size, "
    "Tensor random_samples) -> (Tensor, Tensor)", _fractional, shape=_fractional_rule,
    check=True, save=("out[1]",),
    backward=lambda g, x, k, size, samples, out: (
        _scatter_back(g[0], out[1], list(x.shape), len(k)), None))
