"""A protocol-2 pickle writer: PyTorch's globals as opcodes, everything else as ``pickle`` does.

``pickle.Pickler`` names a global only after importing it to check it, and torch is not a
dependency, so the few PyTorch globals a checkpoint names (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``...) are written here as opcodes directly. Every other object goes
through Python's reduce protocol (``copyreg.dispatch_table``, ``__reduce_ex__(2)``), exactly as
``torch.save``'s pickler writes it: an ``argparse.Namespace``, a numpy array, a dataclass come
back as themselves. Each object that may be referenced twice is memoized, so a tensor saved
twice loads as one object.

>>> import pickle, io, argparse
>>> w = PickleWriter(); w.save({"a": [1, 2.5, None, "s"], "b": (True,)}); w.stop()
>>> pickle.loads(w.getvalue())
{'a': [1, 2.5, None, 's'], 'b': (True,)}
>>> w = PickleWriter(); w.save(argparse.Namespace(lr=0.1)); w.stop()
>>> pickle.loads(w.getvalue())
Namespace(lr=0.1)
"""
from __future__ import annotations

import _compat_pickle
import copyreg
import functools
import importlib
import io
import pickle as P
import struct
import types
from typing import Any, Callable

_BATCH = 1000  # items per APPENDS/SETITEMS, as Python's pickler
_SINGLETON_TYPES = {type(None): None, type(NotImplemented): NotImplemented,
                    type(...): ...}  # pickled as type(x), as Python's save_type


class SaveError(TypeError, P.PicklingError):
    """An object ``acg.save`` cannot pickle (a TypeError, and a PicklingError as Python's)."""


class PickleWriter:
    """Writes opcodes into a buffer; ``save`` handles any picklable object, subclasses add
    their own types through ``save_special``."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.out.write(P.PROTO + bytes([2]))
        self.memo: dict[int, int] = {}
        self.names: dict[tuple[str, str], int] = {}  # globals written once, then referenced
        self.keep: list[Any] = []  # memoized objects stay alive, so their ids stay unique
        self.memo_size = 0

    # -- opcodes ---------------------------------------------------------------------------
    def op(self, code: bytes, payload: bytes = b"") -> None:
        self.out.write(code + payload)

    def global_(self, module: str, name: str) -> int:
        """``module.name`` (memoized, as pickle does: a second use is a memo reference); its
        memo index."""
        if (module, name) in self.names:
            self._get(self.names[(module, name)])
        else:
            self.op(P.GLOBAL, f"{module}\n{name}\n".encode())
            self.names[(module, name)] = self._put()
        return self.names[(module, name)]

    def put(self, obj: Any) -> None:
        """Memoize the object just written."""
        self.memo[id(obj)] = self._put()
        self.keep.append(obj)

    def get(self, obj: Any) -> bool:
        """Write a reference to ``obj`` when it was written before; True then."""
        i = self.memo.get(id(obj))
        if i is not None:
            self._get(i)
        return i is not None

    def _put(self) -> int:
        i, self.memo_size = self.memo_size, self.memo_size + 1
        self.op(P.BINPUT, bytes([i])) if i < 256 else self.op(P.LONG_BINPUT, struct.pack("<I", i))
        return i

    def _get(self, i: int) -> None:
        self.op(P.BINGET, bytes([i])) if i < 256 else self.op(P.LONG_BINGET, struct.pack("<I", i))

    def reduce(self, module: str, name: str, args: Callable[[], None]) -> None:
        """``module.name(*args)``: ``args`` writes the argument tuple."""
        self.global_(module, name)
        args()
        self.op(P.REDUCE)

    def tuple_of(self, items: list[Any], where: str) -> None:
        if not items:
            self.op(P.EMPTY_TUPLE)
            return
        small = {1: P.TUPLE1, 2: P.TUPLE2, 3: P.TUPLE3}.get(len(items))
        if small is None:
            self.op(P.MARK)
        for i, v in enumerate(items):
            self.save(v, f"{where}[{i}]")
        self.op(small or P.TUPLE)

    def stop(self) -> None:
        self.op(P.STOP)

    def getvalue(self) -> bytes:
        return self.out.getvalue()

    # -- objects ---------------------------------------------------------------------------
    def save(self, obj: Any, where: str = "") -> None:
        """Write ``obj``; ``where`` names its place for errors (``['state'][0]``)."""
        if obj is None:
            self.op(P.NONE)
        elif obj is True or obj is False:
            self.op(P.NEWTRUE if obj else P.NEWFALSE)
        elif type(obj) is int:
            self._int(obj)
        elif type(obj) is float:
            self.op(P.BINFLOAT, struct.pack(">d", obj))
        elif type(obj) is str:
            raw = obj.encode("utf-8", "surrogatepass")
            self.op(P.BINUNICODE, struct.pack("<I", len(raw)) + raw)
        elif self.get(obj):
            pass
        elif not self.save_special(obj, where):
            self._object(obj, where)

    def save_special(self, obj: Any, where: str) -> bool:
        """Subclasses write their own types here; True when ``obj`` was written."""
        return False

    def _int(self, v: int) -> None:
        if 0 <= v < 256:
            self.op(P.BININT1, bytes([v]))
        elif 0 <= v < 65536:
            self.op(P.BININT2, struct.pack("<H", v))
        elif -2 ** 31 <= v < 2 ** 31:
            self.op(P.BININT, struct.pack("<i", v))
        else:
            raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            self.op(P.LONG1, bytes([len(raw)]) + raw)

    def _object(self, obj: Any, where: str) -> None:
        t = type(obj)
        if t is tuple:
            self.tuple_of(list(obj), where)  # immutable: not memoized (its items still are)
        elif t is list:
            self.op(P.EMPTY_LIST)
            self.put(obj)
            self._batched(P.APPENDS, [(v, f"{where}[{i}]") for i, v in enumerate(obj)])
        elif t is dict:
            self.op(P.EMPTY_DICT)
            self.put(obj)
            self._items(obj.items(), where)
        elif t in (set, frozenset):  # sorted: the same set writes the same bytes every run
            self.reduce("__builtin__", t.__name__,
                        lambda: self.tuple_of([sorted(obj, key=repr)], where))
            self.put(obj)
        elif t in (bytes, bytearray):
            text = bytes(obj).decode("latin1")  # PyTorch's protocol-2 form of bytes
            name = ("_codecs", "encode") if t is bytes else ("__builtin__", "bytearray")
            self.reduce(*name, lambda: self.tuple_of([text, "latin1"], where))
        elif isinstance(obj, type) or t is types.FunctionType:
            self.save_global(obj, where)
        else:
            self._reduce(obj, where)

    # -- Python's reduce protocol ----------------------------------------------------------
    def save_global(self, obj: Any, where: str, name: str | None = None) -> None:
        """A class or function by its import path, checked to import back as ``obj``."""
        if name is None and any(obj is k for k in _SINGLETON_TYPES):
            self._reduce_value(obj, (type, (_SINGLETON_TYPES[obj],)), where)
            return
        name = name or getattr(obj, "__qualname__", None) or obj.__name__
        module = P.whichmodule(obj, name)
        parent = _lookup(obj, module, name, where)
        first, _, last = name.rpartition(".")
        if first:  # a nested class: getattr(Outer, "Inner"), as protocol 2 spells it
            self.save(getattr, where)
            self.tuple_of([parent, last], where)
            self.op(P.REDUCE)
        else:
            mapped = _compat_pickle.REVERSE_NAME_MAPPING.get((module, name))
            module, name = mapped or (_compat_pickle.REVERSE_IMPORT_MAPPING.get(module, module),
                                      name)  # Python 2 names at protocol 2, as pickle writes
            self.memo[id(obj)] = self.global_(module, name)  # the name's memo entry is obj's
            self.keep.append(obj)
            return
        self.put(obj)

    def _reduce(self, obj: Any, where: str) -> None:
        reducer = copyreg.dispatch_table.get(type(obj))
        try:
            rv = reducer(obj) if reducer else obj.__reduce_ex__(2)
        except Exception as e:
            raise SaveError(f"acg.save: cannot save {type(obj).__name__} at "
                            f"{where or 'the top'}: {e}") from e
        if isinstance(rv, str):  # a module-level singleton, named
            self.save_global(obj, where, rv)
        else:
            self._reduce_value(obj, rv, where)

    def _reduce_value(self, obj: Any, rv: Any, where: str) -> None:
        """Write ``(func, args, state, listitems, dictitems, state_setter)`` as pickle does."""
        if not isinstance(rv, tuple) or not 2 <= len(rv) <= 6 or not isinstance(rv[1], tuple):
            raise SaveError(f"acg.save: cannot save {type(obj).__name__} at {where or 'the top'}"
                            f": its __reduce__ returned {rv!r:.80}, not a 2 to 6-tuple")
        func, args, state, items, pairs, setter = rv + (None,) * (6 - len(rv))
        self._call(obj, func, args, where)
        if id(obj) in self.memo:  # the arguments already held obj: drop the copy, use the memo
            self.op(P.POP)
            self.get(obj)
        else:
            self.put(obj)
        if items is not None:
            self._batched(P.APPENDS, [(v, f"{where}[{i}]") for i, v in enumerate(items)])
        if pairs is not None:
            self._items(pairs, where)
        if state is not None and setter is None:
            self.save(state, f"{where}.__dict__")
            self.op(P.BUILD)
        elif state is not None:
            self.save(setter, where)
            self.tuple_of([obj, state], where)
            self.op(P.REDUCE)
            self.op(P.POP)

    def _call(self, obj: Any, func: Any, args: tuple, where: str) -> None:
        """``func(*args)``; ``copyreg.__newobj__`` as NEWOBJ, ``__newobj_ex__`` as a partial."""
        name = getattr(func, "__name__", "")
        if name == "__newobj__":
            if args[0] is not obj.__class__:
                raise SaveError(f"acg.save: cannot save {type(obj).__name__} at "
                                f"{where or 'the top'}: __newobj__ names class {args[0]!r}")
            self.save(args[0], where)
            self.tuple_of(list(args[1:]), where)
            self.op(P.NEWOBJ)
            return
        if name == "__newobj_ex__":  # protocol 2 has no NEWOBJ_EX: cls.__new__ as a partial
            cls, a, kw = args
            func, args = functools.partial(cls.__new__, cls, *a, **kw), ()
        self.save(func, where)
        self.tuple_of(list(args), where)
        self.op(P.REDUCE)

    def _items(self, items: Any, where: str) -> None:
        pairs = []
        for k, v in items:
            pairs.append((k, f"{where} key"))
            pairs.append((v, f"{where}[{k!r}]"))
        self._batched(P.SETITEMS, pairs, step=2)

    def _batched(self, code: bytes, items: list[tuple[Any, str]], step: int = 1) -> None:
        for start in range(0, len(items), _BATCH * step):
            self.op(P.MARK)
            for v, where in items[start:start + _BATCH * step]:
                self.save(v, where)
            self.op(code)


def _lookup(obj: Any, module: str, qualname: str, where: str) -> Any:
    """The object holding ``qualname``'s last part; SaveError unless the path leads to ``obj``
    (a lambda, a local class or a shadowed name would not load back)."""
    try:
        parent = found = importlib.import_module(module)
        for part in qualname.split("."):
            if part == "<locals>":
                raise AttributeError(part)
            parent, found = found, getattr(found, part)
    except (ImportError, AttributeError):
        found = parent = None
    if found is not obj:
        raise SaveError(f"acg.save: cannot save {type(obj).__name__} {qualname} at "
                        f"{where or 'the top'}: it is not importable as {module}.{qualname} "
                        "(pickle saves functions and classes by name: a lambda or a local "
                        "function cannot be saved)")
    return parent
