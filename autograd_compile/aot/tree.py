"""Nested call arguments and results as a flat list of tensors plus a hashable spec.

The spec records the containers (tuple, list, dict) and every non-tensor leaf
by value, so two calls with the same spec differ only in their tensors: the
spec is part of a compiled region's guard.

>>> import autograd_compile as acg
>>> leaves, spec = flatten(((acg.ones(2), 3), {"k": acg.zeros(1)}))
>>> len(leaves), spec
(2, ('tuple', (('tuple', (('T',), ('C', 3))), ('dict', ('k',), (('T',),)))))
>>> unflatten(spec, iter([1, 2]))
((1, 3), {'k': 2})
"""
from __future__ import annotations

import functools
from typing import Any, Iterator

from .._types import Size
from ..tensor import Tensor

TENSOR = ("T",)


def _const(value: Any, keyed: bool) -> tuple:
    if not keyed:
        return ("C", value)
    try:
        hash(value)
        return ("C", value)
    except TypeError:  # an unhashable constant matches only itself
        return ("C", ("id", type(value).__name__, id(value)))


def flatten(value: Any, keyed: bool = True) -> tuple[list, tuple]:
    """``(tensors, spec)`` of a nested value; ``keyed`` specs are hashable (an unhashable
    constant is then keyed by identity), unkeyed ones keep constants as they are."""
    leaves: list = []
    return leaves, _spec(value, leaves, keyed)


@functools.lru_cache(maxsize=None)
def _parts(kind: type) -> Any:
    """A tensor type made of other tensors (a sparse COO tensor: indices and values) says
    so with ``__acg_flatten__(t) -> (children, aux)`` and ``__acg_unflatten__(aux, children)``:
    its children are the leaves, ``aux`` (hashable: sizes, flags) is in the spec."""
    return getattr(kind, "__acg_flatten__", None)


def _spec(value: Any, leaves: list, keyed: bool) -> tuple:
    if isinstance(value, Tensor):
        parts = _parts(type(value))
        if parts is None:
            leaves.append(value)
            return TENSOR
        children, aux = parts(value)
        return ("parts", type(value), aux, tuple(_spec(c, leaves, keyed) for c in children))
    kind = type(value)
    if kind in (tuple, list, Size):  # (a Size: a shape, rebuilt as one)
        return (kind.__name__, tuple(_spec(v, leaves, keyed) for v in value))
    if kind is dict:
        return ("dict", tuple(value), tuple(_spec(v, leaves, keyed) for v in value.values()))
    if isinstance(value, tuple) and hasattr(kind, "_fields"):  # a namedtuple (torch.return_types)
        return ("namedtuple", kind, tuple(_spec(v, leaves, keyed) for v in value))
    return _const(value, keyed)


_FLOAT = ("C", ("float",))


def floats_free(spec: Any) -> Any:
    """``spec`` with every Python float constant made one placeholder: two calls whose
    arguments differ only in float values (a mixup ``lam``, SAC's ``alpha``, a temperature)
    have equal ``floats_free`` specs."""
    if type(spec) is not tuple or not spec:
        return spec
    if spec[0] == "C":
        return _FLOAT if type(spec[1]) is float else spec
    return tuple(floats_free(s) for s in spec)


def unflatten(spec: tuple, leaves: Iterator[Any]) -> Any:
    """Rebuild the value of ``spec`` taking tensors from ``leaves`` in order."""
    kind = spec[0]
    if kind == "T":
        return next(leaves)
    if kind == "C":
        return spec[1]
    if kind == "dict":
        return {k: unflatten(s, leaves) for k, s in zip(spec[1], spec[2])}
    if kind == "namedtuple":
        return spec[1](*(unflatten(s, leaves) for s in spec[2]))
    if kind == "parts":
        return spec[1].__acg_unflatten__(spec[2], [unflatten(s, leaves) for s in spec[3]])
    items = [unflatten(s, leaves) for s in spec[1]]
    return tuple(items) if kind == "tuple" else Size(items) if kind == "Size" else items



@functools.lru_cache(maxsize=64)
def _tensors_spec(n: int) -> tuple:
    """``flatten((args, {}))``'s spec for ``n`` positional tensors."""
    return flatten(((Tensor.__new__(Tensor),) * n, {}))[1]  # a bare instance: only its type counts


def flatten_call(args: tuple, kwargs: dict, keyed: bool = True) -> tuple[list, tuple]:
    """``flatten((args, kwargs))`` of a call, with a shortcut for the usual one: positional
    tensors only (the spec then has no constants, keyed or not)."""
    if not kwargs:
        for a in args:
            if not isinstance(a, Tensor) or _parts(type(a)) is not None:
                break
        else:
            return list(args), _tensors_spec(len(args))
    return flatten((args, kwargs), keyed)
