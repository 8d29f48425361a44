"""``acg.multiprocessing``: Python's ``multiprocessing`` with PyTorch's additions (``spawn``,
``start_processes``, ``ProcessContext``, sharing strategies).

Tensors cross processes by pickling (their values travel; PyTorch shares storage in shared
memory instead, so an in-place change in one process is not seen by another here). Prefer the
``spawn`` start method: JAX is multithreaded and a forked child deadlocks in its first
computation.

>>> import autograd_compile.multiprocessing as mp
>>> mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
True
>>> mp.Queue is not None and mp.get_context("spawn").get_start_method()
'spawn'
"""
from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (everything programs reach as torch.multiprocessing.X)

from .spawn import (ProcessContext, ProcessException, ProcessExitedException,
                    ProcessRaisedException, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException", *_mp.__all__]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how tensors are shared (recorded; values are pickled either way)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_STRATEGIES}")
    _strategy = new_strategy


def get_sharing_strategy() -> str:
    """The strategy set by ``set_sharing_strategy`` (``'file_descriptor'`` by default)."""
    return _strategy


def get_all_sharing_strategies() -> set[str]:
    """The strategies this platform supports."""
    return set(_STRATEGIES)
