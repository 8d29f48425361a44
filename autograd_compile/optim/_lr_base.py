"""The scheduler base class (``LRScheduler``) and helpers every scheduler module shares.

Its own module so that ``lr_scheduler`` (the public names) and ``_schedules_more`` both
import it, and neither imports the other's module back.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .optimizer import Optimizer

_EPOCH_DEPRECATION = ("The epoch parameter in `scheduler.step()` was not necessary and is being "
                      "deprecated where possible. Please use `scheduler.step()` to step the "
                      "scheduler. During the deprecation, if epoch is different from None, the "
                      "closed form is used instead of the new chainable form, where available.")


class LRScheduler:
    """Base class: ``last_epoch``, ``base_lrs``, ``step()``, ``get_last_lr()``, ``state_dict()``.

    Subclasses define ``get_lr()`` (recursive form) and optionally ``_get_closed_form_lr()``.
    """

    _get_closed_form_lr: Callable[[], list[float]]

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose: Any = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` wrote, one per parameter group."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (or jump to ``epoch``, deprecated as in PyTorch)."""
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._advance(epoch)

    def _advance(self, epoch: int | None) -> None:
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (PyTorch's layout)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def _lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]



def _per_group(name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
        return list(value)
    return [value] * n
