"""Data-parallel wrappers: ``DistributedDataParallel`` over a JAX device mesh, and
``DataParallel`` over this process's devices."""
from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
