"""Pure update rules, one per algorithm, each PyTorch's documented pseudo-code.

A rule maps ``(param, grad, state, hyper, opts) -> (new_param, new_state)`` on jax
arrays for ONE parameter; ``Optimizer.step`` traces it over every parameter inside
one jitted function. ``hyper`` holds runtime floats (``lr``, ``betas``, ...), ``opts``
the static options that change the program (``nesterov``, ``amsgrad``, ...).
Scalar bias corrections are computed in float64 (as PyTorch does in Python) and
cast to the parameter's dtype where they meet the arrays.

>>> import jax.numpy as jnp
>>> p, s = sgd(jnp.ones(2), jnp.ones(2), {}, {"lr": 0.5, "momentum": 0.0, "dampening": 0.0,
...            "weight_decay": 0.0}, (False, False, False))
>>> p.tolist()
[0.5, 0.5]
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

Array = jax.Array
State = dict[str, Array]


def _prologue(p: Array, g: Array, h: dict, maximize: bool) -> Array:
    """The shared first lines: g <- -g if maximize; g <- g + lambda * theta."""
    g = -g if maximize else g
    return g + h["weight_decay"] * p


def _scalar(x: Any, like: Array) -> Array:
    return jnp.asarray(x).astype(like.dtype)


def sgd(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """SGD: b <- mu b + (1 - tau) g (b <- g at t = 1); g <- g + mu b (Nesterov) or b."""
    nesterov, maximize, has_momentum = opts
    g = _prologue(p, g, h, maximize)
    if has_momentum:
        mu = h["momentum"]
        # no buffer yet (t = 1): b <- g; a zero buffer with dampening 0 gives g exactly too
        b = mu * s["momentum_buffer"] + (1 - h["dampening"]) * g if s else g
        g = g + mu * b if nesterov else b
        s = {"momentum_buffer": b}
    return p - h["lr"] * g, s


def _adam_core(p: Array, g: Array, s: State, h: dict, amsgrad: bool) -> tuple[Array, State]:
    """m <- b1 m + (1-b1) g; v <- b2 v + (1-b2) g^2; p <- p - lr m_hat / (sqrt(v_hat) + eps)."""
    b1, b2 = h["betas"]
    t = s["step"] + 1
    m = b1 * s["exp_avg"] + (1 - b1) * g
    v = b2 * s["exp_avg_sq"] + (1 - b2) * g * g
    new = {"step": t, "exp_avg": m, "exp_avg_sq": v}
    if amsgrad:
        v = new["max_exp_avg_sq"] = jnp.maximum(s["max_exp_avg_sq"], v)
    t64 = t.astype(jnp.float64)
    step_size = _scalar(h["lr"] / (1 - b1 ** t64), p)
    bc2_sqrt = _scalar(jnp.sqrt(1 - b2 ** t64), p)
    return p - step_size * m / (jnp.sqrt(v) / bc2_sqrt + h["eps"]), new


def adam(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Adam: L2 weight decay added to the gradient, then the Adam moments."""
    amsgrad, maximize = opts
    return _adam_core(p, _prologue(p, g, h, maximize), s, h, amsgrad)


def adamw(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """AdamW: theta <- theta - lr lambda theta (decoupled), then Adam without decay."""
    amsgrad, maximize = opts
    g = -g if maximize else g
    p = p * _scalar(1 - h["lr"] * h["weight_decay"], p)
    return _adam_core(p, g, s, h, amsgrad)


def adadelta(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Adadelta: v <- rho v + (1-rho) g^2; dx <- sqrt(u + eps)/sqrt(v + eps) g; u <- rho u + (1-rho) dx^2."""
    (maximize,) = opts
    rho, eps = h["rho"], h["eps"]
    g = _prologue(p, g, h, maximize)
    v = rho * s["square_avg"] + (1 - rho) * g * g
    delta = jnp.sqrt(s["acc_delta"] + eps) / jnp.sqrt(v + eps) * g
    u = rho * s["acc_delta"] + (1 - rho) * delta * delta
    new = {"step": s["step"] + 1, "square_avg": v, "acc_delta": u}
    return p - h["lr"] * delta, new


def rmsprop(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """RMSprop: v <- a v + (1-a) g^2 (centered: minus the squared mean); b <- mu b + g/(sqrt(v)+eps)."""
    centered, maximize, has_momentum = opts
    alpha = h["alpha"]
    g = _prologue(p, g, h, maximize)
    v = alpha * s["square_avg"] + (1 - alpha) * g * g
    new = {"step": s["step"] + 1, "square_avg": v}
    if centered:
        ga = new["grad_avg"] = alpha * s["grad_avg"] + (1 - alpha) * g
        v = v - ga * ga
    update = g / (jnp.sqrt(v) + h["eps"])
    if has_momentum:
        update = new["momentum_buffer"] = h["momentum"] * s["momentum_buffer"] + update
    return p - h["lr"] * update, new


def adagrad(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Adagrad: lr_t = lr / (1 + (t-1) eta); sum <- sum + g^2; p <- p - lr_t g / (sqrt(sum) + eps)."""
    (maximize,) = opts
    t = s["step"] + 1
    g = _prologue(p, g, h, maximize)
    clr = _scalar(h["lr"] / (1 + (t.astype(jnp.float64) - 1) * h["lr_decay"]), p)
    acc = s["sum"] + g * g
    return p - clr * g / (jnp.sqrt(acc) + h["eps"]), {"step": t, "sum": acc}
