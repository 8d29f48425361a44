"""Connectionist temporal classification (Graves et al. 2006): the negative log-likelihood of
each target sequence under per-frame class log-probabilities, summed over every alignment.

One op, whose forward is one ``jax.lax.scan`` over time (the alpha recursion in log space
over the blank-extended target ``l'`` = blank, t1, blank, t2, ..., blank), and whose backward
is a second op: ``jax.vjp`` of that scan, itself a reverse scan. Sequences shorter than the
batch's longest keep their alphas frozen after their last frame, so a batch is one program.

Log-space zeros are a large finite negative number (not -inf) so that the gradient of a
log-sum-exp over only impossible paths is 0, not NaN; such a total is reported as +inf, and
(unless ``zero_infinity``) that sample's frames get NaN gradients, as PyTorch's do.
The gradient is the exact gradient with respect to ``log_probs`` (PyTorch's own kernel adds
``exp(log_probs)``, a term that cancels when ``log_probs`` comes out of ``log_softmax``).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from autograd_compile.fake import TensorMeta

from ._defop import defop

_NEG = -1e30  # log(0): finite so that gradients through impossible paths are 0, not NaN
_IMPOSSIBLE = -1e29  # a log-likelihood below this means no alignment exists


def _extended(targets: Any, blank: int) -> Any:
    """[N, S] targets -> [N, 2S + 1] blank-extended labels."""
    n, s = targets.shape
    ext = jnp.full((n, 2 * s + 1), blank, dtype=targets.dtype)
    return ext.at[:, 1::2].set(targets)


def _lse3(a: Any, b: Any, c: Any) -> Any:
    m = jnp.maximum(jnp.maximum(a, b), c)
    return m + jnp.log(jnp.exp(a - m) + jnp.exp(b - m) + jnp.exp(c - m))


def _log_likelihood(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
                    blank: int) -> Any:
    """log p(target | log_probs) per sample, [N]: the alpha recursion as one scan."""
    lp = log_probs.astype(jnp.promote_types(log_probs.dtype, jnp.float32))
    ext = _extended(targets.astype(jnp.int32), blank)  # [N, L]
    n, width = ext.shape
    emit = jnp.take_along_axis(lp, jnp.broadcast_to(ext[None], (lp.shape[0], n, width)), 2)
    # a skip over a blank is allowed between two different labels
    prev2 = jnp.pad(ext, ((0, 0), (2, 0)), constant_values=-1)[:, :width]
    can_skip = (ext != blank) & (ext != prev2)
    start = jnp.arange(width) < 2
    alpha0 = jnp.where(start[None], emit[0], _NEG)

    def step(alpha: Any, xs: Any) -> tuple:
        e, t = xs
        a1 = jnp.pad(alpha, ((0, 0), (1, 0)), constant_values=_NEG)[:, :width]
        a2 = jnp.pad(alpha, ((0, 0), (2, 0)), constant_values=_NEG)[:, :width]
        new = _lse3(alpha, a1, jnp.where(can_skip, a2, _NEG)) + e
        new = jnp.maximum(new, _NEG)  # keep "impossible" from drifting towards -inf
        return jnp.where((t < input_lengths)[:, None], new, alpha), None

    times = jnp.arange(1, lp.shape[0])
    alpha, _ = jax.lax.scan(step, alpha0, (emit[1:], times))
    last = 2 * target_lengths.astype(jnp.int32)
    end = jnp.take_along_axis(alpha, last[:, None], 1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(last - 1, 0)[:, None], 1)[:, 0]
    before = jnp.where(last > 0, before, _NEG)
    m = jnp.maximum(end, before)
    return m + jnp.log(jnp.exp(end - m) + jnp.exp(before - m))


def _nll(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
         blank: int = 0, zero_infinity: bool = False) -> Any:
    ll = _log_likelihood(log_probs, targets, input_lengths, target_lengths, blank)
    impossible = ll < _IMPOSSIBLE
    nll = jnp.where(impossible, 0.0 if zero_infinity else jnp.inf, -ll)
    return nll.astype(log_probs.dtype)


def _rule(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
          blank: int = 0, zero_infinity: bool = False) -> TensorMeta:
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs of shape [T, N, C], got "
                           f"{list(log_probs.shape)}")
    t, n, c = log_probs.shape
    if targets.ndim != 2 or targets.shape[0] != n:
        raise RuntimeError(f"ctc_loss: expected padded targets of shape [{n}, S], got "
                           f"{list(targets.shape)}")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if tuple(lengths.shape) != (n,):
            raise RuntimeError(f"ctc_loss: expected {name} of shape [{n}], got "
                               f"{list(lengths.shape)}")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    return TensorMeta((n,), log_probs.dtype)


def _backward_kernel(g: Any, log_probs: Any, targets: Any, input_lengths: Any,
                     target_lengths: Any, blank: int = 0, zero_infinity: bool = False) -> Any:
    def ll(lp: Any) -> Any:
        return _log_likelihood(lp, targets, input_lengths, target_lengths, blank)
    value, vjp = jax.vjp(ll, log_probs.astype(jnp.promote_types(log_probs.dtype, jnp.float32)))
    impossible = value < _IMPOSSIBLE
    scale = jnp.where(impossible & zero_infinity, 0.0, -g)  # d nll = -d ll
    (grad,) = vjp(scale.astype(value.dtype))
    if not zero_infinity:  # PyTorch's: an impossible sample's frames get NaN, whatever g is
        frames = jnp.arange(grad.shape[0])[:, None] < input_lengths[None, :]
        grad = jnp.where((frames & impossible[None, :])[..., None], jnp.nan, grad)
    return grad.astype(log_probs.dtype)


ctc_loss_backward = defop(
    "ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, Tensor input_lengths, "
    "Tensor target_lengths, int blank=0, bool zero_infinity=False) -> Tensor", _backward_kernel,
    shape=lambda g, lp, *rest, **kw: TensorMeta(tuple(lp.shape), lp.dtype))


def _backward(g: Any, log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
              blank: int, zero_infinity: bool, out: Any) -> tuple:
    grad = ctc_loss_backward(g, log_probs, targets, input_lengths, target_lengths, blank,
                             zero_infinity)
    return grad, None, None, None


ctc_loss = defop("ctc_loss(Tensor log_probs, Tensor targets, Tensor input_lengths, "
                 "Tensor target_lengths, int blank=0, bool zero_infinity=False) -> Tensor",
                 _nll, shape=_rule, check=True, backward=_backward,
                 save=("log_probs", "targets", "input_lengths", "target_lengths"))
