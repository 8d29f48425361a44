"""Each Backend kernel runs as one ``jax.jit`` program: one dispatch per op call (not one per
jnp primitive inside it) and one XLA compile per (op, input shapes/dtypes, structural args).

The schema says which arguments are traced and which are compile-time constants:

- traced: Tensor arguments (and Python numbers passed where a Tensor goes, e.g. the 2 in
  ``mul.Tensor(x, 2)``) and ``Scalar``/``float`` arguments: new values reuse the program;
- static: ``int``, ``int[]``, ``SymInt[]``, ``bool``, ``str``, ``ScalarType`` arguments (they
  decide shapes and code paths), ``None``, Python bools, and names listed in ``static``.

Traced Python numbers are weakly typed, so promotion treats them as Python scalars
(see ``_dtypes.result_type``).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import jax
import numpy as np

from autograd_compile import runtime_checks
from autograd_compile._dtype import dtype as _AcgDtype
from autograd_compile.dispatch.schema import FunctionSchema
from autograd_compile.tensor import HostValueInTrace, WantsDeviceValues

from . import _xp

_TRACED_TYPES = ("Tensor", "Scalar", "float")
_NDARRAY = np.ndarray  # a host tier result held by a Tensor (see tensor.py)
_TRACED = object()  # marks a traced slot in the static tuple (a stable, hashable sentinel)
_TRACED_VALUE = object()  # a traced slot whose value (a Python number) a shape check may read
try:  # the concrete array class: one type test per argument on the hot path
    from jax._src.array import ArrayImpl as _ARRAY
except ImportError:  # pragma: no cover - a jax without it takes the isinstance path
    class _ARRAY:  # type: ignore[no-redef]
        """Never an argument's type."""


def _traceable(v: Any) -> bool:
    if v is None or isinstance(v, bool):
        return False
    if isinstance(v, (list, tuple)):
        return any(_traceable(x) for x in v)
    if isinstance(v, jax.core.Tracer):  # inside a jax trace (a compiled graph's program):
        raise _InsideTrace  # inline the kernel; a nested jit only adds tracing and lowering
    return isinstance(v, (jax.Array, np.ndarray, int, float, complex))


_ATOMS = frozenset({int, bool, str, type(None)})


def _hashable(v: Any) -> Any:
    """A static value as a cache key, tagged with its type: numpy finds ``dtype('float64')
    == None`` and Python ``True == 1 == 1.0``, which must not share a compiled program."""
    if type(v) in _ATOMS:  # the common static values first: one set lookup
        return type(v), v
    if isinstance(v, (list, tuple)):
        return tuple, tuple(_hashable(x) for x in v)
    if isinstance(v, jax.core.Tracer):
        raise _InsideTrace
    if type(v) is _AcgDtype:  # acg.float32 and np.dtype("float32"): one program, numpy's dtype
        v = v.dtype
    return type(v), v


def _value(key: tuple) -> Any:
    kind, v = key
    return tuple(_value(x) for x in v) if kind is tuple else v


def _has_host_value(v: Any) -> bool:
    if type(v) is np.ndarray:
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_host_value(x) for x in v)
    return isinstance(v, dict) and _has_host_value(tuple(v.values()))


def _jax_values(v: Any) -> Any:
    """Host results (numpy) among a traced call's arguments as jax arrays: the kernel may
    use jax-only methods (``x.at[...]``) on them next to tracers."""
    if type(v) is np.ndarray:
        return jax.numpy.asarray(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_jax_values(x) for x in v)
    return v


class _InsideTrace(Exception):
    """A structural argument is itself traced: we run inside someone's jax trace."""


def _arrays_only(v: Any) -> bool:
    """A traced value a shape check can judge from its shape and dtype alone."""
    if isinstance(v, (list, tuple)):
        for x in v:  # a loop, not all(genexpr): cat/stack of many tensors is a hot path
            if type(x) is not _ARRAY and type(x) is not _NDARRAY and not _arrays_only(x):
                return False
        return True
    return isinstance(v, (jax.Array, np.ndarray))


_ALL_PROGRAMS: list[dict] = []  # every kernel's program cache, so a default change clears them


def clear_programs() -> None:
    """Forget every compiled kernel program (after ``set_default_dtype``)."""
    for programs in _ALL_PROGRAMS:
        programs.clear()


def jitted(kernel: Callable, schema: FunctionSchema, static: Iterable[str] = (),
           dynamic: Iterable[str] = (), pre: Callable | None = None,
           check: Callable | None = None, host: Callable | bool = False,
           cost: str = "fused", rule: Callable | None = None) -> Callable:
    """``kernel`` (same calling convention) compiled with jax.jit, split per the schema.

    ``static``: Scalar/float arguments that must stay compile-time values (they decide
    shapes, e.g. arange's bounds); ``dynamic``: int arguments to trace (select's index);
    ``pre``: an eager check on the concrete arguments (e.g. index bounds) run first;
    ``check``: a shape rule run before the kernel. When every traced argument is a
    Tensor given as an array, the rule reads only shapes, dtypes and static values, so
    it runs once, when jax traces a new program; otherwise it runs on every call.
    ``host``: the kernel (True) or a twin of it runs on numpy arrays (the host tier,
    ``_xp.py``): a CPU shape light enough for numpy runs there, always (no compile ever;
    one op and shape always gives the same bits), a heavy one gets its XLA program.
    ``cost``: the kind of kernel for the host tier's cost model (``_xp.RATES``); a "part"
    kernel's cost is its output's size, from its shape ``rule``.
    """
    static, dynamic = set(static), set(dynamic)
    names = tuple(a.name for a in schema.arguments)
    kwonly = tuple(a.kwarg_only for a in schema.arguments)
    traced = tuple((a.type.startswith(_TRACED_TYPES) and a.name not in static)
                   or a.name in dynamic for a in schema.arguments)
    tensors_only = not dynamic and all(a.type.startswith("Tensor") for a, t
                                       in zip(schema.arguments, traced) if t)
    name = schema.qualified_name.split("::")[-1].replace(".", "_")
    programs: dict[tuple, tuple[Callable, bool]] = {}  # per set of static values
    _ALL_PROGRAMS.append(programs)

    def checked(*pos: Any, **kw: Any) -> Any:
        check(*pos, **kw)
        return kernel(*pos, **kw)

    def program(fixed: tuple) -> tuple[Callable, bool]:
        """(the jitted program, whether the check must run eagerly before each call)."""
        at_trace = check is not None and _TRACED_VALUE not in fixed

        def body(*values: Any) -> Any:
            it = iter(values)
            full = [next(it) if f is _TRACED or f is _TRACED_VALUE else _value(f) for f in fixed]
            pos = [v for v, k in zip(full, kwonly) if not k]
            kw = {n: v for n, v, k in zip(names, full, kwonly) if k}
            return checked(*pos, **kw) if at_trace else kernel(*pos, **kw)
        body.__name__ = body.__qualname__ = name
        # only arrays cross: jax's C++ fast path
        programs[fixed] = entry = (jax.jit(body), check is not None and not at_trace)
        return entry

    def run(*args: Any, **kwargs: Any) -> Any:
        return call(False, args, kwargs)

    def run_host(*args: Any, **kwargs: Any) -> Any:
        """``run`` for the eager Tensor adapter: host results stay numpy arrays."""
        return call(True, args, kwargs)

    def call(keep: bool, args: tuple, kwargs: dict) -> Any:
        if pre is not None:
            if runtime_checks.active():  # inside a program's trace: the op names its check
                runtime_checks.run_pre(pre, schema, args, kwargs)
            else:
                pre(*args, **kwargs)
        values, fixed = [], []
        try:
            for v, t in zip(schema.bind(args, kwargs), traced):
                if t and (type(v) is _ARRAY or type(v) is _NDARRAY or _traceable(v)):
                    values.append(v)
                    shaped = tensors_only and (type(v) is _ARRAY or type(v) is _NDARRAY
                                               or _arrays_only(v))
                    fixed.append(_TRACED if shaped else _TRACED_VALUE)
                else:
                    fixed.append(_hashable(v))
        except _InsideTrace:  # an enclosing jit (e.g. the JAX backend) compiles it anyway
            if keep and _has_host_value((args, kwargs)):
                raise HostValueInTrace from None
            args, kwargs = _jax_values(args), {k: _jax_values(v) for k, v in kwargs.items()}
            return (kernel if check is None else checked)(*args, **kwargs)
        key = tuple(fixed)
        fn, eager_check = programs.get(key) or program(key)
        if eager_check:
            check(*args, **kwargs)
        if host_kernel is not None and _xp.ENABLED:
            out = on_host(key, values, args, kwargs, eager_check, keep)
            if out is not _COMPILE:
                return out
        if keep and _crosses_often(values):
            raise WantsDeviceValues
        return fn(*values)

    host_kernel = (kernel if host is True else host) or None
    part = rule if cost == "part" else None
    rate = _xp.contraction_cost if cost == "contract" else _xp.RATES[cost]
    compiled: set = set()  # (static key, avals) that run as XLA programs
    hosted: set = set()  # (static key, avals) that run on the host, checked once

    def on_host(key: tuple, values: list, args: tuple, kwargs: dict, checked: bool,
                keep: bool) -> Any:
        sig = _xp.host_sig(values)
        if sig is None:
            return _COMPILE
        if part is None:
            sig = (key, sig)
        else:  # its cost is its result's size, which traced bounds decide: in the key
            try:
                sig = (key, sig, _xp.part_cost(part(*args, **kwargs)))
            except Exception:  # bad bounds: the op's own path raises its error
                return _COMPILE
        force = _xp.FORCE
        if force == "xla" or (force is None and sig in compiled):
            return _COMPILE
        try:
            if sig not in hosted:  # first sight: the tier is chosen once, by size
                spend = _xp.host_cost(sig[1], rate) if part is None else sig[2]
                if force is None and spend > _xp.HOST_LIMIT:
                    compiled.add(sig)  # heavy: a program pays for itself within a few calls
                    return _COMPILE
                if check is not None and not checked:
                    check(*args, **kwargs)  # reads shapes, dtypes, static values: once
            out = _xp.host_call(host_kernel, args, kwargs, keep)
        except Exception:  # numpy lacks it, or fails differently: XLA gives the answer
            compiled.add(sig)  # (and jax's own error, as before the host tier existed)
            return _COMPILE
        if force is None:
            if len(hosted) > 65536:  # endless distinct shapes: forget, rather than grow
                hosted.clear()
            hosted.add(sig)
        _xp.STATS[name] += 1
        return out
    run._acg_host = run_host  # numpy values in (host tier results), numpy results out
    return run


_COMPILE = object()  # on_host's answer: run the XLA program


def _crosses_often(values: list) -> bool:
    """A big host value going into a program: better moved once and kept on its tensor
    (the adapter's retry) than copied in by every program that reads it."""
    for v in values:
        if type(v) is _NDARRAY and v.size > _xp.CROSS_ONCE:
            return True
    return False
