"""Learning-rate schedulers (``torch.optim.lr_scheduler``), PyTorch's values step by step.

A scheduler is a thin stateful shell: ``step()`` advances ``last_epoch`` and writes the new
value into every ``param_group["lr"]``. The optimizer reads ``lr`` as a runtime input of its
jitted update, so scheduling never recompiles. Each ``get_lr`` is PyTorch's recursive form
(it builds on the current ``group["lr"]``), so schedulers compose as they do there.

>>> import autograd_compile as acg
>>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
>>> sched = acg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(5):
...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
>>> lrs
[1.0, 0.5, 0.5, 0.25, 0.25]
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Sequence

from .optimizer import Optimizer
from ._lr_base import _EPOCH_DEPRECATION, LRScheduler, _per_group  # noqa: F401
from ._schedules_more import (CosineAnnealingWarmRestarts, CyclicLR,  # noqa: F401
                              MultiplicativeLR)

__all__ = ["LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
           "LambdaLR", "LinearLR", "ConstantLR", "PolynomialLR", "OneCycleLR", "SequentialLR",
           "ChainedScheduler", "ReduceLROnPlateau", "MultiplicativeLR", "CyclicLR",
           "CosineAnnealingWarmRestarts"]

class _LRScheduler(LRScheduler):
    """PyTorch's old name for the base class; older programs subclass it."""


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (a repeated milestone multiplies again)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [b * self.gamma ** passed for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1,
                 verbose: Any = None) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine from the base lr down to ``eta_min`` over ``T_max`` steps (PyTorch's recursion).

    >>> import autograd_compile as acg
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = acg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
    >>> s.step(); round(s.get_last_lr()[0], 6), s.step(), s.get_last_lr()[0] < 1e-12
    (0.5, None, True)
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return self._lrs()
        if self._step_count == 1 and t > 0:  # resumed: start from the closed form
            return [lo + (b - lo) * (1 + math.cos(t * math.pi / T)) / 2 for b in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:  # at the bottom of a period: turn back up
            return [lr + (b - lo) * (1 - math.cos(math.pi / T)) / 2
                    for lr, b in zip(self._lrs(), self.base_lrs)]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - lo) + lo for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        t, T, lo = self.last_epoch, self.T_max, self.eta_min
        return [lo + (b - lo) * (1 + math.cos(math.pi * t / T)) / 2 for b in self.base_lrs]


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per parameter group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float] | Sequence[Any],
                 last_epoch: int = -1, verbose: Any = None) -> None:
        n = len(optimizer.param_groups)
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * n
        elif len(lr_lambda) != n:
            raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
        else:
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [b * f(self.last_epoch) for f, b in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        """Functions are not saved; a callable object's ``__dict__`` is (as PyTorch)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else dict(f.__dict__)
                               for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` steps."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1,
                 verbose: Any = None) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, s, e = self.last_epoch, self.start_factor, self.end_factor
        if t == 0:
            return [lr * s for lr in self._lrs()]
        if t > self.total_iters:
            return self._lrs()
        factor = 1.0 + (e - s) / (self.total_iters * s + (t - 1) * (e - s))
        return [lr * factor for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        t, s, e = self.last_epoch, self.start_factor, self.end_factor
        return [b * (s + (e - s) * min(self.total_iters, t) / self.total_iters)
                for b in self.base_lrs]



class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` for the first ``total_iters`` steps, then restore it."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        done = self.last_epoch >= self.total_iters
        return [b * (self.factor + done * (1 - self.factor)) for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr to 0 over ``total_iters`` steps as ``(1 - t / total_iters) ** power``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, n = self.last_epoch, self.total_iters
        if t == 0 or t > n:
            return self._lrs()
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * decay for lr in self._lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        t, n = self.last_epoch, self.total_iters
        return [b * (1.0 - min(n, t) / n) ** self.power for b in self.base_lrs]


def _anneal_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): warm up to ``max_lr``, anneal to ``initial_lr / final_div_factor``.

    Momentum (or Adam's beta1) cycles inversely between ``max_momentum`` and ``base_momentum``.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.Adam([acg.nn.Parameter(acg.ones(1))])
    >>> s = acg.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> round(s.get_last_lr()[0], 12), opt.param_groups[0]["betas"]
    (0.04, (0.95, 0.999))
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | Sequence[float] = 0.85,
                 max_momentum: float | Sequence[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1, verbose: Any = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        if last_epoch == -1:
            for lr, group in zip(_per_group("max_lr", optimizer, max_lr), optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(max_momentum, base_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _init_momentum(self, max_momentum: Any, base_momentum: Any, last_epoch: int) -> None:
        opt = self.optimizer
        if "momentum" not in opt.defaults and "betas" not in opt.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        self.use_beta1 = "betas" in opt.defaults
        highs = _per_group("max_momentum", opt, max_momentum)
        lows = _per_group("base_momentum", opt, base_momentum)
        if last_epoch == -1:
            for hi, lo, group in zip(highs, lows, opt.param_groups):
                self._set_momentum(group, hi)
                group["max_momentum"], group["base_momentum"] = hi, lo

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        anneal = _anneal_cos if self._anneal_func_type == "cos" else _anneal_linear
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, anneal(group[phase["start_momentum"]],
                                                         group[phase["end_momentum"]], pct))
                    break
                start = end
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError("Expected positive integer steps_per_epoch, but got "
                             f"{steps_per_epoch}")
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


def _phases(total: int, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
    """PyTorch's phase table: where each phase ends and which group keys it anneals between."""
    def phase(end: float, lr: tuple[str, str], mom: tuple[str, str]) -> dict[str, Any]:
        return {"end_step": end, "start_lr": lr[0], "end_lr": lr[1],
                "start_momentum": mom[0], "end_momentum": mom[1]}
    up = phase(float(pct_start * total) - 1, ("initial_lr", "max_lr"),
               ("max_momentum", "base_momentum"))
    if not three_phase:
        return [up, phase(total - 1, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))]
    return [up,
            phase(float(2 * pct_start * total) - 2, ("max_lr", "initial_lr"),
                  ("base_momentum", "max_momentum")),
            phase(total - 1, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum"))]


class SequentialLR(LRScheduler):
    """Run ``schedulers[i]`` until ``milestones[i]``, then the next one (restarted at 0).

    >>> import autograd_compile as acg
    >>> from autograd_compile.optim import lr_scheduler as L
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = L.SequentialLR(opt, [L.ExponentialLR(opt, 0.5), L.StepLR(opt, 10)], milestones=[2])
    >>> out = []
    >>> for _ in range(3):
    ...     s.step(); out.append(s.get_last_lr()[0])
    >>> out
    [0.5, 1.0, 1.0]
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1, verbose: Any = None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        _check_same_optimizer(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch, self.optimizer = last_epoch + 1, optimizer
        for group in optimizer.param_groups:  # undo what constructing the schedulers did
            group["lr"] = group["initial_lr"]
        for s in self._schedulers:
            s.last_epoch -= 1
        self._schedulers[0]._initial_step()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            scheduler._advance(0)  # restart the next scheduler at its epoch 0 (closed form)
        else:
            scheduler._advance(None)
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, saved in zip(self._schedulers, inner):
            s.load_state_dict(saved)


def _check_same_optimizer(owner: str, optimizer: Optimizer,
                          schedulers: Sequence[LRScheduler]) -> None:
    for i, s in enumerate(schedulers):
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(s).__name__} at index {i} has "
                             f"{s.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


class ChainedScheduler(LRScheduler):
    """Step every scheduler at once: their (recursive) factors multiply.

    >>> import autograd_compile as acg
    >>> from autograd_compile.optim import lr_scheduler as L
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = L.ChainedScheduler([L.ExponentialLR(opt, 0.5), L.StepLR(opt, 2, gamma=0.1)])
    >>> s.step(); s.step(); round(s.get_last_lr()[0], 12)  # 0.5 ** 2 * 0.1
    0.025
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        name = type(self).__name__
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling "
                                 f"`step`, but got one at index {i} in the given schedulers "
                                 "sequence.")
        _check_same_optimizer(name, optimizer, schedulers)
        self._schedulers, self.optimizer = list(schedulers), optimizer
        self._last_lr = self._lrs()

    def step(self) -> None:  # type: ignore[override]
        for s in self._schedulers:
            s.step()
        self._last_lr = self._lrs()

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, saved in zip(self._schedulers, inner):
            s.load_state_dict(saved)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` once the metric passed to ``step`` stops improving.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = acg.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
    >>> for loss in [3.0, 2.0, 2.0, 2.0]:
    ...     s.step(loss)
    >>> s.get_last_lr()
    [0.1]
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | Sequence[float] = 0, eps: float = 1e-8,
                 verbose: Any = None) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor, self.optimizer = factor, optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * n
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.last_epoch = 0
        self._last_lr = self._lrs()
        self._init_is_better()
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    def _init_is_better(self) -> None:
        if self.mode not in ("min", "max"):
            raise ValueError("mode " + self.mode + " is unknown!")
        if self.threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + self.threshold_mode + " is unknown!")
        self.mode_worse = math.inf if self.mode == "min" else -math.inf

    def is_better(self, a: float, best: float) -> bool:
        rel, th = self.threshold_mode == "rel", self.threshold
        if self.mode == "min":
            return a < (best * (1.0 - th) if rel else best - th)
        return a > (best * (th + 1.0) if rel else best + th)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        current = float(metrics)
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = self._lrs()

    def _reduce_lr(self) -> None:
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._init_is_better()


# the schedules of part 4 live in their own module; imported last (they subclass LRScheduler)
