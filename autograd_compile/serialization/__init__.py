"""Checkpoints that move between PyTorch and autograd_compile: ``save`` and ``load``.

``acg.save`` writes PyTorch's zip layout (``archive/data.pkl``, tensors named by the globals
``torch.load(weights_only=True)`` admits, plus one 64-byte aligned entry of raw bytes per
tensor), so PyTorch reads our checkpoints; any other picklable object (an
``argparse.Namespace``, numpy arrays, a dataclass) is pickled as ``torch.save`` pickles it.
``acg.load`` reads PyTorch's zip and legacy formats, our earlier JSON format (version 1) and
``.safetensors`` files. ``weights_only=True`` (the default, as PyTorch 2.6's) runs no code from
the file: only tensors, containers and the globals added with :func:`add_safe_globals` load
(:mod:`.pickle_read`); ``weights_only=False`` unpickles fully, as ``torch.load`` does, so use
it only for files you trust. A whole ``nn.Module`` saves as its class path plus its state
and loads only with ``weights_only=False`` (:mod:`.modules`). Saving to a path is atomic: a
temporary file in the same folder, fsync, then rename.

>>> import io, autograd_compile as acg
>>> buf = io.BytesIO()
>>> acg.save({"w": acg.ones(2, dtype=acg.bfloat16), "step": 3, "betas": (0.9, 0.99)}, buf)
>>> _ = buf.seek(0); ckpt = acg.load(buf)
>>> ckpt["w"].dtype, ckpt["step"], ckpt["betas"]
(torch.bfloat16, 3, (0.9, 0.99))
"""
from __future__ import annotations

import inspect
import io
import os
import pickletools
import tempfile
import zipfile
from typing import IO, Any, Callable

import jax
import numpy as np

from . import allowlist, modules, pickle_read, torch_format, v1
from .allowlist import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from .pickle_read import MissingGlobal, Refused

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint"]

FileLike = str | os.PathLike | IO[bytes]
_CUDA_MISSING = ("Attempting to deserialize object on a CUDA device but acg.cuda.is_available() "
                 "is False. If you are running on a CPU-only machine, please use acg.load with "
                 "map_location=acg.device('cpu') to map your storages to the CPU.")


# -- save ----------------------------------------------------------------------------------------
class _Writer(torch_format.TorchZipWriter):
    """PyTorch's tensors, plus whole modules and this package's functions by name."""

    def save_special(self, obj: Any, where: str) -> bool:
        from ..nn import Module
        if super().save_special(obj, where):
            return True
        if isinstance(obj, Module):
            cls = type(obj)
            self.reduce(modules.HERE, "rebuild_module", lambda: self.tuple_of(
                [cls.__module__, cls.__qualname__, modules.module_attrs(obj)], where))
            self.put(obj)
            return True
        if modules.is_package_global(obj):
            self.reduce(modules.HERE, "package_global",
                        lambda: self.tuple_of([obj.__module__, obj.__qualname__], where))
            return True
        return False


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False
         ) -> None:
    """Write ``obj`` in PyTorch's checkpoint format to a path (atomically) or a binary file.

    >>> import io, autograd_compile as acg
    >>> buf = io.BytesIO(); acg.save([acg.tensor([1, 2])], buf); _ = buf.seek(0)
    >>> acg.load(buf)[0].tolist()
    [1, 2]
    """
    if str(f).endswith(".safetensors") and isinstance(f, (str, os.PathLike)):
        from . import safetensors_io
        return _atomic(f, lambda fh: fh.write(safetensors_io.dumps(obj)))
    writer = _Writer()
    writer.save(obj)  # errors (unsavable objects) before any file is touched
    writer.stop()
    if isinstance(f, (str, os.PathLike)):
        _atomic(f, lambda fh: torch_format.write_zip(fh, writer))
    else:
        torch_format.write_zip(f, writer)


def _atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], Any]) -> None:
    """Write to a temporary file beside ``path``, fsync, rename over it: a save killed halfway
    leaves the old file whole."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:  # the rename itself survives a crash once the folder is synced
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


# -- load ----------------------------------------------------------------------------------------
def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any
         ) -> Any:
    """Read a checkpoint written by ``acg.save`` or ``torch.save`` (zip or legacy format), or
    a ``.safetensors`` file.

    ``map_location``: None (each tensor where it was saved, as PyTorch), ``"cpu"``,
    ``"cuda[:i]"``, an ``acg.device`` or jax Device, a dict from saved location to location,
    or PyTorch's ``fn(storage, location)``. ``weights_only`` (default True) admits tensors,
    containers, numbers, strings and the globals added with :func:`add_safe_globals`, and
    refuses anything else with PyTorch's message; ``weights_only=False`` unpickles anything,
    as ``torch.load`` (the file can run code: trusted files only). A damaged or foreign file
    raises ``RuntimeError`` naming it.

    >>> import io, argparse, numpy as np, autograd_compile as acg
    >>> buf = io.BytesIO(); acg.save({"args": argparse.Namespace(lr=0.1), "m": np.ones(2)}, buf)
    >>> _ = buf.seek(0); ck = acg.load(buf, weights_only=False)
    >>> ck["args"].lr, type(ck["m"]).__name__
    (0.1, 'ndarray')
    """
    weights_only = True if weights_only is None else bool(weights_only)
    name = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", repr(f))
    place = placement(map_location)
    table = modules.load_table(weights_only)
    if weights_only:
        allowlist.user_table()  # a malformed add_safe_globals entry fails here, as PyTorch's
    try:
        if isinstance(f, (str, os.PathLike)) and str(f).endswith(".safetensors"):
            from . import safetensors_io
            with open(f, "rb") as fh:
                return safetensors_io.loads(fh.read(), place)
        with v1._open(f, "rb") as fh:
            head = fh.read(16)
            fh.seek(-len(head), os.SEEK_CUR)
            if torch_format.is_legacy(head):
                return torch_format.read_legacy(fh, place, table, weights_only=weights_only)
            with zipfile.ZipFile(fh) as zf:
                if v1.STRUCTURE in zf.namelist():
                    return v1.read(zf, lambda a: place(np.asarray(a), "cpu"))
                mm = os.fspath(f) if mmap and isinstance(f, (str, os.PathLike)) else None
                return torch_format.read_zip(zf, place, table, mm, weights_only=weights_only)
    except (Refused, MissingGlobal, NotImplementedError, FileNotFoundError, ImportError):
        raise
    except RuntimeError as e:
        if str(e).startswith("Attempting to deserialize"):
            raise
        raise _corrupt(name, e) from e
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError, TypeError,
            IndexError, AttributeError, __import__("pickle").UnpicklingError,
            __import__("struct").error) as e:
        raise _corrupt(name, e) from e


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals a zip checkpoint names that ``load(f, weights_only=True)`` would refuse:
    the ones to pass to :func:`add_safe_globals` once you trust them (read, never run).

    >>> import io, argparse, autograd_compile as acg
    >>> buf = io.BytesIO(); acg.save({"args": argparse.Namespace(), "w": acg.ones(1)}, buf)
    >>> acg.serialization.get_unsafe_globals_in_checkpoint(buf)
    ['argparse.Namespace']
    """
    with v1._open(f, "rb") as fh:
        fh.seek(0)
        with zipfile.ZipFile(fh) as zf:
            pkl = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
            if not pkl:
                raise ValueError("get_unsafe_globals_in_checkpoint reads zip checkpoints only")
            raw = zf.read(pkl[0])
    table = torch_format.Rebuilder(lambda key, n: b"", placement(None)).table()
    vet = pickle_read.RestrictedUnpickler(io.BytesIO(), table)
    unsafe = set()
    for op, arg, _ in pickletools.genops(raw):
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            try:
                vet.find_class(module, name)
            except Refused:
                unsafe.add(".".join(pickle_read.py3_name(module, name)))
    return sorted(unsafe)


def _corrupt(name: Any, e: BaseException) -> RuntimeError:
    return RuntimeError(f"acg.load: {name} is not a valid autograd_compile or PyTorch checkpoint "
                        f"(corrupt or truncated?): {type(e).__name__}: {e}")


def placement(map_location: Any) -> Callable[[np.ndarray, str], jax.Array]:
    """``map_location`` as ``place(array, saved_location) -> jax.Array``."""
    if map_location is None:
        return lambda a, loc: jax.device_put(a, _device(loc))
    if isinstance(map_location, dict):
        return lambda a, loc: jax.device_put(a, _device(str(map_location.get(loc, loc))))
    if isinstance(map_location, jax.Device):
        return lambda a, loc: jax.device_put(a, map_location)
    if callable(map_location):
        return _call_placement(map_location)
    target = _device(str(map_location))
    return lambda a, loc: jax.device_put(a, target)


def _call_placement(fn: Callable) -> Callable[[np.ndarray, str], jax.Array]:
    """PyTorch's ``fn(storage, location)`` (a tensor stands in for the storage; returning None
    means "where it was saved"), or a one-argument function of the array."""
    from ..tensor import Tensor, _make
    try:
        two = len(inspect.signature(fn).parameters) >= 2
    except (TypeError, ValueError):
        two = True

    def place(a: np.ndarray, loc: str) -> jax.Array:
        if not two:
            return jax.numpy.asarray(fn(jax.numpy.asarray(a)))
        out = fn(_make(jax.device_put(a, jax.local_devices(backend="cpu")[0])), loc)
        if out is None:
            return jax.device_put(a, _device(loc))
        return out._data if isinstance(out, Tensor) else jax.numpy.asarray(out)
    return place


def _device(location: str) -> jax.Device:
    """The jax device of a PyTorch location string ("cpu", "cuda", "cuda:1")."""
    kind, _, index = location.partition(":")
    if kind == "cpu":
        return jax.local_devices(backend="cpu")[0]  # this process's
    if kind == "cuda":
        try:
            gpus = jax.local_devices(backend="gpu")
        except RuntimeError:
            gpus = []
        if not gpus:
            raise RuntimeError(_CUDA_MISSING)
        i = int(index or 0)
        if i >= len(gpus):
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {i} but "
                               f"acg.cuda.device_count() is {len(gpus)}. Please use acg.load "
                               "with map_location to map your storages to an existing device.")
        return gpus[i]
    raise RuntimeError(f"acg.load: don't know how to restore data location {location!r} "
                       "(expected 'cpu' or 'cuda[:N]'); pass map_location")
