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
    """Adam: L2 weight decay added to the gradient (or decoupled, AdamW), then the moments."""
    amsgrad, maximize, decoupled = opts
    if decoupled:
        return adamw(p, g, s, h, (amsgrad, maximize))
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


# -- part 4: the rest of torch.optim (each PyTorch's documented single-tensor algorithm) ----------
def _wd(p: Array, g: Array, h: dict, decoupled: bool) -> tuple[Array, Array]:
    """Weight decay either decoupled (theta <- theta (1 - lr lambda)) or added to g."""
    if decoupled:
        return p * _scalar(1 - h["lr"] * h["weight_decay"], p), g
    return p, g + h["weight_decay"] * p


def _bump(s: State) -> tuple[Array, Array]:
    """step <- step + 1 (kept float32 as PyTorch) and its float64 value for the scalars."""
    t = s["step"] + 1
    return t, t.astype(jnp.float64)


def adamax(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Adamax: m <- b1 m + (1-b1) g; u <- max(b2 u, |g| + eps); p <- p - lr/(1-b1^t) m/u."""
    (maximize,) = opts
    b1, b2 = h["betas"]
    t, t64 = _bump(s)
    g = _prologue(p, g, h, maximize)
    m = s["exp_avg"] + (g - s["exp_avg"]) * (1 - b1)
    u = jnp.maximum(s["exp_inf"] * b2, jnp.abs(g) + h["eps"])
    clr = _scalar(h["lr"] / (1 - b1 ** t64), p)
    return p - clr * m / u, {"step": t, "exp_avg": m, "exp_inf": u}


def radam(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """RAdam: Adam moments; the adaptive step, rectified by r_t, only once rho_t > 5."""
    decoupled, maximize = opts
    b1, b2 = h["betas"]
    t, t64 = _bump(s)
    g = -g if maximize else g
    p, g = _wd(p, g, h, decoupled)
    m = s["exp_avg"] + (g - s["exp_avg"]) * (1 - b1)
    v = b2 * s["exp_avg_sq"] + (1 - b2) * g * g
    bc1, bc2 = 1 - b1 ** t64, 1 - b2 ** t64
    m_hat = m / _scalar(bc1, p)
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t64 * b2 ** t64 / bc2
    safe = jnp.maximum(rho_t, 5.0 + 1e-3)  # keeps the unused branch's sqrt finite
    rect = jnp.sqrt((safe - 4) * (safe - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * safe))
    adaptive = _scalar(jnp.sqrt(bc2), p) / (jnp.sqrt(v) + h["eps"])
    adapted = m_hat * h["lr"] * adaptive * _scalar(rect, p)
    new_p = p - jnp.where(rho_t > 5.0, adapted, m_hat * h["lr"])
    return new_p, {"step": t, "exp_avg": m, "exp_avg_sq": v}


def nadam(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """NAdam: Adam with Nesterov momentum whose mu_t warms up by 0.96^(t psi)."""
    decoupled, maximize = opts
    b1, b2 = h["betas"]
    t, t64 = _bump(s)
    g = -g if maximize else g
    p, g = _wd(p, g, h, decoupled)
    mu = b1 * (1 - 0.5 * 0.96 ** (t64 * h["momentum_decay"]))
    mu_next = b1 * (1 - 0.5 * 0.96 ** ((t64 + 1) * h["momentum_decay"]))
    # PyTorch keeps mu_product as a float32 tensor: multiply in float32 as it does
    mu_product = s["mu_product"] * mu.astype(s["mu_product"].dtype)
    m = s["exp_avg"] + (g - s["exp_avg"]) * (1 - b1)
    v = b2 * s["exp_avg_sq"] + (1 - b2) * g * g
    denom = jnp.sqrt(v / _scalar(1 - b2 ** t64, p)) + h["eps"]
    mp64 = mu_product.astype(jnp.float64)
    c_grad = _scalar(h["lr"] * (1 - mu) / (1 - mp64), p)
    c_avg = _scalar(h["lr"] * mu_next / (1 - mp64 * mu_next), p)
    new_p = p - c_grad * g / denom - c_avg * m / denom
    return new_p, {"step": t, "mu_product": mu_product, "exp_avg": m, "exp_avg_sq": v}


def asgd(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """ASGD: p <- p (1 - lambd eta) - eta g; ax averages p once t > t0; eta, mu decay with t."""
    (maximize,) = opts
    t, t64 = _bump(s)
    g = _prologue(p, g, h, maximize)
    eta = s["eta"].astype(jnp.float64)
    p = p * _scalar(1 - h["lambd"] * eta, p) - _scalar(eta, p) * g
    mu = s["mu"]
    ax = jnp.where(mu != 1, s["ax"] + (p - s["ax"]) * _scalar(mu, p), p)
    new_eta = h["lr"] / (1 + h["lambd"] * h["lr"] * t64) ** h["alpha"]
    new_mu = 1 / jnp.maximum(1.0, t64 - h["t0"])
    return p, {"step": t, "eta": new_eta.astype(s["eta"].dtype), "mu": new_mu.astype(mu.dtype),
               "ax": ax}


def rprop(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Rprop: per-coordinate steps grow by eta+ while the gradient keeps its sign, shrink by eta-."""
    (maximize,) = opts
    eta_minus, eta_plus = h["etas"]
    lo, hi = h["step_sizes"]
    g = -g if maximize else g
    sign = jnp.sign(g * s["prev"])
    factor = jnp.where(sign > 0, eta_plus, jnp.where(sign < 0, eta_minus, 1.0)).astype(p.dtype)
    step_size = jnp.clip(s["step_size"] * factor, lo, hi)
    g = jnp.where(factor == _scalar(eta_minus, p), jnp.zeros_like(g), g)  # a sign flip skips
    return p - jnp.sign(g) * step_size, {"step": s["step"] + 1, "prev": g, "step_size": step_size}


def adafactor(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Adafactor (Shazeer & Stern): factored second moments (row/col) for matrices, RMS-clipped."""
    maximize, eps1 = opts
    g = -g if maximize else g
    eps1 = float(jnp.finfo(p.dtype).eps) if eps1 is None else eps1
    t, t64 = _bump(s)
    one_minus_beta2 = t64 ** h["beta2_decay"]
    rho = jnp.minimum(h["lr"], 1 / jnp.sqrt(t64))
    alpha = jnp.maximum(h["eps2"], jnp.linalg.norm(p).astype(jnp.float64) / p.size ** 0.5) * rho
    p = p * _scalar(1 - h["lr"] * h["weight_decay"], p)
    w = _scalar(one_minus_beta2, p)
    new = {"step": t}
    if g.ndim > 1:
        row = s["row_var"] + (jnp.sum(g * g, -1, keepdims=True) / g.shape[-1] - s["row_var"]) * w
        col = s["col_var"] + (jnp.sum(g * g, -2, keepdims=True) / g.shape[-2] - s["col_var"]) * w
        new["row_var"], new["col_var"] = row, col
        var = (row @ col) / jnp.maximum(jnp.mean(row, -2, keepdims=True), eps1)
    else:
        var = new["variance"] = s["variance"] + (g * g - s["variance"]) * w
    update = jax.lax.rsqrt(jnp.maximum(var, eps1 * eps1)) * g
    denom = jnp.maximum(1.0, jnp.linalg.norm(update).astype(jnp.float64)
                        / (update.size ** 0.5 * h["d"]))
    return p - _scalar(alpha / denom, p) * update, new


def _newton_schulz(x: Array, coefficients: tuple, steps: int, eps: float) -> Array:
    """The quintic Newton-Schulz orthogonalisation Muon applies (in bfloat16, as PyTorch)."""
    a, b, c = coefficients
    y = x.astype(jnp.bfloat16)
    tall = x.shape[0] > x.shape[1]
    y = y.T if tall else y
    y = y / jnp.maximum(jnp.linalg.norm(y.astype(jnp.float32)), eps).astype(jnp.bfloat16)
    f32, bf16 = jnp.float32, jnp.bfloat16

    def mm(u: Array, v: Array) -> Array:  # bfloat16 inputs, float32 accumulation (as addmm)
        return jnp.matmul(u, v, preferred_element_type=f32)

    for _ in range(steps):
        gram = mm(y, y.T).astype(bf16)
        update = (b * gram.astype(f32) + c * mm(gram, gram)).astype(bf16)
        y = (a * y.astype(f32) + mm(update, y)).astype(bf16)
    return y.T if tall else y


def muon(p: Array, g: Array, s: State, h: dict, opts: tuple) -> tuple[Array, State]:
    """Muon: momentum (Nesterov by default), then the orthogonalised update with a shape-scaled lr."""
    nesterov, coefficients, steps, eps, adjust = opts
    rows, cols = p.shape[:2]
    ratio = (0.2 * max(rows, cols) ** 0.5 if adjust == "match_rms_adamw"
             else max(1.0, rows / cols) ** 0.5)
    mom = h["momentum"]
    buf = s["momentum_buffer"] + (g - s["momentum_buffer"]) * (1 - mom)
    update = g + (buf - g) * mom if nesterov else buf
    ortho = _newton_schulz(update, coefficients, steps, eps).astype(p.dtype)
    p = p * _scalar(1 - h["lr"] * h["weight_decay"], p)
    return p - _scalar(h["lr"] * ratio, p) * ortho, {"momentum_buffer": buf}
