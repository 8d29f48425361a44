"""Devices: PyTorch's ``device("cpu" | "cuda" | "cuda:N")`` mapped onto JAX's devices.

"cpu" is ``jax.devices("cpu")[0]``; "cuda:N" is ``jax.devices("gpu")[N]``. A machine without
a GPU accepts ``device("cuda")`` as a name but raises when a tensor is put there.

>>> import autograd_compile as acg
>>> d = acg.device("cuda:1")
>>> d.type, d.index, str(d), repr(acg.device("cpu"))
('cuda', 1, 'cuda:1', "device(type='cpu')")
>>> acg.device("cpu") == acg.device("cpu"), acg.device("cpu") == "cpu"  # as PyTorch: no str
(True, False)
"""
from __future__ import annotations

import functools
from typing import Any

import jax

# the global random generator (one serves every device): kernels/random.py puts it here,
# so torch.cuda's seeding reaches it without devices importing kernels
GENERATOR: list = []
_TYPES = ("cpu", "cuda", "meta")  # meta: shapes without data (devices/meta.py)
_JAX_PLATFORM = {"cpu": "cpu", "cuda": "gpu"}


class device:  # noqa: N801  (PyTorch's name)
    """A device name: ``type`` ("cpu" or "cuda") and an optional ``index``.

    >>> import autograd_compile as acg
    >>> acg.device("cuda", 0) == acg.device("cuda:0"), acg.device("cpu").index
    (True, None)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: "str | device | int", index: int | None = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and not isinstance(type, bool):  # device(0) is cuda:0
            type, index = "cuda", type
        elif not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments: "
                            f"{type!r}")
        name, _, idx = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type, self.index = name, index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        extra = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{extra})"

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, device):  # PyTorch: device("cpu") == "cpu" is False
            return NotImplemented
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


def as_device(d: Any) -> device | None:
    """A ``device`` from a device, a string, an int (cuda index) or a jax Device; None stays."""
    if d is None or isinstance(d, device):
        return d
    if isinstance(d, jax.Device):
        return of_jax(d)
    return device(d)


def of_jax(d: Any) -> device:
    """The PyTorch name of a jax device (GPUs are "cuda")."""
    if d.platform == "cpu":
        return device("cpu")
    return device("cuda", _gpu_index(d))


def _gpu_index(d: Any) -> int:
    gpus = _jax_devices("gpu")
    return gpus.index(d) if d in gpus else d.id


@functools.cache
def _jax_devices(platform: str) -> list:
    """This process's jax devices of a platform ("cuda:N" is the N-th GPU of this process,
    as in PyTorch, also when several processes are joined); [] when it has none."""
    try:
        return list(jax.local_devices(backend=platform))
    except RuntimeError:
        return []


def to_jax(d: Any) -> Any:
    """The jax device a name maps to; RuntimeError (naming it) when there is no such device."""
    d = as_device(d)
    found = _jax_devices(_JAX_PLATFORM[d.type])
    if d.type == "cuda" and not found:
        raise RuntimeError(f"Torch not compiled with CUDA enabled: no CUDA (JAX 'gpu') device is "
                           f"available for device '{d}'; jax sees only {jax.devices()}")
    index = 0 if d.index is None else d.index
    if index >= len(found):
        raise RuntimeError(f"CUDA error: invalid device ordinal: device '{d}' requested but only "
                           f"{len(found)} {d.type} device(s) are available")
    return found[index]


def gpu_count() -> int:
    return len(_jax_devices("gpu"))
