"""PyTorch's ``torch.distributed.fsdp`` on our sharded ``DistributedDataParallel``.

PyTorch's FSDP flattens each unit's parameters, keeps 1/N of them per rank, all-gathers
a unit before its forward and backward and reduce-scatters its gradients, all from
hooks. Here a parameter is one global JAX array: ``DistributedDataParallel(module,
shard_parameters=True)`` splits it over the device mesh and XLA inserts the gathers and
reduce-scatters into the compiled programs (DESIGN §10). So::

    FSDP(model)                                  # FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD
      = DDP(model, shard_parameters=True)        # parameters and optimizer state sharded
    FSDP(model, sharding_strategy=NO_SHARD)
      = DDP(model)                               # replicated

How a program runs depends on how it joined, as for DDP:

- ``acg.distributed.init()`` (SPMD): each tensor argument of the forward is this
  process's part of the global batch; parameters, gradients and optimizer state are
  split over every device of every process (1/N of the memory per device).
- ``init_process_group(...)`` (a ported PyTorch program): each process runs on its own
  batch and gradients are averaged after backward, exactly as PyTorch's FSDP computes;
  each process keeps full parameters (our PyTorch-style DDP does not shard yet), so the
  results are PyTorch's and the memory is DDP's.

What PyTorch programs rely on is kept: ``state_dict()`` keys are the original module's
(``FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(
offload_to_cpu=True, rank0_only=True))`` gives rank 0 the full dict, the others an
empty one), a full state dict loads back into the FSDP model or into the plain model,
``model.clip_grad_norm_(max_norm)`` returns the total norm over all shards, ``no_sync()``
accumulates, ``summon_full_params``, ``optim_state_dict``, ``.module``.

Nesting. ``auto_wrap_policy`` (``fsdp.wrap``) and ``wrap()`` make inner units as
PyTorch's do, but the outermost unit owns the sharding of every parameter under it;
inner units are transparent wrappers (their mixed precision still applies). Names never
show the wrapper: ``named_parameters()`` and ``named_modules()`` give the original
module's names (PyTorch adds ``_fsdp_wrapped_module.`` outside ``summon_full_params``;
code that strips it keeps working).

Options that only schedule memory, prefetching or offloading in PyTorch (``cpu_offload``,
``backward_prefetch``, ``forward_prefetch``, ``limit_all_gathers``, ``device_id``,
``process_group``, ``use_orig_params``, FSDP2's ``reshard_after_forward`` and
``offload_policy``) are accepted and have no effect. ``MixedPrecision(param_dtype=...)``
computes the forward and backward in ``param_dtype`` with float32 parameters
(see :class:`MixedPrecision` for the rest).

FSDP2: ``fully_shard(module)`` converts ``module`` in place (its class becomes
``FSDP<Class>``) and returns it; the last (outermost) call owns the sharding.

>>> import autograd_compile as acg
>>> from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
>>> model = FSDP(acg.nn.Linear(4, 2))
>>> model.module.__class__.__name__, [n for n, _ in model.named_parameters()]
('Linear', ['weight', 'bias'])
"""
from ._fully_shard import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy,
                           fully_shard)
from .api import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,
                  LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
                  OptimStateDictConfig, OptimStateKeyType, ShardedOptimStateDictConfig,
                  ShardedStateDictConfig, ShardingStrategy, StateDictConfig, StateDictSettings,
                  StateDictType)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["BackwardPrefetch", "CPUOffload", "CPUOffloadPolicy", "FSDPModule",
           "FullOptimStateDictConfig", "FullStateDictConfig", "FullyShardedDataParallel",
           "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "MixedPrecisionPolicy", "OffloadPolicy", "OptimStateDictConfig",
           "OptimStateKeyType", "ShardedOptimStateDictConfig", "ShardedStateDictConfig",
           "ShardingStrategy", "StateDictConfig", "StateDictSettings", "StateDictType",
           "fully_shard"]
