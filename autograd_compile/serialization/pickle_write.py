"""A protocol-2 pickle writer for the objects PyTorch's ``weights_only`` loader admits.

``pickle.Pickler`` names a global only after importing it to check it, and torch is not a
dependency, so the few PyTorch globals a checkpoint names (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``collections.OrderedDict``...) are written here as opcodes directly.
Objects are emitted by :class:`PickleWriter` subclasses' ``save``; each object that may be
referenced twice is memoized, so a tensor saved twice loads as one object.

>>> import pickle, io
>>> w = PickleWriter(); w.save({"a": [1, 2.5, None, "s"], "b": (True,)}); w.stop()
>>> pickle.loads(w.getvalue())
{'a': [1, 2.5, None, 's'], 'b': (True,)}
"""
from __future__ import annotations

import io
import pickle as P
import struct
from typing import Any, Callable

_BATCH = 1000  # items per APPENDS/SETITEMS, as Python's pickler


class PickleWriter:
    """Writes opcodes into a buffer; ``save`` handles plain Python data, subclasses the rest."""

    def __init__(self) -> None:
        self.out = io.BytesIO()
        self.out.write(P.PROTO + bytes([2]))
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # memoized objects stay alive, so their ids stay unique

    # -- opcodes ---------------------------------------------------------------------------
    def op(self, code: bytes, payload: bytes = b"") -> None:
        self.out.write(code + payload)

    def global_(self, module: str, name: str) -> None:
        self.op(P.GLOBAL, f"{module}\n{name}\n".encode())

    def put(self, obj: Any) -> None:
        """Memoize the object just written."""
        i = len(self.memo)
        self.memo[id(obj)] = i
        self.keep.append(obj)
        self.op(P.BINPUT, bytes([i])) if i < 256 else self.op(P.LONG_BINPUT, struct.pack("<I", i))

    def get(self, obj: Any) -> bool:
        """Write a reference to ``obj`` when it was written before; True then."""
        i = self.memo.get(id(obj))
        if i is None:
            return False
        self.op(P.BINGET, bytes([i])) if i < 256 else self.op(P.LONG_BINGET, struct.pack("<I", i))
        return True

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
            self._container(obj, where)

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

    def _container(self, obj: Any, where: str) -> None:
        import collections
        if type(obj) is tuple:
            self.tuple_of(list(obj), where)
            return  # tuples are immutable: not memoized (Python's pickler memoizes them
            # only to share, and a tuple of tensors still shares its tensors)
        if type(obj) is list:
            self.op(P.EMPTY_LIST)
            self.put(obj)
            self._batched(P.APPENDS, [(v, f"{where}[{i}]") for i, v in enumerate(obj)])
        elif type(obj) is dict:
            self.op(P.EMPTY_DICT)
            self.put(obj)
            self._items(obj, where)
        elif type(obj) in (collections.OrderedDict, collections.Counter):
            self.reduce("collections", type(obj).__name__, lambda: self.op(P.EMPTY_TUPLE))
            self.put(obj)
            self._items(obj, where)
            state = {k: v for k, v in vars(obj).items() if isinstance(k, str)}
            if state:  # a state_dict's ``_metadata``, as PyTorch saves it
                self.save(state, f"{where}.__dict__")
                self.op(P.BUILD)
        elif type(obj) is set:
            self.reduce("builtins", "set", lambda: self.tuple_of([sorted(obj, key=repr)], where))
            self.put(obj)
        elif type(obj) is complex:
            self.reduce("builtins", "complex", lambda: self.tuple_of([obj.real, obj.imag], where))
        elif type(obj) is slice:
            self.reduce("builtins", "slice",
                        lambda: self.tuple_of([obj.start, obj.stop, obj.step], where))
        elif type(obj) in (bytes, bytearray):
            text = bytes(obj).decode("latin1")  # PyTorch's protocol-2 form of bytes
            if type(obj) is bytes:
                self.reduce("_codecs", "encode", lambda: self.tuple_of([text, "latin1"], where))
            else:
                self.reduce("builtins", "bytearray",
                            lambda: self.tuple_of([text, "latin1"], where))
        else:
            raise TypeError(f"acg.save: cannot save {type(obj).__name__} at "
                            f"{where or 'the top'}; a checkpoint holds tensors, numbers, strings, "
                            "None, dtypes, devices, sizes and dict/OrderedDict/list/tuple/set of "
                            "them (what torch.load(weights_only=True) accepts)")

    def _items(self, obj: dict, where: str) -> None:
        pairs = []
        for k, v in obj.items():
            pairs.append((k, f"{where} key"))
            pairs.append((v, f"{where}[{k!r}]"))
        self._batched(P.SETITEMS, pairs, step=2)

    def _batched(self, code: bytes, items: list[tuple[Any, str]], step: int = 1) -> None:
        for start in range(0, len(items), _BATCH * step):
            self.op(P.MARK)
            for v, where in items[start:start + _BATCH * step]:
                self.save(v, where)
            self.op(code)
