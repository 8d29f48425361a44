"""Optimizer base and the two update rules a training loop needs.

Updates are pure functions on jax arrays, jitted once per optimizer (XLA
recompiles only if a parameter's shape changes); the new values are written
into the parameters in place (their version counters move, as in PyTorch).
"""
from __future__ import annotations

from typing import Any, Iterable

import jax
import jax.numpy as jnp

from ..tensor import Tensor


class Optimizer:
    """Holds parameters and per-parameter state; subclasses define ``_update``."""

    def __init__(self, params: Iterable[Tensor], defaults: dict[str, Any]) -> None:
        self.params = [p for p in params]
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")
        self.defaults = defaults
        self.state: list[Any] = [None] * len(self.params)
        self._step = jax.jit(self._update)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad`` (to None, or to zeros)."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = Tensor(jnp.zeros_like(p.grad._data))

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        for i in live:
            if self.state[i] is None:
                self.state[i] = self._init_state(self.params[i]._data)
        params = [self.params[i]._data for i in live]
        grads = [self.params[i].grad._data for i in live]
        states = [self.state[i] for i in live]
        new_params, new_states = self._step(params, grads, states, self._hyper())
        for i, p, s in zip(live, new_params, new_states):
            self.params[i]._set_data(p)
            self.state[i] = s

    def _hyper(self) -> dict[str, Any]:
        return {k: jnp.asarray(v) for k, v in self.defaults.items() if k not in self._static}

    _static: tuple[str, ...] = ()

    def _init_state(self, p: jax.Array) -> Any:
        return ()

    def _update(self, params: list, grads: list, states: list, hyper: dict) -> tuple[list, list]:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov and weight decay."""

    _static = ("nesterov",)

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3, momentum: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      nesterov=nesterov))
        self._uses_momentum = momentum != 0.0

    def _init_state(self, p: jax.Array) -> Any:
        return jnp.zeros_like(p) if self._uses_momentum else ()

    def _update(self, params: list, grads: list, states: list, h: dict) -> tuple[list, list]:
        new_p, new_s = [], []
        for p, g, buf in zip(params, grads, states):
            g = g + h["weight_decay"] * p
            if self._uses_momentum:
                buf = h["momentum"] * buf + g
                g = g + h["momentum"] * buf if self.defaults["nesterov"] else buf
            new_p.append((p - h["lr"] * g).astype(p.dtype))
            new_s.append(buf)
        return new_p, new_s


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction; weight decay added to the gradient."""

    def __init__(self, params: Iterable[Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, dict(lr=lr, beta1=betas[0], beta2=betas[1], eps=eps,
                                      weight_decay=weight_decay))

    def _init_state(self, p: jax.Array) -> Any:
        return (jnp.zeros_like(p), jnp.zeros_like(p), jnp.zeros((), jnp.int32))

    def _update(self, params: list, grads: list, states: list, h: dict) -> tuple[list, list]:
        new_p, new_s = [], []
        for p, g, (m, v, t) in zip(params, grads, states):
            g = g + h["weight_decay"] * p
            t = t + 1
            m = h["beta1"] * m + (1 - h["beta1"]) * g
            v = h["beta2"] * v + (1 - h["beta2"]) * g * g
            m_hat = m / (1 - h["beta1"] ** t)
            v_hat = v / (1 - h["beta2"] ** t)
            new_p.append((p - h["lr"] * m_hat / (jnp.sqrt(v_hat) + h["eps"])).astype(p.dtype))
            new_s.append((m, v, t))
        return new_p, new_s


