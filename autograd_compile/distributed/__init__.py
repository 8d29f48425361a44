"""Training beyond one device on JAX's distributed runtime (DESIGN §10).

A tutorial in four steps. JAX already is a distributed engine: a *global* array is
split over a *mesh* of devices, each op is compiled once for the whole mesh (SPMD)
and XLA inserts the collectives. Our tensors wrap such arrays, so data parallelism is
placement plus PyTorch's names.

1. Join the processes (one per host, or several per host with the launcher)::

       import autograd_compile as acg
       import autograd_compile.distributed as dist
       dist.init()                      # reads MASTER_ADDR/PORT, WORLD_SIZE, RANK
       rank, world = dist.get_rank(), dist.get_world_size()

   In one process ``init()`` needs no coordinator; all local devices serve (on CPU,
   ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` makes 8 of them).

2. Build a mesh over every device of every process and place data on it::

       mesh = dist.device_mesh()                  # axis "data" over all devices
       x = dist.shard(x_local, mesh)              # this process's rows -> global batch
       w = dist.replicate(w, mesh)                # the same value on every device

3. Wrap the model: parameters are replicated from rank 0 (or sharded, FSDP-style)
   and the gradient of the loss over the global batch comes out reduced::

       model = acg.nn.parallel.DistributedDataParallel(model, mesh)
       loss = F.mse_loss(model(x_local), dist.shard(y_local, mesh))
       with acg.compiled_autograd.enable("jax"):  # one SPMD program, all-reduce inside
           loss.backward()

4. Launch N processes like ``torchrun``::

       python -m autograd_compile launch --nproc 2 train.py --epochs 3

``get_rank``/``get_world_size`` count processes and raise ``ValueError`` before
``init()``, as PyTorch does; ``device_mesh().size`` counts devices.

Every op works on a global array that spans processes: checks that read values run on
each process's own shards (``kernels/_host.py``), and ``loss.item()`` returns the global
value of a replicated result (a mean over the global batch) on every rank.

A PyTorch program ported by the import change joins with ``init_process_group``; its
``DistributedDataParallel`` is then PyTorch's (each process's own batch, gradients
averaged after backward), and ``all_reduce``, ``broadcast``, ``all_gather``,
``all_gather_into_tensor`` and ``reduce_scatter_tensor`` combine per-process tensors.
"""
from ._collectives import ReduceOp, all_reduce
from ._collectives import (Work, all_gather, all_gather_into_tensor, broadcast,  # noqa: E402
                           reduce_scatter_tensor)
from ._placement import device_mesh, replicate, shard
from ._runtime import (barrier, destroy_process_group, get_local_rank, get_rank,
                       get_world_size, init, init_process_group, is_available,
                       is_initialized)

__all__ = ["ReduceOp", "all_reduce", "barrier", "destroy_process_group", "device_mesh",
           "get_local_rank", "get_rank", "get_world_size", "init", "init_process_group",
           "is_available", "is_initialized", "replicate", "shard",
           "Work", "all_gather", "all_gather_into_tensor", "broadcast", "reduce_scatter_tensor",
           "fsdp"]


def __getattr__(name: str) -> object:
    """``fsdp`` (PyTorch's ``torch.distributed.fsdp``) loads on first use."""
    if name == "fsdp":
        import importlib
        return importlib.import_module(f"{__name__}.fsdp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
