"""Neural-network ops with fused, numerically stable kernels and hand-written backward formulas:
softmax, log_softmax, gelu, layer_norm, rms_norm, cross_entropy, mse_loss, linear.

Each kernel is one JAX function (max-subtracted exponentials, statistics in at least float32)
so XLA fuses it; each formula is written in our ops, so double backward works.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from autograd_compile import runtime_checks
from autograd_compile.tracing.fake import TensorMeta

from ._bridge import vjp_formula
from ._defop import defop, holomorphic, reduce_grad
from ._dtypes import FLOAT32, as_dtype, category, is_float, promote, to_float
from ._host import check_values
from ._shapes import broadcast_shapes, numel, shapes_equal, wrap_dim
from .elementwise import wants
from .linalg import _cannot_multiply, _same_dtype, matmul, matmul_grads
from . import _xp
from ._xp import jnp, lax, special

_REDUCTIONS = ("none", "mean", "sum")


# -- softmax / log_softmax over one dim ---------------------------------------------------------
def _softmax_rule(x: Any, dim: int, dtype: Any = None) -> TensorMeta:
    wrap_dim(dim, x.ndim)
    return TensorMeta(tuple(x.shape), as_dtype(dtype) or to_float(x.dtype))


def _shifted(x: Any, dim: int, dtype: Any) -> tuple[Any, int]:
    """x minus its max along dim (so exp cannot overflow), in the output dtype."""
    d = wrap_dim(dim, x.ndim)
    x = x.astype(as_dtype(dtype) or to_float(x.dtype))
    return x - lax.stop_gradient(jnp.max(x, d, keepdims=True)), d


def _half(dtype: Any) -> bool:
    """bfloat16 / float16: PyTorch's CPU kernels compute these in float32, round once."""
    return dtype.itemsize == 2 and dtype.kind in "fV"


def _softmax(x: Any, dim: int, dtype: Any = None) -> Any:
    out = as_dtype(dtype) or to_float(x.dtype)
    z, d = _shifted(x, dim, np.float32 if _half(np.dtype(out)) else dtype)
    e = jnp.exp(z)
    return (e / jnp.sum(e, d, keepdims=True)).astype(out)


def _log_softmax(x: Any, dim: int, dtype: Any = None) -> Any:
    out = as_dtype(dtype) or to_float(x.dtype)
    z, d = _shifted(x, dim, np.float32 if _half(np.dtype(out)) else dtype)
    return (z - jnp.log(jnp.sum(jnp.exp(z), d, keepdims=True))).astype(out)


softmax = defop("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax,
                host=True, shape=_softmax_rule, save=("out",),
                backward=lambda g, x, dim, dtype, out: out * (g - (g * out).sum(dim, keepdim=True)))
log_softmax = defop("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                    _log_softmax, host=True, shape=_softmax_rule, save=("out",),
                    backward=lambda g, x, dim, dtype, out: g - out.exp() * g.sum(dim, keepdim=True))


# -- gelu -------------------------------------------------------------------------------------
_K = math.sqrt(2 / math.pi)  # tanh approximation: 0.5 x (1 + tanh(K (x + C x^3)))
_C = 0.044715


def _gelu_rule(x: Any, *, approximate: str = "none") -> TensorMeta:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    return TensorMeta(tuple(x.shape), to_float(x.dtype))


def _gelu(x: Any, *, approximate: str = "none") -> Any:
    out = to_float(x.dtype)
    x = x.astype(np.float32 if _half(np.dtype(out)) else out)  # (one rounding, as torch)
    if approximate == "tanh":
        y = 0.5 * x * (1 + jnp.tanh(_K * (x + _C * x * x * x)))
    else:
        y = 0.5 * x * (1 + special.erf(x / math.sqrt(2)))
    return y.astype(out)


def _gelu_backward(g: Any, x: Any, approximate: str, out: Any) -> Any:
    if approximate == "tanh":
        t = ((x + x * x * x * _C) * _K).tanh()
        inner = (x * x * (3 * _C) + 1) * _K
        return g * ((t + 1) * 0.5 + x * (1 - t * t) * inner * 0.5)
    cdf = ((x * (1 / math.sqrt(2))).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


gelu = defop("gelu(Tensor self, *, str approximate='none') -> Tensor", _gelu, host=True, shape=_gelu_rule,
             check=True, save=("self",), backward=_gelu_backward)


# -- layer_norm over the trailing normalized_shape dims -----------------------------------------
def _ln_dims(x: Any, shape: Any) -> tuple[int, ...]:
    k, tail = len(shape), tuple(x.shape[x.ndim - len(shape):])
    if k == 0 or k > x.ndim or tail != tuple(shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(x.shape)}")
    return tuple(range(x.ndim - k, x.ndim))


def _ln_rule(x: Any, shape: Any, w: Any = None, b: Any = None, eps: float = 1e-5) -> TensorMeta:
    _ln_dims(x, shape)
    for name, p in (("weight", w), ("bias", b)):
        if p is None:
            continue
        if not shapes_equal(p.shape, shape):
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(p.shape)} and normalized_shape = "
                               f"{list(shape)}")
        if p.dtype != x.dtype and not _mixed(x, p):
            raise RuntimeError(f"expected {name} to have the input's dtype {x.dtype.name}, "
                               f"got {p.dtype.name}")
    return TensorMeta(tuple(x.shape), x.dtype)


_HALF = frozenset(map(np.dtype, (jnp.bfloat16, jnp.float16)))


def _mixed(x: Any, p: Any) -> bool:
    """PyTorch's mixed types of a norm: a half-precision input with float32 parameters
    (a bf16 activation through a float32 model's norm layer); the result is the input's."""
    return x.dtype in _HALF and p.dtype == FLOAT32


def _layer_norm(x: Any, shape: Any, w: Any = None, b: Any = None, eps: float = 1e-5) -> Any:
    dims = _ln_dims(x, shape)
    ft = promote(x.dtype, FLOAT32)  # statistics and the affine in >= float32, one rounding
    xf = x.astype(ft)
    xc = xf - jnp.mean(xf, dims, keepdims=True)
    y = xc * lax.rsqrt(jnp.mean(xc * xc, dims, keepdims=True) + eps)
    y = y if w is None else y * w.astype(ft)
    return (y if b is None else y + b.astype(ft)).astype(x.dtype)


def _layer_norm_host(x: Any, shape: Any, w: Any = None, b: Any = None, eps: float = 1e-5
                     ) -> Any:
    """:func:`_layer_norm` on numpy, in place on one centred buffer, the row sums by BLAS
    (29 against 43 us on 44 rows of 32, 121 against 198 on 512 rows of 64); float32 and
    float64 (their statistics in their own dtype, as the kernel's)."""
    dims = _ln_dims(x, shape)
    n = numel(tuple(x.shape[d] for d in dims))
    if x.dtype not in _HOST_FLOATS or x.size == 0:
        raise _xp.HostUnsupported("layer_norm of this dtype or size")
    rows = x.reshape(-1, n)
    one = x.dtype.type(n)
    xc = rows - _xp._row_sums(rows, True) / one
    rstd = _xp._row_sums(np.square(xc), True)
    rstd /= one
    rstd += x.dtype.type(eps)
    xc /= np.sqrt(rstd, out=rstd)
    if w is not None:
        xc *= w.reshape(-1)
    if b is not None:
        xc += b.reshape(-1)
    return xc.reshape(x.shape)


_HOST_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _ln_grad(g: Any, x: Any, shape: Any, w: Any = None, eps: float = 1e-5) -> tuple:
    """(d input, d weight, d bias) in one kernel, as PyTorch's native_layer_norm_backward;
    the statistics recomputed from x (cheap next to saving two more tensors), in >= float32."""
    dims = _ln_dims(x, shape)
    lead = tuple(range(x.ndim - len(dims)))
    ft = promote(x.dtype, FLOAT32)
    xf, gf = x.astype(ft), g.astype(ft)
    xc = xf - jnp.mean(xf, dims, keepdims=True)
    rstd = lax.rsqrt(jnp.mean(xc * xc, dims, keepdims=True) + eps)
    xhat = xc * rstd
    gh = gf if w is None else gf * w.astype(ft)
    gx = rstd * (gh - jnp.mean(gh, dims, keepdims=True)
                 - xhat * jnp.mean(gh * xhat, dims, keepdims=True))
    pt = x.dtype if w is None else w.dtype  # (mixed types: the parameters' own dtype)
    return (gx.astype(x.dtype), jnp.sum(gf * xhat, lead).astype(pt), jnp.sum(gf, lead).astype(pt))


def _ln_grad_rule(g: Any, x: Any, shape: Any, w: Any = None, eps: float = 1e-5) -> tuple:
    tail = tuple(x.shape[x.ndim - len(shape):])
    pt = x.dtype if w is None else w.dtype
    return (TensorMeta(tuple(x.shape), x.dtype), TensorMeta(tail, pt), TensorMeta(tail, pt))


_LN_BACKWARD = ("layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, "
                "Tensor? weight=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)")
# differentiable itself (create_graph): its backward is jax.vjp of the same kernel
layer_norm_backward = defop(_LN_BACKWARD, _ln_grad, host=True, shape=_ln_grad_rule,
                            backward=vjp_formula(_LN_BACKWARD, _ln_grad,
                                                 ("grad_out", "input", "weight")))


def _layer_norm_backward(g: Any, x: Any, shape: Any, w: Any, b: Any, eps: float,
                         out: Any) -> tuple:
    """One op, :data:`layer_norm_backward` (under create_graph too: it has a derivative)."""
    if not (wants(x) or wants(w)):  # only the bias: x was not saved
        return None, None, reduce_grad(g, b) if wants(b) else None
    # (w is saved only where the input's gradient reads it: gw = sum(g * xhat) does not)
    gx, gw, gb = layer_norm_backward(g, x, shape, w if wants(x) else None, eps)
    return gx if wants(x) else None, gw if wants(w) else None, gb if wants(b) else None


_NORM_SAVES = {"input": ("input", "weight"), "weight": ("input",)}  # bias: nothing
layer_norm = defop("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                   "Tensor? bias=None, float eps=1e-05) -> Tensor", _layer_norm,
                   host=_layer_norm_host, shape=_ln_rule,
                   check=True, save=_NORM_SAVES, backward=_layer_norm_backward)


# -- rms_norm: layer_norm without the mean (x / sqrt(mean(x^2) + eps) * weight) ------------------
def _rms_rule(x: Any, shape: Any, w: Any = None, eps: float | None = None) -> TensorMeta:
    return _ln_rule(x, shape, w)


def _rms_eps(x: Any, eps: float | None) -> float:
    # PyTorch's default: the machine epsilon of the input's dtype
    return float(jnp.finfo(x.dtype).eps) if eps is None else eps


def _rms_norm(x: Any, shape: Any, w: Any = None, eps: float | None = None) -> Any:
    dims = _ln_dims(x, shape)
    xf = x.astype(promote(x.dtype, FLOAT32))  # statistics in >= float32
    ms = jnp.mean(jnp.square(xf), dims, keepdims=True)
    y = xf * lax.rsqrt(ms + _rms_eps(x, eps))  # (the weight in >= float32: one rounding)
    return (y if w is None else y * w.astype(xf.dtype)).astype(x.dtype)


def _rms_norm_backward(g: Any, x: Any, shape: Any, w: Any, eps: float | None, out: Any) -> tuple:
    dims = list(_ln_dims(x, shape))
    rstd = ((x * x).mean(dims, keepdim=True) + _rms_eps(x, eps)).rsqrt()
    xhat = x * rstd
    gw = reduce_grad(g * xhat, w) if wants(w) else None
    if not wants(x):
        return None, gw
    gh = g if w is None else g * w
    gx = rstd * (gh - xhat * (gh * xhat).mean(dims, keepdim=True))
    return (gx.to(x.dtype) if gx.dtype != x.dtype else gx), gw  # (mixed types: x's dtype)


rms_norm = defop("rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                 "float? eps=None) -> Tensor", _rms_norm, host=True, shape=_rms_rule, check=True,
                 save=_NORM_SAVES, backward=_rms_norm_backward)


# -- cross_entropy on class indices -------------------------------------------------------------
def _ce_rule(x: Any, t: Any, w: Any = None, reduction: str = "mean", ignore_index: int = -100,
             label_smoothing: float = 0.0) -> TensorMeta:
    if x.ndim == 0:
        raise RuntimeError("cross_entropy: input must have at least 1 dimension (classes)")
    if category(t.dtype) != 1:
        raise RuntimeError(f"cross_entropy: expected target of class indices with an integer "
                           f"dtype (int64), got {t.dtype.name}")
    want = () if x.ndim == 1 else (x.shape[0],) + tuple(x.shape[2:])
    if tuple(t.shape) != want:
        raise RuntimeError(f"Expected input batch_size ({x.shape[0] if x.ndim > 1 else 1}) to "
                           f"match target batch_size ({t.shape[0] if t.ndim else 1}): input "
                           f"{list(x.shape)} needs target {list(want)}, got {list(t.shape)}")
    classes = x.shape[1 if x.ndim > 1 else 0]
    if w is not None and tuple(w.shape) != (classes,):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes "
                           f"or no classes but got weight tensor of shape: {list(w.shape)}")
    if reduction not in _REDUCTIONS:
        raise RuntimeError(f"{reduction} is not a valid value for reduction")
    if not is_float(x.dtype):
        raise RuntimeError(f"cross_entropy: expected floating-point input, got {x.dtype.name}")
    return TensorMeta(tuple(t.shape) if reduction == "none" else (), x.dtype)


def _check_targets(x: Any, t: Any, w: Any = None, reduction: str = "mean",
                   ignore_index: int = -100, label_smoothing: float = 0.0) -> None:
    """jax would clamp an out-of-range class silently: checked on the host, or inside a
    compiled program (runtime_checks)."""
    if not t.size:
        return
    classes = x.shape[1 if x.ndim > 1 else 0]
    error = lambda i: IndexError(f"Target {i} is out of bounds (classes: {classes}).")  # noqa: E731
    if isinstance(t, jax.core.Tracer):
        if runtime_checks.active():
            runtime_checks.enforce(*runtime_checks.first_bad(
                t, (t != ignore_index) & ((t < 0) | (t >= classes))), error)
        return
    a = check_values(t)  # a global array: this process's shards
    bad = a[(a != ignore_index) & ((a < 0) | (a >= classes))]
    if bad.size:
        raise error(bad.flat[0])


def _cross_entropy(x: Any, t: Any, w: Any = None, reduction: str = "mean",
                   ignore_index: int = -100, label_smoothing: float = 0.0) -> Any:
    c = 1 if x.ndim > 1 else 0
    logp = _log_softmax(x, c)
    valid = t != ignore_index
    ts = jnp.where(valid, t, 0)
    picked = jnp.take_along_axis(logp, jnp.expand_dims(ts, c), axis=c).squeeze(c)
    wt = valid.astype(x.dtype) if w is None else w[ts] * valid
    # label_smoothing may be a traced (lifted) scalar: no Python branch on its value
    wc = 1 if w is None else w.reshape((-1,) + (1,) * (x.ndim - c - 1))
    smooth = -jnp.sum(logp * wc, c) * valid
    # a -inf logit (NT-Xent's masked diagonal) is -inf in logp: 0 * inf must not reach the
    # loss, neither from the smoothing term when it is off nor from an ignored row
    smooth = jnp.where(label_smoothing == 0, jnp.zeros((), x.dtype),
                       smooth * (label_smoothing / x.shape[c]))
    loss = (1 - label_smoothing) * (jnp.where(valid, -picked, jnp.zeros((), x.dtype)) * wt) \
        + smooth
    if reduction == "none":
        return loss
    return jnp.sum(loss) if reduction == "sum" else jnp.sum(loss) / jnp.sum(wt)


def _ce_grad(g: Any, x: Any, t: Any, w: Any = None, reduction: str = "mean",
             ignore_index: int = -100, label_smoothing: float = 0.0) -> Any:
    """d loss / d x in one kernel (PyTorch's nll_loss_backward and log_softmax_backward):
    d loss / d logp, then through log_softmax: dx = dlogp - softmax * sum(dlogp)."""
    c = 1 if x.ndim > 1 else 0
    valid = t != ignore_index
    ts = jnp.where(valid, t, 0)
    wt = valid.astype(x.dtype) if w is None else w[ts] * valid
    gs = g if reduction == "none" else jnp.broadcast_to(g, t.shape)
    if reduction == "mean":  # every target ignored: zero gradients, as PyTorch (not 0 / 0)
        total = jnp.sum(wt)
        gs = gs / jnp.where(total == 0, jnp.ones((), x.dtype), total)
    classes = jnp.arange(x.shape[c]).reshape((-1,) + (1,) * (x.ndim - c - 1))
    picked = jnp.expand_dims(gs * wt * -(1 - label_smoothing), c)
    dlogp = jnp.where(jnp.expand_dims(ts, c) == classes, picked, jnp.zeros((), x.dtype))
    wc = 1 if w is None else w.reshape((-1,) + (1,) * (x.ndim - c - 1))  # smoothing: it may
    dlogp = dlogp - jnp.expand_dims(gs * valid, c) * wc * (label_smoothing / x.shape[c])
    return (dlogp - _softmax(x, c) * jnp.sum(dlogp, c, keepdims=True)).astype(x.dtype)


_CE_BACKWARD = ("cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, "
                "Tensor? weight=None, str reduction='mean', int ignore_index=-100, "
                "float label_smoothing=0.0) -> Tensor")
# differentiable itself (create_graph): its backward is jax.vjp of the same kernel
cross_entropy_backward = defop(
    _CE_BACKWARD, _ce_grad, host=True, shape=lambda g, x, *a, **k: TensorMeta(tuple(x.shape), x.dtype),
    backward=vjp_formula(_CE_BACKWARD, _ce_grad, ("grad_output", "self")))


def _ce_backward(g: Any, x: Any, t: Any, w: Any, reduction: str, ignore_index: int,
                 ls: float, out: Any) -> tuple:
    """One op, :data:`cross_entropy_backward` (under create_graph too: it has a derivative)."""
    if w is not None and w.requires_grad:
        raise RuntimeError("the derivative for 'weight' of cross_entropy is not implemented")
    return cross_entropy_backward(g, x, t, w, reduction, ignore_index, ls), None, None


cross_entropy = defop("cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "
                      "str reduction='mean', int ignore_index=-100, float label_smoothing=0.0) "
                      "-> Tensor", _cross_entropy, host=True, shape=_ce_rule, check=True,
                      backward=_ce_backward, pre=_check_targets)


# -- mse_loss, linear -------------------------------------------------------------------------
def _mse_rule(x: Any, t: Any, reduction: str = "mean") -> TensorMeta:
    if reduction not in _REDUCTIONS:
        raise RuntimeError(f"{reduction} is not a valid value for reduction")
    shape = broadcast_shapes(tuple(x.shape), tuple(t.shape))
    return TensorMeta(shape if reduction == "none" else (), promote(x.dtype, t.dtype))


def _mse(x: Any, t: Any, reduction: str = "mean") -> Any:
    d = jnp.square(x - t)
    return d if reduction == "none" else jnp.sum(d) if reduction == "sum" else jnp.mean(d)


def _mse_backward(g: Any, x: Any, t: Any, reduction: str, out: Any) -> tuple:
    diff = x - t
    gd = diff * ((g / numel(diff.shape) if reduction == "mean" else g) * 2)
    return reduce_grad(gd, x), reduce_grad(-gd, t) if wants(t) else None


mse_loss = defop("mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor", _mse,
                 host=True, shape=_mse_rule, check=True, backward=_mse_backward)


# -- linear: one op (one kernel, one autograd node) rather than transpose + matmul + add -----
def _linear_rule(x: Any, w: Any, b: Any = None) -> TensorMeta:
    if x.ndim == 0 or w.ndim not in (1, 2):
        raise RuntimeError(f"linear: expected an input of at least 1-D and a 1-D or 2-D weight, "
                           f"got {x.ndim}-D and {w.ndim}-D")
    _same_dtype(x, w)
    sx, sw = tuple(x.shape), tuple(w.shape)
    if sx[-1] != sw[-1]:  # as matrices: x (rows x in) times w.T (in x out)
        raise _cannot_multiply(sx if x.ndim > 1 else (1,) + sx,
                               sw[::-1] if w.ndim == 2 else sw + (1,))
    out = TensorMeta(sx[:-1] + sw[:-1], x.dtype)
    if b is not None:
        if b.dtype != x.dtype:
            raise RuntimeError(f"linear: expected bias to have the input's dtype {x.dtype.name}, "
                               f"got {b.dtype.name}")
        if not shapes_equal(broadcast_shapes(tuple(out.shape), tuple(b.shape)), out.shape):
            raise RuntimeError(f"linear: bias of shape {list(b.shape)} does not broadcast to "
                               f"the output shape {list(out.shape)}")
    return out


def _linear(x: Any, w: Any, b: Any = None) -> Any:
    if b is not None and x.dtype.itemsize == 2 and x.dtype.kind in "fV":
        # bfloat16 / float16 (autocast): the bias added to the float32 accumulator, one
        # rounding, as PyTorch's addmm (x @ w.T rounded, then + b, rounds twice)
        out = jnp.matmul(x, w.T, preferred_element_type=np.float32)
        return (out + b.astype(np.float32)).astype(x.dtype)
    out = jnp.matmul(x, w.T)  # .T of a 1-D weight is itself: x @ w
    return out if b is None else out + b


def _linear_backward(g: Any, x: Any, w: Any, b: Any, out: Any) -> tuple:
    gb = reduce_grad(g, b) if wants(b) else None
    if w.ndim == 1 or x.ndim == 1:  # vector cases: matmul's rules
        gx, gwt = matmul_grads(g, x, w.mT if w.ndim == 2 else w, wants(x), wants(w))
        return gx, (gwt.mT if gwt is not None and w.ndim == 2 else gwt), gb
    gx = matmul(g, w) if wants(x) else None  # (..., out) @ (out, in)
    gw = None
    if wants(w):  # batch dims folded into one: a single (out, N) @ (N, in) product
        gw = matmul(g.reshape(-1, g.shape[-1]).mT, x.reshape(-1, x.shape[-1]))
    return gx, gw, gb


linear = defop("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", _linear,
               host=True, shape=_linear_rule, check=True, backward=holomorphic(_linear_backward),
               save={"input": ("weight",), "weight": ("input",)})


# -- batch_norm over every dim but the channels (dim 1) ---------------------------------------
def _bn_rule(x: Any, w: Any, b: Any, rm: Any, rv: Any, training: bool, momentum: float,
             eps: float) -> tuple:
    if x.ndim < 2:
        raise RuntimeError(f"batch_norm: expected an input of at least 2 dims (N, C, ...), got "
                           f"{list(x.shape)}")
    c = x.shape[1]
    for name, t in (("weight", w), ("bias", b), ("running_mean", rm), ("running_var", rv)):
        if t is not None and not shapes_equal(t.shape, (c,)):
            raise RuntimeError(f"batch_norm: expected {name} of shape [{c}] for an input of "
                               f"shape {list(x.shape)}, got {list(t.shape)}")
    if not training and (rm is None or rv is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    stat = TensorMeta((c,), promote(x.dtype, FLOAT32))
    return TensorMeta(tuple(x.shape), x.dtype), stat, stat


def _bn_dims(x: Any) -> tuple[int, ...]:
    return (0,) + tuple(range(2, x.ndim))


def _batch_norm(x: Any, w: Any, b: Any, rm: Any, rv: Any, training: bool, momentum: float,
                eps: float) -> tuple:
    """Normalised output and the statistics used: the batch's (biased var) when training."""
    xf = x.astype(promote(x.dtype, FLOAT32))  # statistics in >= float32
    c = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        mean = jnp.mean(xf, _bn_dims(x))
        var = jnp.mean(jnp.square(xf - mean.reshape(c)), _bn_dims(x))
    else:
        mean, var = rm.astype(xf.dtype), rv.astype(xf.dtype)
    y = (xf - mean.reshape(c)) * jax.lax.rsqrt(var.reshape(c) + eps)
    y = y if w is None else y * w.reshape(c).astype(xf.dtype)  # the affine in >= float32 too:
    y = y if b is None else y + b.reshape(c).astype(xf.dtype)  # one rounding to x's dtype
    return y.astype(x.dtype), mean, var


def _bn_backward(g: tuple, x: Any, w: Any, b: Any, rm: Any, rv: Any, training: bool,
                 momentum: float, eps: float, out: tuple) -> tuple:
    """From the saved statistics (outputs 1, 2), never the running buffers (updated in place)."""
    go, gmean, gvar = g
    dims = list(_bn_dims(x))
    c = [1, -1] + [1] * (x.ndim - 2)
    mean, var = out[1].to(x.dtype).reshape(c), out[2].to(x.dtype).reshape(c)
    rstd = (var + eps).rsqrt()
    xc = x - mean
    xhat = xc * rstd
    gh = go if w is None else go * w.reshape(c)
    if training:
        n = numel(x.shape) // x.shape[1]
        gx = rstd * (gh - gh.mean(dims, keepdim=True)
                     - xhat * (gh * xhat).mean(dims, keepdim=True))
        gx = gx + gmean.to(x.dtype).reshape(c) / n + xc * (gvar.to(x.dtype).reshape(c) * 2) / n
    else:
        gx = gh * rstd
    gw = reduce_grad((go * xhat).sum(dims), w) if wants(w) else None
    gb = reduce_grad(go.sum(dims), b) if wants(b) else None
    return gx.to(x.dtype) if gx.dtype != x.dtype else gx, gw, gb, None, None


batch_norm = defop("batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                   "Tensor? running_var, bool training, float momentum, float eps) "
                   "-> (Tensor, Tensor, Tensor)", _batch_norm, shape=_bn_rule, check=True,
                   save=("input", "weight", "out[1]", "out[2]"), backward=_bn_backward)
