"""``MultiplicativeLR``, ``CyclicLR`` and ``CosineAnnealingWarmRestarts``: PyTorch's values.

Each schedule is a function of the step (``_cyclic_scale``, ``_cosine``); the classes are the
stateful shells ``lr_scheduler`` keeps for every scheduler.

>>> import autograd_compile as acg
>>> from autograd_compile.optim import lr_scheduler as L
>>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0, momentum=0.9)
>>> s = L.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
>>> out = []
>>> for _ in range(4):
...     opt.step(); s.step(); out.append(round(s.get_last_lr()[0], 6))
>>> out
[0.55, 1.0, 0.55, 0.1]
"""
from __future__ import annotations

import math
import types
from functools import partial
from typing import Any, Callable, Sequence

from ._lr_base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["CosineAnnealingWarmRestarts", "CyclicLR", "MultiplicativeLR"]


def _lambdas(optimizer: Optimizer, lr_lambda: Any) -> list[Callable[[int], float]]:
    n = len(optimizer.param_groups)
    if not isinstance(lr_lambda, (list, tuple)):
        fns = [lr_lambda] * n
    elif len(lr_lambda) != n:
        raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
    else:
        fns = list(lr_lambda)
    for f in fns:
        if not callable(f):
            raise TypeError(f"lr_lambda should be a function, but got {type(f).__name__}")
    return fns


class MultiplicativeLR(LRScheduler):
    """``lr <- lr * lr_lambda(epoch)`` at every step after the first.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = acg.optim.lr_scheduler.MultiplicativeLR(opt, lambda e: 0.5)
    >>> s.step(); s.step(); s.get_last_lr()
    [0.25]
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._step_count == 1:  # the constructor's step leaves the lr as it is
            return self._lrs()
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, self._lrs())]

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


def _triangular(x: float) -> float:
    return 1.0


def _triangular2(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range(gamma: float, x: float) -> float:
    return gamma ** x


def _cyclic_position(epoch: int, total: float, ratio: float) -> tuple[int, float]:
    """(cycle number, fraction of the way up (0..1) or down the triangle) at ``epoch``."""
    cycle = math.floor(1 + epoch / total)
    x = 1.0 + epoch / total - cycle
    return cycle, (x / ratio if x <= ratio else (x - 1) / (ratio - 1))


class CyclicLR(LRScheduler):
    """Cycle the lr between ``base_lr`` and ``max_lr`` (Smith), momentum the other way round.

    ``mode``: ``triangular`` (constant amplitude), ``triangular2`` (halved every cycle),
    ``exp_range`` (scaled by ``gamma ** iteration``); or a custom ``scale_fn``.
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | Sequence[float],
                 max_lr: float | Sequence[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom, self.scale_mode = scale_fn, scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_momentum(self, base_momentum: Any, max_momentum: Any, last_epoch: int) -> None:
        opt = self.optimizer
        if "momentum" not in opt.defaults and "betas" not in opt.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        self.use_beta1 = "betas" in opt.defaults
        self.base_momentums = _per_group("base_momentum", opt, base_momentum)
        self.max_momentums = _per_group("max_momentum", opt, max_momentum)
        if last_epoch == -1:
            for hi, lo, group in zip(self.max_momentums, self.base_momentums,
                                     opt.param_groups):
                self._set_momentum(group, hi)
                group["max_momentum"], group["base_momentum"] = hi, lo

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        self._scale_fn_ref: Callable[[float], float] = {
            "triangular": _triangular, "triangular2": _triangular2,
            "exp_range": partial(_exp_range, self.gamma)}[self.mode]
        self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def scale_fn(self, x: float) -> float:
        """The amplitude factor at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self) -> list[float]:
        cycle, frac = _cyclic_position(self.last_epoch, self.total_size, self.step_ratio)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [lo + (hi - lo) * frac * scale for lo, hi in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                self._set_momentum(group, hi - (hi - lo) * frac * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """As PyTorch: the built-in scale function is dropped, a custom object keeps its dict."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                     else dict(fn.__dict__))
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _cosine(base: float, eta_min: float, t_cur: float, t_i: float) -> float:
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (Loshchilov & Hutter): cosine annealing restarted after ``T_0``, ``T_0 T_mult``, ...

    ``step(epoch)`` accepts a fractional epoch (``epoch + i / iters``) for per-batch stepping.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> s = acg.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
    >>> out = []
    >>> for _ in range(3):
    ...     s.step(); out.append(round(s.get_last_lr()[0], 6))
    >>> out
    [0.5, 1.0, 0.5]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [_cosine(b, self.eta_min, self.T_cur, self.T_i) for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (fractional allowed): restarts recomputed."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        else:
            self._jump(epoch)
        self._step_count = getattr(self, "_step_count", 0) + 1
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._lrs()

    def _jump(self, epoch: float) -> None:
        """T_cur and T_i at an arbitrary ``epoch`` (closed form over the geometric periods)."""
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
