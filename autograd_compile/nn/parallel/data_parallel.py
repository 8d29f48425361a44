"""``DataParallel``: PyTorch's single-process data parallelism, over this process's devices.

PyTorch's ``DataParallel`` copies the module to each GPU on every call, splits the batch,
runs the copies in threads and gathers the outputs on one device. Here the same request
is one SPMD program: with more than one local device the wrapper is
:class:`DistributedDataParallel` over a mesh of those devices (the batch split along
``dim``, parameters replicated, gradients reduced inside the program); with one device
(a CPU-only machine, as PyTorch without CUDA) it calls the module, as PyTorch's does.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from ..modules import Module


class DataParallel(Module):
    """Run ``module`` data-parallel over ``device_ids`` (default: every local device).

    ``module`` is the wrapped model (``state_dict`` keys gain the ``module.`` prefix, as
    in PyTorch); outputs equal the module's own. On the CPU ``device_ids`` is ``[]``.

    >>> import autograd_compile as acg
    >>> model = acg.nn.DataParallel(acg.nn.Linear(4, 2))
    >>> model(acg.ones(3, 4)).shape, list(model.state_dict())
    (acg.Size([3, 2]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected an nn.Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        devices = _devices(device_ids)
        accelerated = bool(devices) and devices[0].platform != "cpu"
        self.device_ids = [_index(d) for d in devices] if accelerated else []
        self.output_device = (_index(output_device) if output_device is not None else
                              self.device_ids[0] if self.device_ids else None)
        parallel = None
        if len(devices) > 1:  # one SPMD program over the devices (see the module docstring)
            from .distributed import DistributedDataParallel
            mesh = Mesh(np.array(devices, dtype=object), ("data",))
            parallel = DistributedDataParallel(module, mesh=mesh, dim=dim, spmd=True)
        object.__setattr__(self, "_parallel", parallel)  # (not a submodule: no second prefix)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._parallel is None:
            return self.module(*inputs, **kwargs)
        return self._parallel(*inputs, **kwargs)


def _devices(device_ids: Any) -> list:
    """The local devices named by ``device_ids`` (ints, ``acg.device``s, "cuda:N"), default all."""
    local = jax.local_devices()
    if device_ids is None:
        return list(local)
    return [local[_index(d)] for d in device_ids]


def _index(device: Any) -> int:
    """A device's local index: an int, an ``acg.device``/jax device, or "cuda:N"."""
    if isinstance(device, int):
        return device
    index = getattr(device, "index", None)
    if index is None:
        index = getattr(device, "id", None)
    if index is None and isinstance(device, str):
        index = int(device.rsplit(":", 1)[1]) if ":" in device else 0
    return int(index or 0)
