"""Value checks (index bounds, class targets) that hold inside compiled programs too.

Eager kernels check index values on the host before running (JAX would clamp or
drop an out-of-range index silently). Inside a compiled program (``acg.compile``,
compiled autograd's JAX backend) the values are traced, so a kernel instead
*records* its check: a boolean "bad" and one integer detail (the offending index),
computed in the program. The checks of one program are packed into one small int64
array, computed by a program of their own (:class:`CheckedProgram`: the same trace,
of which XLA keeps only what the checks read); the runtime reads it once per call,
before the main program runs, and raises the first failed check's error with the
very type and text eager raises, so nothing the call would compute is written back.

A check whose error shows values (a distribution's invalid parameter, printed in eager's
``ValueError``) records them too (:func:`enforce_values`): they come back with the flags and
are read only when the check failed.

``ACG_CHECKS=0`` (or :func:`set_enabled`) leaves the checks out of programs traced
afterwards (eager checks stay: they cost no program output).

>>> import numpy as np, jax, jax.numpy as jnp
>>> def prog(i):
...     with collecting() as c:
...         enforce(i >= 3, i, lambda v: IndexError(f"index {v} is out of bounds"))
...         return i * 2, c.pack()
>>> out, flags = jax.jit(prog)(jnp.int64(5))
>>> raise_failed(flags)
Traceback (most recent call last):
IndexError: index 5 is out of bounds
"""
from __future__ import annotations

import contextlib
import itertools
import os
import threading
from typing import Any, Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

ErrorFn = Callable[[int], BaseException]
ValuesErrorFn = Callable[[list[np.ndarray]], BaseException]
_ENABLED = os.environ.get("ACG_CHECKS", "1").lower() not in ("0", "false", "no", "")
_TLS = threading.local()
# trace id -> the error builders of that trace, in check order (the packed array names its
# trace: one jitted program traces once per shape, each trace with its own sizes in the texts)
_ERRORS: dict[int, list[ErrorFn]] = {}
_IDS = itertools.count(1)


def enabled() -> bool:
    """Whether programs traced now carry value checks (``ACG_CHECKS``, default on)."""
    return _ENABLED


def set_enabled(flag: bool) -> bool:
    """Turn the compiled checks on or off for programs traced from now on; returns the
    previous setting (programs already compiled keep what they were traced with)."""
    global _ENABLED
    prev, _ENABLED = _ENABLED, bool(flag)
    return prev


class Collector:
    """The checks one program's trace recorded."""

    __slots__ = ("flags", "details", "errors", "values")

    def __init__(self) -> None:
        self.flags: list[Any] = []
        self.details: list[Any] = []
        self.errors: list[ErrorFn | _WithValues] = []
        self.values: list[tuple] = []

    def pack(self) -> Any:
        """None without checks, else one int64 array ``[trace id, flag, detail, ...]``, paired
        with the recorded values' arrays when a check records some."""
        if not self.flags:
            return None
        key = next(_IDS)
        _ERRORS[key] = self.errors
        cols = [jnp.asarray(key, jnp.int64)]
        for f, d in zip(self.flags, self.details):
            cols += [jnp.asarray(f, jnp.int64), jnp.asarray(d, jnp.int64)]
        return (jnp.stack(cols), tuple(self.values)) if self.values else jnp.stack(cols)


class _WithValues:
    """The error of an :func:`enforce_values` check: built from its recorded arrays."""

    __slots__ = ("error", "index")

    def __init__(self, error: ValuesErrorFn, index: int) -> None:
        self.error, self.index = error, index


@contextlib.contextmanager
def collecting() -> Iterator[Collector]:
    """Record the checks of the traced code inside (nested programs: the innermost)."""
    stack = _TLS.__dict__.setdefault("stack", [])
    c = Collector()
    stack.append(c)
    try:
        yield c
    finally:
        stack.pop()


def enforce(bad: Any, detail: Any, error: ErrorFn) -> None:
    """Raise ``error(detail)`` now when ``bad`` is concrete and true; inside a program
    being traced, record the check (nothing when no program collects, or checks are off)."""
    if isinstance(bad, jax.core.Tracer) or isinstance(detail, jax.core.Tracer):
        stack = getattr(_TLS, "stack", None)
        if stack and _ENABLED:
            c = stack[-1]
            c.flags.append(jnp.any(bad))
            c.details.append(detail)
            call = getattr(_TLS, "call", None)
            c.errors.append(error if call is None else _in_op(error, *call))
    elif bad:
        raise error(int(detail))


def enforce_values(bad: Any, values: Sequence[Any], error: ValuesErrorFn) -> None:
    """:func:`enforce` whose error is built from ``values`` (arrays): raised now with them
    when ``bad`` is concrete and true; inside a program being traced, the check and the
    arrays are recorded, and the arrays read back only when the check fails."""
    if isinstance(bad, jax.core.Tracer) or any(isinstance(v, jax.core.Tracer) for v in values):
        stack = getattr(_TLS, "stack", None)
        if stack and _ENABLED:
            c = stack[-1]
            c.flags.append(jnp.any(bad))
            c.details.append(0)
            c.errors.append(_WithValues(error, len(c.values)))
            c.values.append(tuple(values))
    elif bool(np.any(np.asarray(bad))):
        raise error([np.asarray(v) for v in values])


def run_pre(pre: Callable, schema: Any, args: tuple, kwargs: dict) -> None:
    """Run an op's value check ``pre`` inside a program's trace: what it records raises
    the error eager raises for that op (``acg::gather: ...  called with (...)``)."""
    prev, _TLS.call = getattr(_TLS, "call", None), (schema, args, kwargs)
    try:
        pre(*args, **kwargs)
    finally:
        _TLS.call = prev


class _Described:
    """An argument kept as the text eager's error gives it (no tracer outlives the trace)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class _Op:
    __slots__ = ("qualname", "schema")

    def __init__(self, qualname: str, schema: Any) -> None:
        self.qualname, self.schema = qualname, schema


def _in_op(error: ErrorFn, schema: Any, args: tuple, kwargs: dict) -> ErrorFn:
    """``error`` wrapped as the dispatcher wraps a kernel's failure in eager."""
    from .errors import describe_value, op_error
    texts = tuple(_Described(describe_value(v)) for v in args)  # as given, as eager names them
    # keyword-only arguments: the Python API passes them all (a graph drops the defaults)
    kw = {a.name: kwargs.get(a.name, a.default) for a in schema.arguments
          if a.kwarg_only and (a.name in kwargs or a.has_default)}
    kw = {k: _Described(describe_value(v)) for k, v in kw.items()}
    op = _Op(schema.qualified_name, schema)
    return lambda v: op_error(op, texts, kw, error(v))


def active() -> bool:
    """Whether a program being traced now collects checks (and checks are on)."""
    return _ENABLED and bool(getattr(_TLS, "stack", None))


def in_range(a: Any, low: int, high: int, error: ErrorFn, prefer: str = "first") -> None:
    """Traced: record that every entry of ``a`` lies in ``[low, high)``. The detail is the
    first offending entry (``prefer="first"``), or the extreme one eager names: the
    maximum when it is too high else the minimum (``"high"``), or the other way round."""
    if not active():
        return
    if prefer == "first":
        bad, detail = first_bad(a, (a < low) | (a >= high))
    else:
        lo, hi = jnp.min(a), jnp.max(a)
        bad = (lo < low) | (hi >= high)
        detail = jnp.where(hi >= high, hi, lo) if prefer == "high" else \
            jnp.where(lo < low, lo, hi)
    enforce(bad, detail, error)


def first_bad(a: Any, mask: Any) -> tuple[Any, Any]:
    """(any of ``mask``, the first entry of ``a`` where it holds, in row-major order)."""
    flat, m = jnp.ravel(a), jnp.ravel(mask)
    return jnp.any(m), flat[jnp.argmax(m)]


class CheckedProgram:
    """A jitted program whose value checks run first as their own small program.

    ``traced(*args)`` computes the outputs; jitted alone it records no checks (the main
    program). The check program is the same trace collecting checks and returning only
    them: XLA keeps just what the checks read (mostly the index inputs), so reading its
    flags waits for that, not for the main program, which still runs asynchronously.
    A program whose trace records no check (or checks off) never runs one again.
    """

    __slots__ = ("main", "checks", "unchecked", "traced")

    def __init__(self, main: Callable, traced: Callable, **jit_kwargs: Any) -> None:
        def checks(*args: Any) -> Any:
            with collecting() as c:
                traced(*args)
                return c.pack()
        self.main = jax.jit(main, **jit_kwargs)
        self.checks = jax.jit(checks, **jit_kwargs)
        self.unchecked = False
        self.traced = traced

    def __call__(self, *args: Any) -> Any:
        if not self.unchecked:
            packed = self.checks(*args)
            if packed is None:
                self.unchecked = True
            elif isinstance(packed, jax.core.Tracer):  # called inside another program's
                # trace (a backward inside a whole step): its checks become that program's
                return self.traced(*args) if active() else self.main(*args)
            else:
                raise_failed(packed)  # before the program runs: nothing is written back
        return self.main(*args)


def raise_failed(packed: Any) -> None:
    """After a call: raise the first failed check of a packed flags array (None: none)."""
    if packed is None:
        return
    packed, recorded = packed if isinstance(packed, tuple) else (packed, ())
    values = np.asarray(packed)
    if not values[1::2].any():
        return
    errors = _ERRORS[int(values[0])]
    for k, err in enumerate(errors):
        if values[1 + 2 * k]:
            if isinstance(err, _WithValues):
                raise err.error([np.asarray(v) for v in recorded[err.index]])
            raise err(int(values[2 + 2 * k]))
