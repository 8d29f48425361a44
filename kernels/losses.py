"""Losses and activations: nll_loss, l1_loss, smooth_l1_loss, binary_cross_entropy (plain and
with logits), silu, softplus; and the padding op (constant, reflect, replicate, circular).

Pointwise losses share one builder: an elementwise kernel, its derivative in our ops, and
PyTorch's ``reduction`` ("none" | "mean" | "sum"). Kernels are numerically stable (logits
through softplus, logs clamped at -100 as PyTorch's binary_cross_entropy).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, reduce_grad
from ._dtypes import promote, to_float
from ._host import check_values
from ._shapes import broadcast_shapes, numel, shapes_equal
from .conv import linear_pair
from .elementwise import ne, wants, where
from .factories import zeros_like
from .indexing import index, scatter_add
from .nn import _REDUCTIONS, _ce_rule, _check_targets


def _reduce(loss: Any, reduction: str) -> Any:
    return loss if reduction == "none" else jnp.sum(loss) if reduction == "sum" else \
        jnp.mean(loss)


def _spread(g: Any, shape: tuple, reduction: str) -> Any:
    """The gradient of the reduced loss as a gradient per element (broadcast, / n for mean)."""
    if reduction == "none":
        return g
    g = g.expand(list(shape))
    return g / numel(shape) if reduction == "mean" else g


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise RuntimeError(f"{reduction} is not a valid value for reduction")


# -- pointwise losses of (input, target) --------------------------------------------------------
def _pair_rule(x: Any, t: Any, *rest: Any, reduction: str = "mean", **kw: Any) -> TensorMeta:
    _check_reduction(reduction)
    for w in rest:
        if w is not None and hasattr(w, "shape"):
            broadcast_shapes(tuple(x.shape), tuple(w.shape))
    shape = broadcast_shapes(tuple(x.shape), tuple(t.shape))
    return TensorMeta(shape if reduction == "none" else (), promote(x.dtype, t.dtype))


def _l1_backward(g: Any, x: Any, t: Any, reduction: str, out: Any) -> tuple:
    d = _spread(g, broadcast_shapes(tuple(x.shape), tuple(t.shape)), reduction) * (x - t).sign()
    return reduce_grad(d, x), reduce_grad(-d, t) if wants(t) else None


l1_loss = defop("l1_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor",
                lambda x, t, reduction="mean": _reduce(jnp.abs(x - t), reduction),
                shape=lambda x, t, reduction="mean": _pair_rule(x, t, reduction=reduction),
                check=True, backward=_l1_backward)


def _smooth_l1(x: Any, t: Any, reduction: str = "mean", beta: float = 1.0) -> Any:
    d = jnp.abs(x - t)
    safe = jnp.where(beta > 0, beta, 1.0)  # beta = 0 is l1 (no division by zero)
    return _reduce(jnp.where(d < beta, 0.5 * d * d / safe, d - 0.5 * beta), reduction)


def _smooth_l1_backward(g: Any, x: Any, t: Any, reduction: str, beta: float, out: Any) -> tuple:
    diff = x - t
    inside = diff.abs() < beta
    slope = where(inside, diff / (beta if beta > 0 else 1.0), diff.sign())
    d = _spread(g, tuple(slope.shape), reduction) * slope
    return reduce_grad(d, x), reduce_grad(-d, t) if wants(t) else None


smooth_l1_loss = defop("smooth_l1_loss(Tensor self, Tensor target, str reduction='mean', "
                       "float beta=1.0) -> Tensor", _smooth_l1, check=True,
                       shape=lambda x, t, reduction="mean", beta=1.0: _pair_rule(
                           x, t, reduction=reduction), backward=_smooth_l1_backward)


# -- binary cross entropy on probabilities and on logits ----------------------------------------
def _bce_rule(x: Any, t: Any, w: Any = None, reduction: str = "mean") -> TensorMeta:
    if not shapes_equal(x.shape, t.shape):
        raise RuntimeError(f"binary_cross_entropy: target of size {list(t.shape)} must match "
                           f"the input size {list(x.shape)}")
    return _pair_rule(x, t, w, reduction=reduction)


def _check_probs(x: Any, *rest: Any, **kw: Any) -> None:
    """Eager only: PyTorch checks that the input holds probabilities."""
    if isinstance(x, jax.core.Tracer) or not x.size:
        return
    a = check_values(x)  # a global array: this process's shards
    if ((a < 0) | (a > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")


def _bce(x: Any, t: Any, w: Any = None, reduction: str = "mean") -> Any:
    loss = -(t * jnp.maximum(jnp.log(x), -100.0) + (1 - t) * jnp.maximum(jnp.log1p(-x), -100.0))
    return _reduce(loss if w is None else loss * w, reduction)


def _bce_backward(g: Any, x: Any, t: Any, w: Any, reduction: str, out: Any) -> tuple:
    gs = _spread(g, tuple(x.shape), reduction)
    log_x, log_1mx = x.log().clamp_min(-100.0), (1 - x).log().clamp_min(-100.0)
    gw = reduce_grad(gs * -(t * log_x + (1 - t) * log_1mx), w) if wants(w) else None
    gs = gs if w is None else gs * w
    gx = gs * (x - t) / ((1 - x) * x).clamp_min(1e-12)  # PyTorch's EPSILON
    gt = reduce_grad(gs * (log_1mx - log_x), t) if wants(t) else None
    return gx, gt, gw


binary_cross_entropy = defop("binary_cross_entropy(Tensor self, Tensor target, "
                             "Tensor? weight=None, str reduction='mean') -> Tensor", _bce,
                             shape=_bce_rule, check=True, pre=_check_probs,
                             backward=_bce_backward)


def _bce_logits(x: Any, t: Any, w: Any = None, pw: Any = None, reduction: str = "mean") -> Any:
    """(1 - t) x + (1 + (pw - 1) t) softplus(-x): no exp of a large positive number."""
    lw = 1.0 if pw is None else 1 + (pw - 1) * t
    loss = (1 - t) * x + lw * jax.nn.softplus(-x)
    return _reduce(loss if w is None else loss * w, reduction)


def _bce_logits_backward(g: Any, x: Any, t: Any, w: Any, pw: Any, reduction: str,
                         out: Any) -> tuple:
    gs = _spread(g, broadcast_shapes(tuple(x.shape), tuple(t.shape)), reduction)
    sp = softplus(-x)  # -log(sigmoid(x))
    lw = 1 if pw is None else (pw - 1) * t + 1
    gw = reduce_grad(gs * ((1 - t) * x + lw * sp), w) if wants(w) else None
    gs = gs if w is None else gs * w
    gx = gs * ((1 - t) - lw * (-x).sigmoid())
    gt = reduce_grad(gs * (-x + (0 if pw is None else (pw - 1) * sp)), t) if wants(t) else None
    gpw = reduce_grad(gs * t * sp, pw) if wants(pw) else None
    return reduce_grad(gx, x), gt, gw, gpw


binary_cross_entropy_with_logits = defop(
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
    "Tensor? pos_weight=None, str reduction='mean') -> Tensor", _bce_logits, check=True,
    shape=lambda x, t, w=None, pw=None, reduction="mean": _bce_rule(x, t, w, reduction),
    backward=_bce_logits_backward)


# -- nll_loss on log-probabilities, class-index targets ----------------------------------------
def _nll(x: Any, t: Any, w: Any = None, reduction: str = "mean", ignore_index: int = -100) -> Any:
    c = 1 if x.ndim > 1 else 0
    valid = t != ignore_index
    ts = jnp.where(valid, t, 0)
    picked = jnp.take_along_axis(x, jnp.expand_dims(ts, c), axis=c).squeeze(c)
    wt = valid.astype(x.dtype) if w is None else w[ts] * valid
    loss = -picked * wt
    if reduction == "none":
        return loss
    return jnp.sum(loss) if reduction == "sum" else jnp.sum(loss) / jnp.sum(wt)


def _nll_backward(g: Any, x: Any, t: Any, w: Any, reduction: str, ignore_index: int,
                  out: Any) -> tuple:
    if w is not None and w.requires_grad:
        raise RuntimeError("the derivative for 'weight' of nll_loss is not implemented")
    c = 1 if x.ndim > 1 else 0
    valid = ne(t, ignore_index)
    ts = where(valid, t, 0)
    wt = valid.to(x.dtype) if w is None else index(w, [ts]) * valid
    gs = g if reduction == "none" else g.expand(t.shape)
    gs = gs / wt.sum() if reduction == "mean" else gs
    return scatter_add(zeros_like(x), c, ts.unsqueeze(c), (gs * wt * -1).unsqueeze(c)), None, None


nll_loss = defop("nll_loss(Tensor self, Tensor target, Tensor? weight=None, "
                 "str reduction='mean', int ignore_index=-100) -> Tensor", _nll, check=True,
                 shape=lambda x, t, w=None, reduction="mean", ignore_index=-100: _ce_rule(
                     x, t, w, reduction, ignore_index),
                 pre=lambda x, t, w=None, reduction="mean", ignore_index=-100: _check_targets(
                     x, t, w, reduction, ignore_index), backward=_nll_backward)


# -- activations --------------------------------------------------------------------------------
def _float_rule(x: Any, *rest: Any) -> TensorMeta:
    return TensorMeta(tuple(x.shape), to_float(x.dtype))


def _silu_backward(g: Any, x: Any, out: Any) -> Any:
    s = x.sigmoid()
    return g * s * (x * (1 - s) + 1)


silu = defop("silu(Tensor self) -> Tensor", lambda x: jax.nn.silu(x.astype(to_float(x.dtype))),
             shape=_float_rule, save=("self",), backward=_silu_backward)


def _softplus(x: Any, beta: Any = 1, threshold: Any = 20) -> Any:
    """log(1 + exp(beta x)) / beta, linear above ``threshold`` (PyTorch's reversion)."""
    x = x.astype(to_float(x.dtype))
    bx = x * beta
    return jnp.where(bx > threshold, x, jnp.logaddexp(bx, 0.0) / beta)


def _softplus_backward(g: Any, x: Any, beta: Any, threshold: Any, out: Any) -> Any:
    bx = x * beta
    return where(bx > threshold, g, g * bx.sigmoid())


softplus = defop("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", _softplus,
                 shape=_float_rule, save=("self",), backward=_softplus_backward)


# -- padding ----------------------------------------------------------------------------------
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


def _pad_pairs(ndim: int, pad: Any) -> list:
    """PyTorch's flat pad list (last dim first) as (lo, hi) per dim, leading dims unpadded."""
    k = len(pad) // 2
    return [(0, 0)] * (ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]


def _pad_rule(x: Any, pad: Any, mode: str = "constant", value: Any = None) -> TensorMeta:
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, got {list(pad)}")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{x.ndim}")
    if mode not in _PAD_MODES:
        raise RuntimeError(f"Unrecognised padding mode {mode}")
    pairs = _pad_pairs(x.ndim, pad)
    for d, (lo, hi) in enumerate(pairs):
        if mode != "constant" and (lo < 0 or hi < 0):
            raise RuntimeError(f"pad: negative padding is only supported in constant mode, got "
                               f"{list(pad)}")
        if mode in ("reflect", "circular") and (lo > x.shape[d] - (mode == "reflect") or
                                                  hi > x.shape[d] - (mode == "reflect")):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {d} of input {list(x.shape)}")
    shape = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape, pairs))
    if any(s < 0 for s in shape):
        raise RuntimeError(f"The input size {list(x.shape)} with padding {list(pad)} gives a "
                           f"negative output size {list(shape)}")
    return TensorMeta(shape, x.dtype)


def _pad(x: Any, pad: Any, mode: str = "constant", value: Any = None) -> Any:
    pairs = _pad_pairs(x.ndim, pad)
    if mode == "constant":  # lax.pad also crops (negative padding), as PyTorch allows
        fill = jnp.asarray(0 if value is None else value, x.dtype)
        return jax.lax.pad(x, fill, [(lo, hi, 0) for lo, hi in pairs])
    return jnp.pad(x, pairs, mode=_PAD_MODES[mode])


pad, pad_backward = linear_pair("pad", "SymInt[] pad, str mode='constant', float? value=None",
                                _pad, _pad_rule, linear=lambda pad, mode, value: (pad, mode, None))
