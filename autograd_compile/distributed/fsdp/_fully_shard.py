"""FSDP2: ``fully_shard(module)`` converts ``module`` in place, as PyTorch's does: its
class becomes ``FSDP<Class>`` (a subclass of ``FSDPModule`` and the original class), so
``isinstance`` with both holds, parameter names and ``state_dict`` keys do not change, and
the forward gains the unit's pre-forward (DDP's batch placement or gradient-sync check)
and mixed-precision casts. Applied bottom-up (blocks, then the model), the last call owns
the sharding of every parameter under it; the earlier units become transparent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import jax

from ...nn.module import Module
from ._unit import UNIT, FromRoot, Unit, unit_of


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """``param_dtype``: compute in it with float32 parameters (see ``MixedPrecision``);
    ``output_dtype``: the forward's floating outputs cast to it; ``cast_forward_inputs``:
    floating arguments cast to ``param_dtype``. ``reduce_dtype`` is accepted, no effect."""
    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (the default)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Accepted; no effect (parameters live where the device mesh puts them)."""
    pin_memory: bool = True


class FSDPModule:
    """The class ``fully_shard`` mixes into a module's class."""

    spmd, mesh, _to_mesh = FromRoot("spmd"), FromRoot("mesh"), FromRoot("_to_mesh")
    _place_inputs = FromRoot("_place_inputs")

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        unit = self.__dict__[UNIT]
        args, kwargs = unit.pre_forward(args, kwargs)
        with unit.low_precision():
            out = super().forward(*args, **kwargs)  # type: ignore[misc]
        return unit.post_forward(out)

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *,
                                   recurse: bool = True) -> None:
        """Off: backward passes accumulate gradients without averaging them (PyTorch's
        ``no_sync``); back on, the next backward averages the sum."""
        self.__dict__[UNIT].set_sync(requires_gradient_sync)

    def reshard(self) -> None:
        """Nothing to free: XLA gathers a sharded parameter only inside a program."""

    def unshard(self, async_op: bool = False) -> None:
        """Nothing to gather ahead of time (see ``reshard``)."""

    def _no_effect(self, *args: Any, **kwargs: Any) -> None:
        """Accepted; schedules memory or communication, which XLA decides here."""

    set_is_last_backward = set_reshard_after_forward = set_reshard_after_backward = _no_effect
    set_modules_to_forward_prefetch = set_modules_to_backward_prefetch = _no_effect
    set_requires_all_reduce = set_post_optim_event = set_gradient_divide_factor = _no_effect
    set_reduce_scatter_divide_factor = set_unshard_in_backward = _no_effect


_classes: dict[type, type] = {}


def _fsdp_class(cls: type) -> type:
    if cls not in _classes:
        _classes[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls),
                             {"__module__": cls.__module__})
    return _classes[cls]


def fully_shard(module: Any, *, mesh: Any = None, reshard_after_forward: Any = None,
                shard_placement_fn: Callable | None = None,
                mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(),
                ignored_params: set | None = None, dp_mesh_dims: Any = None) -> Any:
    """Shard ``module``'s parameters over every process (in place; returns ``module``).

    >>> import autograd_compile as acg
    >>> from autograd_compile.distributed.fsdp import fully_shard, FSDPModule
    >>> model = acg.nn.Sequential(acg.nn.Linear(4, 4), acg.nn.Linear(4, 2))
    >>> for layer in model:
    ...     _ = fully_shard(layer)
    >>> fully_shard(model) is model, isinstance(model, FSDPModule), type(model).__name__
    (True, True, 'FSDPSequential')
    """
    if isinstance(module, (list, tuple)):
        return [fully_shard(m, mesh=mesh, mp_policy=mp_policy) for m in module]
    if not isinstance(module, Module):
        raise TypeError(f"fully_shard: expected an nn.Module, got {type(module).__name__}")
    if not isinstance(module, FSDPModule):
        module.__class__ = _fsdp_class(type(module))
    old = unit_of(module)
    if old is not None:
        old.release()
    mesh = mesh if isinstance(mesh, jax.sharding.Mesh) else None
    unit = Unit(module, True, mp_policy.param_dtype, cast_root=mp_policy.cast_forward_inputs,
                cast_inner=mp_policy.cast_forward_inputs, output_dtype=mp_policy.output_dtype,
                mesh=mesh)
    object.__setattr__(module, UNIT, unit)
    unit.become_root()
    return module


__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "fully_shard"]
