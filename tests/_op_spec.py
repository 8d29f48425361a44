"""The op-test spec language: an :class:`Arg` describes a tensor input, a :class:`Case` is an
op written twice (on acg tensors and on jnp arrays) plus its inputs. The tables live in
test_ops.py (core ops) and in ``op_cases_*.py`` (one file per family), all run by test_ops.py.
"""
from __future__ import annotations

import functools
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


# -- inputs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arg:
    """A tensor input: random floats in [lo, hi], ints in [0, hi), bools, or fixed values."""

    shape: tuple
    lo: float = -2.0
    hi: float = 2.0
    kind: str = "float"  # "float" (differentiated), "const" (float, not), "int", "bool"
    value: Any = None


def T(*shape: int, lo: float = -2.0, hi: float = 2.0, kind: str = "float") -> Arg:
    return Arg(shape, lo, hi, kind)


P = functools.partial(T, lo=0.5, hi=2.0)  # positive: log, sqrt, division
U = functools.partial(T, lo=-0.9, hi=0.9)  # inside (-1, 1)
C = functools.partial(T, lo=0.5, hi=2.0, kind="const")  # positive constants (class weights)
B = functools.partial(T, kind="bool")


def I(*shape: int, hi: int) -> Arg:  # noqa: E743  (integer indices in [0, hi))
    return Arg(shape, 0, hi, "int")


def V(value: Any, kind: str = "float") -> Arg:
    a = np.asarray(value)
    return Arg(a.shape, kind=kind, value=a)


@dataclass
class Case:
    name: str
    fn: Callable  # on acg tensors
    ref: Callable  # the same function on jnp arrays
    args: tuple
    grad: bool = True
    double: bool = False
    fake: bool = True


def _values(case: Case) -> list:
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    out = []
    for a in case.args:
        if not isinstance(a, Arg):
            out.append(a)
        elif a.value is not None:
            out.append(a.value.astype(np.int64) if a.kind == "int" else a.value)
        elif a.kind == "int":
            out.append(rng.integers(0, int(a.hi), size=a.shape).astype(np.int64))
        elif a.kind == "bool":
            out.append(rng.random(a.shape) > 0.5)
        else:
            out.append(rng.uniform(a.lo, a.hi, size=a.shape))
    return out
