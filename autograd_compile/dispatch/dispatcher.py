"""The operator dispatcher: one table of kernels per op, one key set per call.

Every op call goes through :func:`OpOverload.__call__`. The key set is the
union of the tensor arguments' keys, Autograd when grad mode is on and some
argument requires grad, PythonMode when a dispatch mode is active, plus the
thread's included keys, minus its excluded keys. The highest key's entry in the
op's computed table runs. A kernel goes further down with
``op.redispatch(key, *args, **kwargs)``, which only considers keys below ``key``.

Registrations commute: the computed table is a pure function of the set of
registrations (a schema, at most one kernel per key, at most one fallback per
key), so any order of defs, impls and removals ending in the same set gives the
same state. Kernels may be registered before their op's schema.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as _np

from .._types import Size

from .keys import ALIAS_COVERS, ALL_KEYS, COMPOSITE, TLS, DispatchKey
from .schema import FunctionSchema, SchemaError

_BACKEND = DispatchKey.Backend
_PYTHON_MODE_BIT = DispatchKey.PythonMode.bit
_AUTOGRAD_BIT = DispatchKey.Autograd.bit
_NUM_KEYS = len(DispatchKey)
# keys whose global fallback outranks a CompositeImplicitAutograd kernel: a mode
# or a subclass must see the op before it decomposes
_FALLBACK_FIRST = (DispatchKey.Python, DispatchKey.PythonMode)

_tensor_type: type = type(None)
_backend_adapter: Callable | None = None


def set_tensor_type(cls: type, backend_adapter: Callable) -> None:
    """Called once by tensor.py: the class whose instances carry keys, and how
    Backend kernels (functions on jax arrays) are called with Tensors."""
    global _tensor_type, _backend_adapter
    _tensor_type, _backend_adapter = cls, backend_adapter


@dataclass(frozen=True, slots=True)
class Kernel:
    fn: Callable
    debug: str

    def describe(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"{name} [{self.debug}]"


class DispatchError(RuntimeError):
    """No kernel for an op at the key a call reached, or a bad registration."""


def caller_debug(depth: int = 2) -> str:
    """'file:line' of the code that made a registration (for dump_state)."""
    f = sys._getframe(depth)
    return f"registered at {f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno}"


class OpOverload:
    """One operator overload: its schema, kernels and computed dispatch table.

    Called like a function: ``acg.ops.myns.foo(x, y)``.
    """

    __slots__ = ("qualname", "schema", "schema_debug", "kernels", "table", "__weakref__",
                 "_name", "__dict__")

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self._name = qualname.split("::", 1)[-1]
        self.schema: FunctionSchema | None = None
        self.schema_debug = ""
        self.kernels: dict[DispatchKey | str, Kernel] = {}
        self.table: list[Callable | None] = [None] * _NUM_KEYS

    def __repr__(self) -> str:
        return self.qualname.replace("::", ".")

    @property
    def name(self) -> str:
        """The op name without namespace, e.g. 'mul' or 'sum.dim'."""
        return self._name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            keys = _keyset(args, kwargs)
        except _NumpyScalar:  # (np.float64(2), np.int64(1): Python numbers, as PyTorch's)
            args, kwargs = _python_numbers(args), _python_numbers(kwargs)
            keys = _keyset(args, kwargs)
        return _run(self, keys.bit_length() - 1, args, kwargs)

    def redispatch(self, below: DispatchKey, *args: Any, **kwargs: Any) -> Any:
        """Call the next kernel under ``below`` (what a kernel does to go on down)."""
        try:
            keys = _keyset(args, kwargs) & ((1 << below) - 1) | 1
        except _NumpyScalar:
            args, kwargs = _python_numbers(args), _python_numbers(kwargs)
            keys = _keyset(args, kwargs) & ((1 << below) - 1) | 1
        return _run(self, keys.bit_length() - 1, args, kwargs)

    def call_key(self, key: DispatchKey, *args: Any, **kwargs: Any) -> Any:
        """Call the kernel at exactly ``key`` (skipping everything above it)."""
        return _run(self, int(key), args, kwargs)

    def kernel_for(self, key: DispatchKey) -> Callable | None:
        return self.table[key]


class _NumpyScalar(Exception):
    """An argument is a numpy scalar or an ``acg.Size``: the call converts its arguments
    first (rare: a tensor, list, tuple or Python number passes unchecked)."""


# numpy's scalar types: an op reads them as the Python numbers they hold (weakly typed:
# ``f32 * np.float64(2)`` stays float32, as in PyTorch), never as 0-d tensors; and
# ``acg.Size`` (``x.view(y.shape)``), which kernels and graphs read as the plain tuple
_NUMPY_SCALARS = frozenset([*(t for t in _np.sctypeDict.values()
                              if issubclass(t, _np.number) or t is _np.bool_), Size])


def _python_numbers(value: Any) -> Any:
    if type(value) is Size:
        return tuple(_python_numbers(v) for v in value)
    if type(value) in _NUMPY_SCALARS:
        return value.item()
    if type(value) in (list, tuple):
        return type(value)(_python_numbers(v) for v in value)
    if type(value) is dict:
        return {k: _python_numbers(v) for k, v in value.items()}
    return value


def _scan(value: Any, acc: list) -> None:
    tensor = _tensor_type
    if isinstance(value, tensor):
        acc[0] |= value._acg_keys
        acc[1] = acc[1] or value._requires_grad
    elif type(value) in (list, tuple):
        for v in value:  # a list of tensors (cat, stack) inline: one call, not one per tensor
            if isinstance(v, tensor):
                acc[0] |= v._acg_keys
                acc[1] = acc[1] or v._requires_grad
            elif type(v) in (list, tuple):
                _scan(v, acc)
            elif type(v) in _NUMPY_SCALARS:
                raise _NumpyScalar
    elif type(value) in _NUMPY_SCALARS:
        raise _NumpyScalar


def _keyset(args: tuple, kwargs: dict) -> int:
    keys, grad = 1, False  # Backend is always present
    tensor = _tensor_type
    for a in args:  # tensors inline (the common argument); lists and tuples through _scan
        if isinstance(a, tensor):
            keys |= a._acg_keys
            grad = grad or a._requires_grad
        elif type(a) in (list, tuple):
            acc = [keys, grad]
            _scan(a, acc)
            keys, grad = acc
        elif type(a) in _NUMPY_SCALARS:
            raise _NumpyScalar
    if kwargs:
        acc = [keys, grad]
        for a in kwargs.values():
            _scan(a, acc)
        keys, grad = acc
    tls = TLS
    if grad and tls.grad_enabled:
        keys |= _AUTOGRAD_BIT
    if tls.mode_stack:
        keys |= _PYTHON_MODE_BIT
    return (keys | tls.included) & ~tls.excluded


def _run(op: OpOverload, key: int, args: tuple, kwargs: dict) -> Any:
    entry = op.table[key]
    if entry is None:
        raise _missing(op, key)
    return entry.call(op, args, kwargs)


def _missing(op: OpOverload, key: int) -> Exception:
    if op.schema is None:
        return DispatchError(f"operator {op.qualname} was never defined (no schema); kernels "
                             f"registered: {sorted(str(k) for k in op.kernels)}")
    return NotImplementedError(
        f"could not run '{op.qualname}' with arguments from the '{DispatchKey(key).name}' "
        f"key: no kernel is registered there and no fallback covers it")


class Dispatcher:
    """The process-wide registry of operators and per-key fallbacks."""

    def __init__(self) -> None:
        self.ops: dict[str, OpOverload] = {}
        self.fallbacks: dict[DispatchKey, Kernel] = {}

    # -- registration (each returns an undo callable) ---------------------------------
    def op(self, qualname: str) -> OpOverload:
        """The OpOverload object for a name (created empty if unknown)."""
        op = self.ops.get(qualname)
        if op is None:
            op = self.ops[qualname] = OpOverload(qualname)
        return op

    def register_schema(self, schema: FunctionSchema, debug: str) -> Callable[[], None]:
        op = self.op(schema.qualified_name)
        if op.schema is not None:
            raise SchemaError(f"operator {op.qualname} is already defined "
                              f"({op.schema_debug}) with schema '{op.schema}'")
        op.schema, op.schema_debug = schema, debug
        self._recompute(op)

        def undo() -> None:
            op.schema, op.schema_debug = None, ""
            self._recompute(op)
        return undo

    def register_kernel(self, qualname: str, key: DispatchKey | str, kernel: Kernel
                        ) -> Callable[[], None]:
        op = self.op(qualname)
        if key in op.kernels:
            raise DispatchError(f"operator {qualname} already has a kernel for {_kname(key)} "
                                f"({op.kernels[key].debug}); remove it first")
        op.kernels[key] = kernel
        self._recompute(op)

        def undo() -> None:
            del op.kernels[key]
            self._recompute(op)
        return undo

    def register_fallback(self, key: DispatchKey, kernel: Kernel) -> Callable[[], None]:
        if key in self.fallbacks:
            raise DispatchError(f"a fallback for {key.name} is already registered "
                                f"({self.fallbacks[key].debug})")
        self.fallbacks[key] = kernel
        self._recompute_all()

        def undo() -> None:
            del self.fallbacks[key]
            self._recompute_all()
        return undo

    # -- the computed table -------------------------------------------------------------
    def _recompute_all(self) -> None:
        for op in list(self.ops.values()):
            self._recompute(op)

    def _recompute(self, op: OpOverload) -> None:
        for key in DispatchKey:
            op.table[key] = self._compute_entry(op, key)
        if op.schema is None and not op.kernels:
            self.ops.pop(op.qualname, None)  # nothing left: forget it (keeps states comparable)
        elif op.qualname not in self.ops:
            self.ops[op.qualname] = op

    def _compute_entry(self, op: OpOverload, key: DispatchKey) -> Callable | None:
        source = self._entry_source(op, key)
        if source is None:
            return None
        # only a kernel registered for Backend itself takes jax arrays; a composite
        # filling the Backend slot is written in ops and takes Tensors
        return _adapt(key if source[0] == "kernel" else None, source[1])

    def _entry_source(self, op: OpOverload, key: DispatchKey) -> tuple[str, Kernel] | None:
        """Which registration fills ``key``: ('kernel'|'composite'|'fallback', Kernel)."""
        if op.schema is None:
            return None
        if key in op.kernels:
            return "kernel", op.kernels[key]
        order = ["fallback", "composite"] if key in _FALLBACK_FIRST else ["composite", "fallback"]
        for kind in order:
            if kind == "composite" and COMPOSITE in op.kernels and key in ALIAS_COVERS:
                return "composite", op.kernels[COMPOSITE]
            if kind == "fallback" and key in self.fallbacks:
                return "fallback", self.fallbacks[key]
        return None

    # -- introspection ------------------------------------------------------------------
    def dump_state(self, op: OpOverload | str) -> str:
        """Schema, every registered kernel with its debug string, the computed table."""
        op = self.ops.get(op) if isinstance(op, str) else op
        if op is None:
            return "(operator not registered)\n"
        lines = [f"name: {op.qualname}",
                 f"schema: {op.schema if op.schema else '(none)'}"
                 + (f"  [{op.schema_debug}]" if op.schema else "")]
        for key in sorted(op.kernels, key=_kname):
            lines.append(f"{_kname(key)}: {op.kernels[key].describe()}")
        lines.append("computed table:")
        for key in ALL_KEYS:
            src = self._entry_source(op, key)
            shown = "(missing)" if src is None else f"{src[0]} {src[1].describe()}"
            lines.append(f"  {key.name}: {shown}")
        return "\n".join(lines) + "\n"

    def check_invariants(self, op: OpOverload | str) -> None:
        """Assert the op's internal state is consistent; raise AssertionError if not."""
        op = self.ops[op] if isinstance(op, str) else op
        assert self.ops.get(op.qualname) is op, f"{op.qualname} is not in the registry"
        assert op.schema is not None or op.kernels, f"{op.qualname}: empty entry kept"
        if op.schema is not None:
            assert op.schema.qualified_name == op.qualname, f"{op.qualname}: schema name differs"
        for key, k in op.kernels.items():
            assert key == COMPOSITE or isinstance(key, DispatchKey), f"bad key {key!r}"
            assert callable(k.fn), f"{op.qualname}: kernel at {_kname(key)} is not callable"
        for key in DispatchKey:
            fresh = self._entry_source(op, key)
            have = op.table[key]
            assert (fresh is None) == (have is None), \
                f"{op.qualname}: table entry for {key.name} is stale"
            if have is not None:
                assert have.kernel is fresh[1], f"{op.qualname}: {key.name} runs the wrong kernel"


def _kname(key: DispatchKey | str) -> str:
    return key if isinstance(key, str) else key.name


class _Entry:
    """A table entry: the registered kernel plus how this key calls it."""

    __slots__ = ("kernel", "call")

    def __init__(self, kernel: Kernel, call: Callable) -> None:
        self.kernel, self.call = kernel, call

    def __call__(self, op: OpOverload, args: tuple, kwargs: dict) -> Any:
        return self.call(op, args, kwargs)


def _adapt(key: DispatchKey | None, kernel: Kernel) -> _Entry:
    """Kernels registered with impl() take (*args, **kwargs); fallbacks take
    (op, args, kwargs); Backend kernels take jax arrays and go through the adapter."""
    fn = kernel.fn
    if getattr(fn, "_acg_boxed", False):
        return _Entry(kernel, fn)
    if key == _BACKEND:
        return _Entry(kernel, lambda op, args, kwargs: _backend_adapter(op, fn, args, kwargs))
    return _Entry(kernel, lambda op, args, kwargs: fn(*args, **kwargs))


def boxed(fn: Callable) -> Callable:
    """Mark a kernel that takes ``(op, args, kwargs)`` (as fallbacks do)."""
    fn._acg_boxed = True
    return fn


DISPATCHER = Dispatcher()
