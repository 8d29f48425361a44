"""``nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm`` as
parametrizations (``nn.utils.parametrize``), with PyTorch's state_dict layout
(``parametrizations.weight.original0/1`` for weight norm, ``.original`` plus ``_u``/``_v``
for spectral norm).

>>> import autograd_compile as acg
>>> m = weight_norm(acg.nn.Linear(4, 3))
>>> sorted(m.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

import math
from enum import Enum, auto
from typing import Any

from ...autograd.grad_mode import no_grad
from ...kernels import api as A
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from . import parametrize

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm over every dim but ``dim`` (shaped to broadcast); ``dim=-1``: the whole
    tensor's norm (PyTorch's ``norm_except_dim``)."""
    if dim == -1:
        return (v * v).sum().sqrt()
    dims = [d for d in range(v.dim()) if d != dim]
    return (v * v).sum(dim=dims, keepdim=True).sqrt()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """v * g / ||v|| (Salimans & Kingma, 2016)."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Reparametrize ``module.<name>`` as magnitude ``original0`` times direction
    ``original1 / ||original1||`` (norm over every dim but ``dim``; None: the whole tensor)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value estimated by power iteration on the
    buffers ``_u``, ``_v`` (one step per training forward; 15 at registration)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            self.register_buffer("_u", F.normalize(A.randn(h, dtype=mat.dtype), dim=0,
                                                   eps=eps))
            self.register_buffer("_v", F.normalize(A.randn(w, dtype=mat.dtype), dim=0,
                                                   eps=eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            mat = mat.detach()
            for _ in range(n):
                self._u.copy_(F.normalize(mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat.transpose(0, 1) @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _is_conv_transpose(module: Module) -> bool:
    return type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") \
        or any(c.__name__.startswith("ConvTranspose") for c in type(module).__mro__)


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm (Miyato et al., 2018); ``dim``: the
    output dimension (1 for transposed convolutions, else 0)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _matrix_exp(a: Tensor) -> Tensor:
    """exp(a) of square matrices by scaling and squaring a degree-14 Taylor series, written
    in our ops (differentiable); the scaling follows a's norm when the value is concrete."""
    try:
        norm = float((a * a).sum().sqrt())
        s = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    except Exception:  # traced: no concrete norm, take a scaling that covers |a| < 1000
        s = 11
    x = a / (2.0 ** s)
    eye = A.eye(a.shape[-1], dtype=a.dtype)
    term, out = eye, eye
    for k in range(1, 15):
        term = (term @ x) / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _householder_product(v: Tensor, tau: Tensor) -> Tensor:
    """Q = H_1 ... H_k, H_i = I - tau_i w_i w_i^T, w_i column i of ``v`` below the diagonal
    with 1 on it (LAPACK's orgqr), first k columns; written in our ops."""
    n, k = v.shape[-2], v.shape[-1]
    eye = A.eye(n, dtype=v.dtype)
    q = eye
    rows = A.arange(n)
    for i in range(k):
        below = (rows > i).to(v.dtype)
        w = v[..., :, i] * below + (rows == i).to(v.dtype)
        q = q - (q @ w.unsqueeze(-1)) * (tau[..., i:i + 1].unsqueeze(-1) * w.unsqueeze(-2))
    return q[..., :, :k]


def _make_orthogonal(a: Any) -> Any:
    """Q of a's QR with R's diagonal made positive (a jax array in, out)."""
    import jax.numpy as jnp
    q, r = jnp.linalg.qr(a)
    return q * jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


class _Orthogonal(Module):
    """An orthogonal (or semi-orthogonal) matrix from an unconstrained one, by the matrix
    exponential or the Cayley map of its skew part, or Householder reflections; with
    ``use_trivialization`` a buffer ``base`` keeps the orthogonal matrix last assigned."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = A.cat([X, A.zeros(*X.shape[:-2], n, n - k, dtype=X.dtype)], dim=-1)
            skew = X - X.transpose(-2, -1)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(skew)
            else:  # (I - A/2)^-1 (I + A/2), solved as an exp-free rational map
                eye = A.eye(n, dtype=skew.dtype)
                Q = _solve(eye - skew * 0.5, eye + skew * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            low = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (low * low).sum(dim=-2))
            Q = _householder_product(low, tau)
            diag = (X * A.eye(n, k, dtype=X.dtype)).sum(dim=-2)  # X's +-1 diagonal
            # cast through int: no gradient to (and no update of) the diagonal, as PyTorch
            Q = Q * diag.detach().to(A.int64).to(X.dtype).unsqueeze(-2)
        if self._buffers.get("base") is not None:
            Q = self.base @ Q
        return Q.transpose(-2, -1) if transposed else Q

    def _householder_inverse(self, Q: Tensor) -> Tensor:
        import jax.numpy as jnp
        if self.orthogonal_map != _OrthMaps.householder:
            raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                      "or the Cayley parametrizations when "
                                      "use_trivialization=False.")
        q = Q.detach()._data
        transpose = q.shape[-2] < q.shape[-1]
        a = _geqrf_inverse(jnp.swapaxes(q, -1, -2) if transpose else q)
        return Tensor(jnp.swapaxes(a, -1, -2) if transpose else a)

    def right_inverse(self, Q: Tensor) -> Tensor:
        import jax.numpy as jnp
        if tuple(Q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {tuple(Q.shape)}.")
        if "base" not in self._buffers:
            return self._householder_inverse(Q)
        with no_grad():
            q = Q.detach()._data
            n, k = q.shape[-2], q.shape[-1]
            transpose = n < k
            if transpose:
                q = jnp.swapaxes(q, -1, -2)
                n, k = k, n
            if n != k:  # complete to a square matrix with random columns
                extra = A.randn(*q.shape[:-2], n, n - k, dtype=Q.dtype)._data
                q = jnp.concatenate([q, extra], axis=-1)
            self.base = Tensor(_make_orthogonal(q))
            neg_eye = jnp.zeros(Q.shape, Q.dtype)
            m = min(Q.shape[-2], Q.shape[-1])
            neg_eye = neg_eye.at[..., jnp.arange(m), jnp.arange(m)].set(-1.0)
            return Tensor(neg_eye)


def _geqrf(a: Any) -> tuple[Any, Any]:
    """LAPACK's geqrf in numpy (float64, one matrix): R on and above the diagonal, the
    Householder vectors (unit first entry implied) below it, and their ``tau``."""
    import numpy as np
    a = np.array(a, dtype=np.float64)
    n, k = a.shape
    tau = np.zeros(min(n, k))
    for j in range(min(n, k)):
        x = a[j:, j].copy()
        rest = float(np.linalg.norm(x[1:]))
        if rest == 0.0:  # nothing to reflect: H = I, tau = 0 (as LAPACK)
            continue
        alpha = x[0]
        beta = -math.copysign(math.hypot(alpha, rest), alpha)
        tau[j] = (beta - alpha) / beta
        v = x / (alpha - beta)
        v[0] = 1.0
        a[j:, j:] -= tau[j] * np.outer(v, v @ a[j:, j:])
        a[j, j], a[j + 1:, j] = beta, v[1:]
    return a, tau


def _geqrf_inverse(q: Any) -> Any:
    """Householder vectors whose product (with the sign rule of ``forward``) is ``q``: the
    geqrf of ``q`` with its diagonal replaced by the signs of R's (flipped where tau = 0,
    since ``forward`` recomputes tau = 2 there)."""
    import jax.numpy as jnp
    import numpy as np
    q_np = np.asarray(q)
    out = np.empty(q_np.shape, dtype=np.float64)
    for idx in np.ndindex(q_np.shape[:-2]):
        a, tau = _geqrf(q_np[idx])
        m = len(tau)
        diag = np.sign(a[np.arange(m), np.arange(m)])
        diag[tau == 0.0] *= -1
        a[np.arange(m), np.arange(m)] = diag
        out[idx] = a
    return jnp.asarray(out.astype(q_np.dtype))


def _solve(a: Tensor, b: Tensor) -> Tensor:
    """a^-1 b through the inverse written with our ops is not available: use the
    Neumann-free identity for the Cayley map, Q = 2 (I - A/2)^-1 - I, via an op-level
    inverse when the kernels provide one."""
    inv = getattr(A, "inverse", None) or getattr(A, "linalg_inv", None)
    if inv is None:
        raise NotImplementedError("orthogonal_map='cayley' needs a matrix inverse op, which "
                                  "this build lacks; use 'matrix_exp' or 'householder'")
    return inv(a) @ b


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal;
    ``orthogonal_map``: "matrix_exp" (square default), "cayley" or "householder"."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    if orth_enum == _OrthMaps.cayley:
        _solve(A.eye(1), A.eye(1))  # fail at registration, not at the first access
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
