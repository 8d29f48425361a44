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

from autograd_compile.dispatch.schema import FunctionSchema

_TRACED_TYPES = ("Tensor", "Scalar", "float")
_TRACED = object()  # marks a traced slot in the static tuple (a stable, hashable sentinel)


def _traceable(v: Any) -> bool:
    if v is None or isinstance(v, bool):
        return False
    if isinstance(v, (list, tuple)):
        return any(_traceable(x) for x in v)
    return isinstance(v, (jax.Array, int, float, complex))


def _hashable(v: Any) -> Any:
    """A static value as a cache key, tagged with its type: numpy finds ``dtype('float64')
    == None`` and Python ``True == 1 == 1.0``, which must not share a compiled program."""
    if isinstance(v, (list, tuple)):
        return tuple, tuple(_hashable(x) for x in v)
    if isinstance(v, jax.core.Tracer):
        raise _InsideTrace
    return type(v), v


def _value(key: tuple) -> Any:
    kind, v = key
    return tuple(_value(x) for x in v) if kind is tuple else v


class _InsideTrace(Exception):
    """A structural argument is itself traced: we run inside someone's jax trace."""


def jitted(kernel: Callable, schema: FunctionSchema, static: Iterable[str] = (),
           dynamic: Iterable[str] = (), pre: Callable | None = None) -> Callable:
    """``kernel`` (same calling convention) compiled with jax.jit, split per the schema.

    ``static``: Scalar/float arguments that must stay compile-time values (they decide
    shapes, e.g. arange's bounds); ``dynamic``: int arguments to trace (select's index);
    ``pre``: an eager check on the concrete arguments (e.g. index bounds) run first.
    """
    static, dynamic = set(static), set(dynamic)
    names = tuple(a.name for a in schema.arguments)
    kwonly = tuple(a.kwarg_only for a in schema.arguments)
    traced = tuple((a.type.startswith(_TRACED_TYPES) and a.name not in static)
                   or a.name in dynamic for a in schema.arguments)

    name = schema.qualified_name.split("::")[-1].replace(".", "_")
    programs: dict[tuple, Callable] = {}  # one jitted function per set of static values

    def program(fixed: tuple) -> Callable:
        def body(*values: Any) -> Any:
            it = iter(values)
            full = [next(it) if f is _TRACED else _value(f) for f in fixed]
            pos = [v for v, k in zip(full, kwonly) if not k]
            return kernel(*pos, **{n: v for n, v, k in zip(names, full, kwonly) if k})
        body.__name__ = body.__qualname__ = name
        programs[fixed] = fn = jax.jit(body)  # only arrays cross: jax's C++ fast path
        return fn

    def run(*args: Any, **kwargs: Any) -> Any:
        if pre is not None:
            pre(*args, **kwargs)
        values, fixed = [], []
        try:
            for v, t in zip(schema.bind(args, kwargs), traced):
                if t and _traceable(v):
                    values.append(v)
                    fixed.append(_TRACED)
                else:
                    fixed.append(_hashable(v))
        except _InsideTrace:  # an enclosing jit (e.g. the JAX backend) compiles it anyway
            return kernel(*args, **kwargs)
        key = tuple(fixed)
        return (programs.get(key) or program(key))(*values)
    return run
