"""One FSDP unit: a wrapped module, its mixed precision, and, while it is a root, the
``DistributedDataParallel`` that places its parameters and reduces their gradients.

PyTorch shards per unit; here one DDP over the root unit's whole module does it (every
parameter sharded over the mesh), so a unit nested in another is transparent: building
the outer unit releases what the inner one had set up (its gradient hooks), leaving only
its mixed-precision casts.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import jax
import numpy as np

from ...nn.module import Module
from ...nn.norm import _BatchNorm
from ...nn.parallel.distributed import DistributedDataParallel
from ...tensor import Tensor

UNIT = "_acg_fsdp_unit"  # the attribute (outside the module registries) that holds a Unit


def unit_of(module: Any) -> "Unit | None":
    return getattr(module, "__dict__", {}).get(UNIT)


class Unit:
    """What FullyShardedDataParallel (FSDP1) and ``fully_shard`` (FSDP2) share."""

    def __init__(self, module: Module, shard: bool, param_dtype: Any = None,
                 cast_root: bool = False, cast_inner: bool = False, output_dtype: Any = None,
                 mesh: Any = None) -> None:
        self.module, self.shard, self.mesh = module, shard, mesh
        self.param_dtype, self.output_dtype = param_dtype, output_dtype
        self.cast_root, self.cast_inner = cast_root, cast_inner
        self.ddp: DistributedDataParallel | None = None
        self.paused: Any = None  # an entered ddp.no_sync() while gradient sync is off

    # -- ownership -------------------------------------------------------------------
    def become_root(self) -> None:
        """Own the sharding of every parameter under ``module``: nested units let go."""
        for m in self.module.modules():
            inner = unit_of(m)
            if inner is not None and inner is not self:
                inner.release()
        self.ddp = DistributedDataParallel(self.module, self.mesh, shard_parameters=self.shard)

    def release(self) -> None:
        """Stop acting as a root: the outer unit's DDP reduces these gradients now."""
        ddp, self.ddp = self.ddp, None
        if ddp is None:
            return
        for handle in ddp._hook_handles:  # SPMD: the hooks that keep gradients sharded
            handle.remove()
        ddp._hook_handles.clear()
        sync = getattr(ddp, "_sync", None)
        if sync is not None:  # PyTorch-style DDP: its averaging hooks stay silent
            sync.enabled = False

    def require_root(self, what: str) -> DistributedDataParallel:
        if self.ddp is None:
            raise RuntimeError(f"`{what}` should only be called on the root FSDP instance")
        return self.ddp

    def set_sync(self, enabled: bool) -> None:
        """Gradient averaging on or off until changed again (FSDP2's
        ``set_requires_gradient_sync``), through DDP's ``no_sync``."""
        ddp = self.ddp
        if ddp is None:
            return
        if not enabled and self.paused is None:
            self.paused = ddp.no_sync()
            self.paused.__enter__()
        elif enabled and self.paused is not None:
            paused, self.paused = self.paused, None
            paused.__exit__(None, None, None)

    # -- forward ---------------------------------------------------------------------
    def pre_forward(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """DDP's part of a forward (the batch onto the mesh, or PyTorch-style DDP's check
        that the previous backward reduced every gradient) and the input casts."""
        if self.param_dtype is not None and (self.cast_root if self.ddp else self.cast_inner):
            args, kwargs = cast_floats((args, kwargs), self.param_dtype)
        ddp = self.ddp
        if ddp is None:
            return args, kwargs
        if ddp.spmd:
            return ddp._place_inputs(args, kwargs)
        ddp._sync.start()
        return args, kwargs

    def post_forward(self, out: Any) -> Any:
        return out if self.output_dtype is None else cast_floats(out, self.output_dtype)

    @contextlib.contextmanager
    def low_precision(self) -> Iterator[None]:
        """Inside: each floating parameter of ``module`` (batch norms' excepted) reads as
        its cast to ``param_dtype``; the cast is differentiable, so gradients reach the
        float32 parameters in float32."""
        dtype = self.param_dtype
        if dtype is None:
            yield
            return
        saved, cast = [], {}
        for m in self.module.modules():
            if isinstance(m, _BatchNorm):
                continue
            table = m.__dict__["_parameters"]
            for name, p in list(table.items()):
                if p is None or not p.is_floating_point() or p.dtype == dtype:
                    continue
                if id(p) not in cast:
                    cast[id(p)] = p.to(dtype)
                saved.append((table, name, p))
                table[name] = cast[id(p)]
        try:
            yield
        finally:
            for table, name, p in reversed(saved):
                table[name] = p


class FromRoot:
    """An attribute read from the unit's DDP while the unit is a root (what ``acg.compile``
    and the whole-step compile look for on a DDP); an AttributeError otherwise. Only
    ``__get__``: an instance attribute of the same name still wins."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        unit = unit_of(obj)
        if unit is None or unit.ddp is None:
            raise AttributeError(f"{self.attr!r}: not the root of an FSDP unit")
        return getattr(unit.ddp, self.attr)


def cast_floats(value: Any, dtype: Any) -> Any:
    """``value`` with every floating-point tensor in it cast to ``dtype``."""
    if isinstance(value, Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(cast_floats(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: cast_floats(v, dtype) for k, v in value.items()}
    return value


def full(t: Any) -> Any:
    """``t`` as one tensor on this process's first device (gathered from every device
    and process when it is split or spread over a mesh)."""
    if not isinstance(t, Tensor):
        return t
    a = t._data
    if not isinstance(a, jax.Array) or isinstance(a, jax.core.Tracer) or \
            len(a.sharding.device_set) == 1:
        return t
    if a.is_fully_addressable:
        value = np.asarray(a)
    else:  # parts on other processes: every process must call this (a collective)
        from jax.experimental import multihost_utils
        value = np.asarray(multihost_utils.process_allgather(a, tiled=True))
    return Tensor(jax.device_put(value, jax.local_devices()[0]))
