"""``acg.nn.functional.affine_grid`` and ``grid_sample`` (spatial transformer networks).

Both are compositions of existing ops, as PyTorch defines them: ``affine_grid`` is a base grid
of normalised coordinates times ``theta``; ``grid_sample`` maps each grid point to source
coordinates (unnormalise, then border clipping or reflection), gathers the 2**n neighbouring
input values (4**2 for bicubic) and mixes them with weights that are polynomials of the
fractional part. Gradients of input and grid (and every higher order) come from autograd.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> theta = acg.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
>>> x = acg.arange(12.0).reshape(1, 1, 3, 4)
>>> grid = F.affine_grid(theta, [1, 1, 3, 4], align_corners=False)
>>> bool((F.grid_sample(x, grid, align_corners=False) == x).all())
True
"""
from __future__ import annotations

import functools
import itertools
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

from ..kernels import api as _api
from ..kernels.api_select import linspace as _linspace
from ..kernels._dtypes import is_float
from ..amp.autocast_mode import autocast_op
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def _align(align_corners: bool | None) -> bool:
    """PyTorch's default: align_corners=False, with its warning when left unset."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


# -- affine_grid ---------------------------------------------------------------------------------
def _base_coords(steps: int, align_corners: bool, dtype: Any) -> Tensor:
    """Normalised pixel coordinates along one dim: centres of ``steps`` cells in [-1, 1]
    (their outer edges at +-1 unless align_corners puts the outer centres there)."""
    if steps <= 1:
        return _api.zeros(1, dtype=dtype)
    exact = _torch_rounded_coords(steps, align_corners, str(dtype.name))
    if exact is not None:
        return _api.tensor(exact, dtype=dtype)
    coords = _linspace(-1.0, 1.0, steps, dtype=dtype)
    return coords if align_corners else coords * ((steps - 1) / steps)


@functools.lru_cache(maxsize=256)
def _torch_rounded_coords(steps: int, align_corners: bool, dtype: str) -> np.ndarray | None:
    """The base coordinates bit for bit as PyTorch's affine_grid rounds them (its linspace
    steps ``step`` from both ends, each value rounded once; then ``* (steps-1) / steps``
    rounded twice): the identity grid then unnormalises onto the same side of each pixel
    centre as PyTorch's, which decides the grid gradient there. float32/float64 only."""
    if dtype not in ("float32", "float64"):
        return None
    kind = np.dtype(dtype).type
    step = Fraction(float(kind(2) / kind(steps - 1)))
    half = steps // 2
    exact = [-1 + step * i if i < half else 1 - step * (steps - 1 - i) for i in range(steps)]
    # float() of a Fraction rounds correctly; a float32 step times i is exact in float64
    coords = np.array([float(v) for v in exact]).astype(kind)
    if not align_corners:
        coords = (coords * kind(steps - 1)) / kind(steps)
    return coords


def affine_grid(theta: Tensor, size: list[int], align_corners: bool | None = None) -> Tensor:
    """Sampling grid ``[N, *spatial, n]`` of the affine maps ``theta`` (``[N, 2, 3]`` for a
    4-D ``size``, ``[N, 3, 4]`` for 5-D), in grid_sample's normalised (x, y[, z]) order.

    >>> import autograd_compile as acg
    >>> g = acg.nn.functional.affine_grid(acg.eye(2, 3)[None], [1, 1, 2, 3], align_corners=True)
    >>> g[0, 0, :, 0].tolist()
    [-1.0, 0.0, 1.0]
    """
    align_corners = _align(align_corners)
    if not is_float(theta.dtype):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype.name}")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    n = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (n, n + 1):
        raise ValueError(f"Expected a batch of {n}D affine matrices of shape Nx{n}x{n + 1} for "
                         f"size {size}. Got {theta.shape}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", UserWarning,
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # base[..., j] is coordinate j (x over the last spatial dim, then y, z), then a 1 column
    columns = []
    for j in range(n):
        dim = n - 1 - j
        shape = [1] * n
        shape[dim] = spatial[dim]
        line = _base_coords(spatial[dim], align_corners, theta.dtype).reshape(shape)
        columns.append(line.expand(*spatial))
    columns.append(_api.ones(*spatial, dtype=theta.dtype))
    base = _api.stack(columns, -1).reshape(1, -1, n + 1)
    grid = _api.matmul(base, theta.transpose(1, 2))  # [N, prod(spatial), n]
    return grid.reshape(size[0], *spatial, n)


# -- grid_sample ---------------------------------------------------------------------------------
def _check_grid(input: Tensor, grid: Tensor, mode: str) -> None:
    """grid_sampler's checks, in PyTorch's order and words."""
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype or not is_float(input.dtype):
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same floating "
                           f"dtype, but input has {input.dtype.name} and grid has "
                           f"{grid.dtype.name}")


def _unnormalize(coord: Tensor, size: int, align_corners: bool, ndim: int) -> Tensor:
    """[-1, 1] to pixel coordinates: -1 and 1 are the outer centres (align_corners) or the
    outer edges of the outer pixels. Rounded as PyTorch's CPU kernels round it (2-D scales
    by a halved size, 3-D halves last), since at pixel-aligned points the floor of the
    result picks which cell's slope is the grid gradient."""
    if ndim == 2:
        scale = (size - 1) / 2 if align_corners else size / 2
        return (coord + 1) * scale if align_corners else (coord + 1) * scale - 0.5
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """coord reflected back and forth into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = _api.remainder(dist, span)  # dist >= 0, so remainder is C's fmod
    even = _api.remainder(_api.floor(dist / span), 2) == 0
    return _api.where(even, extra + low, span - extra + low)


def _source(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """Pixel coordinate after the padding mode: clipped to the border, reflected, or as is."""
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
    if padding_mode in ("border", "reflection"):
        coord = _clip(coord, size)
    return coord


def _clip(coord: Tensor, size: int) -> Tensor:
    """coord clamped to [0, size - 1]; as in PyTorch, a point exactly on the border counts as
    outside, so only points strictly inside pass a gradient (clamp's would pass there too)."""
    inside = _api.logical_and(coord > 0, coord < size - 1)
    return _api.where(inside, coord, coord.clamp(0, size - 1).detach())


def _gather(input: Tensor, index: list[Tensor], valid: Tensor | None) -> Tensor:
    """input[n, c, index[0], index[1], ...] for integer index tensors [N, *out] (in bounds),
    zeroed where ``valid`` is False."""
    n, c, sizes = input.shape[0], input.shape[1], input.shape[2:]
    flat = index[0]
    for i in range(1, len(index)):
        flat = flat * sizes[i] + index[i]
    out_shape = tuple(flat.shape[1:])
    flat = flat.reshape(n, 1, -1).expand(n, c, flat[0].numel())
    vals = input.reshape(n, c, -1).gather(2, flat).reshape(n, c, *out_shape)
    return vals if valid is None else vals * valid.unsqueeze(1).to(input.dtype)


def _in_bounds(index: list[Tensor], sizes: tuple) -> Tensor:
    ok = None
    for idx, s in zip(index, sizes):
        here = _api.logical_and(idx >= 0, idx <= s - 1)
        ok = here if ok is None else _api.logical_and(ok, here)
    return ok


def _clamped(idx: Tensor, size: int) -> Tensor:
    return idx.clamp(0, size - 1).long()


def _linear_or_nearest(input: Tensor, coords: list[Tensor], mode: str) -> Tensor:
    sizes = tuple(input.shape[2:])
    if mode == "nearest":
        index = [_api.round(c).detach() for c in coords]  # round half to even, as nearbyint
        return _gather(input, [_clamped(i, s) for i, s in zip(index, sizes)],
                       _in_bounds(index, sizes))
    low = [_api.floor(c).detach() for c in coords]
    frac = [(c - lo, lo + 1 - c) for c, lo in zip(coords, low)]  # weight of the upper, lower tap
    out = None
    for corner in itertools.product((0, 1), repeat=len(coords)):
        index = [lo + b for lo, b in zip(low, corner)]
        weight = None
        for i, b in enumerate(corner):
            w = frac[i][0] if b else frac[i][1]
            weight = w if weight is None else weight * w
        tap = _gather(input, [_clamped(i, s) for i, s in zip(index, sizes)],
                      _in_bounds(index, sizes)) * weight.unsqueeze(1)
        out = tap if out is None else out + tap
    return out


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (a = -0.75, as PyTorch) of the taps at -1, 0, 1, 2."""
    a = -0.75

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(input: Tensor, coords: list[Tensor], padding_mode: str,
             align_corners: bool) -> Tensor:
    sizes = tuple(input.shape[2:])
    low = [_api.floor(c).detach() for c in coords]
    weights = [_cubic_weights(c - lo) for c, lo in zip(coords, low)]
    # each tap's integer coordinate goes through the padding mode, then truncates
    taps = [[_source(lo + (k - 1), s, padding_mode, align_corners).detach() for k in range(4)]
            for lo, s in zip(low, sizes)]
    out = None
    for ky in range(4):
        row = None
        for kx in range(4):
            index = [taps[0][ky], taps[1][kx]]
            valid = _in_bounds(index, sizes) if padding_mode == "zeros" else None
            tap = _gather(input, [_clamped(i, s) for i, s in zip(index, sizes)], valid) \
                * weights[1][kx].unsqueeze(1)
            row = tap if row is None else row + tap
        row = row * weights[0][ky].unsqueeze(1)
        out = row if out is None else out + row
    return out


@autocast_op("grid_sampler")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Samples ``input`` ``[N, C, *in]`` at the normalised locations ``grid`` ``[N, *out, n]``
    (x over the last dim first) by bilinear/trilinear, nearest or bicubic (4-D only)
    interpolation; locations outside read zeros, the border, or a reflection.

    >>> import autograd_compile as acg
    >>> x = acg.tensor([[[[1.0, 2.0]]]])
    >>> acg.nn.functional.grid_sample(x, acg.zeros(1, 1, 1, 2), align_corners=True).item()
    1.5
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _align(align_corners)
    _check_grid(input, grid, mode)
    n = input.ndim - 2
    sizes = tuple(input.shape[2:])
    # coords[i]: pixel coordinate along spatial dim i (grid's last axis lists x, y, z)
    coords = [_unnormalize(grid[..., n - 1 - i], sizes[i], align_corners, n) for i in range(n)]
    if mode == "bicubic":
        return _bicubic(input, coords, padding_mode, align_corners)
    coords = [_source(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
    out = _linear_or_nearest(input, coords, mode)
    if mode == "nearest":  # PyTorch's grid gradient is zeros here, not absent: a zero link
        out = out + (grid.clamp(-2, 2) * 0).sum()
    return out
