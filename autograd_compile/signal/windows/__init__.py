"""``torch.signal.windows``: window functions with PyTorch's signatures, defaults, checks
and error texts. Each window is a formula over ``n = 0 .. M-1``, evaluated in float64 numpy
and returned in the requested dtype (float32 or float64). ``sym=False`` gives the periodic
window (for spectral analysis): the symmetric one of length ``M + 1`` without its last point.

>>> import autograd_compile as acg
>>> w = acg.signal.windows
>>> w.bartlett(5).tolist(), w.hamming(3).tolist()
([0.0, 0.5, 1.0, 0.5, 0.0], [0.07999999821186066, 1.0, 0.07999999821186066])
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable

import numpy as np

from ...kernels.api import tensor as _tensor
from ...kernels.api_tail_c import strided as _strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name: str, M: int, sym: bool, dtype: Any, layout: Any, device: Any,
            requires_grad: bool, formula: Callable[[np.ndarray, int], np.ndarray],
            one_point: bool = True) -> Any:
    """Checks, the empty and one-point windows, then ``formula(n, span)`` where ``span`` is
    the symmetric window's ``M - 1`` (``M`` for a periodic one)."""
    from ... import get_default_dtype
    dtype = get_default_dtype() if dtype is None else dtype
    _checks(name, M, dtype, layout)
    n = np.arange(M, dtype=np.float64)
    if M == 1 and one_point:
        values = np.ones(1)
    else:  # (a one-point periodic window is the symmetric one, as torch's)
        values = formula(n, M - 1 if sym or M <= 1 else M) if M else n
    return _tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _checks(name: str, M: int, dtype: Any, layout: Any) -> None:
    from ... import float32, float64
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout != _strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (float32, float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
             device: Any = None, requires_grad: bool = False) -> Any:
    """The triangular window, zero at both ends: ``1 - |2n / (M - 1) - 1|``."""
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: 1 - np.abs(2 * n / span - 1))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
           device: Any = None, requires_grad: bool = False) -> Any:
    """The sine window: ``sin(pi (n + 1/2) / M)``."""
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.sin(np.pi * (n + 0.5) / (span + 1)), one_point=False)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = _strided, device: Any = None,
                requires_grad: bool = False) -> Any:
    """The Poisson window ``exp(-|n - center| / tau)``, centred by default."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    return _window("exponential", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.exp(-np.abs(n - (span / 2 if center is None else center))
                                          / tau), one_point=False)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = _strided, device: Any = None, requires_grad: bool = False) -> Any:
    """``exp(-((n - (M - 1) / 2) / std)^2 / 2)``."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.exp(-0.5 * ((n - span / 2) / std) ** 2), one_point=False)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = _strided, device: Any = None, requires_grad: bool = False) -> Any:
    """``I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)``."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / span - 1) ** 2,
                                                                0, None))) / np.i0(beta))


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None,
                   layout: Any = _strided, device: Any = None,
                   requires_grad: bool = False) -> Any:
    """``sum_k (-1)^k a_k cos(2 pi k n / (M - 1))``: Hann, Hamming, Blackman, Nuttall."""
    def formula(n: np.ndarray, span: int) -> np.ndarray:
        if not isinstance(a, Iterable):
            raise TypeError("Coefficients must be a list/tuple")
        coeffs = list(a)
        if not coeffs:
            raise ValueError("Coefficients cannot be empty")
        return sum((-1) ** k * c * np.cos(2 * np.pi * k * n / span) for k, c in enumerate(coeffs))
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad, formula)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = _strided, device: Any = None,
                    requires_grad: bool = False) -> Any:
    """``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
            device: Any = None, requires_grad: bool = False) -> Any:
    """general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
         device: Any = None, requires_grad: bool = False) -> Any:
    """general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
             device: Any = None, requires_grad: bool = False) -> Any:
    """general_cosine with (0.42, 0.5, 0.08)."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = _strided,
            device: Any = None, requires_grad: bool = False) -> Any:
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
