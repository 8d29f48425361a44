"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (in place on ``.grad``).

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.zeros(2)); w.grad = acg.tensor([3.0, 4.0])
>>> acg.nn.utils.clip_grad_norm_([w], max_norm=1.0).item(), w.grad.tolist()
(5.0, [0.5999999046325684, 0.7999998331069946])
"""
from __future__ import annotations

import functools
import math
from typing import Any, Iterable

import jax

from ...autograd.grad_mode import no_grad
from ...dispatch.keys import TLS
from ...kernels import api as A
from ...tensor import Tensor, _make

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(t: Tensor, p: float) -> Tensor:
    """The p-norm of all of ``t``'s elements (p = inf: the largest magnitude)."""
    if p == math.inf:
        return t.abs().amax()
    if p == -math.inf:
        return t.abs().amin()
    if p == 0:
        return (t != 0).sum().to(t.dtype)
    if p == 2:
        return (t * t).sum().sqrt()
    return (t.abs() ** p).sum() ** (1.0 / p)


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of the norms of ``tensors`` (as if they were one concatenated vector)."""
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return A.tensor(0.0)
    with no_grad():
        dtype = tensors[0].dtype
        norms = [_vector_norm(t, norm_type).to(dtype) for t in tensors]
        total = _vector_norm(A.stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale every ``.grad`` by ``min(1, max_norm / (total_norm + 1e-6))``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Rescale the gradients so that their joint ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm before clipping. ``error_if_nonfinite`` raises (leaving the
    gradients untouched) when that norm is NaN or infinite.
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not error_if_nonfinite and _plain(grads):
        return _clip_fused(grads, float(max_norm), float(norm_type))
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def _plain(grads: list[Tensor]) -> bool:
    """Plain tensors of one dtype, no dispatch mode: the whole clip can be one program."""
    return bool(grads) and not TLS.mode_stack and \
        all(type(g) is Tensor for g in grads) and len({g._data.dtype for g in grads}) == 1


@functools.partial(jax.jit, static_argnums=(1, 2))  # max_norm too: a Python scalar, as eager
def _clip_arrays(grads: tuple, max_norm: Any, norm_type: float) -> tuple[Any, tuple]:
    """The same ops as the op-by-op path (norms, their norm, the clamped scale), one program."""
    ts = [_make(g) for g in grads]
    total = _vector_norm(A.stack([_vector_norm(t, norm_type) for t in ts]), norm_type)
    coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
    return total._data, tuple((t * coef.to(t.dtype))._data for t in ts)


def _clip_fused(grads: list[Tensor], max_norm: float, norm_type: float) -> Tensor:
    """clip_grad_norm_ on plain tensors: one jitted call (~40 eager ops otherwise), then the
    gradients written in place (their identity and version counters as ``mul_`` leaves)."""
    total, new = _clip_arrays(tuple(g._data for g in grads), max_norm, norm_type)
    for g, a in zip(grads, new):
        g._data = a
        g._version += 1
    return _make(total)


def clip_grad_norm(parameters: Any, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Deprecated spelling of :func:`clip_grad_norm_`."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
