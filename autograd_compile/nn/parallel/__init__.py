"""Data-parallel wrappers: ``DistributedDataParallel`` over a JAX device mesh."""
