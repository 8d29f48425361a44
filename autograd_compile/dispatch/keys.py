"""Dispatch keys and the thread-local dispatch state.

Keys are bit positions in a key set; the highest set bit picks the kernel:

    Autocast > PythonMode > Python > Autograd > Fake > Backend

Autocast is on only while ``acg.autocast`` is active (a thread-local included key):
its casts go down through every other key, so modes, tracers and autograd see them.

``CompositeImplicitAutograd`` is an alias: a kernel registered there serves
Autograd, Fake and Backend when no kernel of their own is registered.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from enum import IntEnum
from typing import Iterator


class DispatchKey(IntEnum):
    Backend = 0
    Fake = 1
    Autograd = 2
    Python = 3
    PythonMode = 4
    Autocast = 5

    @property
    def bit(self) -> int:
        return 1 << self.value


COMPOSITE = "CompositeImplicitAutograd"
KEY_NAMES = {k.name: k for k in DispatchKey} | {"Meta": DispatchKey.Fake, "JAX": DispatchKey.Backend}
ALIAS_COVERS = (DispatchKey.Autograd, DispatchKey.Fake, DispatchKey.Backend)
ALL_KEYS = tuple(sorted(DispatchKey, reverse=True))
PYTHON_KEYS = DispatchKey.Python.bit | DispatchKey.PythonMode.bit


def parse_key(key: str | DispatchKey) -> DispatchKey | str:
    """A key name (or the alias name) to its canonical form; error names the choices."""
    if isinstance(key, DispatchKey) or key == COMPOSITE:
        return key
    try:
        return KEY_NAMES[key]
    except KeyError:
        raise ValueError(f"unknown dispatch key {key!r}; expected one of "
                         f"{sorted(KEY_NAMES) + [COMPOSITE]}") from None


class _DispatchState(threading.local):
    """Per-thread state read on every op call (kept flat for speed)."""

    def __init__(self) -> None:
        self.grad_enabled = True
        self.mode_stack: list = []
        self.included = 0  # keys forced on (e.g. Fake under FakeTensorMode)
        self.excluded = 0  # keys forced off (e.g. Python keys under no_dispatch)
        self.inference = False  # inside inference_mode(): new tensors are inference tensors


TLS = _DispatchState()
# inference_mode(True) contexts open on any thread: while 0, a new tensor does not read
# TLS.inference (a thread-local read on every tensor made); changed under its lock
INFERENCE_OPEN = [0]
INFERENCE_LOCK = threading.Lock()


@contextmanager
def exclude_keys(mask: int) -> Iterator[None]:
    """Turn the keys in ``mask`` off for ops called inside the block."""
    old = TLS.excluded
    TLS.excluded = old | mask
    try:
        yield
    finally:
        TLS.excluded = old


@contextmanager
def include_keys(mask: int) -> Iterator[None]:
    """Force the keys in ``mask`` on for ops called inside the block."""
    old = TLS.included
    TLS.included = old | mask
    try:
        yield
    finally:
        TLS.included = old
