"""Reductions over ``dim`` (an int, a list of ints, or None/[] for every dim) with ``keepdim``.

Backward formulas first bring the reduced gradient back to the input's rank
(:func:`_keep`), then broadcast it; ties in max/min/amax share the gradient evenly
(as PyTorch), while ``max(dim)`` routes it to the returned index only.
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

from autograd_compile.tracing.fake import TensorMeta

from ._defop import NONDIFF, defop, holomorphic, inplace
from ._dtypes import BOOL, DEFAULT_INT, as_dtype, category, is_float, to_float
from ._shapes import numel, reduced_shape, wrap_dim, wrap_dims
from ._xp import jnp
from .elementwise import eq, logical_and, where
from .factories import zeros
from .indexing import scatter_add


# -- dtype rules ----------------------------------------------------------------------------
def _sum_dtype(dtype: Any, out: Any = None) -> np.dtype:
    """sum/prod/cumsum: integers and bools accumulate in int64, as in PyTorch."""
    if out is not None:
        return as_dtype(out)
    return DEFAULT_INT if category(dtype) <= 1 else np.dtype(dtype)


def _float_dtype(dtype: Any, out: Any = None, what: str = "mean()") -> np.dtype:
    """mean/var/std only on floating input (PyTorch refuses to guess for integers)."""
    d = as_dtype(out) if out is not None else np.dtype(dtype)
    if not is_float(d):
        raise RuntimeError(f"{what}: could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {d}")
    return d


def _var_dtype(dtype: Any, out: Any = None) -> np.dtype:
    return _float_dtype(dtype, out, "std and var")


def _same(dtype: Any, out: Any = None) -> np.dtype:
    return np.dtype(dtype)


# -- shared pieces ----------------------------------------------------------------------------
def _rule(dtype_of: Callable[..., np.dtype]) -> Callable[..., TensorMeta]:
    """Shape rule of a reduction: reduced dims dropped (or kept as 1), dtype by ``dtype_of``."""
    def rule(x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None,
             correction: Any = None) -> TensorMeta:
        dims = wrap_dims(dim, x.ndim)
        return TensorMeta(reduced_shape(tuple(x.shape), dims, keepdim), dtype_of(x.dtype, dtype))
    return rule


def _axes(x: Any, dim: Any) -> tuple[int, ...]:
    return wrap_dims(dim, x.ndim)


def _keep(g: Any, shape: tuple, dims: tuple[int, ...], keepdim: bool) -> Any:
    """A reduced result reshaped so that it broadcasts against the input again."""
    return g if keepdim or not dims else g.reshape(reduced_shape(tuple(shape), dims, True))


def _expand_back(g: Any, x: Any, dim: Any, keepdim: bool) -> Any:
    dims = wrap_dims(dim, x.ndim)
    return _keep(g, x.shape, dims, keepdim).expand(x.shape)


def _count(shape: tuple, dims: tuple[int, ...]) -> Any:
    return numel(shape[d] for d in dims)


def _corr(correction: Any) -> Any:
    return 1 if correction is None else correction


# -- sum, mean, prod, cumsum --------------------------------------------------------------------
sum = defop("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
            lambda x, dtype=None: jnp.sum(x, dtype=_sum_dtype(x.dtype, dtype)),
            host=True, cost="stream", shape=_rule(_sum_dtype), save=(), backward=lambda g, x, dtype, out: g.expand(x.shape))
sum_dim = defop("sum.dim_IntList(Tensor self, int[]? dim, bool keepdim=False, *, "
                "ScalarType? dtype=None) -> Tensor",
                lambda x, dim, keepdim=False, dtype=None: jnp.sum(
                    x, _axes(x, dim), _sum_dtype(x.dtype, dtype), keepdims=keepdim),
                host=True, cost="stream", shape=_rule(_sum_dtype), save=(),
                backward=lambda g, x, dim, keepdim, dtype, out: _expand_back(g, x, dim, keepdim))
mean = defop("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
             lambda x, dtype=None: jnp.mean(x, dtype=_float_dtype(x.dtype, dtype)),
             host=True, cost="stream", shape=_rule(_float_dtype), save=(),
             backward=lambda g, x, dtype, out: (g / numel(x.shape)).expand(x.shape))
mean_dim = defop("mean.dim(Tensor self, int[]? dim, bool keepdim=False, *, "
                 "ScalarType? dtype=None) -> Tensor",
                 lambda x, dim, keepdim=False, dtype=None: jnp.mean(
                     x, _axes(x, dim), _float_dtype(x.dtype, dtype), keepdims=keepdim),
                 host=True, cost="stream", shape=_rule(_float_dtype), save=(),
                 backward=lambda g, x, dim, keepdim, dtype, out: _expand_back(
                     g / _count(x.shape, wrap_dims(dim, x.ndim)), x, dim, keepdim))


def _prod_backward(g: Any, x: Any, dim: Any, keepdim: bool, dtype: Any, out: Any) -> Any:
    """Exact with zeros: each entry's gradient is the product of the *other* entries."""
    dims = wrap_dims(dim, x.ndim)
    zero = eq(x, 0)
    nzeros = zero.sum(dims, keepdim=True)
    safe = where(zero, 1, x)
    rest = safe.prod() if dim is None else safe.prod(dims[0], keepdim=True) if dims else safe
    gk = _keep(g, x.shape, dims, keepdim)
    lone_zero = logical_and(zero, eq(nzeros, 1))
    return where(eq(nzeros, 0), gk * rest / safe, where(lone_zero, gk * rest, 0))


prod = defop("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
             lambda x, dtype=None: jnp.prod(x, dtype=_sum_dtype(x.dtype, dtype)),
             shape=_rule(_sum_dtype), save=("self",),
             backward=holomorphic(lambda g, x, dtype, out: _prod_backward(g, x, None, False,
                                                                      dtype, out)))
prod_dim = defop("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
                 "ScalarType? dtype=None) -> Tensor",
                 lambda x, dim, keepdim=False, dtype=None: jnp.prod(
                     x, _axes(x, dim), _sum_dtype(x.dtype, dtype), keepdims=keepdim),
                 shape=_rule(_sum_dtype), save=("self",), backward=holomorphic(_prod_backward))
def _scan_rule(x: Any, dim: int, dtype: Any = None) -> TensorMeta:
    wrap_dim(dim, x.ndim)  # validates dim
    return TensorMeta(tuple(x.shape), _sum_dtype(x.dtype, dtype))


cumsum = defop("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
               lambda x, dim, dtype=None: jnp.cumsum(x, wrap_dim(dim, x.ndim),
                                                     _sum_dtype(x.dtype, dtype)),
               shape=_scan_rule,
               save=(), backward=lambda g, x, dim, dtype, out: g.flip([dim]).cumsum(dim).flip(
                   [dim]))


def _tail_sum(t: Any, d: int) -> Any:
    """sum over j >= k along ``d``, at every k."""
    return t.flip([d]).cumsum(d).flip([d])


def _cumprod_grad(g: Any, x: Any, d: int, out: Any, dtype: Any, deep: bool) -> Any:
    """d(sum g_j out_j)/dx_k = sum_{j>=k} g_j prod_{i<=j, i!=k} x_i, exact with zeros: before
    the first zero z it is tail_sum(g out) / x_k; at z, the same sum over a cumprod that skips
    x_z; after z, x_z (= 0) times that gradient of the skipping cumprod, which gives the
    second derivative's terms through x_z (``deep``: one level is enough for those)."""
    zero = eq(x, 0)
    zeros_so_far = zero.cumsum(d)
    before, first = eq(zeros_so_far, 0), logical_and(zero, eq(zeros_so_far, 1))
    skipped = where(first, 1, x)
    skipping = cumprod(skipped, d, dtype=dtype)
    after = 0
    if deep:
        x_z = where(first, x, 0).sum(d, keepdim=True)  # zero, but differentiable in x_z
        after = x_z * _cumprod_grad(g, skipped, d, skipping, dtype, False)
    rest = where(first, _tail_sum(g * skipping, d), after)
    return where(before, _tail_sum(g * out, d) / where(before, x, 1), rest)


def _cumprod_backward(g: Any, x: Any, dim: int, dtype: Any, out: Any) -> Any:
    gx = _cumprod_grad(g, x, wrap_dim(dim, x.ndim), out, dtype, True)
    return gx.to(x.dtype) if gx.dtype != x.dtype else gx


cumprod = defop("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
                lambda x, dim, dtype=None: jnp.cumprod(x, wrap_dim(dim, x.ndim),
                                                       _sum_dtype(x.dtype, dtype)),
                shape=_scan_rule, save=("self", "out"), backward=holomorphic(_cumprod_backward))
cumprod_ = inplace("cumprod_", cumprod)


# -- var, std, logsumexp ------------------------------------------------------------------------
def _var_backward(g: Any, x: Any, dim: Any, correction: Any, keepdim: bool, out: Any) -> Any:
    dims = wrap_dims(dim, x.ndim)
    n = _count(x.shape, dims) - _corr(correction)
    return (x - x.mean(dims, keepdim=True)) * (_keep(g, x.shape, dims, keepdim) * 2 / n)


def _std_backward(g: Any, x: Any, dim: Any, correction: Any, keepdim: bool, out: Any) -> Any:
    dims = wrap_dims(dim, x.ndim)
    n = _count(x.shape, dims) - _corr(correction)
    scale = _keep(g, x.shape, dims, keepdim) / (_keep(out, x.shape, dims, keepdim) * n)
    return (x - x.mean(dims, keepdim=True)) * scale


_VAR = "(Tensor self, int[]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor"


def _moment(fn: Callable) -> Callable:
    def kernel(x: Any, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
        _var_dtype(x.dtype)
        return fn(x, _axes(x, dim), ddof=_corr(correction), keepdims=keepdim)
    return kernel


var = defop("var.correction" + _VAR, _moment(jnp.var), shape=_rule(_var_dtype),
            save=("self",), backward=_var_backward, static=("correction",))
std = defop("std.correction" + _VAR, _moment(jnp.std), shape=_rule(_var_dtype),
            save=("self", "out"), backward=_std_backward, static=("correction",))
var_mean = defop("var_mean.correction" + _VAR.replace("-> Tensor", "-> (Tensor, Tensor)"),
                 composite=lambda x, dim=None, *, correction=None, keepdim=False: (
                     var(x, dim, correction=correction, keepdim=keepdim),
                     mean_dim(x, dim, keepdim)))
logsumexp = defop("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor",
                  lambda x, dim, keepdim=False: jax.nn.logsumexp(
                      x.astype(to_float(x.dtype)), _axes(x, dim), keepdims=keepdim),
                  shape=_rule(lambda d, out: to_float(d)), save=("self", "out"),
                  backward=holomorphic(lambda g, x, dim, keepdim, out: _keep(
                      g, x.shape, wrap_dims(dim, x.ndim), keepdim) * (x - _keep(
                          out, x.shape, wrap_dims(dim, x.ndim), keepdim)).exp()))


# -- max/min family ---------------------------------------------------------------------------
def _extremum_backward(g: Any, x: Any, dim: Any, keepdim: bool, out: Any) -> Any:
    """Ties share the gradient evenly."""
    dims = wrap_dims(dim, x.ndim)
    mask = eq(x, _keep(out, x.shape, dims, keepdim))
    share = _keep(g, x.shape, dims, keepdim) / mask.sum(dims, keepdim=True)
    return where(mask, share, 0)


amax = defop("amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",
             lambda x, dim=(), keepdim=False: jnp.max(x, _axes(x, dim), keepdims=keepdim),
             host=True, cost="stream", shape=_rule(_same), save=("self", "out"), backward=_extremum_backward)
amin = defop("amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor",
             lambda x, dim=(), keepdim=False: jnp.min(x, _axes(x, dim), keepdims=keepdim),
             host=True, cost="stream", shape=_rule(_same), save=("self", "out"), backward=_extremum_backward)
max = defop("max(Tensor self) -> Tensor", jnp.max, host=True, cost="stream", shape=_rule(_same), save=("self", "out"),
            backward=lambda g, x, out: _extremum_backward(g, x, None, False, out))
min = defop("min(Tensor self) -> Tensor", jnp.min, host=True, cost="stream", shape=_rule(_same), save=("self", "out"),
            backward=lambda g, x, out: _extremum_backward(g, x, None, False, out))


def _with_index(fn_name: str, arg_name: str) -> Callable:
    def kernel(x: Any, dim: int, keepdim: bool = False) -> tuple:
        fn, arg = getattr(jnp, fn_name), getattr(jnp, arg_name)  # numpy's on the host
        d = wrap_dim(dim, x.ndim)
        return fn(x, d, keepdims=keepdim), arg(x, d, keepdims=keepdim).astype(DEFAULT_INT)
    return kernel


def _with_index_rule(x: Any, dim: int, keepdim: bool = False) -> tuple[TensorMeta, TensorMeta]:
    shape = reduced_shape(tuple(x.shape), (wrap_dim(dim, x.ndim),), keepdim)
    return TensorMeta(shape, x.dtype), TensorMeta(shape, DEFAULT_INT)


def _select_backward(g: tuple, x: Any, dim: int, keepdim: bool, out: tuple) -> Any:
    """Only the returned index receives the gradient."""
    d = (wrap_dim(dim, x.ndim),)
    idx, gv = _keep(out[1], x.shape, d, keepdim), _keep(g[0], x.shape, d, keepdim)
    return scatter_add(zeros(list(x.shape), dtype=gv.dtype), d[0], idx, gv)


_TWO = "(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
max_dim = defop("max.dim" + _TWO, _with_index("max", "argmax"), host=True, cost="stream", shape=_with_index_rule,
                save=("out[1]",), backward=_select_backward)
min_dim = defop("min.dim" + _TWO, _with_index("min", "argmin"), host=True, cost="stream", shape=_with_index_rule,
                save=("out[1]",), backward=_select_backward)


def _arg(name: str) -> Callable:
    def kernel(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
        fn = getattr(jnp, name)  # numpy's on the host
        if dim is None:
            out = fn(x.reshape(-1), 0)
            return out.reshape((1,) * x.ndim if keepdim else ()).astype(DEFAULT_INT)
        return fn(x, wrap_dim(dim, x.ndim), keepdims=keepdim).astype(DEFAULT_INT)
    return kernel


argmax = defop("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
               _arg("argmax"), host=True, cost="stream", shape=_rule(lambda d, out: DEFAULT_INT), backward=NONDIFF)
argmin = defop("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
               _arg("argmin"), host=True, cost="stream", shape=_rule(lambda d, out: DEFAULT_INT), backward=NONDIFF)
all = defop("all(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
            lambda x, dim=None, keepdim=False: jnp.all(x, _axes(x, dim), keepdims=keepdim),
            host=True, cost="stream", shape=_rule(lambda d, out: BOOL), backward=NONDIFF)
any = defop("any(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
            lambda x, dim=None, keepdim=False: jnp.any(x, _axes(x, dim), keepdims=keepdim),
            host=True, cost="stream", shape=_rule(lambda d, out: BOOL), backward=NONDIFF)
