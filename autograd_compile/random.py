"""``torch.random``: the global generator's seed and state, and ``fork_rng``.

>>> import autograd_compile as acg
>>> _ = acg.random.manual_seed(0)
>>> with acg.random.fork_rng():
...     inside = acg.rand(2).tolist()
>>> acg.rand(2).tolist() == inside  # the fork's draws did not advance the global state
True
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from .kernels.api import initial_seed, manual_seed
from .kernels.api_select import get_rng_state, seed, set_rng_state
from .kernels.random import default_generator

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng",
           "default_generator"]


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Inside, draw freely; on exit the global random state is what it was (one generator
    serves every device here, so ``devices`` and ``device_type`` change nothing)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
