"""The rest of ``torch.optim``'s first-order algorithms: PyTorch's classes over rules in ``_rules``.

Each class validates its options with PyTorch's messages, keeps PyTorch's state keys (so a torch
``state_dict`` loads) and defers the update to one jitted rule over every parameter.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.tensor([1.0, -1.0]))
>>> opt = acg.optim.Adamax([w], lr=0.1)
>>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
[0.9, -0.9]
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp

from . import _rules
from ..kernels.api import zeros_like
from ._sparse_rules import SPARSE_ADAM_DENSE, sparse_adam, step_sparse
from .algorithms import _check, _check_betas, _check_common, _filled, _step0
from .optimizer import Optimizer

__all__ = ["ASGD", "Adafactor", "Adamax", "Muon", "NAdam", "RAdam", "Rprop", "SparseAdam"]


def _flags(foreach: Any, maximize: bool, capturable: bool, differentiable: bool) -> dict:
    return dict(foreach=foreach, maximize=maximize, capturable=capturable,
                differentiable=differentiable)


def _adam_moments(p: jax.Array) -> dict[str, jax.Array]:
    return {"step": _step0(), "exp_avg": jnp.zeros_like(p), "exp_avg_sq": jnp.zeros_like(p)}


class Adamax(Optimizer):
    """Adamax (Kingma & Ba): Adam with the infinity norm of past gradients as denominator.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.Adamax([acg.nn.Parameter(acg.ones(1))])
    >>> opt.defaults["lr"], opt.defaults["betas"]
    (0.002, (0.9, 0.999))
    """

    _rule = staticmethod(_rules.adamax)
    _hyper = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]),)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(), "exp_avg": jnp.zeros_like(p), "exp_inf": jnp.zeros_like(p)}


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.): SGD with momentum until the variance estimate is tractable.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.RAdam([w], lr=0.1)
    >>> (w * 3.0).sum().backward(); opt.step(); round(w.item(), 4)  # first steps: m_hat * lr
    0.7
    """

    _rule = staticmethod(_rules.radam)
    _hyper = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    def _static(self, g: dict) -> tuple:
        return (bool(g["decoupled_weight_decay"]), bool(g["maximize"]))

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return _adam_moments(p)


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum and a momentum warm-up (``momentum_decay``).

    >>> import autograd_compile as acg
    >>> opt = acg.optim.NAdam([acg.nn.Parameter(acg.ones(1))])
    >>> opt.defaults["lr"], opt.defaults["momentum_decay"]
    (0.002, 0.004)
    """

    _rule = staticmethod(_rules.nadam)
    _hyper = ("lr", "betas", "eps", "weight_decay", "momentum_decay")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        _check(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    def _static(self, g: dict) -> tuple:
        return (bool(g["decoupled_weight_decay"]), bool(g["maximize"]))

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(), "mu_product": jnp.ones((), jnp.float32),
                "exp_avg": jnp.zeros_like(p), "exp_avg_sq": jnp.zeros_like(p)}


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky): ``state["ax"]`` holds the running average of the iterates.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> (w * 2.0).sum().backward(); opt.step(); round(w.item(), 4)
    0.8
    """

    _rule = staticmethod(_rules.asgd)
    _hyper = ("lr", "lambd", "alpha", "t0", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_common(lr, weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]),)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(), "eta": jnp.asarray(float(g["lr"]), jnp.float32),
                "mu": jnp.ones((), jnp.float32), "ax": jnp.zeros_like(p)}


class Rprop(Optimizer):
    """Resilient backpropagation: sign-based steps whose sizes adapt per coordinate.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.Rprop([w], lr=0.1)
    >>> (w * 5.0).sum().backward(); opt.step(); round(w.item(), 4)  # moves lr, whatever |g|
    0.9
    """

    _rule = staticmethod(_rules.rprop)
    _hyper = ("etas", "step_sizes")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check(0.0 <= float(lr), f"Invalid learning rate: {lr}")
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]),)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(), "prev": jnp.zeros_like(p),
                "step_size": _filled(p, float(g["lr"]))}


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern): row and column second-moment factors for matrices.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.Adafactor([acg.nn.Parameter(acg.ones(2, 3))])
    >>> opt.defaults["beta2_decay"], opt.defaults["eps"]
    (-0.8, (None, 0.001))
    """

    _rule = staticmethod(_rules.adafactor)
    _hyper = ("lr", "beta2_decay", "d", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        _check(0.0 <= float(lr), f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _hyperparameters(self, index: int, group: dict) -> dict[str, Any]:
        h = dict(super()._hyperparameters(index, group))
        h["eps2"] = jnp.asarray(float(group["eps"][1]))
        return h

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]), g["eps"][0])

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        if p.ndim > 1:
            return {"step": _step0(),
                    "row_var": jnp.zeros(p.shape[:-1] + (1,), p.dtype),
                    "col_var": jnp.zeros(p.shape[:-2] + (1, p.shape[-1]), p.dtype)}
        return {"step": _step0(), "variance": jnp.zeros_like(p)}


class Muon(Optimizer):
    """Muon (Jordan et al.): momentum, then a Newton-Schulz orthogonalised update (2-D params only).

    >>> import autograd_compile as acg
    >>> opt = acg.optim.Muon([acg.nn.Parameter(acg.ones(2, 3))])
    >>> opt.defaults["momentum"], opt.defaults["ns_steps"]
    (0.95, 5)
    """

    _rule = staticmethod(_rules.muon)
    _hyper = ("lr", "weight_decay", "momentum")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        _check(0.0 <= float(lr), f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}")
        _check(0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}")
        _check(adjust_lr_fn in (None, "original", "match_rms_adamw"),
               f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                _check(p.ndim == 2, "Muon only supports 2D parameters whereas we found a "
                       f"parameter with size: {_size(p)}")
        _check(ns_steps < 100, "Number of steps must be less than 100 for computational "
               "efficiency")

    def _static(self, g: dict) -> tuple:
        return (bool(g["nesterov"]), tuple(g["ns_coefficients"]), int(g["ns_steps"]),
                float(g["eps"]), g["adjust_lr_fn"])

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"momentum_buffer": jnp.zeros_like(p)}


def _size(p: Any) -> str:
    return "torch.Size([" + ", ".join(map(str, p.shape)) + "])"


class SparseAdam(Optimizer):
    """Adam for sparse gradients (``nn.Embedding(sparse=True)``), as PyTorch's: only the
    rows a gradient names update their moments and values; a dense gradient raises.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.SparseAdam([w])
    >>> (w * 1.0).sum().backward()
    >>> try:
    ...     opt.step()
    ... except RuntimeError as e:
    ...     print(str(e)[:43])
    SparseAdam does not support dense gradients
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        _check(0.0 < float(lr), f"Invalid learning rate: {lr}")
        _check(0.0 < eps, f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One SparseAdam step for every parameter with a (sparse) gradient."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            live = [p for p in group["params"] if p._grad is not None]
            if any(not p._grad.is_sparse for p in live):
                raise RuntimeError(SPARSE_ADAM_DENSE)
            for p in live:
                self._step_one(p, group)
        return loss

    def _step_one(self, p: Any, group: dict) -> None:
        state = self.state[p]
        if not state:
            state.update(step=0, exp_avg=zeros_like(p.detach()), exp_avg_sq=zeros_like(p.detach()))
        state["step"] += 1
        step_sparse([p], lambda q: sparse_adam(q, state, float(group["lr"]), group["betas"],
                                               group["eps"], group.get("maximize", False)))
