"""The SymDispatchMode (size arithmetic seen by a tracer) and the weak maps from
symbols to a tracer's proxies."""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar


class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[SymDispatchMode] = []


_MODES = _ModeStack()


class SymDispatchMode:
    """Base class for modes intercepting every symbolic operation.

    Subclasses override ``__sym_dispatch__``; ``func`` is the Python-level
    function (``operator.mul``, ``sym_max``, ``bool``, ``int``...) and ``args``
    the original operands.  The mode is popped while its handler runs.

    >>> class Log(SymDispatchMode):
    ...     def __sym_dispatch__(self, func, types, args, kwargs):
    ...         print(func.__name__, args)
    ...         return func(*args, **kwargs)
    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> s = ShapeEnv().create_symint(4)
    >>> with Log():
    ...     r = 3 * s
    mul (3, s0)
    """

    def __sym_dispatch__(self, func: Callable[..., Any], types: tuple[type, ...],
                         args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return func(*args, **kwargs)

    def __enter__(self) -> SymDispatchMode:
        _MODES.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        popped = _MODES.stack.pop()
        assert popped is self, "SymDispatchMode exited out of order"


def current_sym_dispatch_mode() -> SymDispatchMode | None:
    """The innermost active mode, or ``None``."""
    return _MODES.stack[-1] if _MODES.stack else None


@contextmanager
def _mode_popped() -> Iterator[SymDispatchMode]:
    mode = _MODES.stack.pop()
    try:
        yield mode
    finally:
        _MODES.stack.append(mode)



K = TypeVar("K")
V = TypeVar("V")


class _WeakIdKeyDict(Generic[K, V]):
    """Weak keys compared by identity (``WeakKeyDictionary`` would call
    ``SymInt.__eq__``, which builds a SymBool and goes through dispatch)."""

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref[K], V]] = {}

    def __setitem__(self, key: K, value: V) -> None:
        kid, data = id(key), self._data

        def drop(ref: weakref.ref[K]) -> None:
            if kid in data and data[kid][0] is ref:  # id may be reused later
                del data[kid]
        self._data[kid] = (weakref.ref(key, drop), value)

    def get(self, key: K, default: V | None = None) -> V | None:
        entry = self._data.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else default

    def __contains__(self, key: object) -> bool:
        entry = self._data.get(id(key))
        return entry is not None and entry[0]() is key

    def __len__(self) -> int:
        return len(self._data)


class SymProxyTracker:
    """One tracer's map from symbolic values to the proxies that compute them.

    Keys are held weakly (by identity), so a dropped ``SymInt`` frees its
    entry; owning the tracker from the tracer frees everything with it.

    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> s = ShapeEnv().create_symint(4)
    >>> tracker = SymProxyTracker(); tracker.set(s, "size_0")
    >>> tracker.get(s), s in tracker, len(tracker)
    ('size_0', True, 1)
    """

    def __init__(self) -> None:
        self._map: _WeakIdKeyDict[Any, Any] = _WeakIdKeyDict()

    def set(self, sym: Any, proxy: Any) -> None:
        self._map[sym] = proxy

    def get(self, sym: Any, default: Any = None) -> Any:
        return self._map.get(sym, default)

    def __contains__(self, sym: object) -> bool:
        return sym in self._map

    def __len__(self) -> int:
        return len(self._map)


# Keyed weakly by tracer.  A proxy that strongly references its tracer would
# keep the tracer alive from here: such tracers should own a SymProxyTracker.
_TRACKERS: weakref.WeakKeyDictionary[Any, SymProxyTracker] = weakref.WeakKeyDictionary()


def _tracker_of(tracer: Any, create: bool) -> SymProxyTracker | None:
    """A tracer that owns a ``sym_tracker`` keeps its map itself (its proxies reference
    the tracer, so a module-level entry would keep it alive); others use the weak map."""
    own = getattr(tracer, "sym_tracker", None)
    if own is not None:
        return own
    tracker = _TRACKERS.get(tracer)
    if tracker is None and create:
        tracker = _TRACKERS[tracer] = SymProxyTracker()
    return tracker


def set_proxy(tracer: Any, sym: Any, proxy: Any) -> None:
    """Remember that, in ``tracer``, ``sym`` is computed by ``proxy``."""
    _tracker_of(tracer, True).set(sym, proxy)


def get_proxy(tracer: Any, sym: Any, default: Any = None) -> Any:
    """The proxy ``tracer`` recorded for ``sym``, or ``default``."""
    tracker = _tracker_of(tracer, False)
    return default if tracker is None else tracker.get(sym, default)


def has_proxy(tracer: Any, sym: Any) -> bool:
    """Whether ``tracer`` has a proxy for ``sym``."""
    tracker = _tracker_of(tracer, False)
    return tracker is not None and sym in tracker
