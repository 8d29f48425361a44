"""``FullyShardedDataParallel`` (PyTorch's FSDP1) on top of our ``DistributedDataParallel``.

The wrapper keeps PyTorch's shape (the module is the child ``_fsdp_wrapped_module``,
``.module`` returns it, missing attributes read through) but names nothing after it:
``state_dict()``, ``named_parameters()`` and ``named_modules()`` use the original module's
names at every nesting depth, which is what PyTorch's FULL_STATE_DICT gives.
"""
from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, Callable, Iterable, Iterator

import jax

from ...nn.module import Module
from ...nn.utils.clip_grad import clip_grad_norm_
from ...tensor import Tensor
from .api import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,
                  LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
                  OptimStateDictConfig, ShardedOptimStateDictConfig, ShardedStateDictConfig,
                  ShardingStrategy, StateDictConfig, StateDictSettings, StateDictType)
from ._unit import UNIT, FromRoot, Unit, full
from .wrap import _auto_wrap

_CONFIGS = {StateDictType.FULL_STATE_DICT: (FullStateDictConfig, FullOptimStateDictConfig),
            StateDictType.LOCAL_STATE_DICT: (LocalStateDictConfig, LocalOptimStateDictConfig),
            StateDictType.SHARDED_STATE_DICT: (ShardedStateDictConfig,
                                               ShardedOptimStateDictConfig)}
_building: list[int] = [0]  # > 0 while a root's auto-wrap builds its inner units


class FullyShardedDataParallel(Module):
    """PyTorch's FSDP: data parallel training with parameters, gradients and optimizer
    state sharded over the processes (see the package docstring for the mapping).

    >>> import autograd_compile as acg
    >>> from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    >>> model = FSDP(acg.nn.Sequential(acg.nn.Linear(4, 4), acg.nn.Linear(4, 2)))
    >>> list(model.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    True
    >>> model(acg.ones(3, 4)).sum().backward()
    >>> float(model.clip_grad_norm_(1.0)) > 0
    True
    """

    def __init__(self, module: Module, process_group: Any = None,
                 sharding_strategy: ShardingStrategy | None = None,
                 cpu_offload: CPUOffload | None = None, auto_wrap_policy: Any = None,
                 backward_prefetch: BackwardPrefetch | None = BackwardPrefetch.BACKWARD_PRE,
                 mixed_precision: MixedPrecision | None = None,
                 ignored_modules: Iterable[Module] | None = None,
                 param_init_fn: Callable[[Module], None] | None = None, device_id: Any = None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = True, use_orig_params: bool = False,
                 ignored_states: Any = None, device_mesh: Any = None) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel: expected an nn.Module, got "
                            f"{type(module).__name__}")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        mp = mixed_precision or MixedPrecision()
        _init_meta_parameters(module, param_init_fn)
        self._fsdp_wrapped_module = module
        for name, value in dict(
                sharding_strategy=strategy, mixed_precision=mixed_precision,
                cpu_offload=cpu_offload or CPUOffload(), backward_prefetch=backward_prefetch,
                forward_prefetch=forward_prefetch, limit_all_gathers=limit_all_gathers,
                _use_orig_params=use_orig_params, process_group=process_group,
                _state_dict_type=StateDictType.FULL_STATE_DICT,
                _state_dict_config=FullStateDictConfig(),
                _optim_state_dict_config=FullOptimStateDictConfig()).items():
            object.__setattr__(self, name, value)
        mesh = device_mesh if isinstance(device_mesh, jax.sharding.Mesh) else None
        object.__setattr__(self, UNIT, Unit(
            module, strategy is not ShardingStrategy.NO_SHARD, mp.param_dtype,
            cast_root=mp.cast_root_forward_inputs, cast_inner=mp.cast_forward_inputs, mesh=mesh))
        if auto_wrap_policy is not None:
            kwargs = dict(process_group=process_group, sharding_strategy=sharding_strategy,
                          cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
                          mixed_precision=mixed_precision, device_id=device_id,
                          forward_prefetch=forward_prefetch, use_orig_params=use_orig_params,
                          limit_all_gathers=limit_all_gathers, device_mesh=device_mesh)
            _building[0] += 1
            try:
                _auto_wrap(module, auto_wrap_policy, ignored_modules, FullyShardedDataParallel,
                           kwargs)
            finally:
                _building[0] -= 1
        if not _building[0]:  # built by the user: a root until an outer unit takes over
            self.__dict__[UNIT].become_root()

    # -- the wrapper's shape -------------------------------------------------------------
    @property
    def module(self) -> Module:
        """The wrapped module."""
        return self._modules["_fsdp_wrapped_module"]

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules", {})
            if name.startswith("__") or "_fsdp_wrapped_module" not in modules:
                raise
            return getattr(modules["_fsdp_wrapped_module"], name)

    def __getitem__(self, key: Any) -> Any:
        return self.module[key]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        unit = self.__dict__[UNIT]
        args, kwargs = unit.pre_forward(args, kwargs)
        with unit.low_precision():
            return self._fsdp_wrapped_module(*args, **kwargs)

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This wrapper, then the wrapped module's tree under the same prefix (no
        ``_fsdp_wrapped_module`` in any name)."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        yield from self.module.named_modules(memo, prefix, remove_duplicate)

    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Tensor]":
        """The wrapped module's state dict under its own keys, each tensor full (gathered
        over the mesh); with ``FullStateDictConfig(rank0_only=True)`` ranks other than 0
        get an empty dict (after taking part in the gather), as PyTorch's."""
        top = destination is None
        before = set(destination or ())
        out = self.module.state_dict(destination=destination, prefix=prefix,
                                     keep_vars=keep_vars)
        if not keep_vars:
            for key in [k for k in out if k not in before]:
                out[key] = full(out[key])
        if top and getattr(self._state_dict_config, "rank0_only", False) and \
                jax.process_index() != 0:
            return OrderedDict()
        return out

    def _plan_load(self, *args: Any) -> None:
        """Nothing of its own: the wrapped module, under the same prefix, loads the keys."""

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """Load a full state dict (the original module's keys); sharded parameters keep
        their placement on the mesh."""
        placed = [(t, t._data.sharding) for t in _tensors(self.module)]
        result = super().load_state_dict(state_dict, strict, assign)
        _restore_placement(placed)
        return result

    # -- PyTorch FSDP's methods -----------------------------------------------------------
    def check_is_root(self) -> bool:
        return self.__dict__[UNIT].ddp is not None

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Gradient accumulation without averaging; the first backward after the context
        averages the sum (root only, as PyTorch's)."""
        with self.__dict__[UNIT].require_root("no_sync()").no_sync():
            yield

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Tensor:
        """Clip the gradients of every parameter to a total ``norm_type``-norm of at most
        ``max_norm``; returns the total norm over all shards (root only)."""
        self.__dict__[UNIT].require_root("clip_grad_norm_()")
        return clip_grad_norm_(list(self.parameters()), max_norm, norm_type)

    @staticmethod
    def fsdp_modules(module: Module, root_only: bool = False) -> list["FullyShardedDataParallel"]:
        found = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        return [m for m in found if m.check_is_root()] if root_only else found

    @staticmethod
    def set_state_dict_type(module: Module, state_dict_type: StateDictType,
                            state_dict_config: StateDictConfig | None = None,
                            optim_state_dict_config: OptimStateDictConfig | None = None
                            ) -> StateDictSettings:
        """Set the state-dict type of every FSDP unit in ``module``; returns the previous."""
        config_type, optim_type = _CONFIGS[state_dict_type]
        state_dict_config = state_dict_config or config_type()
        optim_state_dict_config = optim_state_dict_config or optim_type()
        if type(state_dict_config) is not config_type:
            raise RuntimeError(f"Expected state_dict_config of type {config_type} but got "
                               f"{type(state_dict_config)}")
        previous = FullyShardedDataParallel.get_state_dict_type(module)
        for m in FullyShardedDataParallel.fsdp_modules(module):
            object.__setattr__(m, "_state_dict_type", state_dict_type)
            object.__setattr__(m, "_state_dict_config", state_dict_config)
            object.__setattr__(m, "_optim_state_dict_config", optim_state_dict_config)
        return previous

    @staticmethod
    def get_state_dict_type(module: Module) -> StateDictSettings:
        units = FullyShardedDataParallel.fsdp_modules(module)
        if not units:
            return StateDictSettings(StateDictType.FULL_STATE_DICT, FullStateDictConfig(),
                                     FullOptimStateDictConfig())
        m = units[0]
        return StateDictSettings(m._state_dict_type, m._state_dict_config,
                                 m._optim_state_dict_config)

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module: Module, state_dict_type: StateDictType,
                        state_dict_config: StateDictConfig | None = None,
                        optim_state_dict_config: OptimStateDictConfig | None = None
                        ) -> Iterator[None]:
        """``set_state_dict_type`` for the duration of the context."""
        previous = FullyShardedDataParallel.set_state_dict_type(
            module, state_dict_type, state_dict_config, optim_state_dict_config)
        try:
            yield
        finally:
            FullyShardedDataParallel.set_state_dict_type(module, *previous.__dict__.values())

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module: Module, recurse: bool = True, writeback: bool = True,
                           rank0_only: bool = False, offload_to_cpu: bool = False,
                           with_grads: bool = False) -> Iterator[None]:
        """Parameters read as full tensors inside, which they always do here (a sharded
        parameter is one global array); changes made inside persist (``writeback``)."""
        yield

    @staticmethod
    def optim_state_dict(model: Module, optim: Any, optim_state_dict: dict | None = None,
                         group: Any = None) -> dict:
        """The optimizer's state dict keyed by parameter names (the original module's),
        each tensor full; empty on ranks other than 0 under ``rank0_only``."""
        names = {id(p): n for n, p in model.named_parameters()}
        sd = optim_state_dict if optim_state_dict is not None else optim.state_dict()
        name_of = {i: names[pid] for i, pid in enumerate(_param_ids(optim))}
        out = {"state": {name_of[i]: {k: full(v) for k, v in s.items()}
                         for i, s in sd["state"].items()},
               "param_groups": [{**g, "params": [name_of[i] for i in g["params"]]}
                                for g in sd["param_groups"]]}
        config = FullyShardedDataParallel.get_state_dict_type(model).optim_state_dict_config
        if getattr(config, "rank0_only", False) and jax.process_index() != 0:
            return {}
        return out

    @staticmethod
    def optim_state_dict_to_load(model: Module, optim: Any, optim_state_dict: dict,
                                 is_named_optimizer: bool = False, load_directly: bool = False,
                                 group: Any = None) -> dict:
        """The inverse of :meth:`optim_state_dict`: names back to the optimizer's indices."""
        position = {pid: i for i, pid in enumerate(_param_ids(optim))}
        index = {n: position[id(p)] for n, p in model.named_parameters() if id(p) in position}
        out = {"state": {index[n]: dict(s) for n, s in optim_state_dict["state"].items()},
               "param_groups": [{**g, "params": [index[n] for n in g["params"]]}
                                for g in optim_state_dict["param_groups"]]}
        if load_directly:
            optim.load_state_dict(out)
        return out

    @staticmethod
    def full_optim_state_dict(model: Module, optim: Any, optim_input: Any = None,
                              rank0_only: bool = True, group: Any = None) -> dict:
        """PyTorch's older API: the optimizer's own state dict (keyed by index), full
        tensors, on rank 0 only unless ``rank0_only=False``."""
        sd = optim.state_dict()
        sd = {"state": {i: {k: full(v) for k, v in s.items()} for i, s in sd["state"].items()},
              "param_groups": sd["param_groups"]}
        return {} if rank0_only and jax.process_index() != 0 else sd

    @staticmethod
    def shard_full_optim_state_dict(full_optim_state_dict: dict, model: Module,
                                    optim_input: Any = None, optim: Any = None) -> dict:
        """Nothing to split: each rank loads the full optimizer state (placed by the step)."""
        return full_optim_state_dict

    scatter_full_optim_state_dict = shard_full_optim_state_dict

    # what acg.compile and the whole-step compile read from a DDP: the root's
    spmd, mesh, _to_mesh = FromRoot("spmd"), FromRoot("mesh"), FromRoot("_to_mesh")
    _place_inputs = FromRoot("_place_inputs")


def _init_meta_parameters(module: Module, param_init_fn: Callable | None) -> None:
    """PyTorch's ``param_init_fn``: called on each submodule whose own parameters or
    buffers are still on the meta device."""
    if param_init_fn is None:
        return
    for m in list(module.modules()):
        own = list(m.parameters(recurse=False)) + list(m.buffers(recurse=False))
        if any(str(getattr(t, "device", "")) == "meta" for t in own):
            param_init_fn(m)


def _param_ids(optim: Any) -> list[int]:
    """The optimizer's parameters in its state-dict order (each once), by id."""
    return list(dict.fromkeys(id(p) for g in optim.param_groups for p in g["params"]))


def _tensors(module: Module) -> list[Tensor]:
    return [t for _, t in module.named_parameters()] + \
        [t for _, t in module.named_buffers() if isinstance(t, Tensor)]


def _restore_placement(placed: list[tuple[Tensor, Any]]) -> None:
    """Tensors a load moved off their mesh placement go back to it."""
    moved = [(t, s) for t, s in placed if len(s.device_set) > 1 and t._data.sharding != s]
    if not moved:
        return
    from ...distributed._placement import place_many
    arrays = place_many([t._data for t, _ in moved], [s for _, s in moved])
    for (t, _), a in zip(moved, arrays):
        t._set_data(a, bump=False)


__all__ = ["FullyShardedDataParallel"]
