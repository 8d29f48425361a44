"""``acg.cuda``: what PyTorch programs ask about CUDA, answered from JAX's GPU devices.

>>> import autograd_compile as acg
>>> acg.cuda.is_available() == (acg.cuda.device_count() > 0)
True
"""
from __future__ import annotations

from typing import Any

from .model import GENERATOR, as_device, gpu_count, to_jax


def is_available() -> bool:
    """True when JAX sees at least one GPU."""
    return gpu_count() > 0


def device_count() -> int:
    """How many GPUs JAX sees (0 on a CPU-only machine)."""
    return gpu_count()


def current_device() -> int:
    """The index :func:`set_device` chose (0 by default); RuntimeError without a GPU."""
    to_jax("cuda")
    return _current["index"]


def get_device_name(device: Any = None) -> str:
    """The GPU's name as JAX reports it."""
    return to_jax("cuda" if device is None else device).device_kind


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True on a GPU (XLA runs bfloat16 on every GPU it supports); False without one."""
    return is_available()


def manual_seed(seed: int) -> None:
    """Seed the random state (one generator serves every device, as ``acg.manual_seed``)."""
    GENERATOR[0].manual_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    """Seed the random state from the operating system (the one generator of every device)."""
    GENERATOR[0].seed()


seed_all = seed


def initial_seed() -> int:
    return GENERATOR[0].initial_seed()


def get_rng_state(device: Any = "cuda") -> Any:
    """The random state (one generator serves every device: ``acg.get_rng_state()``)."""
    return GENERATOR[0].get_state()


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    GENERATOR[0].set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state() for _ in range(max(device_count(), 1))]


def set_rng_state_all(new_states: Any) -> None:
    for state in list(new_states)[:1]:
        set_rng_state(state)


def empty_cache() -> None:
    """Nothing to release: JAX frees a buffer when its last array goes."""


def _memory(key: str, device: Any = None) -> int:
    """A GPU memory statistic from JAX's allocator (0 without a GPU, as PyTorch's CPU
    build reports)."""
    if not is_available():
        return 0
    stats = to_jax("cuda" if device is None else device).memory_stats() or {}
    return int(stats.get(key, 0))


def memory_allocated(device: Any = None) -> int:
    return _memory("bytes_in_use", device)


def max_memory_allocated(device: Any = None) -> int:
    return _memory("peak_bytes_in_use", device)


def memory_reserved(device: Any = None) -> int:
    return _memory("bytes_reserved", device) or _memory("bytes_limit", device)


max_memory_reserved = memory_reserved


def reset_peak_memory_stats(device: Any = None) -> None:
    """JAX keeps its peak for the process: nothing to reset (a no-op, as on CPU)."""


reset_max_memory_allocated = reset_peak_memory_stats


def synchronize(device: Any = None) -> None:
    """Wait for the GPU's pending work (JAX: block on every live array of that device)."""
    import jax
    for a in jax.live_arrays():
        if device is None or to_jax(device) in a.devices():
            a.block_until_ready()


__all__ = ["is_available", "is_bf16_supported", "device_count", "current_device", "get_device_name", "manual_seed",
           "manual_seed_all", "synchronize", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "empty_cache",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated"]


# -- area dist2: set_device, as torchrun-style programs call it before init_process_group ----
_current = {"index": 0}


def set_device(device: Any) -> None:
    """Select this process's GPU (an index, ``"cuda:N"`` or a ``device``), as
    ``torch.cuda.set_device``; a non-CUDA device raises ``ValueError``.

    DDP scripts call it before ``init_process_group``, when JAX's runtime must not start
    yet (joining the other processes has to come first): the index is then recorded and
    checked when a tensor is put on "cuda". Once the runtime runs it is checked at once.

    >>> import autograd_compile as acg
    >>> acg.cuda.set_device("cpu")
    Traceback (most recent call last):
    ValueError: Expected a cuda device, but got: cpu
    """
    from ..distributed._runtime import _jax_started
    d = as_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    index = 0 if d.index is None else d.index
    if index < 0:  # PyTorch: a negative index leaves the device as it is
        return
    if _jax_started():
        to_jax(d)
    _current["index"] = index


__all__ += ["set_device"]
