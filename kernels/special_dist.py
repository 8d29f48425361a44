"""The ops ``acg.distributions`` needs that the core library lacks: special functions
(log-gamma, digamma, polygamma, erfinv, scaled Bessel i0e/i1e, atan), a Cholesky factor and a
triangular solve with their gradients, and the samplers that are not a transform of a uniform
or normal draw (gamma with its implicit reparameterisation gradient, Poisson, binomial,
von Mises).

Every name carries the ``dist_`` prefix: ``acg.special`` and ``acg.linalg`` are built
separately and own the public names (``lgamma``, ``cholesky`` ...); these stay private to the
distributions package. Backward formulas are in our own ops, so they differentiate again.

>>> import autograd_compile as acg
>>> from autograd_compile.kernels import special_dist as S
>>> x = acg.tensor([1.0, 3.0], dtype=acg.float64, requires_grad=True)
>>> S.dist_lgamma(x).sum().backward(); [round(v, 4) for v in x.grad.tolist()]
[-0.5772, 0.9228]
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import jax.scipy.special as jsp
import numpy as np

from autograd_compile import runtime_checks
from autograd_compile.fake import TensorMeta

from ._defop import NONDIFF, binary, defop, reduce_grad, same_shape, unary, wants
from ._dtypes import is_float, to_float
from ._shapes import broadcast_shapes


def _key(data: Any) -> Any:
    return jax.random.wrap_key_data(data)


# -- special functions ---------------------------------------------------------------------------
dist_lgamma = unary("dist_lgamma", jsp.gammaln, lambda g, x, out: g * dist_digamma(x))
dist_digamma = unary("dist_digamma", jsp.digamma, lambda g, x, out: g * dist_polygamma(1, x))
dist_polygamma = defop("dist_polygamma(int n, Tensor self) -> Tensor",
                       lambda n, x: jsp.polygamma(n, x.astype(to_float(x.dtype))),
                       shape=lambda n, x: TensorMeta(tuple(x.shape), to_float(x.dtype)),
                       save=("self",), backward=lambda g, n, x, out: (
                           None, g * dist_polygamma(n + 1, x)))
_HALF_SQRT_PI = math.sqrt(math.pi) / 2  # d/dx erfinv(x) = sqrt(pi)/2 exp(erfinv(x)^2)
dist_erfinv = unary("dist_erfinv", jsp.erfinv,
                    lambda g, x, out: g * ((out * out).exp() * _HALF_SQRT_PI), save=("out",))
dist_atan = unary("dist_atan", jnp.arctan, lambda g, x, out: g / (x * x + 1))


def _i0e_backward(g: Any, x: Any, out: Any) -> Any:
    """i0e(x) = exp(-|x|) i0(x): d/dx = i1e(x) - sign(x) i0e(x)."""
    return g * (dist_i1e(x) - x.sign() * out)


def _i1e_backward(g: Any, x: Any, out: Any) -> Any:
    """d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1/x); the limit at 0 is 1/2."""
    from .elementwise import where
    zero = x == 0
    slope = dist_i0e(x) - out * (x.sign() + 1 / where(zero, 1.0, x))
    return g * where(zero, 0.5, slope)


dist_i0e = unary("dist_i0e", jsp.i0e, _i0e_backward, save=("self", "out"))
dist_i1e = unary("dist_i1e", jsp.i1e, _i1e_backward, save=("self", "out"))


# -- Cholesky factor and triangular solve --------------------------------------------------------
def _square_rule(a: Any) -> TensorMeta:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.cholesky: A must be batches of square matrices, but they are "
                           f"{a.shape[-2] if a.ndim > 1 else 1} by {a.shape[-1]} matrices")
    if not is_float(a.dtype):
        raise RuntimeError(f"linalg.cholesky: Expected a floating point tensor, got {a.dtype.name}")
    return TensorMeta(tuple(a.shape), a.dtype)


def _cholesky_backward(g: Any, a: Any, L: Any) -> Any:
    """Murray (2016): phi = tril(L^T gL) with a halved diagonal; gA = sym(L^-T phi L^-1)."""
    phi = (L.mT @ g).tril()
    phi = phi - 0.5 * _diag_part(phi).unsqueeze(-1) * _eye_like(phi)
    s = dist_solve_triangular(L, dist_solve_triangular(L, phi, True, True).mT, True, True).mT
    return 0.5 * (s + s.mT)


def _eye_like(m: Any) -> Any:
    from .factories import eye
    return eye(m.shape[-1], dtype=m.dtype)


def _diag_part(m: Any) -> Any:
    """The diagonal of the last two dims, as a composition (differentiable for free)."""
    return (m * _eye_like(m)).sum(-1)


dist_cholesky = defop("dist_cholesky(Tensor self) -> Tensor", jnp.linalg.cholesky,
                      shape=_square_rule, check=True, save=("out",),
                      backward=lambda g, a, out: _cholesky_backward(g, a, out))


def _solve_rule(a: Any, b: Any, lower: bool, trans: bool) -> TensorMeta:
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != a.shape[-2] or a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation AX = B ({tuple(a.shape)} and {tuple(b.shape)})")
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return TensorMeta(batch + tuple(b.shape[-2:]), b.dtype)


def _solve(a: Any, b: Any, lower: bool, trans: bool) -> Any:
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    return jsl.solve_triangular(a, b, trans=1 if trans else 0, lower=lower)


def _solve_backward(g: Any, a: Any, b: Any, lower: bool, trans: bool, x: Any) -> tuple:
    """X = op(A)^-1 B: gB = op(A)^-T g; gA = -gB X^T (or its transpose), kept triangular."""
    gb = dist_solve_triangular(a, g, lower, not trans)
    ga = None
    if wants(a):
        full = -(x @ gb.mT) if trans else -(gb @ x.mT)
        ga = reduce_grad(full.tril() if lower else full.triu(), a)
    return ga, reduce_grad(gb, b)


dist_solve_triangular = defop(
    "dist_solve_triangular(Tensor A, Tensor B, bool lower, bool trans) -> Tensor", _solve,
    shape=_solve_rule, check=True, save=("A", "out"), backward=_solve_backward)


# -- samplers ------------------------------------------------------------------------------------
def _gamma_sample(alpha: Any, key: Any) -> Any:
    dtype = to_float(alpha.dtype)
    sample = jax.random.gamma(_key(key), alpha.astype(dtype), alpha.shape, dtype)
    return jnp.maximum(sample, jnp.finfo(dtype).tiny)  # PyTorch clamps to the smallest normal


dist_gamma_grad = defop("dist_gamma_grad(Tensor alpha, Tensor sample) -> Tensor",
                        lambda a, x: jax.lax.random_gamma_grad(a, x), shape=same_shape,
                        backward=NONDIFF)
# implicit reparameterisation: d sample / d alpha from the gamma CDF (Figurnov et al., 2018)
dist_gamma_sample = defop("dist_gamma_sample(Tensor alpha, Tensor key) -> Tensor", _gamma_sample,
                          shape=lambda a, key: TensorMeta(tuple(a.shape), to_float(a.dtype)),
                          save=("alpha", "out"), backward=lambda g, a, key, out: (
                              g * dist_gamma_grad(a, out), None))
dist_poisson_sample = defop(
    "dist_poisson_sample(Tensor rate, Tensor key) -> Tensor",
    lambda r, key: jax.random.poisson(_key(key), r, r.shape).astype(r.dtype),
    shape=same_shape, backward=NONDIFF)


def _binomial(n: Any, p: Any, key: Any) -> Any:
    shape = jnp.broadcast_shapes(n.shape, p.shape)
    dtype = jnp.result_type(n.dtype, p.dtype)
    draw = jax.random.binomial(_key(key), n.astype(dtype), p.astype(dtype), shape, dtype)
    return draw.astype(dtype)


dist_binomial_sample = defop(
    "dist_binomial_sample(Tensor count, Tensor probs, Tensor key) -> Tensor", _binomial,
    shape=lambda n, p, key: TensorMeta(broadcast_shapes(tuple(n.shape), tuple(p.shape)),
                                       p.dtype), backward=NONDIFF)


def _von_mises(loc: Any, k: Any, key: Any) -> Any:
    """Best & Fisher's (1979) rejection sampler, every element looping until accepted."""
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    kd = k.astype(dtype)
    tau = 1 + jnp.sqrt(1 + 4 * kd * kd)
    rho = (tau - jnp.sqrt(2 * tau)) / (2 * kd)
    r = jnp.where(kd > 1e-5, (1 + rho * rho) / (2 * rho), 1 / kd)

    def body(state: tuple) -> tuple:
        key, done, out = state
        key, k1, k2, k3 = jax.random.split(key, 4)
        u1, u2, u3 = (jax.random.uniform(kk, k.shape, dtype) for kk in (k1, k2, k3))
        z = jnp.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kd * (r - f)
        accept = ((c * (2 - c) - u2) > 0) | (jnp.log(c / u2) + 1 - c >= 0)
        theta = jnp.sign(u3 - 0.5) * jnp.arccos(jnp.clip(f, -1, 1))
        return key, done | accept, jnp.where(done, out, theta)

    init = (_key(key), jnp.zeros(k.shape, bool), jnp.zeros(k.shape, dtype))
    _, _, theta = jax.lax.while_loop(lambda s: ~jnp.all(s[1]), body, init)
    out = jnp.mod(theta + loc.astype(dtype) + math.pi, 2 * math.pi) - math.pi
    return out.astype(loc.dtype)


dist_von_mises_sample = defop(
    "dist_von_mises_sample(Tensor loc, Tensor concentration, Tensor key) -> Tensor", _von_mises,
    shape=lambda loc, k, key: TensorMeta(tuple(k.shape), loc.dtype), backward=NONDIFF)


def _gammainc_backward(g: Any, a: Any, x: Any, out: Any) -> tuple:
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); the gradient in ``a`` is not provided (as
    in PyTorch, which raises for it)."""
    if wants(a):
        raise NotImplementedError("dist_gammainc: the derivative with respect to the "
                                  "concentration is not implemented (as in PyTorch)")
    dens = ((a - 1) * x.log() - x - dist_lgamma(a)).exp()
    return None, reduce_grad(g * dens, x)


# the regularised lower incomplete gamma function P(a, x) (Gamma.cdf)
dist_gammainc = binary("dist_gammainc", jsp.gammainc, _gammainc_backward, out="float",
                       other="x", save=("self", "x"))


# -- value checks --------------------------------------------------------------------------------
# key -> the error of one traced check (arrays of ``shown`` -> ValueError); kept for the
# programs that record it, as runtime_checks keeps its error builders
_CHECK_ERRORS: dict[int, Callable[[list], BaseException]] = {}
_CHECK_KEYS = itertools.count(1)


def check_error(error: Callable[[list], BaseException]) -> int:
    """A key naming ``error`` for :data:`dist_check`."""
    key = next(_CHECK_KEYS)
    _CHECK_ERRORS[key] = error
    return key


def _check(ok: Any, shown: list, key: int) -> Any:
    """Raise the keyed error unless ``ok`` holds everywhere; traced, the check is recorded
    in the program (``runtime_checks``) with ``shown``'s arrays for its message."""
    valid = jnp.all(ok)
    runtime_checks.enforce_values(~valid, shown, _CHECK_ERRORS[key])
    return valid


# a distribution's argument or sample validation where the values are traced (acg.compile):
# impure, so dead-code elimination keeps it though nothing reads its result
dist_check = defop("dist_check(Tensor ok, Tensor[] shown, int key) -> Tensor", _check,
                   shape=lambda ok, shown, key: TensorMeta((), np.dtype(bool)),
                   backward=NONDIFF, jit=False)
dist_check._acg_impure = True
