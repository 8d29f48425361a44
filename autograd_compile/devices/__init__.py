"""Devices: one model of where tensors live, shared by ``acg.device``, ``acg.cuda``,
``acg.cpu`` and ``acg.accelerator``.

PyTorch names devices ``"cpu"``, ``"cuda"``, ``"cuda:N"``; a tensor here is a jax.Array, so a
device is a JAX device: ``"cpu"`` is ``jax.devices("cpu")[0]`` and ``"cuda:N"`` is
``jax.devices("gpu")[N]``. :mod:`.model` holds that mapping (:class:`~.model.device`,
``to_jax``, ``of_jax``, ``as_device``, ``gpu_count``); the public modules PyTorch programs
query are thin views of it: :mod:`.cuda` (``torch.cuda``), :mod:`.cpu` (``torch.cpu``) and
:mod:`.accelerator` (``torch.accelerator``), importable as ``autograd_compile.cuda`` and so on.
As in PyTorch, the default device is the CPU until a program moves a tensor elsewhere.

>>> import autograd_compile as acg
>>> acg.device("cuda:0").type, acg.cuda.is_available() == (acg.devices.gpu_count() > 0)
('cuda', True)
"""
from __future__ import annotations

from .model import as_device, device, gpu_count, of_jax, to_jax
from . import accelerator, cpu, cuda

__all__ = ["device", "as_device", "of_jax", "to_jax", "gpu_count", "cuda", "cpu", "accelerator"]
