"""Data-parallel wrappers: ``DistributedDataParallel`` over a JAX device mesh."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
