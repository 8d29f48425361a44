"""Compiler backends for compiled autograd: ``get("eager")`` and ``get("jax")``.

A backend is a ``compiler_fn``: it takes the captured GraphModule and returns a
callable with the graph's signature ``(inputs, sizes, scalars, hooks, leaves)``.

>>> from autograd_compile import backends
>>> sorted(backends.BACKENDS)
['eager', 'jax']
"""
from __future__ import annotations

from typing import Callable

from ..compiled_autograd import register_backend
from . import cuda, cudnn, mps  # PyTorch's torch.backends.* switches
from .eager import eager
from .jax import jax_backend

BACKENDS: dict[str, Callable] = {"eager": eager, "jax": jax_backend}
for _name, _fn in BACKENDS.items():  # enable("jax") resolves through compiled autograd's registry
    register_backend(_name, _fn)


def get(name: str) -> Callable:
    """The built-in compiler_fn called ``name``."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown compiled-autograd backend {name!r}; choose one of "
                         f"{sorted(BACKENDS)} or pass a callable compiler_fn") from None


__all__ = ["BACKENDS", "get", "eager", "jax_backend"]
