"""Recording: a :class:`Session` per recorded cycle, a dispatch mode that times every op,
and ``record_function`` ranges.

While a session records, its :class:`OpObserver` sits on the dispatch mode stack, so every
op call reaches it (``modes.py``): it opens an event named as PyTorch names the op
(``acg::mul.Tensor`` is ``aten::mul``), runs the op, waits for the op's results (JAX runs
asynchronously: without the wait an op's time would be its launch only) and closes the
event. The op runs one key below the mode with the observer back on the stack, so the ops
it calls in turn (a composite's decomposition, a backward formula) are recorded as its
children. Where other modes sit below the observer, the op goes on to them instead and
its inner ops are theirs.

>>> import autograd_compile as acg
>>> from autograd_compile.profiler.recorder import Options, Session, record_function
>>> s = Session(Options())
>>> s.start()
>>> with record_function("block"):
...     y = acg.ones(2) * 3
>>> s.stop()
>>> [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in s.events]
[('block', None), ('aten::ones', 'block'), ('aten::mul', 'block')]
"""
from __future__ import annotations

import functools
import math
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import jax

from ..dispatch.dispatcher import OpOverload
from ..dispatch.keys import TLS, DispatchKey
from ..modes import DispatchMode
from ..tensor import Tensor
from ._session import LOCAL as _LOCAL, active_session
from .events import EventList, FunctionEvent

_NAMESPACES = {"acg": "aten"}  # our op namespace shown as PyTorch's
_NAMES: dict[str, tuple[str, str]] = {}  # qualname -> (event name, overload name)


@dataclass(frozen=True, slots=True)
class Options:
    """What each op event records besides its interval."""

    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False


class Session:
    """One recording: the events in order of their start, and the ones still open."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.events: list[FunctionEvent] = []
        self.open: list[FunctionEvent] = []
        self.paused = False  # toggle_collection_dynamic: ops run unrecorded
        self.observer = OpObserver(self)
        self.base_time_ns = time.time_ns()
        self._origin_ns = time.perf_counter_ns()
        self._thread = threading.get_native_id()
        self._stack: list | None = None  # the thread's mode stack the observer is on
        self._undo: Callable[[], None] | None = None
        self._made: dict[int, set[int]] = {}  # open parent's child event id -> its output ids
        self._ids = 0

    @property
    def recording(self) -> bool:
        return self._stack is not None

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self._origin_ns) / 1e3

    # -- starting and stopping ----------------------------------------------------------
    def start(self) -> None:
        """Record this thread's ops and ranges from now on."""
        if active_session() is not None:
            raise RuntimeError("a profiler is already recording on this thread; stop it (leave "
                               "its `with` block or call .stop()) before starting another")
        from . import instrument
        self._undo = instrument.acquire()
        _LOCAL.session = self
        self._stack = TLS.mode_stack
        self._stack.append(self.observer)

    def stop(self) -> None:
        """Stop recording: close what is open, take the observer off the mode stack."""
        end = self.now_us()
        for e in self.open:  # ranges still open (a `.stop()` inside record_function)
            e.time_range.end = end
        self.open.clear()
        stack, self._stack = self._stack, None
        if stack is not None:
            for i in range(len(stack) - 1, -1, -1):  # wherever it is: a mode entered after
                if stack[i] is self.observer:       # the profiler may still be active
                    del stack[i]
                    break
        if active_session() is self:
            _LOCAL.session = None
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    @contextmanager
    def hidden(self) -> Iterator[None]:
        """Run the block as if no profiler were active: the observer off the mode stack and
        recording paused (a compiled program: the library picks its paths by the stack)."""
        stack, paused = self._stack, self.paused
        at = next((i for i in range(len(stack) - 1, -1, -1) if stack[i] is self.observer),
                  None) if stack is not None else None
        if at is not None:
            del stack[at]
        self.paused = True
        try:
            yield
        finally:
            self.paused = paused
            if at is not None and self._stack is stack:  # (a stop inside: stays off)
                stack.insert(min(at, len(stack)), self.observer)

    def results(self, earlier: Iterable[FunctionEvent] | None = None) -> EventList:
        """The recorded events as an :class:`EventList` that knows the options' columns,
        after ``earlier``'s (an earlier recording kept with PyTorch's ``acc_events``)."""
        o = self.options
        return EventList([*(earlier or ()), *self.events], profile_memory=o.profile_memory,
                         with_flops=o.with_flops, base_time_ns=self.base_time_ns)

    # -- events ---------------------------------------------------------------------------
    def open_event(self, name: str, **fields: Any) -> FunctionEvent:
        """Start an event now, as a child of the innermost open one."""
        parent = self.open[-1] if self.open else None
        self._ids += 1
        e = FunctionEvent(self._ids, name, self._thread, self.now_us(), parent=parent, **fields)
        self.events.append(e)
        self.open.append(e)
        return e

    def close_event(self, e: FunctionEvent) -> None:
        """End ``e`` now (a no-op if the session already closed it)."""
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i] is e:
                e.time_range.end = self.now_us()
                del self.open[i]
                if self.options.profile_memory:  # a total holds what the children made
                    e.cpu_memory_usage += sum(c.cpu_memory_usage for c in e.cpu_children)
                    for c in e.cpu_children:
                        self._made.pop(c.id, None)
                return

    def made_bytes(self, e: FunctionEvent, out: Any, args: tuple) -> int:
        """Bytes of the op's outputs that it made itself: not an input returned as is,
        not a child op's output (counted there)."""
        outs = _tensors(out)
        seen = {id(t._store) for t in _tensors(args)}
        for c in e.cpu_children:
            seen |= self._made.get(c.id, set())
        if e.cpu_parent is not None:
            self._made[e.id] = {id(t._store) for t in outs}
        return sum(_nbytes(t) for t in outs if id(t._store) not in seen)

    def discard(self, e: FunctionEvent) -> None:
        """Forget an event with no children (a range that turned out to hold nothing)."""
        self.close_event(e)
        self.events.remove(e)
        if e.cpu_parent is not None:
            e.cpu_parent.cpu_children.remove(e)


class OpObserver(DispatchMode):
    """The mode that turns each op call into an event of its session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def __acg_dispatch__(self, func: OpOverload, types: tuple[type, ...], args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        s = self.session
        if s.paused:
            return self._run(func, args, kwargs)
        name, overload = _event_names(func)
        opts = s.options
        e = s.open_event(name, overload_name=overload,
                         input_shapes=_shapes(args, kwargs) if opts.record_shapes else None,
                         stack=user_stack() if opts.with_stack else None)
        try:
            out = self._run(func, args, kwargs)
            _wait(out)
            if opts.profile_memory:
                e.cpu_memory_usage = s.made_bytes(e, out, args)
            if opts.with_flops:
                e.flops = op_flops(name, args, out)
        finally:
            s.close_event(e)
        return out

    def _run(self, func: OpOverload, args: tuple, kwargs: dict) -> Any:
        stack = TLS.mode_stack  # (this mode was popped to call us)
        if stack:  # modes below see the op next; the ops inside it are theirs
            return func(*args, **kwargs)
        stack.append(self)  # back on the stack: the ops this op calls are recorded too
        try:
            return func.redispatch(DispatchKey.PythonMode, *args, **kwargs)
        finally:
            if stack and stack[-1] is self:
                stack.pop()


class record_function:
    """Mark a range of code: it shows in the profile as one event holding the ops inside.

    A context manager, or a decorator (each call of the function is one range). Outside a
    profiler it does nothing.

    >>> import autograd_compile as acg
    >>> from autograd_compile.profiler import profile, record_function
    >>> @record_function("scale")
    ... def scale(x):
    ...     return x * 2
    >>> with profile() as prof:
    ...     with record_function("step"):
    ...         y = scale(acg.ones(3))
    >>> [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
    [('step', None), ('aten::ones', 'step'), ('scale', 'step'), ('aten::mul', 'scale')]
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._open: tuple[Session, FunctionEvent] | None = None

    def __enter__(self) -> "record_function":
        s = active_session()
        if s is not None and not s.paused:
            meta = {"args": self.args} if self.args is not None else None
            self._open = s, s.open_event(self.name, is_user_annotation=True, metadata=meta)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._open is not None:
            s, e = self._open
            self._open = None
            s.close_event(e)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def ranged(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):  # a fresh range per (nested) call
                return fn(*args, **kwargs)
        return ranged


# -- what one op event records ----------------------------------------------------------------

def _event_names(func: OpOverload) -> tuple[str, str]:
    """('aten::mul', 'Tensor') for ``acg::mul.Tensor``; other namespaces keep theirs."""
    names = _NAMES.get(func.qualname)
    if names is None:
        ns, _, rest = func.qualname.partition("::")
        base, _, overload = rest.partition(".")
        names = _NAMES[func.qualname] = (f"{_NAMESPACES.get(ns, ns)}::{base}", overload)
    return names


def _shape(value: Any) -> list:
    if isinstance(value, Tensor):
        return [s if type(s) is int else str(s) for s in value._sizes]
    if type(value) in (list, tuple) and value and all(isinstance(v, Tensor) for v in value):
        return [_shape(v) for v in value]  # a tensor list: each tensor's shape
    return []


def _shapes(args: tuple, kwargs: dict) -> list[list]:
    """PyTorch's ``input_shapes``: a shape per tensor argument, [] for the others."""
    return [_shape(a) for a in (*args, *kwargs.values())]


def _tensors(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if type(value) in (list, tuple):
        return [t for v in value for t in _tensors(v)]
    return []


def _wait(out: Any) -> None:
    """Block until the op's device results exist (traced values have none to wait for)."""
    for t in _tensors(out):
        store = t._store
        if isinstance(store, jax.Array) and not isinstance(store, jax.core.Tracer):
            store.block_until_ready()


def _nbytes(t: Tensor) -> int:
    sizes, dtype = t._sizes, getattr(t._store, "dtype", None)
    if dtype is None or not all(type(s) is int for s in sizes):
        return 0  # a fake value or symbolic sizes (a trace): no memory of its own
    return math.prod(sizes) * dtype.itemsize


_MATMULS = {"aten::mm": 0, "aten::matmul": 0, "aten::bmm": 0, "aten::linear": 0,
            "aten::addmm": 1, "aten::baddbmm": 1, "aten::addbmm": 1}
_ELEMENTWISE = {"aten::mul", "aten::add", "aten::sub", "aten::div"}


def op_flops(name: str, args: tuple, out: Any) -> int:
    """Floating-point operations of a matmul-like op (2 per multiply-add) or of an
    elementwise arithmetic op (1 per output element); 0 for the rest, as PyTorch counts."""
    outs = _tensors(out)
    if not outs or not all(type(s) is int for s in outs[0]._sizes):
        return 0
    n = math.prod(outs[0]._sizes)
    if name in _ELEMENTWISE:
        return n
    k = _MATMULS.get(name)
    if k is None or len(args) <= k or not isinstance(args[k], Tensor) or not args[k]._sizes:
        return 0
    inner = args[k]._sizes[-1]
    return 2 * n * inner if type(inner) is int else 0


@functools.cache
def _package_dirs() -> tuple[str, ...]:
    from .. import kernels
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return here + os.sep, os.path.dirname(os.path.abspath(kernels.__file__)) + os.sep


def user_stack() -> list[str]:
    """The calling Python frames outside this library, innermost first, as
    'file.py(line): function' (PyTorch's ``with_stack`` entries)."""
    skip = _package_dirs()
    out, f = [], sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(skip) and not path.endswith("contextlib.py"):
            out.append(f"{path}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out
