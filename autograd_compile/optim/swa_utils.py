"""Stochastic weight averaging and EMA (``torch.optim.swa_utils``): ``AveragedModel`` keeps a
running average of a model's parameters, ``SWALR`` anneals each group's learning rate to its
``swa_lr``, ``update_bn`` recomputes BatchNorm statistics for the averaged weights.

>>> import autograd_compile as acg
>>> lin = acg.nn.Linear(2, 1)
>>> swa = AveragedModel(lin)
>>> with acg.no_grad():
...     _ = lin.weight.fill_(1.0); swa.update_parameters(lin)
...     _ = lin.weight.fill_(3.0); swa.update_parameters(lin)
>>> swa.module.weight.tolist(), swa.n_averaged.item()
([[2.0, 2.0]], 2)
"""
from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Iterable

from ..autograd.grad_mode import no_grad
from ..kernels.api import int64, tensor
from ..nn.modules import Module
from ..nn.norm import _BatchNorm
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_swa_avg_fn",
           "get_ema_multi_avg_fn", "get_swa_multi_avg_fn"]


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Any, Any, Any], Any]:
    """``(ema, current, n) -> decay * ema + (1 - decay) * current``."""
    def ema_update(ema_param: Any, current_param: Any, num_averaged: Any) -> Any:
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable[[Any, Any, Any], Any]:
    """``(avg, current, n) -> avg + (current - avg) / (n + 1)``: the running mean."""
    def swa_update(averaged_param: Any, current_param: Any, num_averaged: Any) -> Any:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[list, list, Any], None]:
    """In place over lists of one dtype: ``ema <- lerp(ema, current, 1 - decay)``; integer
    tensors (BatchNorm's ``num_batches_tracked``) ``ema * decay + current * (1 - decay)``,
    truncated, as PyTorch's."""
    def ema_update(ema_params: list, current_params: list, num_averaged: Any) -> None:
        with no_grad():
            if ema_params[0].is_floating_point() or ema_params[0].is_complex():
                for e, c in zip(ema_params, current_params):
                    e.copy_(e + (1 - decay) * (c - e))
            else:
                for e, c in zip(ema_params, current_params):
                    e.copy_(e * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable[[list, list, Any], None]:
    """In place over lists: ``avg <- avg + (current - avg) / (n + 1)``."""
    def swa_update(averaged_params: list, current_params: list, num_averaged: Any) -> None:
        n = num_averaged.item() if hasattr(num_averaged, "item") else num_averaged
        with no_grad():
            for a, c in zip(averaged_params, current_params):
                a.copy_(a + (c - a) / (n + 1))
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are the
    running average (``avg_fn`` / ``multi_avg_fn``, SWA's mean by default) of the values
    passed to ``update_parameters``; ``forward`` runs the copy."""

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Any, Any, Any], Any] | None = None,
                 multi_avg_fn: Callable[[list, list, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> tuple[list, list]:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.module.parameters(), model.parameters()
        pairs = list(zip(mine, theirs))
        return [a for a, _ in pairs], [m.detach() for _, m in pairs]

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current values into the average (the first call copies them)."""
        averaged, current = self._pairs(model)
        n = self.n_averaged.item()
        with no_grad():
            if n == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:  # per dtype, as PyTorch groups them
                groups: dict[Any, tuple[list, list]] = {}
                for a, c in zip(averaged, current):
                    group = groups.setdefault(a.dtype, ([], []))
                    group[0].append(a)
                    group[1].append(c)
                for a_list, c_list in groups.values():
                    self.multi_avg_fn(a_list, c_list, self.n_averaged)
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for a, c in zip(averaged, current):
                    a.copy_(avg_fn(a.detach(), c, self.n_averaged if self.avg_fn else n))
            if not self.use_buffers:  # buffers follow the source model
                for b, mb in zip(self.module.buffers(), model.buffers()):
                    b.copy_(mb.detach())
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """One pass over ``loader`` (first element of each batch when it is a list/tuple) with
    every BatchNorm reset and in cumulative-average mode (``momentum=None``): their running
    statistics become those of the data under ``model``'s current weights."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its value to ``swa_lr`` over ``anneal_epochs`` steps
    (``'cos'`` or ``'linear'``), then hold it.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0)
    >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
    >>> [round(sched.get_last_lr()[0], 4)] + [(sched.step(), round(sched.get_last_lr()[0], 4))[1]
    ...                                       for _ in range(3)]
    [1.0, 0.55, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float],
                 anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_func = _cosine_anneal if anneal_strategy == "cos" else _linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        # the lr held before this step is alpha_prev-mixed: recover the pre-annealing lr
        # from it, then mix again with this step's alpha
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0.0, min(1.0, (step - 1) / span)))
        alpha = self.anneal_func(max(0.0, min(1.0, step / span)))
        out = []
        for group in self.optimizer.param_groups:
            swa = group["swa_lr"]
            start = swa if prev_alpha == 1 else (group["lr"] - prev_alpha * swa) / (1 - prev_alpha)
            out.append(swa * alpha + start * (1 - alpha))
        return out


def _linear_anneal(t: float) -> float:
    return t


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2
