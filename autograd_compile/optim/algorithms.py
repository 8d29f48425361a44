"""The algorithms: PyTorch's classes and defaults, each a thin shell over a rule in ``_rules``.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.tensor([1.0, -1.0]))
>>> opt = acg.optim.AdamW([w], lr=0.1, weight_decay=0.0)
>>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
[0.9, -0.9]
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp

from . import _rules
from ._sparse_rules import ADAM_SPARSE, has_sparse_grad, sparse_sgd, step_sparse
from .optimizer import Optimizer

_ACCEPTED = ("foreach", "differentiable", "fused", "capturable")  # accepted for parity; unused


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_common(lr: Any, weight_decay: float, eps: float | None = None) -> None:
    _check(0.0 <= float(lr), f"Invalid learning rate: {lr}")
    _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
    if eps is not None:
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")


def _check_betas(betas: tuple[float, float]) -> None:
    _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")


def _check_fused(fused: bool | None, foreach: bool | None, differentiable: bool) -> None:
    """PyTorch's checks of the implementation flags (the flags change nothing here)."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _closure_loss(closure: Callable[[], Any] | None) -> Any:
    if closure is None:
        return None
    from ..autograd.grad_mode import enable_grad
    with enable_grad():
        return closure()


def _hold_sparse(params: list[Any]) -> list[tuple[Any, Any]]:
    """Sparse gradients taken off their parameters while the dense step runs."""
    held = [(p, p._grad) for p in params if p._grad is not None and p._grad.is_sparse]
    for p, _ in held:
        p._grad = None
    return held


def _step0() -> jax.Array:
    return jnp.zeros((), jnp.float32)  # PyTorch keeps 'step' as a float32 scalar tensor


def _filled(p: jax.Array, value: float) -> jax.Array:
    """``p``'s shape filled with ``value``; a complex parameter's real and imaginary parts
    both (PyTorch's ``complex(value, value)``: the step runs on view_as_real pairs)."""
    return jnp.full_like(p, complex(value, value) if jnp.iscomplexobj(p) else value)


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum and weight decay.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * 1.0).sum().backward(); opt.step()
    >>> round(w.item(), 4)  # 1 - 0.1 * 1 - 0.1 * (0.9 + 1)
    0.71
    """

    _rule = staticmethod(_rules.sgd)
    _hyper = ("lr", "momentum", "dampening", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_common(lr, weight_decay)
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(not nesterov or (momentum > 0 and dampening == 0),
               "Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))
        _check_fused(fused, foreach, differentiable)

    def _static(self, g: dict) -> tuple:
        return (bool(g["nesterov"]), bool(g["maximize"]), g["momentum"] != 0)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """The update; parameters with a sparse gradient (``Embedding(sparse=True)``) take
        PyTorch's sparse branch, touching only their rows."""
        params = [p for g in self.param_groups for p in g["params"]]
        if not has_sparse_grad(params):
            return super().step(closure)
        loss = _closure_loss(closure)
        held = _hold_sparse(params)
        try:
            super().step()
        finally:
            for p, g in held:
                p._grad = g
        for group in self.param_groups:
            step_sparse(group["params"], lambda p: sparse_sgd(p, self.state[p], group))
        return loss

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        # with zero dampening a zero buffer gives b_1 = g exactly: one program from step 1
        if g["momentum"] != 0 and g["dampening"] == 0:
            return {"momentum_buffer": jnp.zeros_like(p)}
        return {}

    def _stateless(self, g: dict) -> bool:
        return not (g["momentum"] != 0 and g["dampening"] == 0)  # _init_state's test


class Adam(Optimizer):
    """Adam (Kingma & Ba), L2 weight decay added to the gradient; ``amsgrad`` keeps max v.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.Adam([w], lr=0.1)
    >>> (w * 3.0).sum().backward(); opt.step(); round(w.item(), 4)  # first step moves lr
    0.9
    """

    _rule = staticmethod(_rules.adam)
    _hyper = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused, decoupled_weight_decay=decoupled_weight_decay))
        _check_fused(fused, foreach, differentiable)

    def _static(self, g: dict) -> tuple:
        return (bool(g["amsgrad"]), bool(g["maximize"]),
                bool(g.get("decoupled_weight_decay", False)))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """The update; a sparse gradient raises PyTorch's error (use SparseAdam)."""
        if has_sparse_grad([p for g in self.param_groups for p in g["params"]]):
            raise RuntimeError(ADAM_SPARSE)
        return super().step(closure)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        state = {"step": _step0(), "exp_avg": jnp.zeros_like(p), "exp_avg_sq": jnp.zeros_like(p)}
        if g["amsgrad"]:
            state["max_exp_avg_sq"] = jnp.zeros_like(p)
        return state


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): theta <- theta (1 - lr lambda).

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.AdamW([w], lr=0.1)
    >>> opt.param_groups[0]["weight_decay"]
    0.01
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)


class Adadelta(Optimizer):
    """Adadelta (Zeiler): step sizes from running averages of squared gradients and updates.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.Adadelta([w])
    >>> sorted(opt.defaults)[:4]
    ['capturable', 'differentiable', 'eps', 'foreach']
    """

    _rule = staticmethod(_rules.adadelta)
    _hyper = ("lr", "rho", "eps", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]),)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(), "square_avg": jnp.zeros_like(p),
                "acc_delta": jnp.zeros_like(p)}


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.RMSprop([w], lr=0.01)
    >>> (w * 2.0).sum().backward(); opt.step(); round(w.item(), 4)  # 1 - 0.01*2/sqrt(0.01*4)
    0.9
    """

    _rule = staticmethod(_rules.rmsprop)
    _hyper = ("lr", "alpha", "eps", "weight_decay", "momentum")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_common(lr, weight_decay, eps)
        _check(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        _check(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _static(self, g: dict) -> tuple:
        return (bool(g["centered"]), bool(g["maximize"]), g["momentum"] > 0)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        state = {"step": _step0(), "square_avg": jnp.zeros_like(p)}
        if g["momentum"] > 0:
            state["momentum_buffer"] = jnp.zeros_like(p)
        if g["centered"]:
            state["grad_avg"] = jnp.zeros_like(p)
        return state


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): per-coordinate steps from the sum of squared gradients.

    >>> import autograd_compile as acg
    >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.Adagrad([w], lr=0.1)
    >>> (w * 2.0).sum().backward(); opt.step(); round(w.item(), 4)  # 1 - 0.1*2/2
    0.9
    """

    _rule = staticmethod(_rules.adagrad)
    _hyper = ("lr", "lr_decay", "eps", "weight_decay")

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_common(lr, weight_decay, eps)
        _check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        _check(0.0 <= initial_accumulator_value,
               f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:  # PyTorch fills Adagrad's state at construction
            self._states_of(group["params"], group)

    def _static(self, g: dict) -> tuple:
        return (bool(g["maximize"]),)

    def _init_state(self, p: jax.Array, g: dict) -> dict[str, jax.Array]:
        return {"step": _step0(),
                "sum": _filled(p, g["initial_accumulator_value"])}
