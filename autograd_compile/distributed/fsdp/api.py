"""PyTorch FSDP's configuration records (``torch.distributed.fsdp.api``), with the same
names, members and defaults, so code that builds them runs unchanged. What each one does
here is said in its docstring; the options that only schedule memory, prefetching or
offloading in PyTorch are accepted and have no effect (XLA schedules the gathers)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Sequence


class ShardingStrategy(Enum):
    """``NO_SHARD``: parameters replicated (DDP). Every other strategy shards them
    (``DistributedDataParallel(shard_parameters=True)``): XLA gathers a parameter for
    compute and reduce-scatters its gradient, so ``FULL_SHARD``, ``SHARD_GRAD_OP`` and
    the hybrid ones differ only in when memory is freed, which XLA decides."""
    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """Accepted; no effect (XLA overlaps communication with compute on its own)."""
    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


@dataclass
class MixedPrecision:
    """``param_dtype``: the forward and backward compute with parameters cast to it,
    while the parameters (the optimizer's master copies) and their gradients stay in
    their own dtype (float32): the cast is part of the autograd graph, so the gradient
    arrives cast back. Floating-point arguments of the root's forward are cast too
    (``cast_root_forward_inputs``; ``cast_forward_inputs`` for inner units).
    ``reduce_dtype``, ``buffer_dtype`` and ``keep_low_precision_grads`` are accepted and
    have no effect: gradients are averaged in their own (float32) dtype, buffers keep
    theirs. Parameters of batch-norm layers are not cast, as PyTorch's default
    ``_module_classes_to_ignore``."""
    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True
    _module_classes_to_ignore: Sequence[type] = ()


@dataclass
class CPUOffload:
    """Accepted; no effect (parameters live where the device mesh puts them)."""
    offload_params: bool = False


class StateDictType(Enum):
    """Every type returns full (gathered) tensors under the original module's keys;
    ``LOCAL_STATE_DICT`` and ``SHARDED_STATE_DICT`` are accepted as aliases of
    ``FULL_STATE_DICT`` (a checkpoint here is one file, not one per rank)."""
    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class StateDictConfig:
    offload_to_cpu: bool = False


@dataclass
class FullStateDictConfig(StateDictConfig):
    """``rank0_only=True``: ranks other than 0 get an empty dict, as PyTorch's.
    ``offload_to_cpu``: the tensors are gathered to this process anyway."""
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    _use_dtensor: bool = False


@dataclass
class OptimStateDictConfig:
    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    rank0_only: bool = False


@dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    offload_to_cpu: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    _use_dtensor: bool = False


@dataclass
class StateDictSettings:
    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig


class OptimStateKeyType(Enum):
    PARAM_NAME = auto()
    PARAM_ID = auto()


__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "OptimStateDictConfig", "OptimStateKeyType", "ShardedOptimStateDictConfig",
           "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig",
           "StateDictSettings", "StateDictType"]
