"""``torch.fft`` and ``torch.special`` ops: JAX functions made ops by :func:`jaxop`.

FFT ops take ``(self, s, dim, norm)`` as ``jnp.fft.*n`` does; the 1-D and 2-D spellings of
``autograd_compile/fft`` map onto them. Special functions compute integer inputs in the default
float dtype, as PyTorch does. Bessel functions JAX lacks (Y0, Y1, K0, K1, Airy Ai) are integral
representations evaluated by the trapezoid or Gauss-Legendre rule (spectrally accurate for
these smooth integrands; for |x| up to about 100).
"""
from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

from ._bridge import jaxop
from ._dtypes import category, default_float, result_type

# -- fft ----------------------------------------------------------------------------------------
_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _to_inexact(x: jax.Array) -> jax.Array:
    return x if category(x.dtype) >= 2 else x.astype(default_float())


def _axes(x: jax.Array, s: Any, dim: Any) -> Any:
    if dim is None and s is not None:  # s alone names the last len(s) dims
        return tuple(range(x.ndim - len(s), x.ndim))
    return None if dim is None else tuple(dim)


def _fftn(fn: Callable) -> Callable:
    def kernel(x: jax.Array, s: Any = None, dim: Any = None, norm: Any = None) -> jax.Array:
        x = _to_inexact(x)
        return fn(x, None if s is None else tuple(s), _axes(x, s, dim), norm or "backward")
    return kernel


def _hfftn(x: jax.Array, s: Any, axes: Any, norm: str) -> jax.Array:
    """hfft is irfft of the conjugate with the opposite normalisation."""
    return jnp.fft.irfftn(jnp.conj(x), s, axes, _SWAP[norm])


def _ihfftn(x: jax.Array, s: Any, axes: Any, norm: str) -> jax.Array:
    return jnp.conj(jnp.fft.rfftn(x, s, axes, _SWAP[norm]))


_FFTS = {"fftn": jnp.fft.fftn, "ifftn": jnp.fft.ifftn, "rfftn": jnp.fft.rfftn,
         "irfftn": jnp.fft.irfftn, "hfftn": _hfftn, "ihfftn": _ihfftn}
FFT = {name: jaxop(f"fft_{name}(Tensor self, int[]? s=None, int[]? dim=None, str? norm=None) "
                   "-> Tensor", _fftn(fn)) for name, fn in _FFTS.items()}


# -- special: elementwise -----------------------------------------------------------------------

def _float_unary(fn: Callable) -> Callable:
    return lambda x: fn(_to_inexact(x))


def _float_binary(fn: Callable) -> Callable:
    def kernel(x: Any, y: Any) -> jax.Array:
        dtype = result_type(x, y)
        dtype = dtype if category(dtype) >= 2 else default_float()
        return fn(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
    return kernel


def unary(name: str, fn: Callable, differentiable: bool = True) -> Any:
    return jaxop(f"special_{name}(Tensor self) -> Tensor", _float_unary(fn),
                 differentiable=differentiable)


def binary(name: str, fn: Callable, diff: Any = None, differentiable: bool = True) -> Any:
    return jaxop(f"special_{name}(Tensor self, Tensor other) -> Tensor", _float_binary(fn),
                 diff=diff, differentiable=differentiable)


@jax.custom_vjp
def _xlogy_same(x: jax.Array, y: jax.Array) -> jax.Array:
    return jsp.xlogy(x, y)


def _xlogy_bwd(res: tuple, g: jax.Array) -> tuple:
    """PyTorch's derivative: d/dx is 0 where x == 0 and y <= 0 (jax's log(y) gives -inf
    there: xlogy(0, 0) is a constant 0), d/dy = x / y."""
    x, y = res
    gx = jnp.where((x == 0) & (y <= 0), jnp.zeros((), g.dtype), g * jnp.log(y))
    return gx, g * x / y


_xlogy_same.defvjp(lambda x, y: (_xlogy_same(x, y), (x, y)), _xlogy_bwd)


def _xlogy(x: jax.Array, y: jax.Array) -> jax.Array:
    return _xlogy_same(*jnp.broadcast_arrays(x, y))  # the broadcast's vjp sums back


def _sinc(x: jax.Array) -> jax.Array:
    return jnp.sinc(x)


def _entr(x: jax.Array) -> jax.Array:
    safe = jnp.where(x > 0, x, 1)
    return jnp.where(x > 0, -safe * jnp.log(safe), jnp.where(x == 0, 0, -jnp.inf).astype(x.dtype))


def _spherical_j0(x: jax.Array) -> jax.Array:
    safe = jnp.where(x == 0, 1, x)
    return jnp.where(x == 0, 1, jnp.sin(safe) / safe).astype(x.dtype)


def _nan_below_zero(fn: Callable) -> Callable:
    return lambda x: jnp.where(x < 0, jnp.nan, fn(x)).astype(x.dtype)


# Gauss-Legendre nodes on [0, 1], and a trapezoid grid for the infinite integrals
_GL_T, _GL_W = (np.asarray(v) for v in np.polynomial.legendre.leggauss(160))
_GL_T, _GL_W = (_GL_T + 1) / 2, _GL_W / 2
_H = 0.04
_TR = np.arange(0.0, 16.0 + _H / 2, _H)  # t in [0, 16]: cosh 16 ~ 4e6, enough for x > 1e-4
_TR_W = np.full_like(_TR, _H)
_TR_W[0] = _H / 2


def _k_scaled(nu: float, x: jax.Array) -> jax.Array:
    """e^x K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt, x > 0 (trapezoid rule)."""
    t = jnp.asarray(_TR, x.dtype)
    xs = jnp.where(x > 0, x, 1)[..., None]
    f = jnp.exp(-xs * (jnp.cosh(t) - 1)) * jnp.cosh(nu * t)
    return jnp.sum(f * jnp.asarray(_TR_W, x.dtype), axis=-1)


def _tail(x: jax.Array, f: Callable) -> jax.Array:
    """int_0^inf f(t) dt for an integrand decaying like exp(-x sinh t): Gauss-Legendre on
    [0, T] with x sinh T = 60 (the trapezoid rule would be only O(h^2) at the end t = 0)."""
    top = jnp.arcsinh(60 / x)[..., None]
    t = top * jnp.asarray(_GL_T, x.dtype)
    return jnp.sum(f(t) * jnp.asarray(_GL_W, x.dtype), axis=-1) * top[..., 0]


def _j_int(n: float, x: jax.Array) -> jax.Array:
    """J_n(x) for integer n: (1/pi) int_0^pi cos(n th - x sin th) d th (Gauss-Legendre)."""
    th = jnp.asarray(_GL_T * math.pi, x.dtype)
    f = jnp.cos(n * th - x[..., None] * jnp.sin(th))
    return jnp.sum(f * jnp.asarray(_GL_W, x.dtype), axis=-1)


def _y_int(n: float, x: jax.Array) -> jax.Array:
    """Y_n(x), x > 0: (1/pi) int_0^pi sin(x sin th - n th) d th
    - (1/pi) int_0^inf (e^{nt} + (-1)^n e^{-nt}) e^{-x sinh t} dt."""
    th = jnp.asarray(_GL_T * math.pi, x.dtype)
    xs = jnp.where(x > 0, x, 1)[..., None]
    first = jnp.sum(jnp.sin(xs * jnp.sin(th) - n * th) * jnp.asarray(_GL_W, x.dtype), -1)
    second = _tail(xs[..., 0], lambda t: (jnp.exp(n * t) + (-1) ** n * jnp.exp(-n * t))
                   * jnp.exp(-xs * jnp.sinh(t))) / math.pi
    return first - second


def _bessel_y(n: int) -> Callable:
    def fn(x: jax.Array) -> jax.Array:
        y = _y_int(n, x)
        return jnp.where(x > 0, y, jnp.where(x == 0, -jnp.inf, jnp.nan)).astype(x.dtype)
    return fn


def _bessel_j(n: int) -> Callable:
    def fn(x: jax.Array) -> jax.Array:
        return _j_int(n, jnp.abs(x)) * (jnp.sign(x) if n % 2 else 1)
    return fn


def _bessel_k(nu: float, scaled: bool) -> Callable:
    def fn(x: jax.Array) -> jax.Array:
        k = _k_scaled(nu, x)
        k = k if scaled else k * jnp.exp(-jnp.where(x > 0, x, 1))
        return jnp.where(x > 0, k, jnp.where(x == 0, jnp.inf, jnp.nan)).astype(x.dtype)
    return fn


def _airy_ai(x: jax.Array) -> jax.Array:
    """Ai(x) = sqrt(x/3)/pi K_{1/3}(z) for x > 0 and sqrt(|x|)/3 (J_{1/3} + J_{-1/3})(z) for
    x < 0, z = 2/3 |x|^{3/2}; J_nu for fractional nu by its Schlaefli integral."""
    ax = jnp.abs(x)
    z = 2 / 3 * ax ** 1.5
    zs = jnp.where(z > 0, z, 1)
    pos = jnp.sqrt(ax / 3) / math.pi * _k_scaled(1 / 3, zs) * jnp.exp(-zs)
    neg = jnp.sqrt(ax) / 3 * (_j_frac(1 / 3, zs) + _j_frac(-1 / 3, zs))
    at0 = 1 / (3 ** (2 / 3) * math.gamma(2 / 3))
    return jnp.where(x == 0, at0, jnp.where(x > 0, pos, neg)).astype(x.dtype)


def _j_frac(nu: float, x: jax.Array) -> jax.Array:
    """J_nu(x) = (1/pi) int_0^pi cos(nu th - x sin th) dth - sin(nu pi)/pi int_0^inf
    e^{-x sinh t - nu t} dt."""
    tail = _tail(x, lambda t: jnp.exp(-x[..., None] * jnp.sinh(t) - nu * t))
    return _j_int(nu, x) - math.sin(nu * math.pi) / math.pi * tail


# -- orthogonal polynomials: three-term recurrences, run up to the largest n ---------------------

def _recurrence(first: Callable, step: Callable) -> Callable:
    """p_n(x) elementwise for integer n (a tensor or number): p_0 = 1, p_1 = first(x),
    p_{k+1} = step(k, x, p_k, p_{k-1}); n < 0 gives 0, as PyTorch."""
    def kernel(x: Any, n: Any) -> jax.Array:
        dtype = result_type(x, n)
        dtype = dtype if category(dtype) >= 2 else default_float()
        x, n = jnp.broadcast_arrays(jnp.asarray(x, dtype), jnp.asarray(n))
        n = n.astype(jnp.int64)
        top = jnp.max(n, initial=1)

        def body(state: tuple) -> tuple:
            k, prev, cur, out = state
            nxt = step(k, x, cur, prev)
            out = jnp.where(n == k + 1, nxt, out)
            return k + 1, cur, nxt, out
        p1 = first(x)
        out = jnp.where(n == 0, jnp.ones_like(x), jnp.where(n == 1, p1, jnp.zeros_like(x)))
        state = (jnp.asarray(1, jnp.int64), jnp.ones_like(x), p1, out)
        _, _, _, out = jax.lax.while_loop(lambda s: s[0] < top, body, state)
        return out
    return kernel


def _cheb(first: Callable, shift: bool = False) -> Callable:
    rec = _recurrence(first, lambda k, x, c, p: 2 * x * c - p)
    return (lambda x, n: rec(2 * jnp.asarray(x) - 1, n)) if shift else rec


POLYNOMIALS = {
    "chebyshev_polynomial_t": _cheb(lambda x: x),
    "chebyshev_polynomial_u": _cheb(lambda x: 2 * x),
    "chebyshev_polynomial_v": _cheb(lambda x: 2 * x - 1),
    "chebyshev_polynomial_w": _cheb(lambda x: 2 * x + 1),
    "shifted_chebyshev_polynomial_t": _cheb(lambda x: x, True),
    "shifted_chebyshev_polynomial_u": _cheb(lambda x: 2 * x, True),
    "shifted_chebyshev_polynomial_v": _cheb(lambda x: 2 * x - 1, True),
    "shifted_chebyshev_polynomial_w": _cheb(lambda x: 2 * x + 1, True),
    "hermite_polynomial_h": _recurrence(lambda x: 2 * x, lambda k, x, c, p: 2 * x * c - 2 * k * p),
    "hermite_polynomial_he": _recurrence(lambda x: x, lambda k, x, c, p: x * c - k * p),
    "laguerre_polynomial_l": _recurrence(
        lambda x: 1 - x, lambda k, x, c, p: ((2 * k + 1 - x) * c - k * p) / (k + 1)),
    "legendre_polynomial_p": _recurrence(
        lambda x: x, lambda k, x, c, p: ((2 * k + 1) * x * c - k * p) / (k + 1)),
}

SPECIAL = {
    "erfc": unary("erfc", jsp.erfc), "erfcx": unary("erfcx", jsp.erfcx),
    "erfinv": unary("erfinv", jsp.erfinv), "expit": unary("expit", jsp.expit),
    "exp2": unary("exp2", jnp.exp2), "gammaln": unary("gammaln", jsp.gammaln),
    "digamma": unary("digamma", jsp.digamma), "i0": unary("i0", jsp.i0),
    "i0e": unary("i0e", jsp.i0e), "i1": unary("i1", jsp.i1), "i1e": unary("i1e", jsp.i1e),
    "ndtr": unary("ndtr", jsp.ndtr), "ndtri": unary("ndtri", jsp.ndtri),
    "log_ndtr": unary("log_ndtr", jsp.log_ndtr), "sinc": unary("sinc", _sinc),
    "entr": unary("entr", _entr),
    "spherical_bessel_j0": unary("spherical_bessel_j0", _spherical_j0, differentiable=False),
    "bessel_j0": unary("bessel_j0", _bessel_j(0), differentiable=False),
    "bessel_j1": unary("bessel_j1", _bessel_j(1), differentiable=False),
    "bessel_y0": unary("bessel_y0", _bessel_y(0), differentiable=False),
    "bessel_y1": unary("bessel_y1", _bessel_y(1), differentiable=False),
    "modified_bessel_k0": unary("modified_bessel_k0", _bessel_k(0, False), differentiable=False),
    "modified_bessel_k1": unary("modified_bessel_k1", _bessel_k(1, False), differentiable=False),
    "scaled_modified_bessel_k0": unary("scaled_modified_bessel_k0", _bessel_k(0, True),
                                       differentiable=False),
    "scaled_modified_bessel_k1": unary("scaled_modified_bessel_k1", _bessel_k(1, True),
                                       differentiable=False),
    "modified_bessel_i0": unary("modified_bessel_i0", jsp.i0, differentiable=False),
    "modified_bessel_i1": unary("modified_bessel_i1", jsp.i1, differentiable=False),
    "airy_ai": unary("airy_ai", _airy_ai, differentiable=False),
    "xlogy": binary("xlogy", _xlogy), "xlog1py": binary("xlog1py", jsp.xlog1py),
    "zeta": binary("zeta", jsp.zeta, differentiable=False),
    "gammainc": binary("gammainc", jsp.gammainc, diff=("other",)),
    "gammaincc": binary("gammaincc", jsp.gammaincc, diff=("other",)),
    **{name: binary(name, fn, differentiable=False) for name, fn in POLYNOMIALS.items()},
}
polygamma = jaxop("special_polygamma(int n, Tensor self) -> Tensor",
                  lambda n, x: jsp.polygamma(n, _to_inexact(x)), diff=("self",))
multigammaln = jaxop("special_multigammaln(Tensor self, int p) -> Tensor",
                     lambda x, p: jsp.multigammaln(_to_inexact(x), p))
logit = jaxop("special_logit(Tensor self, float? eps=None) -> Tensor",
              lambda x, eps=None: jsp.logit(_to_inexact(x) if eps is None else
                                            jnp.clip(_to_inexact(x), eps, 1 - eps)),
              static=("eps",))
round_decimals = jaxop("special_round(Tensor self, int decimals=0) -> Tensor",
                       lambda x, decimals=0: jnp.round(x, decimals) if category(x.dtype) >= 2
                       else x)
