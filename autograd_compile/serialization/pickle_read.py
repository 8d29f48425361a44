"""A restricted unpickler: only the globals a weights checkpoint needs, and nothing runs.

PyTorch's ``torch.load(weights_only=True)`` admits a short list of globals (tensor and
parameter rebuild functions, storage classes, dtypes, ``torch.Size``, ``torch.device``,
``OrderedDict``, ``set``, ``complex``, ``slice``, bytes). This reader admits the same list,
and each name resolves to a function of ours, never to the object the file names: a file
that asks for anything else is refused with the global it asked for, before anything is
called. REDUCE may call only those functions, BUILD may only set attributes of an
``OrderedDict`` (a state dict's ``_metadata``) or of a tensor, and nesting is bounded.

>>> import pickle, io
>>> evil = pickle.dumps(__import__("os").system)
>>> RestrictedUnpickler(io.BytesIO(evil), {}).load()
Traceback (most recent call last):
  ...
_pickle.UnpicklingError: Weights only load failed: the checkpoint asks for the global 'posix.system', which a checkpoint may not use (it would run code from the file)...
"""
from __future__ import annotations

import collections
import pickle
from typing import Any, Callable

MAX_DEPTH = 10_000  # nesting deeper than this is refused (a crafted file, not a model)
_BUILTINS = ("builtins", "__builtin__")


class Refused(pickle.UnpicklingError):
    """A checkpoint asked for something a weights-only load does not admit."""


def refuse(what: str) -> Refused:
    return Refused(f"Weights only load failed: the checkpoint asks for {what}, which a "
                   "checkpoint may not use (it would run code from the file). Only tensors, "
                   "parameters, storages, dtypes, devices, sizes, numbers, strings and "
                   "containers load; nothing from the file is ever called.")


def _encode(text: str, encoding: str = "utf-8") -> bytes:
    if encoding != "latin1":
        raise refuse(f"_codecs.encode with encoding {encoding!r}")
    return text.encode("latin1")


def _bytearray(text: Any = b"", encoding: str | None = None) -> bytearray:
    return bytearray(_encode(text, encoding) if isinstance(text, str) else bytes(text))


def base_globals() -> dict[tuple[str, str], Any]:
    """The plain-Python globals every PyTorch checkpoint may name."""
    table: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("_codecs", "encode"): _encode,
    }
    for mod in _BUILTINS:
        table.update({(mod, "set"): set, (mod, "frozenset"): frozenset, (mod, "complex"): complex,
                      (mod, "slice"): slice, (mod, "bytearray"): _bytearray})
    return table


class RestrictedUnpickler(pickle._Unpickler):  # the pure-Python one: its opcodes are ours to vet
    """Unpickles with ``table`` as the only globals; ``persistent_load`` resolves storages."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file: Any, table: dict[tuple[str, str], Any],
                 persistent_load: Callable[[Any], Any] | None = None,
                 build_types: tuple[type, ...] = ()) -> None:
        super().__init__(file, encoding="utf-8")
        self.table = {**base_globals(), **table}
        self.callables = {id(v) for v in self.table.values() if callable(v)}
        self.build_types = (collections.OrderedDict, *build_types)
        if persistent_load is not None:
            self.persistent_load = persistent_load

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self.table[(module, name)]
        except KeyError:
            raise refuse(f"the global '{module}.{name}'") from None

    def persistent_load(self, pid: Any) -> Any:
        raise refuse(f"a persistent id {pid!r} outside a PyTorch archive")

    # -- vetted opcodes --------------------------------------------------------------------
    def _depth(self) -> None:
        if len(self.stack) + len(self.metastack) > MAX_DEPTH:
            raise Refused(f"the checkpoint nests deeper than {MAX_DEPTH} levels (a crafted or "
                          "corrupt file: no model state is that deep)")

    def load_mark(self) -> None:
        self._depth()
        super().load_mark()
    dispatch[pickle.MARK[0]] = load_mark

    def _push_container(self, value: Any) -> None:
        self._depth()
        self.append(value)

    def load_empty_list(self) -> None:
        self._push_container([])
    dispatch[pickle.EMPTY_LIST[0]] = load_empty_list

    def load_empty_dictionary(self) -> None:
        self._push_container({})
    dispatch[pickle.EMPTY_DICT[0]] = load_empty_dictionary

    def load_empty_set(self) -> None:
        self._push_container(set())
    dispatch[pickle.EMPTY_SET[0]] = load_empty_set

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in self.callables:
            raise refuse(f"a call of {type(func).__name__} {func!r:.60}")
        if not isinstance(args, tuple):
            raise pickle.UnpicklingError("REDUCE arguments are not a tuple")
        self.stack[-1] = func(*args)
    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slot state)
            state = {**(state[0] or {}), **(state[1] or {})}
        if not state:
            return
        if not isinstance(inst, self.build_types) or not isinstance(state, dict) or not all(
                isinstance(k, str) and not k.startswith("__") for k in state):
            raise refuse(f"setting the state of a {type(inst).__name__}")
        for k, v in state.items():
            object.__setattr__(inst, k, v) if not isinstance(inst, dict) else setattr(inst, k, v)
    dispatch[pickle.BUILD[0]] = load_build

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack[-1]
        if not isinstance(cls, type) or id(cls) not in self.callables:
            raise refuse(f"a NEWOBJ of {cls!r:.60}")
        self.stack[-1] = cls.__new__(cls, *args)
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def _refuse_op(self) -> None:
        raise refuse("an object built by the INST, OBJ, NEWOBJ_EX or EXT opcodes")
    for _code in (pickle.NEWOBJ_EX, pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2,
                  pickle.EXT4):
        dispatch[_code[0]] = _refuse_op
    del _code
