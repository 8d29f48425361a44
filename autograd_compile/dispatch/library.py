"""The operator registration API: ``Library(ns, "DEF" | "IMPL" | "FRAGMENT")``.

>>> import autograd_compile as acg, jax.numpy as jnp
>>> lib = acg.library.Library("demo_doc", "DEF")
>>> h = lib.define("twice(Tensor x) -> Tensor")
>>> k = lib.impl("twice", lambda x: x * 2, "Backend")      # Backend kernels take jax arrays
>>> acg.ops.demo_doc.twice(acg.tensor([1.0, 2.0])).tolist()
[2.0, 4.0]
>>> k.remove(); h.remove()

``DEF`` owns a namespace (one per namespace) and may define ops; ``FRAGMENT``
may define ops in a namespace another library owns; ``IMPL`` only adds kernels.
Every registration returns a :class:`RegistrationHandle`; a failing
registration changes nothing.
"""
from __future__ import annotations

from typing import Callable

from .dispatcher import DISPATCHER, DispatchError, Kernel, OpOverload, boxed, caller_debug
from .keys import COMPOSITE, DispatchKey, parse_key
from .schema import SchemaError, parse_schema

_DEF_OWNERS: dict[str, "Library"] = {}


class RegistrationHandle:
    """Undoes one registration; ``remove()`` twice is harmless."""

    __slots__ = ("_undo", "what")

    def __init__(self, undo: Callable[[], None], what: str) -> None:
        self._undo: Callable[[], None] | None = undo
        self.what = what

    def remove(self) -> None:
        if self._undo is not None:
            undo, self._undo = self._undo, None
            undo()

    def __repr__(self) -> str:
        return f"<RegistrationHandle {self.what}{' (removed)' if self._undo is None else ''}>"


class Library:
    """Registers schemas, kernels and fallbacks for one namespace."""

    def __init__(self, ns: str, kind: str) -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Library kind must be 'DEF', 'IMPL' or 'FRAGMENT', got {kind!r}")
        if kind == "DEF" and ns in _DEF_OWNERS:
            raise DispatchError(f"namespace {ns!r} already has a DEF library; use 'FRAGMENT' "
                                "to add ops to it or 'IMPL' to add kernels")
        self.ns, self.kind = ns, kind
        self.handles: list[RegistrationHandle] = []
        if kind == "DEF":
            _DEF_OWNERS[ns] = self

    def define(self, schema: str, *, debug: str | None = None) -> RegistrationHandle:
        """Declare an op from its schema string (namespace optional)."""
        if self.kind == "IMPL":
            raise DispatchError(f"Library({self.ns!r}, 'IMPL') cannot define ops")
        parsed = parse_schema(schema, default_namespace=self.ns)
        self._check_ns(parsed.name.split("::")[0], schema)
        undo = DISPATCHER.register_schema(parsed, debug or caller_debug())
        return self._keep(RegistrationHandle(undo, f"def {parsed.qualified_name}"))

    def impl(self, name: str, fn: Callable, dispatch_key: str | DispatchKey = COMPOSITE,
             *, debug: str | None = None) -> RegistrationHandle:
        """Register ``fn`` as the kernel of op ``name`` for ``dispatch_key``.

        ``name`` is ``"op"``, ``"op.overload"`` or ``"ns::op"``; Backend kernels take
        and return jax arrays, every other key takes Tensors.
        """
        key = parse_key(dispatch_key)
        qualname = name if "::" in name else f"{self.ns}::{name}"
        self._check_ns(qualname.split("::")[0], name)
        if not callable(fn):
            raise TypeError(f"impl({name!r}): kernel must be callable, got {type(fn).__name__}")
        undo = DISPATCHER.register_kernel(qualname, key, Kernel(fn, debug or caller_debug()))
        keyname = key if isinstance(key, str) else key.name
        return self._keep(RegistrationHandle(undo, f"impl {qualname} @ {keyname}"))

    def fallback(self, fn: Callable, dispatch_key: str | DispatchKey, *,
                 debug: str | None = None) -> RegistrationHandle:
        """A kernel ``fn(op, args, kwargs)`` for every op without one at this key."""
        key = parse_key(dispatch_key)
        if key == COMPOSITE:
            raise DispatchError("CompositeImplicitAutograd is an alias key; it has no fallback")
        undo = DISPATCHER.register_fallback(key, Kernel(boxed(fn), debug or caller_debug()))
        return self._keep(RegistrationHandle(undo, f"fallback @ {key.name}"))

    def _check_ns(self, ns: str, what: str) -> None:
        if ns != self.ns and ns != "_":
            raise SchemaError(f"{what!r} is in namespace {ns!r}, but this Library is for "
                              f"{self.ns!r}")

    def _keep(self, handle: RegistrationHandle) -> RegistrationHandle:
        self.handles.append(handle)
        return handle

    def remove_all(self) -> None:
        """Undo every registration this library made (newest first)."""
        for h in reversed(self.handles):
            h.remove()
        self.handles.clear()
        if _DEF_OWNERS.get(self.ns) is self:
            del _DEF_OWNERS[self.ns]


class _OpNamespace:
    """``acg.ops.<ns>``: attribute access finds the op (default overload)."""

    def __init__(self, ns: str) -> None:
        self._ns = ns

    def __getattr__(self, name: str) -> "OpOverload | _OpPacket":
        if name.startswith("__"):
            raise AttributeError(name)
        return _OpPacket(f"{self._ns}::{name}")


class _OpPacket:
    """All overloads of one op name; calling it calls the default overload."""

    __slots__ = ("_qualname",)

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    @property
    def default(self) -> OpOverload:
        op = DISPATCHER.ops.get(self._qualname)
        if op is None:
            raise AttributeError(f"no operator named {self._qualname}")
        return op

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        op = DISPATCHER.ops.get(f"{self._qualname}.{overload}")
        if op is None:
            raise AttributeError(f"no overload {self._qualname}.{overload}")
        return op

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)


class _Ops:
    """``acg.ops``: namespaces of registered operators."""

    def __getattr__(self, ns: str) -> _OpNamespace:
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _OpNamespace(ns)


ops = _Ops()
