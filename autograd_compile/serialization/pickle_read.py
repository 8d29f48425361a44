"""The two unpicklers of ``acg.load``: weights-only (the default) and full.

``weights_only=True`` (:class:`RestrictedUnpickler`) admits what PyTorch's
``torch.load(weights_only=True)`` admits by default: tensor and parameter rebuild functions,
storage classes, dtypes, ``torch.Size``, ``torch.device``, ``OrderedDict``, ``Counter``,
``set``, ``complex``, bytes, plus the globals a program adds with
:func:`~.allowlist.add_safe_globals`. Each default name resolves to a function of ours, never
to the object the file names; any other global is refused with PyTorch's message before
anything is called. REDUCE may call only admitted callables, BUILD may only set the state of
an ``OrderedDict``, a tensor or an instance of an added class, and nesting is bounded.

``weights_only=False`` (:class:`FullUnpickler`) is Python's unpickler, as ``torch.load``'s:
any importable global loads (an ``argparse.Namespace``, numpy arrays, a user's class), and
the file can run code, so use it only for files you trust. PyTorch's globals still resolve
to ours (``torch.Size`` is ``acg.Size``), and the modules PyTorch blocks in weights-only loads
(``os``, ``sys``...) stay blocked: no checkpoint needs them.

>>> import pickle, io
>>> def load(obj, weights_only=True):
...     try:
...         return unpickler(io.BytesIO(pickle.dumps(obj)), {}, weights_only=weights_only).load()
...     except Refused as e:
...         print(" ".join(str(e).split()))
>>> load(__import__("os").system, weights_only=False)
acg.load: the checkpoint asks for the global '...system', whose module ... is blocked...
>>> load(io.BytesIO)
Weights only load failed. ... Unsupported global: GLOBAL _io.BytesIO was not an allowed...
>>> load(io.BytesIO, weights_only=False)
<class '_io.BytesIO'>
"""
from __future__ import annotations

import _compat_pickle
import collections
import functools
import importlib
import importlib.util
import pickle
import sys
from typing import Any, Callable

from . import allowlist

MAX_DEPTH = 10_000  # nesting deeper than this is refused (a crafted file, not a model)
BLOCKED_MODULES = ("sys", "os", "posix", "nt")  # never loaded, as PyTorch's weights-only list
_BUILTINS = ("builtins", "__builtin__")
_UNSAFE = ("Re-running `acg.load` with `weights_only` set to `False` will likely succeed, but "
           "it can result in arbitrary code execution. Do it only if you got the file from a "
           "trusted source.")


class Refused(pickle.UnpicklingError):
    """A checkpoint asked for something a weights-only load does not admit."""


class MissingGlobal(AttributeError):
    """A full load named a class or function that does not exist here."""


def refuse(what: str) -> Refused:
    return Refused(f"Weights only load failed: the checkpoint asks for {what}, which a "
                   "weights-only load does not admit (nothing from the file is called). "
                   f"{_UNSAFE} Or admit the classes it needs with "
                   "acg.serialization.add_safe_globals([...]).")


def unsupported_global(path: str) -> Refused:
    """PyTorch's error for a global outside the weights-only list."""
    shown = path[len("builtins."):] if path.startswith("builtins.") else path
    return Refused(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. "
        f"\n\t(1) {_UNSAFE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
        "the recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`acg.serialization.add_safe_globals([{shown}])` or the "
        f"`acg.serialization.safe_globals([{shown}])` context manager to allowlist this "
        "global if you trust this class/function.")


def blocked_global(module: str, name: str, weights_only: bool) -> Refused:
    path = f"{module}.{name}"
    if weights_only:
        return Refused(f"Weights only load failed. Trying to load unsupported GLOBAL {path} "
                       f"whose module {module} is blocked: the checkpoint asks for the global "
                       f"'{path}', which would run code from the file.")
    return Refused(f"acg.load: the checkpoint asks for the global '{path}', whose module "
                   f"{module} is blocked even with weights_only=False: no checkpoint needs it, "
                   "and it would run code from the file.")


def py3_name(module: str, name: str) -> tuple[str, str]:
    """Python 3's name of a global a protocol-2 pickle may spell the Python 2 way."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _encode(text: str, encoding: str = "utf-8") -> bytes:
    if encoding not in ("latin1", "latin-1"):
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


def unpickler(file: Any, table: dict[tuple[str, str], Any],
              persistent_load: Callable[[Any], Any] | None = None, *, weights_only: bool = True,
              build_types: tuple[type, ...] = ()) -> pickle.Unpickler:
    """The unpickler ``weights_only`` asks for, resolving ``table``'s globals to its values."""
    if weights_only:
        return RestrictedUnpickler(file, table, persistent_load, build_types)
    return FullUnpickler(file, table, persistent_load)


class RestrictedUnpickler(pickle._Unpickler):  # the pure-Python one: its opcodes are ours to vet
    """Unpickles with ``table`` and the added safe globals as the only globals;
    ``persistent_load`` resolves storages."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file: Any, table: dict[tuple[str, str], Any],
                 persistent_load: Callable[[Any], Any] | None = None,
                 build_types: tuple[type, ...] = ()) -> None:
        super().__init__(file, encoding="utf-8")
        self.table = {**base_globals(), **table}
        self.user = allowlist.user_table()
        admitted = [*self.table.values(), *self.user.values()]
        self.callables = {id(v) for v in admitted if callable(v)}
        self.user_types = {id(v) for v in self.user.values() if isinstance(v, type)}
        self.build_types = (collections.OrderedDict, *build_types)
        if persistent_load is not None:
            self.persistent_load = persistent_load

    def find_class(self, module: str, name: str) -> Any:
        module, name = py3_name(module, name)
        if module.split(".")[0] in BLOCKED_MODULES:
            raise blocked_global(module, name, True)
        if (module, name) in self.table:
            return self.table[(module, name)]
        path = allowlist.canonical(f"{module}.{name}")
        if path in self.user:
            return self.user[path]
        raise unsupported_global(path)

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
        if id(type(self.stack[-2])) in self.user_types:  # a class the program admitted
            super().load_build()  # pickle's own: __setstate__, or __dict__ and slots
            return
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


class FullUnpickler(pickle.Unpickler):
    """Python's unpickler (``weights_only=False``): PyTorch's names resolve to ours through
    ``table`` and ``autograd_compile``'s modules, any other importable global loads."""

    def __init__(self, file: Any, table: dict[tuple[str, str], Any],
                 persistent_load: Callable[[Any], Any] | None = None) -> None:
        super().__init__(file, encoding="utf-8")
        self.table = table
        if persistent_load is not None:
            self.persistent_load = persistent_load

    def find_class(self, module: str, name: str) -> Any:
        sys.audit("pickle.find_class", module, name)  # as pickle's own find_class
        module, name = py3_name(module, name)
        if (module, name) in self.table:
            return self.table[(module, name)]
        if module.split(".")[0] in BLOCKED_MODULES:
            raise blocked_global(module, name, False)
        if module == "torch" or module.startswith("torch."):
            return _ours(module, name)
        module = _numpy_spelling(module)
        try:
            return _attribute(importlib.import_module(module), name)
        except AttributeError as e:
            raise MissingGlobal(f"acg.load: the checkpoint names {module}.{name}, which does not "
                                f"exist here ({e}); import or define it before loading") from e


@functools.cache
def _numpy_core() -> str:
    return "numpy._core" if importlib.util.find_spec("numpy._core") else "numpy.core"


def _numpy_spelling(module: str) -> str:
    """numpy 1 files name ``numpy.core``, numpy 2 files ``numpy._core``: this numpy's name."""
    for old in ("numpy.core", "numpy._core"):
        if module == old or module.startswith(old + "."):
            return _numpy_core() + module[len(old):]
    return module


def _attribute(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _ours(module: str, name: str) -> Any:
    """``torch.nn.modules.linear.Linear`` as ``autograd_compile.nn.modules.linear.Linear``."""
    try:
        return _attribute(importlib.import_module("autograd_compile" + module[len("torch"):]),
                          name)
    except (ImportError, AttributeError) as e:
        raise MissingGlobal(f"acg.load: the checkpoint names the PyTorch global "
                            f"'{module}.{name}', which autograd_compile does not provide; save "
                            "the object's state_dict() in PyTorch and load that instead") from e
