"""Long tail of ``torch.*`` functions and Tensor methods, names i-z (issue 21 item 6).

Each is a composition of existing ops, so autograd comes for free; in-place forms are
``self.copy_(f(self.clone(), ...))`` (the clone keeps f's saved inputs unmodified).

>>> import autograd_compile as acg
>>> acg.kron(acg.eye(2), acg.ones(2, 2)).shape
(4, 4)
"""
from __future__ import annotations

import builtins
import collections
import math
import warnings
from typing import Any, Sequence

import numpy as np

from autograd_compile._dtype import of as dtype_of, scalar_type_name
from autograd_compile.tensor import Tensor
from autograd_compile.amp.autocast_mode import autocast_op
from . import _dtypes as D
from ._defop import NONDIFF, binary

__all__ = [
    "log10", "log2", "sinh", "lerp", "rad2deg", "ldexp", "logaddexp", "logaddexp2",
    "logcumsumexp", "logspace", "median", "nanmedian", "kthvalue", "meshgrid", "movedim",
    "moveaxis", "msort", "mv", "nanmean", "nansum", "quantile", "nanquantile", "positive",
    "promote_types", "result_type", "can_cast", "is_inference", "ravel", "rot90", "rsub",
    "scalar_tensor", "select_scatter",
    "slice_scatter", "signbit", "tensordot", "tile", "trapezoid", "trapz", "tril_indices",
    "triu_indices", "vsplit", "vstack", "row_stack", "kron", "inner", "vdot", "trace", "isin",
    "isneginf", "isposinf", "isreal", "is_neg", "is_nonzero", "is_same_size", "is_signed",
    "is_distributed", "renorm", "take", "tensor_split", "split_with_sizes", "narrow_copy",
    "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
    "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unsqueeze_copy", "view_copy",
    "init_num_threads", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "is_autocast_cache_enabled", "is_autocast_cpu_enabled", "is_autocast_ipu_enabled",
    "is_autocast_xla_enabled", "is_warn_always_enabled", "typename", "range", "selu",
    "threshold", "prelu", "layer_norm", "instance_norm", "rms_norm", "kl_div",
    "margin_ranking_loss", "pairwise_distance", "pdist", "poisson_nll_loss",
    "triplet_margin_loss", "index_put", "index_put_",
    "masked_scatter", "put", "index_reduce", "mode", "resolve_neg", "nonzero_static",
    "unique_consecutive", "unravel_index", "zero_", "rrelu", "kaiser_window", "nuclear_norm",
    "norm_except_dim", "vmap", "unfold_copy",
    "is_storage", "unique", "nextafter", "lcm", "lcm_", "poisson", "orgqr", "ormqr",
]

_LN10, _LN2 = math.log(10.0), math.log(2.0)


def _acg() -> Any:
    import autograd_compile
    return autograd_compile


def _F() -> Any:
    import autograd_compile.nn.functional as F
    return F


def _t(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else _acg().tensor(x)


# -- elementwise ---------------------------------------------------------------------------

def log10(input: Tensor) -> Tensor:
    """Base-10 logarithm: ``acg.log10(acg.tensor([100.]))`` is ``[2.]``."""
    return input.log() / _LN10


def log2(input: Tensor) -> Tensor:
    return input.log() / _LN2


def sinh(input: Tensor) -> Tensor:
    return (input.exp() - (-input).exp()) / 2


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    return input + weight * (end - input)


def rad2deg(input: Tensor) -> Tensor:
    x = input if D.is_float(input.dtype) else input.to(D.default_float())
    return x * (180.0 / math.pi)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` in floating point."""
    x = input if D.is_float(input.dtype) else input.to(D.default_float())
    return x * _acg().pow(2.0, _t(other))


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(a) + exp(b))`` without overflow."""
    m = _acg().maximum(input, other)
    d = -(input - other).abs()
    finite = _acg().where(d.isnan(), _acg().zeros_like(d), d)  # a == b == +-inf
    return m + finite.exp().log1p()


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    return logaddexp(input * _LN2, other * _LN2) / _LN2


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` shifted by the (detached) max for stability."""
    acg = _acg()
    m = input.detach().amax(dim, keepdim=True) if input.dim() else input.detach()
    m = acg.where(m.isinf(), acg.zeros_like(m), m)
    return (input - m).exp().cumsum(dim).log() + m


def signbit(input: Tensor) -> Tensor:
    if not D.is_float(input.dtype):
        return input < 0
    return (input < 0) | ((input == 0) & ((1.0 / input) < 0))


def isneginf(input: Tensor) -> Tensor:
    return input.isinf() & (input < 0)


def isposinf(input: Tensor) -> Tensor:
    return input.isinf() & (input > 0)


def isreal(input: Tensor) -> Tensor:
    if input.is_complex():
        return input.imag == 0
    return _acg().ones_like(input, dtype=_acg().bool)


def positive(input: Tensor) -> Tensor:
    if input.dtype == np.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``."""
    return _acg().sub(_t(other) if not isinstance(other, (int, float)) else other,
                      input * alpha if alpha != 1 else input)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is in ``test_elements``."""
    e, t = _t(elements), _t(test_elements).reshape(-1)
    hit = (e.unsqueeze(-1) == t).any(-1)
    return ~hit if invert else hit


# -- reductions ----------------------------------------------------------------------------

_MV = collections.namedtuple("median", ["values", "indices"])
_KV = collections.namedtuple("kthvalue", ["values", "indices"])


def _pick(input: Tensor, dim: int, k: Any, keepdim: bool, cls: Any) -> Any:
    """The k-th smallest along dim (k an int or a keepdim long tensor), as (values, indices)."""
    if input.dim() == 0:
        return cls(input.clone(), _acg().zeros((), dtype=_acg().int64))
    vals, idx = input.sort(dim)
    if isinstance(k, int):
        k = _acg().full([1 if i == dim % input.dim() else s for i, s in enumerate(input.shape)],
                        k, dtype=_acg().int64)
    v, i = vals.gather(dim, k), idx.gather(dim, k)
    return cls(v, i) if keepdim else cls(v.squeeze(dim), i.squeeze(dim))


def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median; with ``dim``, (values, indices)."""
    if dim is None:
        flat = input.reshape(-1)
        return flat.sort()[0][(flat.numel() - 1) // 2] if flat.numel() else flat.sum() * math.nan
    n = input.shape[dim] if input.dim() else 1
    return _pick(input, dim, (n - 1) // 2, keepdim, _MV)


def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median of the non-nan values (nan sorts last)."""
    if dim is None:
        return nanmedian(input.reshape(-1), 0).values
    count = (~input.isnan()).sum(dim, keepdim=True) if input.dim() else None
    if count is None:
        return _MV(input.clone(), _acg().zeros((), dtype=_acg().int64))
    k = ((count - 1).clamp(min=0) // 2)
    return _pick(input, dim, k, keepdim, _MV)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    n = input.shape[dim] if input.dim() else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    return _pick(input, dim, k - 1, keepdim, _KV)


def msort(input: Tensor) -> Tensor:
    return input.sort(0)[0]


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    x = _acg().where(input.isnan(), _acg().zeros_like(input), input)
    return x.sum(dim, keepdim=keepdim, dtype=dtype) if dim is not None else x.sum(dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    if not D.is_float(input.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {input.dtype.name}")
    keep = ~input.isnan()
    n = keep.sum(dim, keepdim=keepdim) if dim is not None else keep.sum()
    return nansum(input, dim, keepdim, dtype=dtype) / n


def _quantile(input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    acg = _acg()
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"quantile() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, Tensor) or q.dim() == 0
    qt = acg.as_tensor(q, dtype=input.dtype).reshape(-1)
    if builtins.bool(((qt < 0) | (qt > 1)).any()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else dim % builtins.max(input.dim(), 1)
    x = x.movedim(d, -1) if x.dim() else x.reshape(1)
    srt = x.sort(-1)[0]
    nan = x.isnan()
    n = ((~nan).sum(-1, keepdim=True) if ignore_nan
         else acg.full_like(nan.sum(-1, keepdim=True), x.shape[-1]))
    pos = (qt * (n - 1).to(input.dtype).clamp(min=0))          # [..., Q]
    lo = pos.floor()
    hi = pos.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = pos.round()
    v_lo = srt.gather(-1, lo.to(acg.int64))
    v_hi = srt.gather(-1, hi.to(acg.int64))
    w = 0.5 if interpolation == "midpoint" else (pos - lo)
    out = v_lo + (v_hi - v_lo) * w
    bad = (n == 0) if ignore_nan else nan.any(-1, keepdim=True)
    out = acg.where(bad, acg.full_like(out, math.nan), out)
    out = out.movedim(-1, 0)                                      # [Q, ...]
    if keepdim:
        shape = [1] * input.dim() if dim is None else list(input.shape)
        if dim is not None:
            shape[d] = 1
        out = out.reshape([out.shape[0], *shape])
    return out[0] if scalar_q else out


@autocast_op("quantile")
def quantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles along dim (all elements when dim is None); nan if a slice has nan."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@autocast_op("nanquantile")
def nanquantile(input: Tensor, q: Any, dim: Any = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    return _quantile(input, q, dim, keepdim, interpolation, True)


@autocast_op("trace")
def trace(input: Tensor) -> Tensor:
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    n, m = input.shape
    eye = _acg().eye(n, m, dtype=_acg().bool)
    return _acg().where(eye, input, _acg().zeros_like(input)).sum()


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """Trapezoid rule along dim, with sample points x or spacing dx (default 1)."""
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    a, b = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    if x is None or isinstance(x, (int, float)):
        step = dx if dx is not None else (x if x is not None else 1)
        return (a + b).sum(dim) * (step / 2)
    if x.dim() == 1:
        dxs = x[1:] - x[:-1]
        shape = [1] * y.dim()
        shape[dim] = n - 1
        dxs = dxs.reshape(shape)
    else:
        dxs = x.narrow(dim, 1, n - 1) - x.narrow(dim, 0, n - 1)
    return ((a + b) * dxs).sum(dim) / 2


def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    return trapezoid(y, x, dx=dx, dim=dim)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Rescale each slice along dim whose p-norm exceeds maxnorm to norm maxnorm."""
    other = [i for i in builtins.range(input.dim()) if i != dim % input.dim()]
    norm = _acg().linalg.vector_norm(input, p, other, keepdim=True)  # (0 gradient at zero)
    factor = _acg().where(norm > maxnorm, maxnorm / (norm + 1e-7), _acg().ones_like(norm))
    return input * factor


# -- linear algebra products ---------------------------------------------------------------

@autocast_op("mv")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat "
                           f"({input.shape[0]}x{input.shape[1]}), vec ({vec.shape[0]})")
    return input @ vec


def vdot(input: Tensor, other: Tensor) -> Tensor:
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D "
                           f"tensors")
    return ((input.conj() if input.is_complex() else input) * other).sum()


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Any = None) -> Tensor:
    """Sum over the pairs of dims (an int: a's last ``dims`` with b's first ``dims``)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(builtins.range(a.dim() - dims, a.dim()))
        db = list(builtins.range(dims))
    elif isinstance(dims, Tensor):
        return tensordot(a, b, dims.tolist())
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    da = [d % a.dim() for d in da]
    db = [d % b.dim() for d in db]
    fa = [d for d in builtins.range(a.dim()) if d not in da]
    fb = [d for d in builtins.range(b.dim()) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    am = a.permute(fa + da).reshape(-1, k)
    bm = b.permute(db + fb).reshape(k, -1)
    return (am @ bm).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def inner(input: Tensor, other: Tensor) -> Tensor:
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return tensordot(input, other, ([-1], [-1]))


def kron(input: Tensor, other: Tensor) -> Tensor:
    """Kronecker product: block (i, j) is ``input[i, j] * other``."""
    n = builtins.max(input.dim(), other.dim())
    a = input.reshape([1] * (n - input.dim()) + list(input.shape))
    b = other.reshape([1] * (n - other.dim()) + list(other.shape))
    ai = a.reshape([s for d in a.shape for s in (d, 1)])
    bi = b.reshape([s for d in b.shape for s in (1, d)])
    return (ai * bi).reshape([x * y for x, y in zip(a.shape, b.shape)])


# -- shapes --------------------------------------------------------------------------------

def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims ``source`` to positions ``destination``; the rest keep their order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    nd = builtins.max(input.dim(), 1)
    src = [s % nd for s in src]
    dst = [d % nd for d in dst]
    if input.dim() == 0:
        return input
    rest = iter(d for d in builtins.range(nd) if d not in src)
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    perm = [o if o is not None else next(rest) for o in order]
    return input.permute(perm)


moveaxis = movedim


def ravel(input: Tensor) -> Tensor:
    return input.reshape(-1)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = list(dims)
    if len(dims) < input.dim():
        dims = [1] * (input.dim() - len(dims)) + dims
    x = input.reshape([1] * (len(dims) - input.dim()) + list(input.shape))
    return x.repeat(*dims)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees k times in the plane of dims (from the first toward the second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = dims
    if d0 % input.dim() == d1 % input.dim():
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple:
    """Coordinate grids; ``indexing="xy"`` swaps the first two output dims."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", "
                           f"but received: {indexing}")
    ts = [t.reshape(-1) for t in tensors]
    shape = [t.shape[0] for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        out.append(t.reshape(view).expand(*shape))
    if indexing == "xy" and len(ts) >= 2:  # xy: the first two axes swapped (Cartesian)
        out = [o.transpose(0, 1) for o in out]
    return tuple(out)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple:
    """Split into n near-equal parts (an int) or at the given indices."""
    n = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        s = indices_or_sections
        if s <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {s}")
        q, r = divmod(n, s)
        bounds, at = [], 0
        for i in builtins.range(s - 1):
            at += q + (1 if i < r else 0)
            bounds.append(at)
    else:
        bounds = list(indices_or_sections)
    edges = [0] + bounds + [n]
    out = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        lo, hi = builtins.min(builtins.max(lo, 0), n), builtins.min(builtins.max(hi, 0), n)
        out.append(input.narrow(dim, lo, builtins.max(hi - lo, 0)))
    return tuple(out)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple:
    if input.dim() < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got "
                           f"a tensor with {input.dim()} dimensions!")
    if isinstance(indices_or_sections, int) and input.shape[0] % indices_or_sections:
        raise RuntimeError(f"torch.vsplit attempted to split along dimension 0, but the size of "
                           f"the dimension {input.shape[0]} is not divisible by the split_size "
                           f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, 0)


def vstack(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    ts = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    return _acg().cat(ts, 0)


row_stack = vstack


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    if builtins.sum(split_sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={list(split_sizes)}")
    return tuple(input.split(list(split_sizes), dim))


def take(input: Tensor, index: Tensor) -> Tensor:
    flat = input.reshape(-1)
    return flat.index_select(0, index.reshape(-1)).reshape(index.shape)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    acg = _acg()
    d = dim % input.dim()
    n = input.shape[d]
    shape = [1] * input.dim()
    shape[d] = n
    mask = (acg.arange(n) == index % n).reshape(shape)
    return acg.where(mask, src.unsqueeze(d).to(input.dtype), input)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None,
                  step: int = 1) -> Tensor:
    """``input`` with ``input[..., start:end:step, ...]`` (along dim) replaced by ``src``."""
    d = dim % input.dim()
    idx = list(builtins.range(input.shape[d]))[slice(start, end, step)]
    index = _acg().tensor(idx, dtype=_acg().int64)
    return input.index_copy(d, index, src.to(input.dtype))


def _copy(f: Any) -> Any:
    def g(*args: Any, **kwargs: Any) -> Any:
        r = f(*args, **kwargs)
        return tuple(t.clone() for t in r) if isinstance(r, (tuple, list)) else r.clone()
    g.__name__ = f"{getattr(f, '__name__', 'op')}_copy"
    return g


narrow_copy = _copy(lambda input, dim, start, length: input.narrow(dim, start, length))
permute_copy = _copy(lambda input, dims: input.permute(dims))
select_copy = _copy(lambda input, dim, index: input.select(dim, index))
slice_copy = _copy(lambda input, dim=0, start=None, end=None, step=1:
                   input[(slice(None),) * (dim % input.dim()) + (slice(start, end, step),)])
split_copy = _copy(lambda input, split_size, dim=0: input.split(split_size, dim))
split_with_sizes_copy = _copy(split_with_sizes)
squeeze_copy = _copy(lambda input, dim=None: input.squeeze() if dim is None
                     else input.squeeze(dim))
t_copy = _copy(lambda input: input.t())
transpose_copy = _copy(lambda input, dim0, dim1: input.transpose(dim0, dim1))
unbind_copy = _copy(lambda input, dim=0: input.unbind(dim))
unsqueeze_copy = _copy(lambda input, dim: input.unsqueeze(dim))
view_copy = _copy(lambda input, size: input.view(size))


# -- factories -----------------------------------------------------------------------------

def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, out: Any = None,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    acg = _acg()
    dt = D.as_dtype(dtype) or D.default_float()
    exps = np.linspace(float(start), float(end), steps, dtype=np.float64)
    vals = np.power(float(base), exps)
    if not D.is_float(dt):
        vals = np.trunc(vals)
    return acg.tensor(vals.astype(dt), requires_grad=requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    return _acg().tensor(s, dtype=dtype or D.default_float(), requires_grad=requires_grad)


def _tri_indices(row: int, col: int, offset: int, dtype: Any, upper: bool) -> Tensor:
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return _acg().tensor(np.stack([r, c]).astype(D.as_dtype(dtype) or np.int64))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The (2, N) coordinates of the lower triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, False)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    return _tri_indices(row, col, offset, dtype, True)


def range(start: Any, end: Any, step: Any = 1, *, out: Any = None, dtype: Any = None,
          layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Deprecated ``torch.range``: like arange but the end is included."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    n = int(math.floor((end - start) / step)) + 1
    vals = start + np.arange(n, dtype=np.float64) * step
    return _acg().tensor(vals.astype(D.as_dtype(dtype) or D.default_float()),
                         requires_grad=requires_grad)


# -- dtypes and predicates -----------------------------------------------------------------

def promote_types(type1: Any, type2: Any) -> Any:
    """PyTorch's promotion of two dtypes.

    >>> import autograd_compile as acg
    >>> acg.promote_types(acg.int64, acg.float16), acg.result_type(acg.ones(1).long(), 2.5)
    (torch.float16, torch.float32)
    """
    return dtype_of(D.promote(D.as_dtype(type1), D.as_dtype(type2)))


def result_type(tensor1: Any, tensor2: Any) -> Any:
    return dtype_of(D.result_type(tensor1, tensor2))


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no lower category).

    >>> import autograd_compile as acg
    >>> acg.can_cast(acg.float64, acg.float32), acg.can_cast(acg.float32, acg.int32)
    (True, False)
    """
    return D.can_cast(D.as_dtype(from_), D.as_dtype(to))


def is_inference(input: Tensor) -> bool:
    """``input.is_inference()``: made inside ``inference_mode()``."""
    return input.is_inference()


def is_neg(input: Tensor) -> bool:
    return False  # no lazy negation bit here


def is_nonzero(input: Tensor) -> bool:
    if input.numel() != 1:
        if input.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.reshape(()).item() != 0)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input: Tensor) -> bool:
    dt = np.dtype(input.dtype)
    return not (dt == np.bool_ or dt.kind == "u")


def is_distributed(input: Tensor) -> bool:
    return False


def init_num_threads() -> None:
    """No-op: XLA manages its own threads."""


def is_anomaly_enabled() -> bool:
    """Whether backward runs under ``autograd.detect_anomaly``."""
    from autograd_compile.autograd.engine import STATE
    return builtins.bool(STATE.anomaly)


def is_anomaly_check_nan_enabled() -> bool:
    """True, PyTorch's default: anomaly mode here always checks for nan when it is on."""
    return True


def is_autocast_cache_enabled() -> bool:
    return True


def is_autocast_cpu_enabled() -> bool:
    return builtins.bool(_acg().is_autocast_enabled("cpu"))


def is_autocast_ipu_enabled() -> bool:
    return False


def is_autocast_xla_enabled() -> bool:
    return False


def is_warn_always_enabled() -> bool:
    return False


def typename(obj: Any) -> str:
    """``'torch.FloatTensor'`` style names for tensors, the qualified type name otherwise."""
    if isinstance(obj, Tensor):
        names = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
                 "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
                 "bool": "BoolTensor"}
        return "torch." + names.get(str(np.dtype(obj.dtype)), "Tensor")
    module = type(obj).__module__
    qual = type(obj).__qualname__
    return qual if module in ("builtins", "__builtin__") else f"{module}.{qual}"


# -- nn functions exposed at top level (PyTorch's aten signatures, int reductions) ----------

_RED = {0: "none", 1: "mean", 2: "sum"}


def _reduce(loss: Tensor, reduction: int) -> Tensor:
    """aten's int reduction: 0 none, 1 mean, 2 sum."""
    return loss if reduction == 0 else (loss.mean() if reduction == 1 else loss.sum())


def selu(input: Tensor) -> Tensor:
    return _F().selu(input)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    return _F().threshold(input, threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    return _F().prelu(input, weight)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def instance_norm(input: Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Tensor:
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def rms_norm(input: Tensor, normalized_shape: Any, weight: Any = None,
             eps: Any = None) -> Tensor:
    return _F().rms_norm(input, normalized_shape, weight, eps)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """aten's kl_div: elementwise then reduced (no 'batchmean' warning at this level)."""
    return _reduce(_F().kl_div(input, target, reduction="none", log_target=log_target), reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    return _F().margin_ranking_loss(input1, input2, target, margin=margin,
                                    reduction=_RED[reduction])


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    return _F().pdist(input, p)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    return _F().poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps,
                                 reduction=_RED[reduction])


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 0) -> Tensor:
    return _F().triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps,
                                    swap=swap, reduction=_RED[reduction])


# -- second batch: scatters, mode, unique, windows --------------------------------------------

_MODE = collections.namedtuple("mode", ["values", "indices"])


def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    return input.index_put(tuple(indices), values, accumulate)


def index_put_(input: Tensor, indices: Any, values: Tensor, accumulate: bool = False) -> Tensor:
    return input.index_put_(tuple(indices), values, accumulate)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Where mask is true, the next elements of source in row-major order."""
    acg = _acg()
    if mask.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype.name}")
    m = mask.expand(*input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    pos = (m.reshape(-1).to(acg.int64).cumsum(0) - 1).clamp(min=0)
    taken = source.reshape(-1).index_select(0, pos).reshape(input.shape)
    return acg.where(m, taken.to(input.dtype), input)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``input.flatten()[index] = source`` (``+=`` with accumulate), out of place."""
    flat = input.reshape(-1)
    n = flat.shape[0]
    idx = index.reshape(-1)
    idx = _acg().where(idx < 0, idx + n, idx)
    return flat.index_put((idx,), source.reshape(-1), accumulate).reshape(input.shape)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """Reduce (prod, mean, amax, amin) source's slices into input's slices ``index``."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = dim % builtins.max(input.dim(), 1)
    shape = [1] * source.dim()
    shape[d] = index.shape[0]
    full = index.reshape(shape).expand(*source.shape)
    return input.scatter_reduce(d, full, source, reduce, include_self=include_self)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along dim (the smallest of ties) and an index where it occurs."""
    acg = _acg()
    if input.dim() == 0:
        return _MODE(input.clone(), acg.zeros((), dtype=acg.int64))
    x = input.movedim(dim, -1)
    n = x.shape[-1]
    counts = (x.unsqueeze(-1) == x.unsqueeze(-2)).sum(-1)
    best = counts == counts.amax(-1, keepdim=True)
    big = x.detach().amax(-1, keepdim=True)
    value = acg.where(best, x, big).amin(-1, keepdim=True)
    pos = acg.where(x == value, acg.arange(n), acg.full_like(counts, -1)).amax(-1, keepdim=True)
    value = x.gather(-1, pos)           # differentiable: the element itself
    if keepdim:
        return _MODE(value.movedim(-1, dim), pos.movedim(-1, dim))
    return _MODE(value.squeeze(-1), pos.squeeze(-1))


def resolve_neg(input: Tensor) -> Tensor:
    return input  # no lazy negation bit here


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero()`` cut or padded with fill_value to ``size`` rows."""
    nz = input.nonzero()
    if nz.shape[0] >= size:
        return nz[:size]
    pad = _acg().full((size - nz.shape[0], input.dim()), fill_value, dtype=nz.dtype)
    return _acg().cat([nz, pad], 0)


def _np(x: Tensor) -> np.ndarray:
    return np.asarray(x.detach().numpy())


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim: Any = None) -> Any:
    """The distinct values (sorted), with the inverse indices and counts when asked."""
    acg = _acg()
    vals, inv, cnt = np.unique(_np(input), return_inverse=True, return_counts=True, axis=dim)
    out = [acg.tensor(vals.astype(np.dtype(input.dtype)))]
    if return_inverse:
        shape = input.shape if dim is None else (input.shape[dim],)
        out.append(acg.tensor(inv.reshape(shape).astype(np.int64)))
    if return_counts:
        out.append(acg.tensor(cnt.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: Any = None) -> Any:
    """Collapse runs of equal values (slices along dim)."""
    acg = _acg()
    a = _np(input)
    if dim is None:
        a = a.reshape(-1)
        d = 0
    else:
        d = dim % a.ndim
    a = np.moveaxis(a, d, 0)
    n = a.shape[0]
    change = np.ones(n, dtype=bool)
    if n > 1:
        change[1:] = (a[1:] != a[:-1]).reshape(n - 1, -1).any(1)
    starts = np.flatnonzero(change)
    out = [acg.tensor(np.moveaxis(a[starts], 0, d).astype(np.dtype(input.dtype)))]
    if return_inverse:
        inv = (np.cumsum(change) - 1).astype(np.int64)
        out.append(acg.tensor(inv.reshape(input.shape) if dim is None else inv))
    if return_counts:
        out.append(acg.tensor(np.diff(np.append(starts, n)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unravel_index(indices: Any, shape: Any) -> tuple:
    """Flat indices to coordinates in ``shape``: a tuple of index tensors."""
    idx = _t(indices)
    if D.is_float(idx.dtype) or idx.dtype == np.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype.name}")
    shape = [shape] if isinstance(shape, int) else list(shape)
    total = int(np.prod(shape))
    if builtins.bool(((idx < -total) | (idx >= total)).any()):
        raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
    idx = _acg().where(idx < 0, idx + total, idx).to(_acg().int64)
    out = []
    for size in reversed(shape):
        out.append(idx % size)
        idx = idx // size
    return tuple(reversed(out))


def zero_(input: Tensor) -> Tensor:
    return input.zero_()


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Any = None) -> Tensor:
    return _F().rrelu(input, lower, upper, training)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """The Kaiser window (periodic: one longer, last point dropped)."""
    dt = D.as_dtype(dtype) or D.default_float()
    if window_length == 1:
        vals = np.ones(1)
    else:
        n = window_length + 1 if periodic else window_length
        vals = np.kaiser(n, beta)[:window_length]
    return _acg().tensor(vals.astype(dt), requires_grad=requires_grad)


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False, *,
                 out: Any = None) -> Tensor:
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return _acg().linalg.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim,
                                     keepdim=keepdim)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The pow-norm over every dim but ``dim`` (dim -1: over everything), keepdim shape."""
    if dim == -1:
        return v.abs().pow(pow).sum().pow(1.0 / pow)
    others = [i for i in builtins.range(v.dim()) if i != dim % v.dim()]
    return v.abs().pow(pow).sum(others, keepdim=True).pow(1.0 / pow)


def vmap(func: Any, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: Any = None) -> Any:
    from autograd_compile import func as F
    return F.vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Windows of ``size`` every ``step`` along dimension, as a new last dim."""
    acg = _acg()
    d = dimension % builtins.max(input.dim(), 1)
    n = input.shape[d] if input.dim() else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    idx = (acg.arange(count).unsqueeze(1) * step + acg.arange(size)).reshape(-1)
    x = input.index_select(d, idx) if input.dim() else input.reshape(1)
    shape = list(x.shape)
    shape[d:d + 1] = [count, size]
    return x.reshape(shape).movedim(d + 1, -1)


unfold_copy = unfold


def is_storage(obj: Any) -> bool:
    return type(obj).__name__ in ("UntypedStorage", "TypedStorage") or \
        type(obj).__name__.endswith("Storage")


def _stride(self: Tensor, dim: Any = None) -> Any:
    """Row-major strides: every tensor here is contiguous (views are copies in JAX)."""
    st, acc = [], 1
    for size in reversed(tuple(self.shape)):
        st.append(acc)
        acc *= builtins.max(size, 1)
    st = tuple(reversed(st))
    return st if dim is None else st[dim]


def _new(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Legacy ``x.new(sizes...)`` (uninitialised: zeros here) or ``x.new(data)``."""
    if not args:
        return self.new_empty((0,), **kwargs)
    if len(args) == 1 and not isinstance(args[0], int):
        a = args[0]
        if isinstance(a, tuple) and builtins.all(isinstance(i, int) for i in a):
            return self.new_zeros(a, **kwargs)
        return self.new_tensor(a, **kwargs)
    return self.new_zeros(args, **kwargs)


# -- ops with their own (non-differentiable) kernels ---------------------------------------

def _jnp_nextafter(x: Any, y: Any) -> Any:
    import jax.numpy as jnp
    return jnp.nextafter(x, y)


def _jnp_lcm(x: Any, y: Any) -> Any:
    import jax.numpy as jnp
    return jnp.lcm(x, y)


_nextafter = binary("nextafter", _jnp_nextafter, NONDIFF)
_lcm = binary("lcm", _jnp_lcm, NONDIFF)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next float after input toward other."""
    if not D.is_float(input.dtype):
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{scalar_type_name(input.dtype)}'")
    return _nextafter(input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple of integer tensors (non-negative, as PyTorch's)."""
    for t in (input, other):
        if D.is_float(t.dtype) or t.dtype == np.bool_:
            raise RuntimeError(f"\"lcm_cpu\" not implemented for '{scalar_type_name(t.dtype)}'")
    return _lcm(input, other)


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    return input.copy_(lcm(input, other))


def poisson(input: Tensor, generator: Any = None) -> Tensor:
    """Poisson samples with rates ``input`` (no gradient, as in PyTorch)."""
    import jax
    acg = _acg()
    from .random import default_generator
    gen = generator if generator is not None else default_generator
    key = gen._next_key() if hasattr(gen, "_next_key") else jax.random.PRNGKey(
        int(acg.randint(0, 2 ** 31 - 1, ()).item()))
    lam = np.asarray(input.detach().numpy())
    draws = jax.random.poisson(key, lam, lam.shape)
    return acg.tensor(np.asarray(draws).astype(lam.dtype))


def _random_(self: Tensor, *args: Any, generator: Any = None) -> Tensor:
    """``random_(to)`` / ``random_(from, to)`` / ``random_()``: integers drawn uniformly."""
    acg = _acg()
    if len(args) == 2:
        lo, hi = args
    elif len(args) == 1:
        lo, hi = 0, args[0]
    else:
        lo = 0
        hi = 2 ** (np.finfo(self.dtype).nmant + 1) if D.is_float(self.dtype) else \
            (2 if self.dtype == np.bool_ else int(np.iinfo(self.dtype).max) + 1)
    hi = builtins.min(hi, 2 ** 62)
    draws = acg.randint(int(lo), int(hi), tuple(self.shape), dtype=acg.int64,
                        generator=generator)
    return self.copy_(draws.to(self.dtype))


def _log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *,
                 generator: Any = None) -> Tensor:
    """Fill with exp(N(mean, std)) draws."""
    z = _acg().randn(tuple(self.shape), dtype=self.dtype, generator=generator)
    return self.copy_((z * std + mean).exp())


def _new_empty_strided(self: Tensor, size: Any, stride: Any, **kwargs: Any) -> Tensor:
    return self.new_empty(tuple(size), **kwargs)  # storage layout is XLA's


def _reshape_inplace(name: str, f: Any) -> Any:
    """Shape-changing in-place (``x.t_()``): the value replaced, for tensors outside autograd."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if self.requires_grad:
            raise RuntimeError(f"{name}_: changing the shape in place of a tensor that requires "
                               f"grad is not supported here; use the out-of-place {name}()")
        self._set_data(f(self, *args, **kwargs)._data)
        return self
    method.__name__ = method.__qualname__ = f"{name}_"
    return method


def _resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Keep the first elements (row-major), pad with zeros: PyTorch leaves them uninitialised."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    n = int(np.prod(shape))
    flat = self.detach().reshape(-1)
    if flat.shape[0] >= n:
        flat = flat[:n]
    else:
        flat = _acg().cat([flat, _acg().zeros(n - flat.shape[0], dtype=self.dtype)])
    return _reshape_inplace("resize", lambda x: flat.reshape(shape))(self)


@autocast_op("orgqr")
def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of Q from Householder reflectors (``linalg.householder_product``)."""
    return _acg().linalg.householder_product(input, tau)


@autocast_op("ormqr")
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``op(Q) @ other`` (left) or ``other @ op(Q)`` with the full m x m Q of the reflectors."""
    acg = _acg()
    m, k = input.shape[-2], input.shape[-1]
    if k < m:  # extra reflectors with tau 0 are identities: Q becomes square
        input = acg.cat([input, acg.zeros(*input.shape[:-1], m - k, dtype=input.dtype)], -1)
        tau = acg.cat([tau, acg.zeros(*tau.shape[:-1], m - tau.shape[-1], dtype=tau.dtype)], -1)
    q = acg.linalg.householder_product(input[..., :m], tau)
    if transpose:
        q = q.transpose(-2, -1).conj() if q.is_complex() else q.transpose(-2, -1)
    return q @ other if left else other @ q


_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`.",
    "symeig": "`torch.symeig` is deprecated in favor of `torch.linalg.eigh`.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.",
    "eig": "`torch.eig` is deprecated in favor of `torch.linalg.eig`.",
}


def _removed(name: str) -> Any:
    """Methods PyTorch 2 still has but that only raise, naming their replacement."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if name == "reinforce":
            raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.")
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. "
                           f"{_REMOVED[name]}")
    method.__name__ = method.__qualname__ = name
    return method


def _map2_(self: Tensor, x: Tensor, y: Tensor, callable: Any) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])`` elementwise in Python (CPU, as PyTorch's)."""
    a, b, c = np.broadcast_arrays(_np(self), _np(x), _np(y))
    out = np.array([callable(*v) for v in zip(a.ravel().tolist(), b.ravel().tolist(),
                                               c.ravel().tolist())], dtype=np.dtype(self.dtype))
    return self.copy_(_acg().tensor(out.reshape(a.shape)))


# -- in-place forms --------------------------------------------------------------------------

def _inplace(name: str, f: Any) -> Any:
    """``x.name_(...)``: ``x.copy_(f(x.clone(), ...))``, refusing a result x's dtype can't hold."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        new = f(self.clone(), *args, **kwargs)
        if not D.can_cast(np.dtype(new.dtype), np.dtype(self.dtype)):
            raise RuntimeError(f"{name}_: result type {new.dtype.name} can't be cast to the "
                               f"desired output type {self.dtype.name}")
        return self.copy_(new)
    method.__name__ = method.__qualname__ = f"{name}_"
    return method


_TORCH_INPLACE = ("i0 log10 log1p log2 log logit nan_to_num neg negative rad2deg reciprocal relu "
                  "round rsqrt selu sigmoid sin sinc sinh sqrt square tan tanh trunc xlogy "
                  "ldexp threshold rrelu").split()
_TENSOR_INPLACE = ("i0 igamma igammac le lerp less less_equal lgamma log10 log1p log2 log "
                   "logical_and logical_not logical_or logical_xor logit lt multiply mvlgamma "
                   "ne negative not_equal polygamma rad2deg reciprocal remainder renorm round "
                   "rsqrt sgn sign sin sinc sinh square subtract tan true_divide trunc xlogy "
                   "ldexp masked_scatter put index_reduce nextafter lcm").split()


_METHODS = ("log10 log2 sinh lerp rad2deg ldexp logaddexp logaddexp2 logcumsumexp median "
            "nanmedian kthvalue movedim moveaxis nanmean nansum quantile nanquantile positive "
            "ravel rot90 select_scatter slice_scatter signbit tile vsplit kron inner vdot trace "
            "isneginf isposinf isreal is_neg is_nonzero is_same_size is_signed "
            "is_distributed renorm take tensor_split split_with_sizes narrow_copy mv "
            "prelu index_put masked_scatter put index_reduce mode resolve_neg nonzero_static "
            "unique unique_consecutive unfold nextafter lcm orgqr ormqr").split()


def install_tail_b_methods(cls: type) -> None:
    """Tensor methods: the functions above (input first), and the in-place forms."""
    g = globals()
    for name in _METHODS:
        if not hasattr(cls, name):
            setattr(cls, name, g[name])
    cls.ndimension = lambda self: self.dim()
    cls.nelement = lambda self: self.numel()
    cls.stride = _stride
    cls.new = _new
    for n in ("t", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze"):
        setattr(cls, n + "_", _reshape_inplace(n, getattr(cls, n)))
    cls.resize_ = _resize_
    cls.resize = lambda self, *sizes: _resize_(self.detach().clone(), *sizes)
    cls.resize_as = lambda self, other: _resize_(self.detach().clone(), tuple(other.shape))
    cls.map2_ = _map2_
    cls.resize_as_ = lambda self, other, memory_format=None: _resize_(self, tuple(other.shape))
    for n in ("solve", "symeig", "lstsq", "eig", "reinforce"):
        if not hasattr(cls, n):
            setattr(cls, n, _removed(n))
    cls.random_ = _random_
    cls.log_normal_ = _log_normal_
    cls.new_empty_strided = _new_empty_strided
    cls.polygamma_ = _inplace("polygamma", lambda self, n: self.polygamma(n))
    for n in _TENSOR_INPLACE:
        if not hasattr(cls, n + "_") and n != "polygamma":
            base = getattr(cls, n, None)
            if base is not None:
                setattr(cls, n + "_", _inplace(n, base))
    acg = _acg()
    for n in _TORCH_INPLACE:
        if not hasattr(acg, n + "_"):
            base = getattr(acg, n, None) or g.get(n)
            if base is not None:
                setattr(acg, n + "_", _inplace(n, base))
