"""Elementwise ops: unary math, binary arithmetic with broadcasting, comparisons, where, clamp.

Binary ops take a Python scalar on either side (``mul.Tensor(x, 2)``, ``sub.Tensor(1, x)``):
the scalar gets no gradient and promotes like PyTorch (``int_tensor * 0.5`` is float32).
Formulas that only need the output save only "out" (exp, tanh, sigmoid, sqrt ...).
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.scipy.special as jsp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import (NONDIFF, PRODUCT, binary, defop, holomorphic, inplace, reduce_grad,
                     real_like, same_shape, scaled, unary, wants)
from ._dtypes import BOOL, cast, is_float, result_type
from ._shapes import broadcast_shapes, shape_of
from ._xp import jnp
from .factories import full_like, zeros_like


def _zero_grad(g: Any, *args: Any) -> Any:
    """Piecewise-constant ops (sign, floor ...): the gradient is zero, as in PyTorch."""
    return zeros_like(g)


def _keep_ints(fn: Any) -> Any:
    """Rounding leaves integer tensors as they are (jnp.floor would make them float)."""
    return lambda x: fn(x) if is_float(x.dtype) else x


# -- unary math (integer inputs compute in float32) -------------------------------------------
exp = unary("exp", jnp.exp, lambda g, x, out: g * out, save=("out",))
log = unary("log", jnp.log, lambda g, x, out: g / x)
sin = unary("sin", jnp.sin, lambda g, x, out: g * x.cos())
cos = unary("cos", jnp.cos, lambda g, x, out: -(g * x.sin()))
tan = unary("tan", jnp.tan, lambda g, x, out: g * (out * out + 1), save=("out",))
tanh = unary("tanh", jnp.tanh, lambda g, x, out: g * (1 - out * out), save=("out",))
sigmoid = unary("sigmoid", jax.nn.sigmoid, lambda g, x, out: g * (out * (1 - out)),
                save=("out",))
sqrt = unary("sqrt", jnp.sqrt, lambda g, x, out: g / (out * 2), save=("out",))
rsqrt = unary("rsqrt", jax.lax.rsqrt, lambda g, x, out: g * (out * out * out * -0.5),
              save=("out",))
reciprocal = unary("reciprocal", jnp.reciprocal, lambda g, x, out: -(g * (out * out)),
                   save=("out",))
log1p = unary("log1p", jnp.log1p, lambda g, x, out: g / (x + 1))
expm1 = unary("expm1", jnp.expm1, lambda g, x, out: g * (out + 1), save=("out",))
_2_SQRT_PI = 2 / math.sqrt(math.pi)  # d/dx erf(x) = 2/sqrt(pi) exp(-x^2)
erf = unary("erf", jsp.erf, lambda g, x, out: g * ((x * x).neg().exp() * _2_SQRT_PI))

# -- unary, dtype-preserving ----------------------------------------------------------------
neg = unary("neg", jnp.negative, lambda g, x, out: -g, save=(), floating=False)
def _abs_backward(g: Any, x: Any, out: Any) -> Any:
    if getattr(x.dtype, "kind", "") == "c":  # z/|z| depends on z: differentiable (funclin)
        from .linalg_more import sgn
        return g * sgn(x)
    return g * x.sign()


abs = unary("abs", jnp.abs, _abs_backward, floating=False, analytic=False, shape=real_like)
square = unary("square", jnp.square, lambda g, x, out: g * (x * 2), floating=False)
relu = unary("relu", jax.nn.relu, lambda g, x, out: where(out > 0, g, 0), save=("out",),
             floating=False)
sign = unary("sign", jnp.sign, _zero_grad, save=(), floating=False)
floor = unary("floor", _keep_ints(jnp.floor), _zero_grad, save=(), floating=False)
ceil = unary("ceil", _keep_ints(jnp.ceil), _zero_grad, save=(), floating=False)
round = unary("round", _keep_ints(jnp.round), _zero_grad, save=(), floating=False)
trunc = unary("trunc", _keep_ints(jnp.trunc), _zero_grad, save=(), floating=False)


def _round_decimals(x: Any, decimals: int) -> Any:
    """PyTorch's rounding to ``decimals`` digits: half to even of x * 10**d, over 10**d
    (a negative d divides first, so 10**-d stays an exact integer)."""
    if not is_float(x.dtype):
        return x
    if decimals >= 0:
        scale = 10.0 ** decimals
        return jnp.round(x * scale) / scale
    scale = 10.0 ** -decimals
    return jnp.round(x / scale) * scale


round_decimals = defop("round.decimals(Tensor self, *, int decimals) -> Tensor", _round_decimals,
                       host=True, cost="stream", static=("decimals",),
                       shape=lambda x, decimals: TensorMeta(tuple(x.shape), x.dtype),
                       backward=lambda g, x, decimals, out: _zero_grad(g), save=())
bitwise_not = unary("bitwise_not", jnp.invert, NONDIFF, floating=False)


def _predicate(name: str, fn: Any) -> Any:
    """``name(Tensor self) -> Tensor`` with a bool result (isnan, logical_not ...)."""
    return defop(f"{name}(Tensor self) -> Tensor", fn,
                 shape=lambda x: TensorMeta(tuple(x.shape), BOOL), backward=NONDIFF)


logical_not = _predicate("logical_not", jnp.logical_not)
isnan = _predicate("isnan", jnp.isnan)
isinf = _predicate("isinf", jnp.isinf)
isfinite = _predicate("isfinite", jnp.isfinite)


# -- binary arithmetic ----------------------------------------------------------------------
def _cj(t: Any) -> Any:
    """conj(t) for a complex tensor (PyTorch's convention: grad_x = grad * conj(dout/dx))."""
    if isinstance(t, complex):  # a Python scalar operand (x * 2j)
        return t.conjugate()
    if getattr(getattr(t, "dtype", None), "kind", "") != "c":
        return t
    from .linalg_more import conj  # funclin: complex ops live there (imported late: cycle)
    return conj(t)


def _mul_backward(g: Any, x: Any, y: Any, out: Any) -> tuple:
    return (reduce_grad(g * _cj(y), x) if wants(x) else None,
            reduce_grad(g * _cj(x), y) if wants(y) else None)


def _div_backward(g: Any, x: Any, y: Any, out: Any) -> tuple:
    return (reduce_grad(g / _cj(y), x) if wants(x) else None,
            reduce_grad(-g * _cj(x / (y * y)), y) if wants(y) else None)


_ALPHA = ", *, Scalar alpha=1"
add = binary("add.Tensor", lambda x, y, alpha=1: x + scaled(y, alpha), extra=_ALPHA, save=(),
             host=True,
             backward=holomorphic(lambda g, x, y, alpha, out: (
                 reduce_grad(g, x), reduce_grad(scaled(g, alpha), y))))
sub = binary("sub.Tensor", lambda x, y, alpha=1: x - scaled(y, alpha), extra=_ALPHA, save=(),
             host=True,
             backward=holomorphic(lambda g, x, y, alpha, out: (
                 reduce_grad(g, x), reduce_grad(scaled(-g, alpha), y))))
mul = binary("mul.Tensor", jnp.multiply, _mul_backward, save=PRODUCT)
div = binary("div.Tensor", jnp.true_divide, _div_backward, out="float",
             save={"self": ("other",), "other": ("self", "other")})
remainder = binary("remainder.Tensor", jnp.remainder, save={"other": ("self", "other")},
                   backward=lambda g, x, y, out: (reduce_grad(g, x), reduce_grad(
                       -g * floor_divide(x, y), y) if wants(y) else None))
floor_divide = binary("floor_divide", jnp.floor_divide, NONDIFF)


def _maximum_backward(g: Any, x: Any, y: Any, out: Any, sign: int = 1) -> tuple:
    """Ties share the gradient equally (as PyTorch and JAX do)."""
    half = where(eq(x, y), g * 0.5, 0)
    gx = where(gt(x, y) if sign > 0 else lt(x, y), g, half) if wants(x) else None
    gy = where(lt(x, y) if sign > 0 else gt(x, y), g, half) if wants(y) else None
    return reduce_grad(gx, x), reduce_grad(gy, y)


maximum = binary("maximum", jnp.maximum, _maximum_backward)
minimum = binary("minimum", jnp.minimum, lambda g, x, y, out: _maximum_backward(g, x, y, out, -1))


# -- pow: a Tensor exponent, a float exponent (lifted), an int exponent (specialised) ---------
def _pow_tt_backward(g: Any, x: Any, y: Any, out: Any) -> tuple:
    gx = g * y * pow_tensor(x, y - 1) if wants(x) else None
    # d/dy x**y = x**y log x, taken as 0 where x == 0 and y >= 0 (PyTorch's convention)
    gy = where(logical_and(eq(x, 0), ge(y, 0)), 0, g * out * x.log()) if wants(y) else None
    return reduce_grad(gx, x), reduce_grad(gy, y)


def _ipow(x: Any, n: int) -> Any:
    """``x ** n`` as an op even for n == 1 (not ``x`` itself): a higher-order gradient then
    stays connected to x, as in PyTorch (x**3 differentiated four times: 12, 12, 6, 0)."""
    return x.pow(n)


pow_tensor = binary("pow.Tensor_Tensor", jnp.power, holomorphic(_pow_tt_backward), other="exponent",
                    save={"self": ("self", "exponent"), "exponent": ("self", "exponent", "out")})
pow_scalar = defop("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
                   lambda x, e: jnp.power(cast(x, result_type(x, e)), e),
                   host=True, cost="stream", shape=lambda x, e: TensorMeta(tuple(x.shape), result_type(x, e)),
                   backward=holomorphic(lambda g, x, e, out: g * (x.pow(e - 1) * e)),
                   save=("self",))
pow_int = defop("pow.Tensor_int(Tensor self, int exponent) -> Tensor",
                lambda x, n: jnp.power(x, n), host=True, cost="stream", shape=lambda x, n: TensorMeta(tuple(x.shape),
                                                                            x.dtype),
                backward=holomorphic(lambda g, x, n, out: zeros_like(g) if n == 0 else
                                     g * (_ipow(x, n - 1) * n)), save=("self",))


def _pow_base_backward(g: Any, b: Any, y: Any, out: Any) -> Any:
    """d/dy b**y = b**y log b; the base goes through an op (it may be a lifted scalar)."""
    base = full_like(out, b)
    return where(logical_and(eq(base, 0), ge(y, 0)), 0, g * out * base.log())


pow_base = defop("pow.Scalar(Scalar self, Tensor exponent) -> Tensor",
                 lambda b, y: jnp.power(cast(b, result_type(b, y)), cast(y, result_type(b, y))),
                 host=True, cost="stream", shape=lambda b, y: TensorMeta(tuple(y.shape), result_type(b, y)),
                 backward=holomorphic(_pow_base_backward), save=("exponent", "out"))

# -- comparisons and logic: bool results, no gradient -----------------------------------------
eq = binary("eq.Tensor", jnp.equal, NONDIFF, out="bool")
ne = binary("ne.Tensor", jnp.not_equal, NONDIFF, out="bool")
lt = binary("lt.Tensor", jnp.less, NONDIFF, out="bool")
le = binary("le.Tensor", jnp.less_equal, NONDIFF, out="bool")
gt = binary("gt.Tensor", jnp.greater, NONDIFF, out="bool")
ge = binary("ge.Tensor", jnp.greater_equal, NONDIFF, out="bool")
logical_and = binary("logical_and", jnp.logical_and, NONDIFF, out="bool")
logical_or = binary("logical_or", jnp.logical_or, NONDIFF, out="bool")
logical_xor = binary("logical_xor", jnp.logical_xor, NONDIFF, out="bool")
bitwise_and = binary("bitwise_and.Tensor", jnp.bitwise_and, NONDIFF)
bitwise_or = binary("bitwise_or.Tensor", jnp.bitwise_or, NONDIFF)
bitwise_xor = binary("bitwise_xor.Tensor", jnp.bitwise_xor, NONDIFF)


# -- where and clamp ------------------------------------------------------------------------
def _where_rule(c: Any, x: Any, y: Any) -> TensorMeta:
    if c.dtype != BOOL:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {c.dtype.name}")
    return TensorMeta(broadcast_shapes(shape_of(c), shape_of(x), shape_of(y)), result_type(x, y))


def _where_kernel(c: Any, x: Any, y: Any) -> Any:
    dtype = result_type(x, y)
    return jnp.where(c, cast(x, dtype), cast(y, dtype))


where = defop("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", _where_kernel,
              host=True, cost="stream", shape=_where_rule, check=True, save=("condition",),
              backward=lambda g, c, x, y, out: (
                  None, reduce_grad(where(c, g, 0), x) if wants(x) else None,
                  reduce_grad(where(c, 0, g), y) if wants(y) else None))


def _clamp_rule(x: Any, lo: Any = None, hi: Any = None) -> TensorMeta:
    if lo is None and hi is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return TensorMeta(broadcast_shapes(shape_of(x), shape_of(lo), shape_of(hi)),
                      result_type(x, lo, hi))


def _clamp_kernel(x: Any, lo: Any = None, hi: Any = None) -> Any:
    dtype = result_type(x, lo, hi)
    x = cast(x, dtype)
    x = x if lo is None else jnp.maximum(x, cast(lo, dtype))
    return x if hi is None else jnp.minimum(x, cast(hi, dtype))


def _in_range(x: Any, lo: Any, hi: Any) -> Any:
    """Where the input passes through clamp unchanged (the bounds inclusive)."""
    low = None if lo is None else ge(x, lo)
    high = None if hi is None else le(x, hi)
    return low if high is None else high if low is None else logical_and(low, high)


def _clamp_t_backward(g: Any, x: Any, lo: Any, hi: Any, out: Any) -> tuple:
    gx = where(_in_range(x, lo, hi), g, 0)
    glo = reduce_grad(where(lt(x, lo), g, 0), lo) if wants(lo) else None
    ghi = reduce_grad(where(gt(x, hi), g, 0), hi) if wants(hi) else None
    return reduce_grad(gx, x), glo, ghi


clamp = defop("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", _clamp_kernel,
              host=True, cost="stream", shape=_clamp_rule, check=True, save=("self",),
              backward=lambda g, x, lo, hi, out: where(_in_range(x, lo, hi), g, 0))
clamp_tensor = defop("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
                     _clamp_kernel, host=True, cost="stream", shape=_clamp_rule, check=True, backward=_clamp_t_backward)



def _nan_to_num(x: Any, nan: Any = None, posinf: Any = None, neginf: Any = None) -> Any:
    """NaN -> ``nan`` (0), +inf -> ``posinf``, -inf -> ``neginf`` (the dtype's extremes)."""
    if not is_float(x.dtype):
        return x
    return jnp.nan_to_num(x, nan=0.0 if nan is None else nan, posinf=posinf, neginf=neginf)


# the replaced entries are constants: only finite entries pass the gradient (as PyTorch)
nan_to_num = defop("nan_to_num(Tensor self, float? nan=None, float? posinf=None, "
                   "float? neginf=None) -> Tensor", _nan_to_num, shape=same_shape,
                   save=("self",), backward=lambda g, x, nan, posinf, neginf, out: where(
                       isfinite(x), g, 0))

# -- in-place variants: x.op_(...) == x.copy_(op(x, ...)) -------------------------------------
add_ = inplace("add_", add)
sub_ = inplace("sub_", sub)
mul_ = inplace("mul_", mul)
div_ = inplace("div_", div)
pow_ = inplace("pow_", pow_scalar)
pow_int_ = inplace("pow_", pow_int)
pow_tensor_ = inplace("pow_", pow_tensor)
clamp_ = inplace("clamp_", clamp)
clamp_tensor_ = inplace("clamp_", clamp_tensor)
neg_ = inplace("neg_", neg)
exp_ = inplace("exp_", exp)
sqrt_ = inplace("sqrt_", sqrt)
relu_ = inplace("relu_", relu)
sigmoid_ = inplace("sigmoid_", sigmoid)
tanh_ = inplace("tanh_", tanh)
abs_ = inplace("abs_", abs)
nan_to_num_ = inplace("nan_to_num_", nan_to_num)
