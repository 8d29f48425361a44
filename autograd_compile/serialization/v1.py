"""Our first checkpoint format (version 1), read-only: files written before PyTorch's format.

A version-1 checkpoint is a zip archive: ``structure.json`` describes the object (containers,
numbers, strings, tensors by reference) and ``data/<i>`` holds each tensor's raw
little-endian bytes. Reading parses JSON and copies bytes; nothing is unpickled.
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

from ..tensor import Tensor, _make

__all__ = ["read", "STRUCTURE"]

_FORMAT, _VERSION = "autograd_compile.checkpoint", 1
STRUCTURE = "structure.json"
FileLike = str | os.PathLike | IO[bytes]


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
                from ..nn import Parameter
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


def read(zf: zipfile.ZipFile, place: Callable[[jax.Array], jax.Array]) -> Any:
    """The object of a version-1 archive."""
    return _Reader(zf, place).decode(_header(zf)["root"])


def _header(zf: zipfile.ZipFile) -> dict[str, Any]:
    header = json.loads(zf.read(STRUCTURE))
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

