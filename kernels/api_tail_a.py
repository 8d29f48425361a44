"""The long tail of ``torch.*`` functions and Tensor methods, names a-h (issue 21 item 6):
inverse trig/hyperbolic ops, aliases, in-place variants, ``addmm``-family, stacking helpers,
``diag``/``diagonal``, ``cdist``, ``cov``, window functions... mostly compositions of
existing ops, so autograd comes for free.

>>> import autograd_compile as acg
>>> acg.addmm(acg.ones(2, 2), acg.eye(2), acg.eye(2), beta=2).tolist()
[[3.0, 2.0], [2.0, 3.0]]
"""
from __future__ import annotations

import builtins
import math
import os
from typing import Any, Callable, NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np

import autograd_compile as _acg
from autograd_compile.tensor import Tensor

import jax

from autograd_compile.tracing.fake import TensorMeta

from ._defop import NONDIFF, binary, defop, reduce_grad, unary, wants
from ._dtypes import can_cast
from ._shapes import wrap_dim
from .views import Overlapping, view_of
from autograd_compile.amp.autocast_mode import autocast_op
from autograd_compile._dtype import scalar_type_name

_T = Any  # a Tensor or a Python number

# -- new elementwise ops (JAX kernel + backward written in Tensor ops) ----------------------
asin = unary("asin", jnp.arcsin, lambda g, x, out: g / (1 - x * x).sqrt())
acos = unary("acos", jnp.arccos, lambda g, x, out: -(g / (1 - x * x).sqrt()))
atan = unary("atan", jnp.arctan, lambda g, x, out: g / (x * x + 1))
asinh = unary("asinh", jnp.arcsinh, lambda g, x, out: g / (x * x + 1).sqrt())
acosh = unary("acosh", jnp.arccosh, lambda g, x, out: g / (x * x - 1).sqrt())
atanh = unary("atanh", jnp.arctanh, lambda g, x, out: g / (1 - x * x))
sinh = unary("sinh", jnp.sinh, lambda g, x, out: g * cosh(x))
cosh = unary("cosh", jnp.cosh, lambda g, x, out: g * sinh(x))


def _atan2_backward(g: Any, y: Any, x: Any, out: Any) -> tuple:
    r = y * y + x * x
    return (reduce_grad(g * x / r, y) if wants(y) else None,
            reduce_grad(-g * y / r, x) if wants(x) else None)


atan2 = binary("atan2", jnp.arctan2, _atan2_backward, out="float", save=("self", "other"))
gcd = binary("gcd", jnp.gcd, NONDIFF)
bitwise_left_shift = binary("bitwise_left_shift.Tensor", jnp.left_shift, NONDIFF)
bitwise_right_shift = binary("bitwise_right_shift.Tensor", jnp.right_shift, NONDIFF)

# -- aliases --------------------------------------------------------------------------------
arcsin, arccos, arctan, arcsinh, arccosh, arctanh, arctan2 = \
    asin, acos, atan, asinh, acosh, atanh, atan2


def absolute(input: Tensor) -> Tensor:
    """Alias of ``abs``."""
    return _acg.abs(input)


def fix(input: Tensor) -> Tensor:
    """Alias of ``trunc``."""
    return _acg.trunc(input)


def _tensor(v: Any) -> Tensor:
    return v if isinstance(v, Tensor) else _acg.tensor(v)


def frac(input: Tensor) -> Tensor:
    """``input - trunc(input)``."""
    return input - _acg.trunc(input)


def _float(x: Tensor) -> Tensor:
    return x if x.is_floating_point() or x.is_complex() else x.to(_acg.get_default_dtype())


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians (integers give the default float dtype)."""
    return _float(input) * (math.pi / 180)


def copysign(input: _T, other: _T) -> Tensor:
    """``|input|`` with the sign bit of ``other`` (float result)."""
    input, other = _tensor(input), _tensor(other)
    dtype = _promote(input.dtype, other.dtype)
    neg = _signbit(other)
    mag = _float(input.to(dtype) if input.dtype != dtype else input).abs()
    return _acg.where(neg, -mag, mag)


def _promote(a: Any, b: Any) -> Any:
    """PyTorch's promotion of two dtypes (as two 0-d tensors)."""
    return (_acg.zeros((), dtype=a) + _acg.zeros((), dtype=b)).dtype


def _signbit(x: Tensor) -> Tensor:
    if not x.is_floating_point():
        return x < 0
    return (x < 0) | ((x == 0) & ((1 / x) < 0))


def fmod(input: Tensor, other: _T) -> Tensor:
    """C ``fmod``: remainder with the sign of ``input`` (``x - trunc(x / y) * y``)."""
    return input - _acg.div(input, other, rounding_mode="trunc") * other


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """``maximum`` that ignores NaN (returns the other value)."""
    m = _acg.maximum(input, other)
    return _acg.where(other.isnan(), input, _acg.where(input.isnan(), other, m))


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """``minimum`` that ignores NaN (returns the other value)."""
    m = _acg.minimum(input, other)
    return _acg.where(other.isnan(), input, _acg.where(input.isnan(), other, m))


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)``."""
    return (input * input + other * other).sqrt()


def float_power(input: _T, exponent: _T) -> Tensor:
    """``pow`` computed in float64 (complex128 for complex operands)."""
    wide = lambda v: v.to(_acg.complex128 if v.is_complex() else _acg.float64) \
        if isinstance(v, Tensor) else v
    if not isinstance(input, Tensor):
        input = _acg.tensor(input, dtype=_acg.float64)
    return _acg.pow(wide(input), wide(exponent))


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 for ``input < 0``, ``values`` where ``input == 0``, 1 for ``input > 0``."""
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    return _acg.where(input == 0, values, (input > 0).to(input.dtype))


class _FrexpOut(NamedTuple):
    mantissa: Tensor
    exponent: Tensor


def frexp(input: Tensor) -> _FrexpOut:
    """Mantissa in [0.5, 1) and int32 exponent with ``input = mantissa * 2**exponent``."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = jnp.frexp(jnp.asarray(input.detach().numpy()))
    return _FrexpOut(_acg.tensor(np.asarray(m), dtype=input.dtype),
                     _acg.tensor(np.asarray(e).astype(np.int32)))


# -- addmm family ---------------------------------------------------------------------------
def _addlike(input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:  # PyTorch ignores input (even NaN) when beta is 0
        return prod + _acg.zeros_like(input)
    return (input if beta == 1 else input * beta) + prod


@autocast_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return _addlike(input, _acg.mm(mat1, mat2), beta, alpha)


@autocast_op("addmv")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _addlike(input, _acg.matmul(mat, vec), beta, alpha)


@autocast_op("addr")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _addlike(input, _acg.outer(vec1, vec2), beta, alpha)


@autocast_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
            alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return _addlike(input, _acg.bmm(batch1, batch2), beta, alpha)


@autocast_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,
           alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    return _addlike(input, _acg.bmm(batch1, batch2).sum(0), beta, alpha)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    p = tensor1 * tensor2
    return input + (p if value == 1 else p * value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (integer division is an error, as in PyTorch)."""
    if not (tensor1.is_floating_point() or tensor1.is_complex()) and \
            not (tensor2.is_floating_point() or tensor2.is_complex()):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. ")
    q = tensor1 / tensor2
    return input + (q if value == 1 else q * value)


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """Alias of ``outer``."""
    return _acg.outer(input, vec2)


def chain_matmul(*matrices: Tensor, out: Any = None) -> Tensor:
    """``matrices[0] @ matrices[1] @ ...``."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    r = matrices[0]
    for m in matrices[1:]:
        r = _acg.mm(r, m)
    return r


def adjoint(input: Tensor) -> Tensor:
    """Conjugate transpose of the last two dimensions."""
    return input.transpose(-2, -1).conj()


# -- shapes and stacking --------------------------------------------------------------------
def _seq(args: tuple) -> Any:
    return args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args


def _atleast(args: tuple, n: int, fix_: Callable[[Tensor], Tensor]) -> Any:
    many = len(args) != 1 or isinstance(args[0], (list, tuple))
    ts = [_tensor(t) for t in _seq(args)]
    out = [fix_(t) if t.dim() < n else t for t in ts]
    return tuple(out) if many else out[0]


def atleast_1d(*tensors: Any) -> Any:
    """0-d tensors become shape (1,)."""
    return _atleast(tensors, 1, lambda t: t.reshape(1))


def atleast_2d(*tensors: Any) -> Any:
    """Tensors with fewer than 2 dims get leading size-1 dims."""
    return _atleast(tensors, 2, lambda t: t.reshape(1, -1))


def atleast_3d(*tensors: Any) -> Any:
    """0-d -> (1,1,1); (n,) -> (1,n,1); (m,n) -> (m,n,1), as numpy."""
    def fix3(t: Tensor) -> Tensor:
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.reshape(1, -1, 1)
        return t.unsqueeze(-1)
    return _atleast(tensors, 3, fix3)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """Alias of ``input.expand(size)``."""
    return input.expand(*size)


def _broadcast_shape(*shapes: Sequence[int]) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*[tuple(int(d) for d in s) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape: "
                           f"{[tuple(s) for s in shapes]}") from None


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """The tensors expanded to their common broadcast shape."""
    ts = _seq(tensors)
    shape = _broadcast_shape(*[t.shape for t in ts])
    return tuple(t.expand(*shape) for t in ts)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-d tensors)."""
    ts = atleast_1d(*tensors) if len(tensors) != 1 else (atleast_1d(tensors[0]),)
    return _acg.cat(list(ts), 0 if ts[0].dim() == 1 else 1)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 2 after ``atleast_3d``."""
    return _acg.cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """1-d (and 0-d) tensors become columns, then ``hstack``."""
    return hstack([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors])


def _split_at(input: Tensor, sections: Any, dim: int, name: str, need: int) -> tuple:
    if input.dim() < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, "
                           f"but got a tensor with {input.dim()} dimensions!")
    if isinstance(sections, int):
        n = input.shape[dim]
        if n % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {n} is not divisible by the split_"
                               f"size {sections}!")
        return _acg.split(input, n // sections, dim)
    edges = [0, *[int(s) for s in sections], input.shape[dim]]
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        a, b = builtins.min(a, input.shape[dim]), builtins.min(builtins.max(b, a),
                                                               input.shape[dim])
        out.append(_acg.narrow(input, dim, a, b - a))
    return tuple(out)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Split along dim 1 (dim 0 for 1-d)."""
    return _split_at(input, indices_or_sections, 0 if input.dim() == 1 else 1, "hsplit", 1)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    """Split along dim 2."""
    return _split_at(input, indices_or_sections, 2, "dsplit", 3)


def fliplr(input: Tensor) -> Tensor:
    """Flip dim 1."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input: Tensor) -> Tensor:
    """Flip dim 0."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def block_diag(*tensors: Tensor) -> Tensor:
    """Tensors (0-, 1- or 2-d) placed along the diagonal of a zero matrix."""
    mats = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    if not mats:
        return _acg.zeros(1, 0)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _promote(dtype, m.dtype)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        rows.append(_acg.nn.functional.pad(m.to(dtype), (left, cols - left - c)))
        left += c
    return _acg.cat(rows, 0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of the 1-d inputs' elements, one per row."""
    if len(tensors) == 1:
        return tensors[0]
    grids = _acg.meshgrid(*tensors, indexing="ij") if hasattr(_acg, "meshgrid") else \
        _mesh(tensors)
    return _acg.stack([g.reshape(-1) for g in grids], 1)


def _mesh(tensors: Sequence[Tensor]) -> list:
    n = len(tensors)
    shape = [t.shape[0] for t in tensors]
    return [t.reshape(*[-1 if i == k else 1 for i in range(n)]).expand(*shape)
            for k, t in enumerate(tensors)]


# -- diagonals ------------------------------------------------------------------------------
def _diag_dims(input: Tensor, dim1: int, dim2: int) -> tuple[int, int]:
    nd = input.dim()
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diag_index(n: Any, m: Any, offset: int) -> tuple[Tensor, Tensor]:
    """Row and column indices of the ``offset`` diagonal of an n x m plane."""
    length = builtins.max(0, builtins.min(n + builtins.min(offset, 0),
                                          m - builtins.max(offset, 0)))
    steps = _acg.arange(length)
    return steps + builtins.max(-offset, 0), steps + builtins.max(offset, 0)


def _diagonal_values(input: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    """The diagonal as a new tensor (not a view)."""
    rest = [i for i in range(input.dim()) if i not in (d1, d2)]
    x = input.permute(*rest, d1, d2)
    rows, cols = _diag_index(x.shape[-2], x.shape[-1], offset)
    return x[..., rows, cols]


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the (dim1, dim2) planes, moved to the last dimension: a view, so an
    in-place write on it reaches ``input`` (written back by :func:`diagonal_scatter`).

    >>> import autograd_compile as acg
    >>> x = acg.zeros(2, 2); _ = x.diagonal().fill_(1.0); x.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    d1, d2 = _diag_dims(input, dim1, dim2)
    return view_of(_diagonal_values(input, offset, d1, d2), input,
                   lambda b, v: diagonal_scatter(b, v, offset, d1, d2))


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The last dimension of ``input`` placed on the diagonals of new (dim1, dim2) planes."""
    k = input.shape[-1]
    n = k + builtins.abs(offset)
    r0, c0 = builtins.max(-offset, 0), builtins.max(offset, 0)
    sel = _acg.zeros(k, n, n, dtype=input.dtype)
    idx = _acg.arange(k)
    sel[idx, idx + r0, idx + c0] = 1  # sel[i] is the one-hot plane of element i
    out = (input[..., :, None, None] * sel).sum(-3)  # (..., n, n)
    nd = out.dim()
    d1, d2 = dim1 % nd, dim2 % nd
    order = [None] * nd
    order[d1], order[d2] = nd - 2, nd - 1
    rest = iter(range(nd - 2))
    order = [o if o is not None else next(rest) for o in order]
    return out.permute(*order)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-d: a matrix with ``input`` on a diagonal; 2-d: that diagonal of the matrix."""
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    if input.dim() == 2:
        return _diagonal_values(input, diagonal, 0, 1)  # a new tensor, as PyTorch's (no view)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """``diag`` of the flattened input."""
    return diag_embed(input.reshape(-1), offset)


# -- reductions and statistics --------------------------------------------------------------
class _MinMax(NamedTuple):
    min: Tensor
    max: Tensor


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> _MinMax:
    """``(amin, amax)`` in one call."""
    d = () if dim is None else dim
    return _MinMax(_acg.amin(input, d, keepdim), _acg.amax(input, d, keepdim))


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """Number of non-zero elements (int64)."""
    nz = (input != 0).to(_acg.int64)
    return nz.sum() if dim is None else nz.sum(dim)


def argwhere(input: Tensor) -> Tensor:
    """Indices of non-zero elements, one row each (``nonzero``)."""
    return _acg.nonzero(input)


@autocast_op("dist")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """``norm(input - other, p)``."""
    d = (input - other).reshape(-1)
    if p == 0:
        return (d != 0).sum().to(d.dtype)
    if p == float("inf"):
        return d.abs().max()
    if p == -float("inf"):
        return d.abs().min()
    return _acg.norm(d, p)


@autocast_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Pairwise p-norm distances between the rows of (batched) ``x1`` and ``x2``."""
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).sum(-1).to(d.dtype)
    if p == float("inf"):
        return d.amax(-1)
    if p == 2:  # sqrt of a sum of squares: a zero distance gets gradient 0, as in PyTorch
        s = (d * d).sum(-1)
        safe = _acg.where(s == 0, _acg.ones_like(s), s)
        return _acg.where(s == 0, _acg.zeros_like(s), safe.sqrt())
    return (d ** p).sum(-1) ** (1.0 / p)


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance of the rows (variables) over the columns (observations)."""
    if input.dim() > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.dim()} dimensions")
    x = _float(input.reshape(1, -1) if input.dim() < 2 else input)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1, keepdim=True)
        norm = n - correction
        xc = x - avg
        c = _acg.mm(xc, xc.t().conj()) / norm
    else:
        w = w.to(x.dtype)
        wsum = w.sum()
        avg = (x * w).sum(1, keepdim=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights).sum() / wsum
        xc = x - avg
        c = _acg.mm(xc * w, xc.t().conj()) / norm
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = diagonal(c).sqrt()
    c = c / d[:, None] / d[None, :]
    return c.clamp(-1, 1)


class _ValuesIndices(NamedTuple):
    values: Tensor
    indices: Tensor


def _cumext(input: Tensor, dim: int, better: Callable[[Any, Any], Any]) -> _ValuesIndices:
    """Running extreme and its (last) index along ``dim``: values via gather, so grads flow."""
    x = input.detach().numpy()
    ax = dim % builtins.max(x.ndim, 1)
    if x.ndim == 0:
        return _ValuesIndices(input.clone(), _acg.zeros((), dtype=_acg.int64))
    xm = np.moveaxis(x, ax, -1)
    idx = np.zeros(xm.shape, dtype=np.int64)
    best = xm[..., 0].copy()
    for i in range(1, xm.shape[-1]):
        v = xm[..., i]
        take = better(v, best) | np.isnan(v) & ~np.isnan(best) | ((v == best) | (
            np.isnan(v) & np.isnan(best)))
        best = np.where(take, v, best)
        idx[..., i] = np.where(take, i, idx[..., i - 1])
    idx = _acg.tensor(np.moveaxis(idx, -1, ax))
    return _ValuesIndices(_acg.gather(input, ax, idx), idx)


def cummax(input: Tensor, dim: int) -> _ValuesIndices:
    """Running maximum along ``dim`` and where it was reached."""
    return _cumext(input, dim, np.greater)


def cummin(input: Tensor, dim: int) -> _ValuesIndices:
    """Running minimum along ``dim`` and where it was reached."""
    return _cumext(input, dim, np.less)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Histogram with ``bins`` equal bins over [min, max] (the data range when both are 0)."""
    x = np.asarray(input.detach().numpy())
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = np.histogram(x[(x >= lo) & (x <= hi)], bins=bins, range=(lo, hi))
    return _acg.tensor(counts.astype(x.dtype))


# -- windows --------------------------------------------------------------------------------
def _window(n: int, periodic: bool, dtype: Any, f: Callable[[np.ndarray, int], np.ndarray],
            requires_grad: bool = False) -> Tensor:
    dtype = dtype or _acg.get_default_dtype()
    if n == 0:
        return _acg.zeros(0, dtype=dtype)
    if n == 1:
        return _acg.ones(1, dtype=dtype)
    m = n + 1 if periodic else n
    w = f(np.arange(n, dtype=np.float64), m)
    return _acg.tensor(w, dtype=dtype, requires_grad=requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))``."""
    return _window(window_length, periodic, dtype,
                   lambda k, m: 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1)), requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """Hamming window ``alpha - beta cos(2 pi k / (N - 1))``."""
    return _window(window_length, periodic, dtype,
                   lambda k, m: alpha - beta * np.cos(2 * np.pi * k / (m - 1)), requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """Blackman window."""
    return _window(window_length, periodic, dtype, lambda k, m: 0.42 - 0.5 * np.cos(
        2 * np.pi * k / (m - 1)) + 0.08 * np.cos(4 * np.pi * k / (m - 1)), requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """Triangular (Bartlett) window."""
    return _window(window_length, periodic, dtype, lambda k, m: 1 - np.abs(
        2 * k / (m - 1) - 1), requires_grad)


# -- misc -----------------------------------------------------------------------------------
def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``obj`` itself when it is already a tensor of that dtype (unless ``copy``), else a new
    tensor."""
    if isinstance(obj, Tensor):
        t = obj if dtype is None or obj.dtype == dtype else obj.to(dtype)
        return t.clone() if copy and t is obj else t
    return _acg.tensor(obj, dtype=dtype, requires_grad=requires_grad)


def detach(input: Tensor) -> Tensor:
    """``input.detach()``."""
    return input.detach()


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor like ``input`` filled with ``value``."""
    return _acg.full_like(input, value)


_THREADS: dict[str, int] = {}


def get_num_threads() -> int:
    """Threads used for intra-op parallelism: what ``set_num_threads`` set, else the CPU
    count (XLA sizes its own pool when it starts)."""
    return _THREADS.get("intra", os.cpu_count() or 1)


def get_num_interop_threads() -> int:
    """Threads used for inter-op parallelism (as ``get_num_threads``)."""
    return _THREADS.get("inter", os.cpu_count() or 1)


def _thread_count(n: Any, what: str) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise RuntimeError(f"{what}: Expected positive number of threads")
    return n


def set_num_threads(int: Any) -> None:  # noqa: A002 - PyTorch's parameter name
    """Record the intra-op thread count (``get_num_threads`` returns it). XLA's CPU pool is
    sized once when it starts (``XLA_FLAGS=--xla_cpu_multi_thread_eigen`` and friends), so
    this does not resize it."""
    _THREADS["intra"] = _thread_count(int, "set_num_threads")


def set_num_interop_threads(int: Any) -> None:  # noqa: A002 - PyTorch's parameter name
    """Record the inter-op thread count (see :func:`set_num_threads`)."""
    _THREADS["inter"] = _thread_count(int, "set_num_interop_threads")


def get_default_device() -> Any:
    """The device new tensors are created on (see ``set_default_device``)."""
    from .api import DEFAULT_DEVICE
    return DEFAULT_DEVICE[0] or _acg.device("cpu")


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2: off, warn, error (``use_deterministic_algorithms``)."""
    f = getattr(_acg, "are_deterministic_algorithms_enabled", None)
    return 2 if f is not None and f() else 0


# nn.functional under their torch.* names (same positional signatures)
def _nnf(name: str) -> Callable:
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_acg.nn.functional, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.nn.functional.{name}``."
    return fn


_NNF = ["celu", "celu_", "bilinear", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
        "cosine_similarity", "hinge_embedding_loss", "hardshrink", "channel_shuffle",
        "embedding_bag"]
for _n in _NNF:
    globals()[_n] = _nnf(_n)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.dropout(input, p, train)``."""
    return _acg.nn.functional.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``torch.dropout``."""
    return _acg.nn.functional.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.alpha_dropout(input, p, train)``."""
    return _acg.nn.functional.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``torch.feature_alpha_dropout(input, p, train)``."""
    return _acg.nn.functional.feature_alpha_dropout(input, p, train)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding(weight, indices)`` (note: weight first)."""
    return _acg.nn.functional.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                                        scale_grad_by_freq=scale_grad_by_freq)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``torch.group_norm``."""
    return _acg.nn.functional.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,
               training: bool, momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """``torch.batch_norm`` (ATen's argument order)."""
    return _acg.nn.functional.batch_norm(input, running_mean, running_var, weight, bias,
                                         training, momentum, eps)


# -- second batch: copies, scatters, strided views, misc ------------------------------------
def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (the view op's out-of-place form)."""
    return input.clone()


def detach_copy(input: Tensor) -> Tensor:
    """``input.detach().clone()``."""
    return input.detach().clone()


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``diagonal`` as a new tensor."""
    return _diagonal_values(input, offset, *_diag_dims(input, dim1, dim2))


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """``input.expand(size)`` as a new tensor."""
    return input.expand(*size).clone()


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """``input`` with ``src`` written on the diagonal (``diagonal(out, ...) == src``): one
    index_put on the (dim1, dim2) planes, so gradients reach both ``input`` (off the
    diagonal) and ``src``."""
    d1, d2 = _diag_dims(input, dim1, dim2)
    rest = [i for i in range(input.dim()) if i not in (d1, d2)]
    x = input.permute(d1, d2, *rest)  # the planes first: index_put indexes leading dims
    rows, cols = _diag_index(x.shape[0], x.shape[1], offset)
    want = [*x.shape[2:], rows.shape[0]]
    if list(src.shape) != want:
        raise RuntimeError(f"expected src to have a size equal to the slice "
                           f"of self. src size = {list(src.shape)}, slice size = {want}")
    values = src.to(input.dtype).permute(src.dim() - 1, *range(src.dim() - 1))
    out = x.index_put((rows, cols), values)
    back = sorted(range(input.dim()), key=[d1, d2, *rest].__getitem__)
    return out.permute(*back)


_OUT_OF_BOUNDS = ("setStorage: sizes {size}, strides {stride}, storage offset {offset}, and "
                  "itemsize {item} requiring a storage size of {need} are out of bounds for "
                  "storage of size {have}")


def _strided_index(input: Tensor, size: Sequence[int], stride: Sequence[int],
                   offset: int) -> np.ndarray:
    """The flat (row-major) positions in ``input`` that ``as_strided`` reads, with PyTorch's
    checks."""
    size, stride = [int(n) for n in size], [int(st) for st in stride]
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={size} and "
                           f"strides={stride}")
    if builtins.any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {stride}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if 0 not in size:
        last = offset + builtins.sum((n - 1) * st for n, st in zip(size, stride))
        if last >= input.numel():
            item = np.dtype(input.dtype).itemsize
            raise RuntimeError(_OUT_OF_BOUNDS.format(
                size=size, stride=stride, offset=offset, item=item, need=(last + 1) * item,
                have=input.numel() * item))
    grids = np.meshgrid(*[np.arange(n) * st for n, st in zip(size, stride)], indexing="ij")
    return (builtins.sum(grids, np.zeros(tuple(size), dtype=np.int64)) + offset).astype(np.int64)


def _disjoint(size: Sequence[int], stride: Sequence[int]) -> bool:
    """Sure that no two positions of an ``as_strided`` view are one element: the strides,
    smallest first, each step past everything the smaller ones reach (False: maybe not)."""
    reach = 0
    for st, n in sorted((int(st), int(n)) for n, st in zip(size, stride) if n > 1):
        if st <= reach:
            return False
        reach += st * (n - 1)
    return True


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """The elements of ``input``'s row-major storage at ``offset + sum(i_k * stride_k)``: a
    gather, and a view: an in-place write on it reaches ``input`` (scattered back by
    :func:`as_strided_scatter`). Where two of its elements are one element of ``input``
    (overlapping strides) only a fill of the view is allowed, as in PyTorch (anything else
    is PyTorch's internal-overlap error)."""
    offset = storage_offset or 0
    idx = _strided_index(input, size, stride, offset)
    out = input.reshape(-1)[_acg.tensor(idx)]
    size, stride = list(size), list(stride)

    def write(b: Tensor, v: Tensor) -> Tensor:
        return as_strided_scatter(b, v, size, stride, offset)

    def overlaps() -> bool:  # counted only when the view is written
        positions = _strided_index(input, size, stride, offset)
        return np.unique(positions).size < positions.size
    return view_of(out, input, write if _disjoint(size, stride) else Overlapping(write, overlaps))


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """``input`` with ``src`` written where ``as_strided(input, size, stride)`` reads."""
    idx = _strided_index(input, size, stride, storage_offset or 0)
    if list(src.shape) != list(idx.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(idx.shape)}")
    flat = input.reshape(-1).index_put((_acg.tensor(idx.reshape(-1)),),
                                       src.reshape(-1).to(input.dtype))
    return flat.reshape(*input.shape)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of a 1-d tensor's elements, one per row."""
    import itertools
    n = input.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(n), r))
    if not rows:
        return input.new_zeros(0)  # PyTorch: an empty 1-d tensor
    idx = _acg.tensor(np.asarray(rows, dtype=np.int64))
    return input[idx]


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """Running trapezoid-rule integral of ``y`` along ``dim``."""
    n = y.shape[dim]
    a, b = _acg.narrow(y, dim, 0, n - 1), _acg.narrow(y, dim, 1, n - 1)
    if x is not None:
        h = x.diff(dim=dim if x.dim() > 1 else -1) if hasattr(x, "diff") else \
            _acg.narrow(x, -1, 1, n - 1) - _acg.narrow(x, -1, 0, n - 1)
        if x.dim() == 1:
            h = h.reshape(*[-1 if i == dim % y.dim() else 1 for i in range(y.dim())])
        return ((a + b) * h / 2).cumsum(dim)
    return ((a + b) * ((1.0 if dx is None else dx) / 2)).cumsum(dim)


def frobenius_norm(input: Tensor, dim: Sequence[int] = (), keepdim: bool = False) -> Tensor:
    """``sqrt(sum(|input|**2))`` over ``dim`` (all dims when empty)."""
    d = tuple(dim) if len(dim) else tuple(range(input.dim()))
    return (input.abs() ** 2).sum(d, keepdim=keepdim).sqrt()


class _Histogram(NamedTuple):
    hist: Tensor
    bin_edges: Tensor


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None, weight: Any = None,
              density: bool = False) -> _Histogram:
    """``(hist, bin_edges)`` as ``numpy.histogram`` (not differentiable)."""
    x = np.asarray(input.detach().numpy())
    b = bins.detach().numpy() if isinstance(bins, Tensor) else bins
    w = None if weight is None else weight.detach().numpy()
    h, e = np.histogram(x, bins=b, range=range, weights=w, density=density)
    return _Histogram(_acg.tensor(h.astype(x.dtype)), _acg.tensor(e.astype(x.dtype)))


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels (dim 1), the same mask over the remaining dims."""
    if not train or p == 0:
        return input
    if p == 1:
        return input * 0
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    keep = (_acg.rand(*shape) >= p).to(input.dtype)
    return input * keep / (1 - p)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_dropout``."""
    return input.copy_(feature_dropout(input, p, train))


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``alpha_dropout``."""
    return input.copy_(alpha_dropout(input, p, train))


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place ``feature_alpha_dropout``."""
    return input.copy_(feature_alpha_dropout(input, p, train))


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  layout: Any = None, device: Any = None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:
    """An uninitialised (here: zero) tensor; strides are not modelled (JAX arrays are dense)."""
    return _acg.zeros(*size, dtype=dtype, requires_grad=requires_grad)


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   layout: Any = None, device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialised (here: zero) tensor of ``size``; the memory layout is not modelled."""
    if sorted(physical_layout) != list(builtins.range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(physical_layout)}")
    return _acg.zeros(*size, dtype=dtype, requires_grad=requires_grad)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-d tensor read from a Python buffer (a copy: JAX arrays do not share memory)."""
    a = np.frombuffer(buffer, dtype=np.dtype(dtype), count=count, offset=offset)
    return _acg.tensor(a.copy(), requires_grad=requires_grad)


_NESTING = [0]


def autocast_increment_nesting() -> int:
    """Enter one autocast level; returns the new depth."""
    _NESTING[0] += 1
    return _NESTING[0]


def autocast_decrement_nesting() -> int:
    """Leave one autocast level; returns the new depth."""
    _NESTING[0] -= 1
    return _NESTING[0]


def clear_autocast_cache() -> None:
    """No cast cache is kept (casts are traced ops), so there is nothing to clear."""


def get_autocast_cpu_dtype() -> Any:
    """``get_autocast_dtype("cpu")``."""
    return _acg.get_autocast_dtype("cpu")


def get_autocast_gpu_dtype() -> Any:
    """``get_autocast_dtype("cuda")``."""
    return _acg.get_autocast_dtype("cuda")


def _random_fill(sample: Callable[[Tensor], Tensor]) -> Callable:
    def method(self: Tensor, *args: Any, generator: Any = None) -> Tensor:
        with _acg.no_grad():
            u = _acg.rand(*self.shape, dtype=self.dtype if self.is_floating_point()
                          else _acg.float64, generator=generator)
            return self.copy_(sample(u, *args))
    return method


def _exponential(u: Tensor, lambd: float = 1.0) -> Tensor:
    return -(1 - u).log() / lambd


def _cauchy(u: Tensor, median: float = 0.0, sigma: float = 1.0) -> Tensor:
    return median + sigma * (math.pi * (u - 0.5)).tan()


def _geometric(u: Tensor, p: float) -> Tensor:
    return ((1 - u).log() / math.log1p(-p)).ceil().clamp_min(1)


def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: int | None = None) -> Tensor:
    """``as_strided`` (already a copy here)."""
    return as_strided(input, size, stride, storage_offset)


def get_autocast_ipu_dtype() -> Any:
    """The IPU autocast dtype (float16, PyTorch's default; there is no IPU here)."""
    return np.dtype(_acg.float16)  # as get_autocast_dtype


def get_autocast_xla_dtype() -> Any:
    """The XLA autocast dtype (bfloat16, PyTorch's default)."""
    return np.dtype(_acg.bfloat16)


def histogramdd(input: Tensor, bins: Any = 10, *, range: Sequence[float] | None = None,
                weight: Tensor | None = None, density: bool = False) -> tuple:
    """``(hist, bin_edges)`` of the rows of ``input`` (N, D) as points (not differentiable)."""
    x = np.asarray(input.detach().numpy())
    pts = x.reshape(-1, x.shape[-1])
    b = [e.detach().numpy() for e in bins] if isinstance(bins, (list, tuple)) and bins and \
        isinstance(bins[0], Tensor) else bins
    rng = None if range is None else list(zip(range[0::2], range[1::2]))
    w = None if weight is None else weight.detach().numpy().reshape(-1)
    h, edges = np.histogramdd(pts, bins=b, range=rng, weights=w, density=density)
    return _Histogramdd(_acg.tensor(h.astype(x.dtype)),
                        [_acg.tensor(e.astype(x.dtype)) for e in edges])


class _Histogramdd(NamedTuple):
    hist: Tensor
    bin_edges: list


def cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: Sequence[Any] = ()) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (evaluated eagerly)."""
    p = pred.item() if isinstance(pred, Tensor) else pred
    return true_fn(*operands) if p else false_fn(*operands)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,
             edge_order: int = 1) -> tuple:
    """Central-difference estimate of the derivative of sampled values along each ``dim``
    (first or second order at the edges); ``spacing``: a step, one step per dim, or one
    coordinate tensor per dim."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    x = _float(input)
    dims = list(builtins.range(x.dim())) if dim is None else \
        [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    dims = [d % x.dim() for d in dims]
    sp = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(sp)} and a dim argument of "
                           f"length {len(dims)}.")
    return tuple(_grad1(x, d, h, edge_order) for d, h in zip(dims, sp))


def _grad1(f: Tensor, d: int, h: Any, order: int) -> Tensor:
    n = f.shape[d]
    if n < order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    sl = lambda a, b: _acg.narrow(f, d, a, b - a)
    if isinstance(h, Tensor):  # coordinates along d
        c = _float(h).to(f.dtype)
        shape = [-1 if i == d else 1 for i in builtins.range(f.dim())]
        c = c.reshape(*shape)
        cx = lambda a, b: _acg.narrow(c, d, a, b - a)
        dx1, dx2 = cx(1, n - 1) - cx(0, n - 2), cx(2, n) - cx(1, n - 1)
        mid = (-dx2 / (dx1 * (dx1 + dx2)) * sl(0, n - 2) + (dx2 - dx1) / (dx1 * dx2)
               * sl(1, n - 1) + dx1 / (dx2 * (dx1 + dx2)) * sl(2, n))
        if order == 1:
            first = (sl(1, 2) - sl(0, 1)) / (cx(1, 2) - cx(0, 1))
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / (cx(n - 1, n) - cx(n - 2, n - 1))
        else:
            a1, a2 = cx(1, 2) - cx(0, 1), cx(2, 3) - cx(1, 2)
            first = (-(2 * a1 + a2) / (a1 * (a1 + a2)) * sl(0, 1) + (a1 + a2) / (a1 * a2)
                     * sl(1, 2) - a1 / (a2 * (a1 + a2)) * sl(2, 3))
            b1, b2 = cx(n - 2, n - 1) - cx(n - 3, n - 2), cx(n - 1, n) - cx(n - 2, n - 1)
            last = (b2 / (b1 * (b1 + b2)) * sl(n - 3, n - 2) - (b1 + b2) / (b1 * b2)
                    * sl(n - 2, n - 1) + (2 * b2 + b1) / (b2 * (b1 + b2)) * sl(n - 1, n))
    else:
        h = float(h)
        mid = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        if order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-3 * sl(0, 1) + 4 * sl(1, 2) - sl(2, 3)) / (2 * h)
            last = (3 * sl(n - 1, n) - 4 * sl(n - 2, n - 1) + sl(n - 3, n - 2)) / (2 * h)
    return _acg.cat([first, mid, last], d)


def _eig(self: Tensor, eigenvectors: bool = False) -> Any:
    """Removed in PyTorch 1.9; raises PyTorch's error pointing at ``linalg.eig``."""
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                       "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
                       "`cdouble` rather than real tensors mimicking complex tensors.")


def _binomial_rule(count: Any, prob: Any, key: Any) -> TensorMeta:
    if tuple(count.shape) != tuple(prob.shape):
        raise RuntimeError(f"binomial: count {tuple(count.shape)} and prob "
                           f"{tuple(prob.shape)} must have the same shape")
    return TensorMeta(tuple(count.shape), count.dtype)


_binomial = defop("binomial(Tensor count, Tensor prob, Tensor key) -> Tensor",
                  lambda n, p, key: jax.random.binomial(jax.random.wrap_key_data(key), n, p,
                                                        n.shape).astype(n.dtype),
                  shape=_binomial_rule, backward=NONDIFF)


def binomial(count: Tensor, prob: Tensor, generator: Any = None) -> Tensor:
    """Draws from Binomial(count, prob), elementwise (dtype of ``count``)."""
    from .random import key_of
    return _binomial(count, prob, key_of(generator))


class _Geqrf(NamedTuple):
    a: Tensor
    tau: Tensor


@autocast_op("geqrf")
def geqrf(input: Tensor) -> _Geqrf:
    """LAPACK's QR in Householder form: R above the diagonal of ``a``, the reflectors below,
    and their scales ``tau`` (not differentiable, as in PyTorch)."""
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: The input tensor A must have at least 2 dimensions.")
    h, tau = jnp.linalg.qr(jnp.asarray(input.detach().numpy()), mode="raw")
    return _Geqrf(_acg.tensor(np.asarray(jnp.swapaxes(h, -1, -2))), _acg.tensor(np.asarray(tau)))


def hash_tensor(input: Tensor, dim: Any = None, *, keepdim: bool = False,
                mode: int = 0) -> Tensor:
    """XOR of the elements' 64-bit patterns (after widening to float64 / int64), uint64."""
    if mode != 0:
        raise RuntimeError(f"hash_tensor: mode {mode} is not supported (only 0, xor)")
    x = np.asarray(input.detach().numpy())
    wide = x.astype(np.float64 if np.issubdtype(x.dtype, np.floating) else np.int64)
    bits = wide.view(np.uint64)
    axes = tuple(builtins.range(x.ndim)) if dim is None else \
        (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = np.bitwise_xor.reduce(bits, axis=axes, keepdims=keepdim) if bits.ndim else bits
    return _acg.tensor(np.asarray(out, dtype=np.uint64))


# -- in-place variants ----------------------------------------------------------------------
def _inplace(fn: Callable, name: str, check: bool = True) -> Callable:
    """``x.name_(...)`` as ``x.copy_(fn(x, ...))``: autograd sees one in-place copy."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        # the functional reads a copy: its backward may save the input copy_ overwrites
        src = self.clone() if self.requires_grad and _acg.is_grad_enabled() else self
        new = fn(src, *args, **kwargs)
        if check and not can_cast(new.dtype, self.dtype):
            raise RuntimeError(f"result type {scalar_type_name(new.dtype)} can't be cast to the desired "
                               f"output type {scalar_type_name(self.dtype)}")
        return self.copy_(new)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``."
    return method


_G = globals()
_FUNCS = {n: _G[n] for n in [
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "atan2", "gcd",
    "bitwise_left_shift", "bitwise_right_shift", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "arctan2", "absolute", "fix", "frac", "deg2rad", "copysign", "fmod",
    "fmax", "fmin", "hypot", "float_power", "heaviside", "frexp", "addmm", "addmv", "addr",
    "baddbmm", "addbmm", "addcmul", "addcdiv", "ger", "adjoint", "diagonal", "diag_embed",
    "diag", "diagflat", "aminmax", "count_nonzero", "argwhere", "dist", "cov", "corrcoef",
    "cummax", "cummin", "histc", "broadcast_to", "hsplit", "dsplit", "fliplr", "flipud",
    "hardshrink"]}
_INPLACE_OF = {  # name_ -> functional, for in-place variants whose functional we defined or exist
    "asin_": asin, "acos_": acos, "atan_": atan, "asinh_": asinh, "acosh_": acosh,
    "atanh_": atanh, "sinh_": sinh, "cosh_": cosh, "atan2_": atan2, "gcd_": gcd,
    "bitwise_left_shift_": bitwise_left_shift, "bitwise_right_shift_": bitwise_right_shift,
    "arcsin_": asin, "arccos_": acos, "arctan_": atan, "arcsinh_": asinh, "arccosh_": acosh,
    "arctanh_": atanh, "arctan2_": atan2, "absolute_": absolute, "fix_": fix, "frac_": frac,
    "deg2rad_": deg2rad, "copysign_": copysign, "fmod_": fmod, "hypot_": hypot,
    "heaviside_": heaviside, "addmm_": addmm, "addmv_": addmv,
    "addr_": addr, "baddbmm_": baddbmm, "addbmm_": addbmm, "addcmul_": addcmul,
    "addcdiv_": addcdiv,
}
# in-place variants of functions that already exist as acg.* (looked up when called)
_EXISTING = ["ceil", "floor", "cos", "erf", "erfc", "erfinv", "exp2", "expm1", "digamma",
             "cumsum", "clamp_max", "clamp_min", "clamp", "conj_physical", "divide",
             "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
             "abs", "exp"]
_CMP = ["eq", "ge", "gt", "greater", "greater_equal"]


def _late(name: str) -> Callable:
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_acg, name)(*args, **kwargs)
    return fn


def _top_inplace(name: str) -> Callable:
    """``torch.name_(x, ...)``: the Tensor method."""
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``."
    return fn


for _n in ["abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_",
           "arctan_", "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_",
           "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_",
           "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_",
           "detach_", "fill_", "celu_"]:
    if _n not in _G:
        _G[_n] = _top_inplace(_n)

__all__ = [n for n in list(_G) if not n.startswith("_") and n not in {
    "annotations", "builtins", "math", "os", "Any", "Callable", "NamedTuple", "Sequence", "jnp",
    "np", "Tensor", "NONDIFF", "itertools", "jax", "TensorMeta", "defop", "binary", "reduce_grad", "unary", "wants", "can_cast",
    "rad2deg_", "wrap_dim", "view_of", "Overlapping", "autocast_op"}] + ["install_tail_a_methods"]
__all__ = [n for n in __all__ if not hasattr(_acg, n) or n == "install_tail_a_methods"]


def install_tail_a_methods(cls: type) -> None:
    """Tensor methods for the functions above and in-place variants; existing ones are kept."""
    def put(name: str, fn: Callable) -> None:
        if not hasattr(cls, name):
            setattr(cls, name, fn)
    for name, fn in _FUNCS.items():
        put(name, _method(fn, name))
    for name, fn in _INPLACE_OF.items():
        put(name, _inplace(_method(fn, name[:-1]), name))
    for base in _EXISTING:
        put(base + "_", _inplace(_late(base), base + "_"))
    for base in _CMP:
        put(base + "_", _inplace(_late(base), base + "_", check=False))
    put("float_power_", _float_power_)
    put("clip_", lambda self, min=None, max=None: self.clamp_(min, max))
    put("cdouble", lambda self: self.to(_acg.complex128))
    put("cfloat", lambda self: self.to(_acg.complex64))
    put("fill_diagonal_", _fill_diagonal_)
    put("diagonal_scatter", _method(diagonal_scatter, "diagonal_scatter"))
    put("as_strided", _method(as_strided, "as_strided"))
    put("as_strided_scatter", _method(as_strided_scatter, "as_strided_scatter"))
    put("histogram", _method(histogram, "histogram"))
    put("exponential_", _random_fill(_exponential))
    put("cauchy_", _random_fill(_cauchy))
    put("geometric_", _random_fill(_geometric))
    put("eig", _eig)
    put("geqrf", _method(geqrf, "geqrf"))
    put("hash_tensor", _method(hash_tensor, "hash_tensor"))
    put("dim_order", lambda self, *, ambiguity_check=False: tuple(range(self.dim())))
    put("as_subclass", lambda self, cls_: _as_subclass(self, cls_))


def _float_power_(self: Tensor, exponent: _T) -> Tensor:
    """In-place ``float_power``: ``self`` must already be float64 (or complex128)."""
    want = _acg.complex128 if self.is_complex() or (isinstance(exponent, Tensor) and
                                                     exponent.is_complex()) else _acg.float64
    if self.dtype != want:
        raise RuntimeError(f"the base given to float_power_ has dtype {scalar_type_name(self.dtype)} but "
                           f"the operation's result requires dtype {scalar_type_name(want)}")
    return _inplace(_method(float_power, "float_power"), "float_power_")(self, exponent)


def _as_subclass(self: Tensor, cls_: type) -> Tensor:
    """A tensor of class ``cls_`` sharing ``self``'s value (and autograd history)."""
    out = self.view_as(self)
    out.__class__ = cls_
    return out


def _method(fn: Callable, name: str) -> Callable:
    """A plain function (ops are not descriptors, so they would not bind ``self``)."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(fn, "__doc__", None)
    return method


def _fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal (all dims equal for >2-d)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = builtins.min(self.shape)
    idx = _acg.arange(n)
    if self.dim() == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        step = self.shape[1] + 1
        flat = np.arange(0, self.shape[0] * self.shape[1], step)
        r, c = flat // self.shape[1], flat % self.shape[1]
        self[_acg.tensor(r), _acg.tensor(c)] = fill_value
        return self
    self[tuple(idx for _ in range(self.dim()))] = fill_value
    return self
