"""``acg.special``: PyTorch's ``torch.special`` (names, signatures, dtype rules, gradients where
PyTorch has them; the Bessel, Airy and polynomial functions have none there, nor here).

>>> import autograd_compile as acg
>>> x = acg.tensor([0.5], requires_grad=True)
>>> y = acg.special.erfinv(x); y.backward(); f"{y.item():.4f} {x.grad.item():.4f}"
'0.4769 1.1126'
"""
from __future__ import annotations

from typing import Any

from autograd_compile.kernels import fft_special as K
from autograd_compile.tensor import Tensor

__all__ = ["Tensor", "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
           "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
           "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]


def _as_tensor(x: Any) -> Any:
    import autograd_compile as acg
    return x if isinstance(x, Tensor) else acg.tensor(x)


def _unary(name: str) -> Any:
    op = K.SPECIAL[name]

    def fn(input: Tensor, *, out: Any = None) -> Tensor:
        return op(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}, elementwise."
    return fn


def _binary(name: str) -> Any:
    op = K.SPECIAL[name]

    def fn(input: Any, other: Any, *, out: Any = None) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"special_{name}(): at least one argument must be a Tensor")
        return op(input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}, elementwise with broadcasting (either side a number)."
    return fn


for _n in ("erfc", "erfcx", "erfinv", "expit", "exp2", "gammaln", "digamma", "i0", "i0e", "i1",
           "i1e", "ndtr", "ndtri", "log_ndtr", "sinc", "entr", "spherical_bessel_j0",
           "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
           "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "modified_bessel_i0", "modified_bessel_i1", "airy_ai"):
    globals()[_n] = _unary(_n)
for _n in ("xlogy", "xlog1py", "zeta", "gammainc", "gammaincc", *K.POLYNOMIALS):
    globals()[_n] = _binary(_n)
psi = digamma  # noqa: F821  (defined by the loop above)


def erf(input: Tensor, *, out: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.erf(input)


def expm1(input: Tensor, *, out: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.expm1(input)


def log1p(input: Tensor, *, out: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.log1p(input)


def polygamma(n: int, input: Tensor, *, out: Any = None) -> Tensor:
    """The n-th derivative of digamma."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return K.polygamma(int(n), input)


def multigammaln(input: Tensor, p: int, *, out: Any = None) -> Tensor:
    """log of the multivariate gamma function of dimension ``p``."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return K.multigammaln(input, int(p))


def logit(input: Tensor, eps: float | None = None, *, out: Any = None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    return K.logit(input, None if eps is None else float(eps))


def round(input: Tensor, *, decimals: int = 0, out: Any = None) -> Tensor:  # noqa: A001
    return K.round_decimals(input, int(decimals))


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False, *, out: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.logsumexp(input, dim, keepdim)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    import autograd_compile as acg
    return acg.log_softmax(input, dim, dtype)

from autograd_compile.kernels._outarg import install_out  # noqa: E402

install_out(globals(), __all__, "special_")  # out= writes into the given tensor
