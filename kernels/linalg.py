"""Matrix products: ``matmul`` (torch.matmul's 1-D/2-D/batched broadcasting rules), mm, bmm.

Operands must share a dtype (PyTorch refuses to promote here; jax would silently).
"""
from __future__ import annotations

from typing import Any

from ._xp import jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import PRODUCT, defop, holomorphic
from ._shapes import broadcast_shapes
from .elementwise import wants


def _same_dtype(a: Any, b: Any) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != "
                           f"{b.dtype.name}")


def _cannot_multiply(a: tuple, b: tuple) -> RuntimeError:
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a[-2]}x{a[-1]} and "
                        f"{b[-2]}x{b[-1]})")


def _matmul_rule(a: Any, b: Any) -> TensorMeta:
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    _same_dtype(a, b)
    sa, sb = tuple(a.shape), tuple(b.shape)
    if a.ndim == 1 and b.ndim == 1:
        if sa[0] != sb[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{sa[0]}] and src "
                               f"[{sb[0]}] to have the same number of elements, but got "
                               f"{sa[0]} and {sb[0]} elements respectively")
        return TensorMeta((), a.dtype)
    ma = (1,) + sa if a.ndim == 1 else sa  # a vector is a one-row matrix, then squeezed
    mb = sb + (1,) if b.ndim == 1 else sb
    if ma[-1] != mb[-2]:
        raise _cannot_multiply(ma, mb)
    rows = () if a.ndim == 1 else (ma[-2],)
    cols = () if b.ndim == 1 else (mb[-1],)
    return TensorMeta(broadcast_shapes(ma[:-2], mb[:-2]) + rows + cols, a.dtype)


def _padded(t: Any, at: int) -> tuple:
    """``t``'s shape as a matrix: a vector becomes one row (at=0) or one column (at=-1)."""
    shape = tuple(t.shape)
    return shape if t.ndim != 1 else (1,) + shape if at == 0 else shape + (1,)


def _fit(g: Any, padded: tuple, x: Any) -> Any:
    """A gradient of the padded (matrix) operand back to ``x``: sum batch broadcasting,
    drop the dim a vector operand was given."""
    if tuple(g.shape) != padded:
        g = g.sum_to_size(padded)
    return g.reshape(x.shape) if x.ndim == 1 else g


def matmul_grads(g: Any, a: Any, b: Any, need_a: bool, need_b: bool) -> tuple:
    """Gradients of ``a @ b``; each reads only the other operand (which may be a
    TensorMeta when its own gradient is not needed and so was not saved)."""
    if a.ndim == 1 and b.ndim == 1:  # dot product: g is a scalar
        return (g * b if need_a else None), (g * a if need_b else None)
    g2 = g.unsqueeze(-2) if a.ndim == 1 else g
    g2 = g2.unsqueeze(-1) if b.ndim == 1 else g2
    ga = gb = None
    if need_a:
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        ga = _fit(matmul(g2, b2.mT), _padded(a, 0), a)
    if need_b:
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        gb = _fit(matmul(a2.mT, g2), _padded(b, -1), b)
    return ga, gb


matmul = defop("matmul(Tensor self, Tensor other) -> Tensor", jnp.matmul, host=True, shape=_matmul_rule,
               check=True, save=PRODUCT, cost="contract",
               backward=holomorphic(lambda g, a, b, out: matmul_grads(g, a, b, wants(a), wants(b))))


def _mm_rule(a: Any, b: Any) -> TensorMeta:
    if a.ndim != 2:
        raise RuntimeError(f"self must be a matrix, got a {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got a {b.ndim}-D tensor")
    _same_dtype(a, b)
    if a.shape[1] != b.shape[0]:
        raise _cannot_multiply(tuple(a.shape), tuple(b.shape))
    return TensorMeta((a.shape[0], b.shape[1]), a.dtype)


def _bmm_rule(a: Any, b: Any) -> TensorMeta:
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch1 and batch2 must be 3D tensors, got {a.ndim}D and {b.ndim}D")
    _same_dtype(a, b)
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    return TensorMeta((a.shape[0], a.shape[1], b.shape[2]), a.dtype)


_MAT2 = {"self": ("mat2",), "mat2": ("self",)}  # the product rule, named as mm's schema
mm = defop("mm(Tensor self, Tensor mat2) -> Tensor", jnp.matmul, host=True, shape=_mm_rule, check=True,
           save=_MAT2, cost="contract", backward=holomorphic(lambda g, a, b, out: (
               mm(g, b.mT) if wants(a) else None, mm(a.mT, g) if wants(b) else None)))
bmm = defop("bmm(Tensor self, Tensor mat2) -> Tensor", jnp.matmul, host=True, shape=_bmm_rule, check=True,
            save=_MAT2, cost="contract", backward=holomorphic(lambda g, a, b, out: (
                bmm(g, b.mT) if wants(a) else None, bmm(a.mT, g) if wants(b) else None)))
