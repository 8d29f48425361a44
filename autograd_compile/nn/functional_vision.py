"""``acg.nn.functional``'s vision part: transposed convolutions, N-d pools, unpooling, LP and
fractional pools, interpolation, pixel shuffles and fold/unfold, under PyTorch's signatures.

The ops are in ``kernels/vision.py``; what is a composition in PyTorch (LP pools, unpooling,
pixel shuffles) is a composition here too.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> F.interpolate(acg.ones(1, 1, 2, 2), scale_factor=2, mode="bilinear").shape
acg.Size([1, 1, 4, 4])
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..kernels import api as _api
from ..kernels import conv as _conv
from ..kernels import vision as _v
from ..kernels._dtypes import is_float
from ..amp.autocast_mode import autocast_op
from ..tensor import Tensor

__all__ = [
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
    "max_pool1d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
    "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle", "fold", "unfold",
]


def _ntuple(v: Any, n: int, name: str) -> list[int]:
    """An int or a sequence of n ints (PyTorch's _single/_pair/_triple)."""
    vals = [v] * n if isinstance(v, int) else list(v)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values, but got {list(vals)}")
    return [int(x) for x in vals]


def _batched(input: Tensor, n: int) -> tuple[Tensor, bool]:
    """input with a batch dim (an unbatched [C, *spatial] input gains one)."""
    unbatched = input.ndim == n + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


# -- transposed convolution --------------------------------------------------------------------
def _conv_transpose(n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                    padding: Any, output_padding: Any, groups: int, dilation: Any) -> Tensor:
    if isinstance(padding, str):
        raise RuntimeError(f"conv_transpose{n}d: padding={padding!r} is not supported for "
                           f"transposed convolutions, give explicit padding amounts")
    x, unbatched = _batched(input, n)
    out = _v.conv_transpose(x, weight, bias, _ntuple(stride, n, "stride"),
                            _ntuple(padding, n, "padding"),
                            _ntuple(output_padding, n, "output_padding"),
                            _ntuple(dilation, n, "dilation"), groups)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """1-D transposed convolution of [N, C_in, L] with weight [C_in, C_out/groups, k]."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """2-D transposed convolution ("deconvolution"): the gradient of conv2d in its input.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.conv_transpose2d(acg.randn(1, 4, 5, 5), acg.randn(4, 2, 3, 3), stride=2).shape
    acg.Size([1, 2, 11, 11])
    """
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """3-D transposed convolution of [N, C_in, D, H, W]."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution in time-batch-channel layout: input [T, B, C_in], weight
    [k, C_in, C_out], bias [C_out]; output [T', B, C_out]."""
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise RuntimeError(f"conv_tbc: expected a 3-D input and weight and a 1-D bias, got "
                           f"{list(input.shape)}, {list(weight.shape)}, {list(bias.shape)}")
    out = _conv.conv(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, [1], [pad, pad],
                     [1], 1)
    return out.permute(2, 0, 1)


# -- max / average pools -----------------------------------------------------------------------
def _pool_args(n: int, kernel_size: Any, stride: Any, padding: Any) -> tuple:
    k = _ntuple(kernel_size, n, "kernel_size")
    empty = stride is None or (not isinstance(stride, int) and len(stride) == 0)
    return k, (k if empty else _ntuple(stride, n, "stride")), _ntuple(padding, n, "padding")


def _max_pool(n: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    k, s, p = _pool_args(n, kernel_size, stride, padding)
    return _v.max_pool_nd(input, k, s, p, _ntuple(dilation, n, "dilation"), ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over windows of [N, C, L] (or [C, L]) and the flat index of each maximum."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over windows of [N, C, H, W] and the flat H*W index of each maximum."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over windows of [N, C, D, H, W] and the flat D*H*W index of each maximum."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of [N, C, L]; the gradient goes to each window's (first) maximum.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.max_pool1d(acg.tensor([[1.0, 3.0, 2.0, 0.0]]), 2).tolist()
    [[3.0, 2.0]]
    """
    out = _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of [N, C, D, H, W] (or [C, D, H, W])."""
    out = _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of [N, C, L]; ``count_include_pad`` counts zero padding."""
    k, s, p = _pool_args(1, kernel_size, stride, padding)
    return _v.avg_pool_nd(input, k, s, p, ceil_mode, count_include_pad, None)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over windows of [N, C, D, H, W]; ``divisor_override`` replaces the window size."""
    k, s, p = _pool_args(3, kernel_size, stride, padding)
    return _v.avg_pool_nd(input, k, s, p, ceil_mode, count_include_pad, divisor_override)


# -- adaptive pools ----------------------------------------------------------------------------
def _adaptive_size(input: Tensor, output_size: Any, n: int) -> list[int]:
    """An int or n entries; None keeps that input dim."""
    size = [output_size] * n if isinstance(output_size, int) or output_size is None \
        else list(output_size)
    if len(size) != n:
        raise ValueError(f"adaptive pool: output_size must be an int or {n} values, got "
                         f"{output_size}")
    return [int(input.shape[-n + i]) if v is None else int(v) for i, v in enumerate(size)]


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over PyTorch's adaptive bins of [N, C, L] giving ``output_size`` positions."""
    return _v.adaptive_avg_pool_nd(input, _adaptive_size(input, output_size, 1))


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over PyTorch's adaptive bins of [N, C, D, H, W] (None keeps a dim)."""
    return _v.adaptive_avg_pool_nd(input, _adaptive_size(input, output_size, 3))


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over adaptive bins of [N, C, L] and the index of each maximum."""
    return _v.adaptive_max_pool_nd(input, _adaptive_size(input, output_size, 1))


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over adaptive bins of [N, C, H, W] and the flat H*W index of each maximum."""
    return _v.adaptive_max_pool_nd(input, _adaptive_size(input, output_size, 2))


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """Max over adaptive bins of [N, C, D, H, W] and the flat index of each maximum."""
    return _v.adaptive_max_pool_nd(input, _adaptive_size(input, output_size, 3))


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over PyTorch's adaptive bins of [N, C, L]."""
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over PyTorch's adaptive bins of [N, C, H, W] (None keeps a dim).

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.adaptive_max_pool2d(acg.arange(16.0).reshape(1, 4, 4), 1).tolist()
    [[[15.0]]]
    """
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max over PyTorch's adaptive bins of [N, C, D, H, W]."""
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


# -- LP pools ----------------------------------------------------------------------------------
def _lp_pool(n: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Tensor:
    """(sum over the window of x^p)^(1/p), as PyTorch composes it: an average pool of x^p
    scaled by the window size; p = inf is a max pool of |x|."""
    if norm_type == float("inf"):
        return _max_pool(n, input.abs(), kernel_size, stride, 0, 1, ceil_mode)[0]
    if norm_type == -float("inf"):
        return -_max_pool(n, -input.abs(), kernel_size, stride, 0, 1, ceil_mode)[0]
    k, s, p = _pool_args(n, kernel_size, stride, 0)
    out = _v.avg_pool_nd(input.pow(norm_type), k, s, p, ceil_mode, True, None)
    return (out.sign() * out.abs().relu()).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pool over windows of [N, C, L]: (sum x^p)^(1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pool over windows of [N, C, H, W]: (sum x^p)^(1/p)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pool over windows of [N, C, D, H, W]: (sum x^p)^(1/p)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- max unpooling -----------------------------------------------------------------------------
def _unpool_size(input: Tensor, k: list, s: list, p: list, output_size: Any) -> list[int]:
    n = len(k)
    default = [(input.shape[-n + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(n)]
    if output_size is None:
        return default
    size = [int(v) for v in output_size]
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, "
                         f"but it has a length of '{len(size)}'")
    for d in range(n):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < size[d] < hi:
            raise ValueError(f'invalid output_size "{list(output_size)}" (dim {d} must be '
                             f'between {lo} and {hi})')
    return size


def _max_unpool(n: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any) -> Tensor:
    """Each input value written at its flat index in a zero plane (the rest stays 0)."""
    k, s, p = _pool_args(n, kernel_size, stride, padding)
    size = _unpool_size(input, k, s, p, output_size)
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"max_unpool{n}d: Expected {n + 1}D or {n + 2}D tensor, but got "
                           f"{list(input.shape)}")
    lead = list(input.shape[:-n])
    plane = _api.zeros(lead + [math.prod(size)], dtype=input.dtype)
    flat = plane.scatter(-1, indices.reshape(lead + [-1]), input.reshape(lead + [-1]))
    return flat.reshape(lead + size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool1d: values back at their indices, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


@autocast_op("max_unpool2d")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool2d: values back at their flat H*W indices, zeros elsewhere.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> out, idx = F.max_pool2d(acg.arange(4.0).reshape(1, 1, 2, 2), 2, return_indices=True)
    >>> F.max_unpool2d(out, idx, 2).tolist()
    [[[[0.0, 0.0], [0.0, 3.0]]]]
    """
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


@autocast_op("max_unpool3d")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Partial inverse of max_pool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# -- fractional max pool -----------------------------------------------------------------------
def _fractional(n: int, input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                samples: Tensor | None) -> tuple[Tensor, Tensor]:
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    k = _ntuple(kernel_size, n, "kernel_size")
    if output_size is None:
        ratio = [output_ratio] * n if isinstance(output_ratio, (int, float)) \
            else list(output_ratio)
        if len(ratio) == 1:
            ratio = ratio * n
        if len(ratio) != n:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             f"of Ints.")
        size = [int(input.shape[-n + i] * ratio[i]) for i in range(n)]
    else:
        size = _ntuple(output_size, n, "output_size")
    if samples is None:
        batch = 1 if input.ndim == n + 1 else input.shape[0]
        dtype = input.dtype if is_float(input.dtype) else None
        samples = _api.rand(batch, input.shape[-n - 1], n, dtype=dtype)
    return _v.fractional_max_pool_nd(input, k, size, samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """Fractional max pooling of [N, C, H, W] (Graham, 2014) and the flat index per maximum."""
    return _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """Fractional max pooling of [N, C, D, H, W] and the flat index of each maximum."""
    return _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Max over pseudo-random windows whose starts step by a fractional stride, giving
    ``output_size`` (or ``output_ratio`` of the input); the samples come from ``acg.rand``.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.fractional_max_pool2d(acg.randn(1, 2, 9, 9), 2, output_size=4).shape
    acg.Size([1, 2, 4, 4])
    """
    out = _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """3-D fractional max pooling of [N, C, D, H, W]."""
    out = _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


# -- interpolation -----------------------------------------------------------------------------
_NEEDS = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_KERNEL_MODE = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "linear",
                "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic", "area": "area"}


def _output_size(input: Tensor, dim: int, size: Any, scale_factor: Any) -> tuple:
    """(output sizes or None, scale factors or None), as F.interpolate resolves them."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of {size}. "
                    f"Please provide input tensor in (N, C, d1, d2, ...,dK) format and output "
                    f"size in (o1, o2, ...,oK) format.")
            if not all(isinstance(v, int) for v in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(v) for v in size]}")
            return list(size), None
        return [size] * dim, None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {spatial} and scale_factor of shape "
                f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                f"and scale_factor in (s1, s2, ...,sK) format.")
        return None, [float(v) for v in scale_factor]
    return None, [float(scale_factor)] * dim


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resample [N, C, *spatial] to ``size`` or by ``scale_factor``: modes "nearest",
    "nearest-exact", "linear" (3-D), "bilinear"/"bicubic" (4-D), "trilinear" (5-D), "area".
    Separable per-dim taps with PyTorch's source-index rules; one op, linear in the input.
    ``antialias=True`` (bilinear, bicubic) filters as PyTorch does when shrinking.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> x = acg.tensor([[[0.0, 2.0]]])
    >>> F.interpolate(x, size=3, mode="linear", align_corners=True).tolist()
    [[[0.0, 1.0, 2.0]]]
    """
    shape = tuple(input.shape)
    uint8 = input.dtype == _UINT8
    key = (shape, uint8, _frozen(size), _frozen(scale_factor), mode, align_corners,
           recompute_scale_factor, antialias)
    cacheable = _UNHASHABLE not in key[2:4] and all(type(d) is int for d in shape)
    plan = _PLANS.get(key) if cacheable else None  # (symbolic sizes: resolved every call)
    if plan is None:  # the argument checks and size rules: once per distinct call
        plan = _interpolate_plan(input, size, scale_factor, mode, align_corners,
                                 recompute_scale_factor, antialias)
        if cacheable:
            if len(_PLANS) > 4096:
                _PLANS.clear()
            _PLANS[key] = plan
    output_size, kernel_mode, align, scales = plan
    if uint8 and kernel_mode not in ("nearest", "nearest-exact"):
        return _resize_uint8(input, list(output_size), mode, kernel_mode, align,
                             [float(v) for v in scales.split(",")] if scales else None)
    return _v.upsample(input, list(output_size), kernel_mode, align, scales)


_UNHASHABLE = object()
_UINT8 = np.dtype("uint8")  # (a dtype compares in C; its str() costs a few us)
_PLANS: dict[tuple, tuple] = {}  # resolved interpolate arguments (a loop repeats a few)


def _frozen(v: Any) -> Any:
    """``size``/``scale_factor`` as a cache key (lists as tuples, tagged by type)."""
    if v is None or type(v) in (int, float):
        return type(v), v
    if type(v) in (list, tuple) and all(type(x) in (int, float) for x in v):
        return type(v), tuple((type(x), x) for x in v)
    return _UNHASHABLE


def _interpolate_plan(input: Tensor, size: Any, scale_factor: Any, mode: str,
                      align_corners: bool | None, recompute_scale_factor: bool | None,
                      antialias: bool) -> tuple:
    """(output sizes, kernel mode, align_corners, encoded scales) for ``interpolate``, with
    PyTorch's errors for bad arguments."""
    dim = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    output_size, scales = _output_size(input, dim, size, scale_factor)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [math.floor(input.shape[2 + i] * scales[i]) for i in range(dim)]
        scales = None
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode not in _KERNEL_MODE:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if input.ndim not in (3, 4, 5) or (mode in _NEEDS and input.ndim != _NEEDS[mode]):
        if mode in _NEEDS and input.ndim in (3, 4, 5):
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                      f"{_NEEDS[mode]}D input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
            f"nearest-exact (got {mode})")
    if output_size is None:  # the kernel's own rule: floor(in * scale), in double
        output_size = [int(input.shape[2 + i] * scales[i]) for i in range(dim)]
    kernel_mode = _KERNEL_MODE[mode] + ("-aa" if antialias else "")
    return (tuple(int(v) for v in output_size), kernel_mode, bool(align_corners),
            _v.encode_scales(scales))


def _resize_uint8(input: Tensor, output_size: list[int], mode: str, kernel_mode: str,
                  align_corners: bool, scales: Any) -> Tensor:
    """uint8 images (bilinear, bicubic; PyTorch's CPU kernels): one pass per dim, width first,
    in float32, each pass rounded half up and saturated to 0..255 as PyTorch's uint8 passes
    are (its fixed-point weights can still move a level by one)."""
    if mode not in ("bilinear", "bicubic"):
        raise RuntimeError(f"interpolate: {mode} mode is not implemented for 'Byte' input")
    x = input.float()
    for ax in (3, 2):
        y = x if ax == 3 else x.transpose(2, 3)
        scale = _v.encode_scales(None if scales is None else [scales[ax - 2]])
        y = _v.upsample(y, [output_size[ax - 2]], kernel_mode, align_corners, scale)
        y = (y + 0.5).floor().clamp(0, 255)  # round half up, as PyTorch's
        x = y if ax == 3 else y.transpose(2, 3)
    return x.to(input.dtype)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (PyTorch warns; so do we)."""
    import warnings
    warnings.warn(f"`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  f"instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="nearest")``."""
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- pixel shuffles, fold / unfold -------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]: each group of r*r channels becomes an r x r block.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.pixel_shuffle(acg.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
    [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    lead = list(lead)
    x = input.reshape(lead + [c // (r * r), r, r, h, w])
    b = len(lead)
    x = x.permute(list(range(b)) + [b, b + 3, b + 1, b + 4, b + 2])
    return x.reshape(lead + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W], the inverse of :func:`pixel_shuffle`."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        which, val = ("height", h) if h % r else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by "
                           f"downscale_factor, but input.size({-2 if h % r else -1})={val} is "
                           f"not divisible by {r}")
    lead = list(lead)
    b = len(lead)
    x = input.reshape(lead + [c, h // r, r, w // r, r])
    x = x.permute(list(range(b)) + [b, b + 2, b + 4, b + 1, b + 3])
    return x.reshape(lead + [c * r * r, h // r, w // r])


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Sliding blocks of [N, C, H, W] as columns [N, C*kh*kw, L] (im2col).

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.unfold(acg.randn(2, 3, 5, 5), 2).shape
    acg.Size([2, 12, 16])
    """
    x, unbatched = _batched(input, 2)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.ndim}D)")
    out = _v.im2col(x, _ntuple(kernel_size, 2, "kernel_size"), _ntuple(dilation, 2, "dilation"),
                    _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride"))
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum columns [N, C*kh*kw, L] back into [N, C, *output_size] (col2im, unfold's
    transpose): overlapping blocks add up."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                           f"supported (got {input.ndim}D)")
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    size = _ntuple(output_size, 2, "output_size")
    k, d = _ntuple(kernel_size, 2, "kernel_size"), _ntuple(dilation, 2, "dilation")
    p, s = _ntuple(padding, 2, "padding"), _ntuple(stride, 2, "stride")
    blocks = math.prod(_conv.out_size(size[i], k[i], s[i], p[i], p[i], d[i]) for i in range(2))
    if x.shape[1] % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size=({k[0]}, {k[1]})")
    if x.shape[2] != blocks:
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), "
                           f"stride=({s[0]}, {s[1]}), expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks}, but got "
                           f"input.size(2)={x.shape[2]}.")
    shape = [x.shape[0], x.shape[1] // (k[0] * k[1])] + size
    out = _v.col2im(x, shape, k, d, p, s)
    return out.squeeze(0) if unbatched else out
