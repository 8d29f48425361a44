"""Factories: tensors made from sizes, fill values and (for random ones) a PRNG key.

Random factories are ops that take the key as a Tensor argument, so fake and proxy
modes see an ordinary op; the key comes from a :class:`~.random.Generator` (the global
one, which ``manual_seed`` resets, or an explicit ``generator=``), so every random call
after a seed is reproducible.
"""
from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from autograd_compile.tracing.fake import TensorMeta
from autograd_compile.tracing.symbolic_shapes import SymFloat

from ._defop import NONDIFF, defop, same_shape
from ._dtypes import DEFAULT_INT, as_dtype, default_float, scalar_dtype
from ._streams import draw, draw_uniform, uniform
from ._xp import jnp


def _dtype(dtype: Any, default: np.dtype | None = None) -> np.dtype:
    if dtype is not None:
        return as_dtype(dtype)
    return default_float() if default is None else default


def _sized(size: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> TensorMeta:
    return TensorMeta(tuple(size), _dtype(dtype))


def _like(x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> TensorMeta:
    return TensorMeta(tuple(x.shape), _dtype(dtype, x.dtype))


def _filled(value: Any, dtype: Any) -> np.dtype:
    return _dtype(dtype, scalar_dtype(value))


# -- constant factories (no tensor inputs, so never on the tape) -----------------------------
zeros = defop("zeros(SymInt[] size, *, ScalarType? dtype=None) -> Tensor",
              lambda size, dtype=None: jnp.zeros(tuple(size), _dtype(dtype)),
              shape=_sized, host=True, backward=NONDIFF)
ones = defop("ones(SymInt[] size, *, ScalarType? dtype=None) -> Tensor",
             lambda size, dtype=None: jnp.ones(tuple(size), _dtype(dtype)),
             shape=_sized, host=True, backward=NONDIFF)
full = defop("full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor",
             lambda size, v, dtype=None: jnp.full(tuple(size), v, _filled(v, dtype)),
             shape=lambda size, v, dtype=None: TensorMeta(tuple(size), _filled(v, dtype)),
             host=True, backward=NONDIFF)
# *_like run unjitted: jnp's *_like keep the input's sharding (a jitted one would not)
zeros_like = defop("zeros_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                   lambda x, dtype=None: jnp.zeros_like(x, _dtype(dtype, x.dtype)),
                   shape=_like, backward=NONDIFF, host=True, jit=False)
ones_like = defop("ones_like(Tensor self, *, ScalarType? dtype=None) -> Tensor",
                  lambda x, dtype=None: jnp.ones_like(x, _dtype(dtype, x.dtype)),
                  shape=_like, backward=NONDIFF, host=True, jit=False)
full_like = defop("full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None) -> Tensor",
                  lambda x, v, dtype=None: jnp.full_like(x, v, _dtype(dtype, x.dtype)),
                  shape=_like, backward=NONDIFF, host=True, jit=False)
eye = defop("eye(SymInt n, SymInt? m=None, *, ScalarType? dtype=None) -> Tensor",
            lambda n, m=None, dtype=None: jnp.eye(n, n if m is None else m, dtype=_dtype(dtype)),
            shape=lambda n, m=None, dtype=None: TensorMeta((n, n if m is None else m),
                                                           _dtype(dtype)), backward=NONDIFF)
# a fresh constant entering a traced program (acg.tensor(...) under a mode becomes fake)
lift_fresh = defop("lift_fresh(Tensor self) -> Tensor", lambda x: x, shape=same_shape,
                   backward=NONDIFF, jit=False)


def _arange_dtype(start: Any, end: Any, step: Any, dtype: Any) -> np.dtype:
    if dtype is not None:
        return as_dtype(dtype)
    floats = any(isinstance(v, (float, np.floating, SymFloat)) for v in (start, end, step))
    return default_float() if floats else DEFAULT_INT


def _arange_rule(start: Any, end: Any, step: Any = 1, *, dtype: Any = None) -> TensorMeta:
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("arange: upper bound and larger bound inconsistent with step sign")
    if any(isinstance(v, (float, np.floating, SymFloat)) for v in (start, end, step)):
        n = math.ceil((end - start) / step)  # float bounds: sizes are concrete anyway
    else:
        n = (end - start + step - (1 if step > 0 else -1)) // step
    return TensorMeta((n,), _arange_dtype(start, end, step, dtype))


arange = defop("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
               "ScalarType? dtype=None) -> Tensor",
               lambda a, b, s=1, dtype=None: jnp.arange(a, b, s, dtype=_arange_dtype(a, b, s,
                                                                                   dtype)),
               shape=_arange_rule, host=True, backward=NONDIFF, static=("start", "end", "step"))


def _linspace_rule(start: Any, end: Any, steps: Any, *, dtype: Any = None) -> TensorMeta:
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    return TensorMeta((steps,), _dtype(dtype))


linspace = defop("linspace(Scalar start, Scalar end, SymInt steps, *, ScalarType? dtype=None) "
                 "-> Tensor", lambda a, b, n, dtype=None: jnp.linspace(
                     a, b, n, dtype=jnp.float64).astype(_dtype(dtype)),
                 shape=_linspace_rule, check=True, host=True, backward=NONDIFF, static=("start", "end"))


# -- random factories: the key is an argument, so the op is pure ------------------------------
def _key(data: jax.Array) -> jax.Array:
    return jax.random.wrap_key_data(data)


rand = defop("rand(SymInt[] size, Tensor key, *, ScalarType? dtype=None) -> Tensor",
             lambda size, key, dtype=None: uniform(_key(key), tuple(size), _dtype(dtype)),
             host=lambda size, key, dtype=None: draw_uniform(key, size, _dtype(dtype)),
             shape=_sized, backward=NONDIFF)
randn = defop("randn(SymInt[] size, Tensor key, *, ScalarType? dtype=None) -> Tensor",
              lambda size, key, dtype=None: jax.random.normal(_key(key), tuple(size),
                                                              _dtype(dtype)),
              host=lambda size, key, dtype=None: draw("normal", key, size, _dtype(dtype)),
              shape=_sized, backward=NONDIFF)
randint = defop("randint.low(int low, int high, SymInt[] size, Tensor key, *, "
                "ScalarType? dtype=None) -> Tensor",
                lambda lo, hi, size, key, dtype=None: jax.random.randint(
                    _key(key), tuple(size), lo, hi, _dtype(dtype, DEFAULT_INT)),
                host=lambda lo, hi, size, key, dtype=None: draw(
                    "randint", key, size, _dtype(dtype, DEFAULT_INT), (lo, hi)),
                shape=lambda lo, hi, size, key, dtype=None: TensorMeta(
                    tuple(size), _dtype(dtype, DEFAULT_INT)), backward=NONDIFF)


# the random state lives in random.py; re-exported for code that reaches it through here
from .random import Generator, default_generator, key_of  # noqa: E402,F401
