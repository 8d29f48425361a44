"""Checkpoints: ``save`` / ``load`` in a safe format (``torch.save`` / ``torch.load``).

A checkpoint is a zip archive: ``structure.json`` describes the object (containers, numbers,
strings, tensors by reference) and ``data/<i>`` holds each tensor's raw little-endian bytes.
Loading parses JSON and copies bytes; no code from the file ever runs, so
``weights_only=True`` (the default) and ``False`` read the same things.

>>> import io, autograd_compile as acg
>>> buf = io.BytesIO()
>>> acg.save({"w": acg.ones(2, dtype=acg.bfloat16), "step": 3, "betas": (0.9, 0.99)}, buf)
>>> _ = buf.seek(0); ckpt = acg.load(buf)
>>> ckpt["w"].dtype, ckpt["step"], ckpt["betas"]
(dtype(bfloat16), 3, (0.9, 0.99))
"""
from __future__ import annotations

import collections
import json
import os
import zipfile
from typing import IO, Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .tensor import Tensor, _make

__all__ = ["save", "load"]

_FORMAT, _VERSION = "autograd_compile.checkpoint", 1
_STRUCTURE = "structure.json"
FileLike = str | os.PathLike | IO[bytes]


# -- writing -----------------------------------------------------------------------------------
class _Writer:
    """Turns an object into JSON-able form, collecting arrays (each tensor object once)."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.seen: dict[int, dict] = {}

    def encode(self, obj: Any, where: str) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if isinstance(obj, (np.ndarray, np.generic)):
            return {"$t": "ndarray", **self._array(np.asarray(obj))}
        if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
            kind = "list" if isinstance(obj, list) else "tuple"
            return {"$t": kind, "v": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            return {"$t": _dict_kind(obj),
                    "items": [[self.encode(k, f"{where} key"), self.encode(v, f"{where}[{k!r}]")]
                              for k, v in obj.items()]}
        if isinstance(obj, np.dtype) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            return {"$t": "dtype", "v": np.dtype(obj).name}
        raise TypeError(f"acg.save: cannot save {type(obj).__name__} at {where or 'the top'}; "
                        "a checkpoint holds tensors, numpy arrays, numbers, strings, None, "
                        "dtypes and dict/OrderedDict/list/tuple of them (nothing is pickled)")

    def _array(self, array: np.ndarray) -> dict[str, Any]:
        if array.dtype.kind in "OUSMm" or array.dtype.fields:  # no raw-bytes meaning
            raise TypeError(f"acg.save: cannot save an array of dtype {array.dtype}")
        self.arrays.append(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")))
        return {"id": len(self.arrays) - 1, "dtype": array.dtype.name, "shape": list(array.shape)}

    def _tensor(self, t: Tensor) -> dict[str, Any]:
        if id(t) not in self.seen:  # a tensor saved twice loads as one object, as in PyTorch
            from .nn import Parameter
            kind = "parameter" if isinstance(t, Parameter) else "tensor"
            self.seen[id(t)] = {"$t": kind, "requires_grad": t.requires_grad,
                                **self._array(np.asarray(t._data))}
        return self.seen[id(t)]


def _dict_kind(obj: dict) -> str:
    for cls, name in ((collections.Counter, "counter"), (collections.OrderedDict, "odict")):
        if isinstance(obj, cls):
            return name
    return "dict"


def save(obj: Any, f: FileLike) -> None:
    """Write ``obj`` (state dicts and nested containers of tensors) to a path or binary file.

    >>> import io, autograd_compile as acg
    >>> buf = io.BytesIO(); acg.save([acg.tensor([1, 2])], buf); _ = buf.seek(0)
    >>> acg.load(buf)[0].tolist()
    [1, 2]
    """
    writer = _Writer()
    root = writer.encode(obj, "")
    header = json.dumps({"format": _FORMAT, "version": _VERSION, "root": root})
    with _open(f, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(_STRUCTURE, header)
        for i, array in enumerate(writer.arrays):
            zf.writestr(f"data/{i}", array.tobytes())


# -- reading -----------------------------------------------------------------------------------
class _Reader:
    """Rebuilds the object from the JSON tree, reading each array from the archive."""

    def __init__(self, zf: zipfile.ZipFile, place: Callable[[jax.Array], jax.Array]) -> None:
        self.zf, self.place = zf, place
        self.tensors: dict[int, Tensor] = {}

    def decode(self, node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        kind = node.get("$t")
        if kind in ("tensor", "parameter"):
            return self._tensor(node)
        if kind == "ndarray":
            return self._array(node)
        if kind in ("list", "tuple"):
            items = [self.decode(v) for v in node["v"]]
            return items if kind == "list" else tuple(items)
        if kind in _DICT_TYPES:
            return _DICT_TYPES[kind]((self.decode(k), self.decode(v)) for k, v in node["items"])
        if kind == "dtype":
            return jnp.dtype(node["v"])
        raise ValueError(f"unknown entry {kind!r}")

    def _array(self, node: dict) -> np.ndarray:
        dtype = jnp.dtype(node["dtype"])
        raw = self.zf.read(f"data/{node['id']}")
        expected = int(np.prod(node["shape"], dtype=np.int64)) * dtype.itemsize
        if len(raw) != expected:
            raise ValueError(f"tensor {node['id']} has {len(raw)} bytes, expected {expected}")
        return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(node["shape"])

    def _tensor(self, node: dict) -> Tensor:
        if node["id"] not in self.tensors:
            array = self.place(jnp.asarray(self._array(node)))
            if node["$t"] == "parameter":
                from .nn import Parameter
                t: Tensor = Parameter(_make(array), requires_grad=node["requires_grad"])
            else:
                t = _make(array)
                if node["requires_grad"]:
                    t.requires_grad_(True)
            self.tensors[node["id"]] = t
        return self.tensors[node["id"]]


_DICT_TYPES: dict[str, Callable[[Any], dict]] = {
    "dict": dict, "odict": collections.OrderedDict, "counter": lambda kv: collections.Counter(
        dict(kv))}


def _placement(map_location: Any) -> Callable[[jax.Array], jax.Array]:
    """``map_location`` as a function on arrays: None keeps the default device."""
    if map_location is None:
        return lambda a: a
    if callable(map_location) and not isinstance(map_location, jax.Device):
        return map_location
    if isinstance(map_location, jax.Device):
        device = map_location
    else:
        kind, _, index = str(map_location).partition(":")  # "cpu", "cuda:1", a device object
        platform = "gpu" if kind in ("cuda", "gpu") else kind
        device = jax.devices(platform)[int(index or 0)]
    return lambda a: jax.device_put(a, device)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool = True, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read what ``save`` wrote; a damaged or foreign file raises ``RuntimeError`` naming it.

    ``map_location``: None (default device), ``"cpu"``, ``"cuda[:i]"``, a jax Device, or a
    function applied to each loaded array.
    """
    name = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", repr(f))
    place = _placement(map_location)
    try:
        with _open(f, "rb") as fh, zipfile.ZipFile(fh) as zf:
            header = _header(zf)
            return _Reader(zf, place).decode(header["root"])
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, OSError, TypeError) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise RuntimeError(f"acg.load: {name} is not a valid autograd_compile checkpoint "
                           f"(corrupt or truncated?): {type(e).__name__}: {e}") from e


def _header(zf: zipfile.ZipFile) -> dict[str, Any]:
    names = zf.namelist()
    if _STRUCTURE not in names:
        pickled = any(n.endswith("data.pkl") for n in names)
        raise ValueError("a PyTorch pickle checkpoint (not loadable: no pickle is ever run)"
                         if pickled else f"no {_STRUCTURE} in the archive")
    header = json.loads(zf.read(_STRUCTURE))
    if header.get("format") != _FORMAT or header.get("version") != _VERSION:
        raise ValueError(f"unknown format {header.get('format')!r} "
                         f"version {header.get('version')!r}")
    return header


class _open:
    """A path is opened (and closed); a file object is used as is (left open)."""

    def __init__(self, f: FileLike, mode: str) -> None:
        self.f, self.mode, self.owned = f, mode, isinstance(f, (str, os.PathLike))

    def __enter__(self) -> IO[bytes]:
        self.fh = open(self.f, self.mode) if self.owned else self.f  # type: ignore[arg-type]
        return self.fh  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        if self.owned:
            self.fh.close()

