"""``torch.version`` and ``torch.__version__``: the PyTorch API level this package follows.

Programs branch on PyTorch's version (``version.parse(torch.__version__) >= "1.10"``), so
``__version__`` names the PyTorch release whose API we mirror, with our own version as
the local label: "2.13.0+acg.0.1.0". ``cuda`` is the CUDA version JAX was built with when
it has a GPU backend, else None, as in a CPU build of PyTorch (read on first use).

>>> import autograd_compile as acg
>>> acg.__version__ >= "2.0", acg.__version__ >= (2, 13), acg.__version__ < "3"
(True, True, True)
"""
from __future__ import annotations

import re
from importlib import metadata
from typing import Any

TORCH_API = "2.13.0"  # the PyTorch release whose names, signatures and defaults we follow


def _own_version() -> str:
    try:
        return metadata.version("autograd-compile")
    except metadata.PackageNotFoundError:  # run from a source tree without installing
        return "0+unknown"


class TorchVersion(str):
    """A version string that compares with strings and tuples by release numbers
    (PyTorch's ``torch.torch_version.TorchVersion``): "2.13.0+acg" > "2.9" > (2, 1)."""

    def __lt__(self, other: Any) -> bool:
        return _release(self) < _release(other)

    def __le__(self, other: Any) -> bool:
        return _release(self) <= _release(other)

    def __gt__(self, other: Any) -> bool:
        return _release(self) > _release(other)

    def __ge__(self, other: Any) -> bool:
        return _release(self) >= _release(other)

    def __eq__(self, other: Any) -> bool:
        return _release(self) == _release(other)

    __hash__ = str.__hash__


def _release(v: Any) -> tuple:
    """(major, minor, patch) of "2.13.0+x", "1.9", (2, 1) or a packaging Version, padded."""
    if isinstance(v, (tuple, list)):
        nums = [int(x) for x in v]
    else:
        release = getattr(v, "release", None)  # packaging.version.Version
        text = str(v) if release is None else ".".join(map(str, release))
        nums = [int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3]]
    return tuple(nums + [0] * (3 - len(nums)))


def _cuda() -> str | None:
    """"12.8" from a GPU backend's platform version ("cuda 12080"), else None."""
    try:
        import jax
        gpu = next((d for d in jax.devices() if d.platform == "gpu"), None)
    except Exception:  # no backend that can start
        return None
    if gpu is None:
        return None
    found = re.search(r"(\d{4,})", str(getattr(gpu.client, "platform_version", "")))
    if found is None:
        return "unknown"
    n = int(found.group(1))
    return f"{n // 1000}.{n % 1000 // 10}"


acg = _own_version()
__version__ = TorchVersion(f"{TORCH_API}+acg.{acg}")
hip: str | None = None
git_version = "unknown"
debug = False


def __getattr__(name: str) -> Any:
    """``cuda``, read on first use: asking JAX for its devices starts a backend, which
    importing the package must not do."""
    if name == "cuda":
        globals()["cuda"] = value = _cuda()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
