"""PyTorch's checkpoint formats: the zip archive (read and write) and the legacy stream (read).

A ``torch.save`` zip holds ``<prefix>/data.pkl`` (the object, as a protocol-2 pickle whose
tensors are ``_rebuild_tensor_v2(storage, offset, size, stride, ...)`` calls and whose storages
are persistent ids ``('storage', FloatStorage, key, location, numel)``), one ``data/<key>`` entry
of raw bytes per storage, and small records (``byteorder``, ``version``...). The legacy format
(``_use_new_zipfile_serialization=False``) is a stream of pickles (magic number, protocol
version, system info, the object, the storage keys) followed by each storage's element count
and bytes.

Reading goes through :mod:`.pickle_read`'s unpicklers with the rebuild functions of
:class:`Rebuilder` standing for PyTorch's (the only callables of a weights-only load). Writing
emits the same globals PyTorch does for tensors, dtypes, devices and sizes, and pickles the
rest as Python does, so ``torch.load(path, weights_only=True)`` reads our state dicts and
``torch.load(path, weights_only=False)`` anything else we write.
"""
from __future__ import annotations

import collections
import io
import os
import struct
import zipfile
from typing import Any, Callable

import numpy as np

from .._dtype import dtype as AcgDtype
from .._dtype import of as dtype_of
from ..tensor import Tensor, _make
from . import names
from .pickle_read import RestrictedUnpickler, refuse, unpickler
from .pickle_write import PickleWriter

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
ALIGN = 64  # storages start at a multiple of 64 bytes, as PyTorch writes them (mmap loads)


# -- reading ------------------------------------------------------------------------------------
class StorageType:
    """What ``torch.FloatStorage`` (a dtype) or ``torch.storage.UntypedStorage`` (bytes) names."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype | None) -> None:
        self.dtype = dtype


class StorageRef:
    """A storage named by a persistent id: its bytes come from the archive when a tensor needs
    them. ``offset`` (elements) is non-zero only for the legacy format's storage views."""

    __slots__ = ("key", "dtype", "numel", "location", "offset")

    def __init__(self, key: str, dtype: np.dtype | None, numel: int, location: str,
                 offset: int = 0) -> None:
        self.key, self.dtype, self.numel = key, dtype, numel
        self.location, self.offset = location, offset


class _TensorType:
    """``torch.Tensor`` / ``torch.nn.parameter.Parameter`` as ``_rebuild_from_type_v2`` names
    them."""

    def __init__(self, parameter: bool) -> None:
        self.parameter = parameter


class Rebuilder:
    """The rebuild functions a PyTorch pickle calls, and the tensors they make.

    ``read(key, nbytes)`` returns a storage's raw bytes; ``place(array, location)`` puts a
    loaded numpy array on its device. Tensors over the same storage with the same offset,
    sizes, strides and dtype are one object (tied weights stay tied).
    """

    def __init__(self, read: Callable[[str, int], Any], place: Callable[[np.ndarray, str], Any],
                 big_endian: bool = False) -> None:
        self.read, self.place, self.big_endian = read, place, big_endian
        self.flat: dict[tuple[str, str], np.ndarray] = {}
        self.tensors: dict[tuple, Tensor] = {}

    def table(self) -> dict[tuple[str, str], Any]:
        from .._types import Size
        from ..devices import device
        t: dict[tuple[str, str], Any] = {
            ("torch", "Size"): lambda sizes=(): Size(sizes),
            ("torch", "device"): device,
            ("torch.storage", "UntypedStorage"): StorageType(None),
            ("torch", "UntypedStorage"): StorageType(None),
            ("torch", "Tensor"): _TensorType(False),
            ("torch._tensor", "Tensor"): _TensorType(False),
            ("torch.nn.parameter", "Parameter"): _TensorType(True),
            ("torch.serialization", "_get_layout"): _layout,
            ("torch", "strided"): "strided",
        }
        u = "torch._utils"
        t.update({(u, "_rebuild_tensor"): self.rebuild_tensor_v1,
                  (u, "_rebuild_tensor_v2"): self.rebuild_tensor_v2,
                  (u, "_rebuild_tensor_v3"): self.rebuild_tensor_v3,
                  (u, "_rebuild_parameter"): self.rebuild_parameter,
                  (u, "_rebuild_parameter_with_state"): self.rebuild_parameter_with_state,
                  ("torch._tensor", "_rebuild_from_type_v2"): self.rebuild_from_type_v2})
        for kind in ("_rebuild_qtensor", "_rebuild_sparse_tensor", "_rebuild_nested_tensor",
                     "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass",
                     "_rebuild_device_tensor_from_numpy", "_rebuild_xla_tensor",
                     "_rebuild_mtia_tensor", "_rebuild_device_tensor_from_cpu_tensor"):
            t[(u, kind)] = _unsupported(kind)
        for name, storage in names.STORAGE_OF.items():
            t[("torch", storage)] = StorageType(np.dtype(names.as_dtype(name)))
        for name in names.TORCH_DTYPES:
            t[("torch", name)] = dtype_of(names.as_dtype(name))  # acg.float16 ...
        return t

    def persistent_load(self, pid: Any) -> StorageRef:
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] == "storage"
                and isinstance(pid[1], StorageType)):
            raise refuse(f"a persistent id {pid!r:.80}")
        _, stype, key, location, numel = pid[:5]
        ref = StorageRef(str(key), stype.dtype, int(numel), str(location))
        view = pid[5] if len(pid) == 6 else None
        if view is not None:  # legacy storage view: (view key, element offset, element count)
            ref = StorageRef(ref.key, ref.dtype, int(view[2]), ref.location, int(view[1]))
        return ref

    # -- the rebuild functions -------------------------------------------------------------
    def rebuild_tensor_v1(self, storage: StorageRef, offset: int, size: Any, stride: Any
                          ) -> Tensor:
        return self._tensor(storage, offset, size, stride, False, None)

    def rebuild_tensor_v2(self, storage: StorageRef, offset: int, size: Any, stride: Any,
                          requires_grad: bool, backward_hooks: Any, metadata: Any = None
                          ) -> Tensor:
        return self._tensor(storage, offset, size, stride, requires_grad, None)

    def rebuild_tensor_v3(self, storage: StorageRef, offset: int, size: Any, stride: Any,
                          requires_grad: bool, backward_hooks: Any, dtype: Any,
                          metadata: Any = None) -> Tensor:
        return self._tensor(storage, offset, size, stride, requires_grad, np.dtype(dtype))

    def rebuild_parameter(self, data: Tensor, requires_grad: bool, backward_hooks: Any
                          ) -> Tensor:
        from ..nn import Parameter
        return Parameter(data.detach(), requires_grad=bool(requires_grad))

    def rebuild_parameter_with_state(self, data: Tensor, requires_grad: bool,
                                     backward_hooks: Any, state: Any) -> Tensor:
        p = self.rebuild_parameter(data, requires_grad, backward_hooks)
        _set_state(p, state)
        return p

    def rebuild_from_type_v2(self, func: Any, new_type: Any, args: tuple, state: Any) -> Tensor:
        if not isinstance(new_type, _TensorType) or func not in (
                self.rebuild_tensor_v1, self.rebuild_tensor_v2, self.rebuild_tensor_v3):
            raise refuse(f"rebuilding a tensor of type {new_type!r:.60} with {func!r:.60}")
        t = func(*args)
        if new_type.parameter:
            t = self.rebuild_parameter(t, t.requires_grad, None)
        _set_state(t, state)
        return t

    # -- storages to arrays ----------------------------------------------------------------
    def _flat(self, storage: StorageRef, dtype: np.dtype) -> np.ndarray:
        key = (storage.key, dtype.str)
        if key not in self.flat:
            itemsize = dtype.itemsize
            nbytes = storage.numel * (storage.dtype.itemsize if storage.dtype is not None else 1)
            raw = self.read(storage.key, nbytes + storage.offset * itemsize)
            order = ">" if self.big_endian else "<"
            flat = np.frombuffer(raw, dtype.newbyteorder(order) if itemsize > 1 else dtype)
            self.flat[key] = flat
        return self.flat[key]

    def _tensor(self, storage: StorageRef, offset: int, size: Any, stride: Any,
                requires_grad: bool, dtype: np.dtype | None) -> Tensor:
        if not isinstance(storage, StorageRef):
            raise refuse(f"a tensor over {type(storage).__name__}")
        dtype = dtype if dtype is not None else storage.dtype
        if dtype is None:
            raise refuse("an untyped storage without a dtype")
        size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        start = storage.offset + int(offset)
        key = (storage.key, dtype.str, start, size, stride, bool(requires_grad))
        if key in self.tensors:
            return self.tensors[key]
        flat = self._flat(storage, dtype)
        if len(size) != len(stride) or any(s < 0 for s in size + stride):
            raise ValueError(f"tensor of size {size} has invalid strides {stride}")
        last = start + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else start - 1
        if start < 0 or last >= flat.size:
            raise ValueError(f"tensor of size {list(size)}, stride {list(stride)} at offset "
                             f"{start} needs {last + 1} elements; storage {storage.key} has "
                             f"{flat.size}")
        view = np.lib.stride_tricks.as_strided(flat[start:] if flat.size else flat, size,
                                               [s * dtype.itemsize for s in stride])
        array = np.array(view, dtype=dtype)  # a copy in native byte order
        t = _make(self.place(array, storage.location))
        if requires_grad:
            t.requires_grad_(True)
        self.tensors[key] = t
        return t


def _layout(name: Any = "strided") -> str:
    return str(name)


def _unsupported(kind: str) -> Callable[..., Any]:
    def fail(*args: Any) -> Any:
        raise NotImplementedError(f"acg.load: the checkpoint holds a tensor rebuilt by "
                                  f"torch._utils.{kind} (quantized, sparse, nested, meta or "
                                  "device-specific tensors are not supported); convert it to a "
                                  "dense tensor before saving")
    return fail


_TENSOR_SLOTS = frozenset(Tensor.__slots__)  # our own fields: never set from a file


def _set_state(t: Tensor, state: Any) -> None:
    """Plain attributes a PyTorch tensor carried (``tensor.foo = 1``); nothing callable."""
    if isinstance(state, tuple) and len(state) == 2:
        state = {**(state[0] or {}), **(state[1] or {})}
    for k, v in (state or {}).items():
        if not isinstance(k, str) or k.startswith("__") or k in _TENSOR_SLOTS:
            raise refuse(f"setting the attribute {k!r} of a tensor")
        object.__setattr__(t, k, v)


def read_zip(zf: zipfile.ZipFile, place: Callable[[np.ndarray, str], Any],
             table: dict[tuple[str, str], Any], mmap_path: str | None = None, *,
             weights_only: bool = True) -> Any:
    """The object of a ``torch.save`` zip archive."""
    pkl = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise ValueError("no <prefix>/data.pkl in the archive")
    prefix = pkl[0][: -len("data.pkl")]
    big = prefix + "byteorder" in zf.namelist() and zf.read(prefix + "byteorder") == b"big"
    mapped = np.memmap(mmap_path, np.uint8, "r") if mmap_path else None

    def read(key: str, nbytes: int) -> Any:
        name = f"{prefix}data/{key}"
        if mapped is None:
            raw = zf.read(name)
        else:
            raw = mapped[_data_offset(zf, name):][: zf.getinfo(name).file_size]
        if len(raw) < nbytes:
            raise ValueError(f"storage {key} has {len(raw)} bytes, expected {nbytes}")
        return raw

    rebuild = Rebuilder(read, place, big)
    return unpickler(io.BytesIO(zf.read(pkl[0])), {**rebuild.table(), **table},
                     rebuild.persistent_load, weights_only=weights_only,
                     build_types=(Tensor,)).load()


def _data_offset(zf: zipfile.ZipFile, name: str) -> int:
    """Where an entry's bytes begin in the file (after its local header): for mmap."""
    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{name} is compressed: mmap needs stored entries")
    zf.fp.seek(info.header_offset)
    header = zf.fp.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def is_legacy(head: bytes) -> bool:
    """Does a file start with the legacy format's pickled magic number?"""
    return head[:2] == b"\x80\x02" and head[2:3] == b"\x8a" and int.from_bytes(
        head[4:4 + head[3]], "little") == LEGACY_MAGIC if len(head) >= 14 else False


def read_legacy(fh: Any, place: Callable[[np.ndarray, str], Any],
                table: dict[tuple[str, str], Any], *, weights_only: bool = True) -> Any:
    """The object of a legacy (pre-zip) ``torch.save`` stream."""
    data = io.BytesIO(fh.read())  # the object's pickle comes before its storages: seek back
    simple = lambda: RestrictedUnpickler(data, {}).load()  # noqa: E731
    if simple() != LEGACY_MAGIC:
        raise ValueError("invalid magic number; corrupt file?")
    if simple() != LEGACY_PROTOCOL:
        raise ValueError("unsupported legacy protocol version")
    info = simple()
    big = isinstance(info, dict) and not info.get("little_endian", True)
    start = data.tell()
    # first pass: no tensors built, only each storage's dtype recorded (its bytes come later)
    probe, dtypes = Rebuilder(lambda key, n: b"", place, big), {}

    def record(pid: Any) -> StorageRef:
        ref = probe.persistent_load(pid)
        dtypes[ref.key] = ref.dtype if ref.dtype is not None else np.dtype(np.uint8)
        return ref

    dry = {k: ((lambda *a, **kw: None) if callable(v) and k[0].startswith("torch._") else v)
           for k, v in probe.table().items()}
    unpickler(data, {**dry, **table}, record, weights_only=weights_only,
              build_types=(Tensor,)).load()
    storages = {}
    for key in simple():
        count = struct.unpack(">q" if big else "<q", data.read(8))[0]
        storages[key] = data.read(count * dtypes.get(key, np.dtype(np.uint8)).itemsize)
    real = Rebuilder(lambda key, n: storages[key], place, big)
    data.seek(start)
    return unpickler(data, {**real.table(), **table}, real.persistent_load,
                     weights_only=weights_only, build_types=(Tensor,)).load()


# -- writing ------------------------------------------------------------------------------------
class TorchZipWriter(PickleWriter):
    """Pickles tensors as PyTorch does; collects each tensor's bytes as one storage."""

    def __init__(self) -> None:
        super().__init__()
        self.storages: list[tuple[str, bytes]] = []

    def save_special(self, obj: Any, where: str) -> bool:
        from .._types import Size
        from ..devices import device
        if isinstance(obj, Tensor):
            self._tensor(obj, where)
        elif _dtype_of(obj) is not None:  # numpy arrays, scalars and dtypes pickle as numpy's
            self.global_("torch", names.torch_name(_dtype_of(obj)))
        elif isinstance(obj, device):
            self.reduce("torch", "device", lambda: self.tuple_of([str(obj)], where))
        elif isinstance(obj, Size):
            self.reduce("torch", "Size", lambda: self.tuple_of([tuple(obj)], where))
        else:
            return False
        return True

    def _tensor(self, t: Tensor, where: str) -> None:
        from ..nn import Parameter
        if t.requires_grad and t.grad_fn is not None:
            raise RuntimeError(f"acg.save: cannot save a non-leaf tensor that requires grad at "
                               f"{where or 'the top'} (as torch.save: detach() it first)")
        from ..kernels._host import read, spans_processes
        try:  # a global tensor split over processes: a clear error (replicated: its value)
            array = read(t._data, f"acg.save (at {where or 'the top'})") \
                if spans_processes(t._data) else np.asarray(t._data)
        except RuntimeError:
            raise
        except Exception as e:  # a tracer or fake: no value to save
            raise TypeError(f"acg.save: the tensor at {where or 'the top'} has no value "
                            f"({type(t._data).__name__})") from e
        self._array(array, t.requires_grad, isinstance(t, Parameter), _location(t), where,
                    dict(t.__dict__))
        self.put(t)

    def _array(self, array: np.ndarray, requires_grad: bool, parameter: bool, loc: str,
               where: str, state: dict | None = None) -> None:
        """A tensor as torch.save writes it; ``state``: its Python attributes, if any."""
        if array.dtype.name not in names.TORCH_DTYPES or array.dtype.fields:
            raise TypeError(f"acg.save: cannot save an array of dtype {array.dtype.name}")
        if parameter:
            name, parts = ("_rebuild_parameter_with_state", [state]) if state else \
                ("_rebuild_parameter", [])
            self.reduce("torch._utils", name, lambda: self.tuple_of_raw(
                [lambda: self._plain(array, False, loc), requires_grad, _HOOKS, *parts]))
        elif state:  # torch's Tensor.__reduce_ex__ for a tensor with attributes
            rebuild, parts = self._plain_parts(array, requires_grad, loc)
            self.reduce("torch._tensor", "_rebuild_from_type_v2", lambda: self.tuple_of_raw(
                [lambda: self.global_("torch._utils", rebuild),
                 lambda: self.global_("torch", "Tensor"),
                 lambda: self.tuple_of_raw(parts), state]))
        else:
            self._plain(array, requires_grad, loc)

    def tuple_of_raw(self, parts: list[Any]) -> None:
        """A tuple whose items are objects or callables that write themselves."""
        self.op(b"(")
        for p in parts:
            p() if callable(p) else self.save(p)
        self.op(b"t")

    def _plain(self, array: np.ndarray, requires_grad: bool, loc: str) -> None:
        rebuild, parts = self._plain_parts(array, requires_grad, loc)
        self.reduce("torch._utils", rebuild, lambda: self.tuple_of_raw(parts))

    def _plain_parts(self, array: np.ndarray, requires_grad: bool, loc: str
                     ) -> tuple[str, list[Any]]:
        """(the ``torch._utils`` rebuild function, its argument writers) for ``array``."""
        key = str(len(self.storages))
        self.storages.append((key, np.ascontiguousarray(array).astype(
            array.dtype.newbyteorder("<")).tobytes()))
        name = array.dtype.name
        storage = names.STORAGE_OF.get(name)
        size = list(array.shape)
        stride = [int(np.prod(size[i + 1:], dtype=np.int64)) for i in range(len(size))]

        def persid() -> None:
            self.op(b"(")
            self.save("storage")
            if storage:
                self.global_("torch", storage)
            else:
                self.global_("torch.storage", "UntypedStorage")
            self.save(key)
            self.save(loc)
            self.save(array.size if storage else array.size * array.dtype.itemsize)
            self.op(b"t")
            self.op(b"Q")  # BINPERSID

        parts = [persid, 0, tuple(size), tuple(stride), bool(requires_grad), _HOOKS]
        if storage:
            return "_rebuild_tensor_v2", parts
        parts.append(lambda: self.global_("torch", names.torch_name(array.dtype)))
        return "_rebuild_tensor_v3", parts


def _dtype_of(obj: Any) -> np.dtype | None:
    """The dtype a torch-dtype-like object names (``acg.float32``, ``jnp.bfloat16``); numpy's
    own dtypes and scalar types are numpy objects, pickled as numpy pickles them."""
    if isinstance(obj, AcgDtype):
        return obj.dtype
    if type(obj).__name__ == "_ScalarMeta":  # jax.numpy's scalar types stand for dtypes here
        return np.dtype(obj.dtype)
    return None


_HOOKS = collections.OrderedDict()  # PyTorch's empty backward_hooks argument


def _location(t: Tensor) -> str:
    try:
        dev = next(iter(t._data.devices()))
    except (AttributeError, StopIteration):
        return "cpu"
    return "cpu" if dev.platform == "cpu" else f"cuda:{dev.id}"


def write_zip(fh: Any, writer: TorchZipWriter) -> None:
    """PyTorch's zip layout from a finished writer: ``archive/data.pkl``, the records, and
    64-byte aligned storages."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        entries = [("archive/data.pkl", writer.getvalue()), ("archive/.format_version", b"1"),
                   ("archive/.storage_alignment", str(ALIGN).encode()),
                   ("archive/byteorder", b"little")]
        entries += [(f"archive/data/{k}", raw) for k, raw in writer.storages]
        entries += [("archive/version", b"3\n"),
                    ("archive/.data/serialization_id", os.urandom(20).hex().encode())]
        for name, raw in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            if "/data/" in name:
                info.extra = _padding(zf.fp.tell(), len(name.encode()))
            zf.writestr(info, raw)


def _padding(offset: int, name_len: int) -> bytes:
    """An extra field that makes the entry's data start on a 64-byte boundary."""
    pad = (-(offset + 30 + name_len + 4)) % ALIGN
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad
