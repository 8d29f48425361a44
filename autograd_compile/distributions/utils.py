"""Helpers the families share: broadcasting parameters, probs <-> logits, lazy attributes,
and the special functions (private ``dist_*`` ops) under readable names."""
from __future__ import annotations

import numbers
from typing import Any, Callable

import autograd_compile as acg
from autograd_compile.kernels import special_dist as S
from autograd_compile.tensor import Tensor

lgamma, digamma, erfinv, atan = S.dist_lgamma, S.dist_digamma, S.dist_erfinv, S.dist_atan
i0e, i1e, cholesky = S.dist_i0e, S.dist_i1e, S.dist_cholesky


def polygamma(n: int, x: Tensor) -> Tensor:
    return S.dist_polygamma(n, x)


def solve_triangular(a: Tensor, b: Tensor, *, upper: bool = False, transpose: bool = False
                     ) -> Tensor:
    """``op(A)^-1 B`` for a triangular A (op: identity or transpose), batches broadcast."""
    return S.dist_solve_triangular(a, b, not upper, transpose)


def key() -> Tensor:
    """The next PRNG key of the global generator (``acg.manual_seed`` seeds it)."""
    from autograd_compile.kernels.random import key_of
    return key_of(None)


def broadcast_shapes(*shapes: Any) -> acg.Size:
    """numpy broadcasting of shapes, with PyTorch's error."""
    out: list = []
    for shape in shapes:
        shape = tuple(shape)
        for i, n in enumerate(reversed(shape)):
            if i >= len(out):
                out.insert(0, n)
            elif out[-1 - i] == 1:
                out[-1 - i] = n
            elif n not in (1, out[-1 - i]):
                raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single "
                                   f"shape.  Mismatch is between {list(shapes[0])} and "
                                   f"{list(shape)}")
    return acg.Size(out)


def broadcast_all(*values: Any) -> tuple:
    """Tensors and numbers expanded to one shape; numbers take the tensors' float dtype."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, Tensor)]
    dtype = tensors[0].dtype if tensors else acg.get_default_dtype()
    vals = [v if isinstance(v, Tensor) else acg.tensor(float(v), dtype=dtype) for v in values]
    shape = broadcast_shapes(*[v.shape for v in vals])
    return tuple(v.expand(shape) for v in vals)


def as_float(value: Any, like: Tensor | None = None) -> Tensor:
    """A Python number or tensor as a float tensor (``like``'s dtype when given)."""
    if isinstance(value, Tensor):
        return value
    dtype = like.dtype if like is not None else acg.get_default_dtype()
    return acg.tensor(float(value), dtype=dtype)


def standard_normal(shape: Any, like: Tensor) -> Tensor:
    return acg.randn(list(shape), dtype=like.dtype)


def standard_uniform(shape: Any, like: Tensor) -> Tensor:
    return acg.rand(list(shape), dtype=like.dtype)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside (0, 1) by the dtype's eps."""
    eps = acg.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return logits.sigmoid() if is_binary else acg.nn.functional.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    n = mat.shape[-1]
    rows, cols = zip(*[(i, j) for i in range(n) for j in range(n) if j <= i + diag])
    return mat[..., acg.tensor(list(rows)), acg.tensor(list(cols))]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: fills the lower triangle row by row."""
    m = vec.shape[-1]
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
               ** 0.5) / 2)
    idx = [(i, j) for i in range(n) for j in range(n) if j <= i + diag]
    if len(idx) != m:
        raise ValueError(f"vec_to_tril_matrix: {m} entries do not fill a triangle")
    # gather through a padded vector: position -> entry index, or the appended zero
    table = [[m] * n for _ in range(n)]
    for k, (i, j) in enumerate(idx):
        table[i][j] = k
    padded = acg.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    flat = padded[..., acg.tensor([v for row in table for v in row])]
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


def eye_like(m: Tensor) -> Tensor:
    return acg.eye(m.shape[-1], dtype=m.dtype)


def diagonal(m: Tensor) -> Tensor:
    """The diagonal of the last two dims (a composition: differentiable for free)."""
    return (m * eye_like(m)).sum(-1)


def diag_embed(v: Tensor) -> Tensor:
    return v.unsqueeze(-1) * acg.eye(v.shape[-1], dtype=v.dtype)


def xlogy(x: Any, y: Tensor) -> Tensor:
    """``x * log(y)``, 0 where x == 0 (also for y == 0)."""
    x = as_float(x, y)
    # only 0 * log(0) is patched: the gradient in x stays log(y) at x == 0 (as PyTorch's)
    safe = acg.where((x == 0) & (y == 0), acg.ones_like(y), y)
    return x * safe.log()


def lbeta(a: Tensor, b: Tensor) -> Tensor:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def mvlgamma(x: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``."""
    import math
    shift = acg.arange(p, dtype=x.dtype) * -0.5
    return lgamma(x.unsqueeze(-1) + shift).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


class lazy_property:
    """A parameter computed from the other one on first use (probs from logits ...)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        value = self.fn(obj)
        obj.__dict__[self.fn.__name__] = value
        return value
