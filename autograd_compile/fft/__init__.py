"""``acg.fft``: PyTorch's ``torch.fft`` (signatures, ``norm=`` modes, dtypes, gradients).

Every transform is one n-dimensional op of ``kernels/fft_special.py`` (a ``jnp.fft`` function
made an op, its gradient by ``jax.vjp`` in PyTorch's conjugate convention).

>>> import autograd_compile as acg
>>> acg.fft.fft(acg.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
[(10+0j), (-2+2j), (-2+0j), (-2-2j)]
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from autograd_compile.kernels.fft_special import FFT
from autograd_compile.tensor import Tensor

__all__ = ["Tensor", "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn",
           "ifft", "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
_NORMS = (None, "backward", "forward", "ortho")


def _run(kind: str, input: Tensor, s: Any, dim: Any, norm: str | None) -> Tensor:
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    s = None if s is None else [int(v) for v in s]
    dim = None if dim is None else [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    if s is not None and dim is not None and len(s) != len(dim):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return FFT[kind](input, s, dim, norm)


def _one(kind: str, doc: str) -> Any:
    def transform(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None,
                  *, out: Any = None) -> Tensor:
        return _run(kind, input, None if n is None else [n], [dim], norm)
    transform.__doc__ = doc
    return transform


def _two(kind: str, doc: str) -> Any:
    def transform(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
                  norm: str | None = None, *, out: Any = None) -> Tensor:
        return _run(kind, input, s, dim, norm)
    transform.__doc__ = doc
    return transform


def _many(kind: str, doc: str) -> Any:
    def transform(input: Tensor, s: Sequence[int] | None = None, dim: Any = None,
                  norm: str | None = None, *, out: Any = None) -> Tensor:
        return _run(kind, input, s, dim, norm)
    transform.__doc__ = doc
    return transform


fft = _one("fftn", "1-D discrete Fourier transform along ``dim``.")
ifft = _one("ifftn", "1-D inverse discrete Fourier transform.")
rfft = _one("rfftn", "1-D transform of real input (the n//2+1 non-negative frequencies).")
irfft = _one("irfftn", "Inverse of rfft: a real signal of length ``n`` (default 2*(m-1)).")
hfft = _one("hfftn", "1-D transform of a Hermitian-symmetric signal (one half given): real.")
ihfft = _one("ihfftn", "Inverse of hfft: the half spectrum of a real signal.")
fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (
    _two(k, f"2-D {k[:-1]} over ``dim`` (the last two by default).")
    for k in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"))
fftn, ifftn, rfftn, irfftn, hfftn, ihfftn = (
    _many(k, f"N-D {k[:-1]} over ``dim`` (every dim by default).")
    for k in ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"))


def _factory(values: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    import autograd_compile as acg
    t = acg.tensor(values, dtype=dtype or acg.get_default_dtype(), device=device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def fftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """Sample frequencies of an n-point fft: [0, 1, ..., -(n//2), ..., -1] / (d*n)."""
    return _factory(np.fft.fftfreq(n, d), dtype, device, requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, out: Any = None, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """Sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d*n)."""
    return _factory(np.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _shift(input: Tensor, dim: Any, sign: int) -> Tensor:
    import autograd_compile as acg
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, (int, np.integer)) else \
        list(dim)
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return acg.roll(input, shifts, dims)


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Move the zero frequency to the centre (roll by n//2 on each ``dim``)."""
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Inverse of fftshift (roll by -(n//2))."""
    return _shift(input, dim, -1)

from autograd_compile.kernels._outarg import install_out  # noqa: E402

install_out(globals(), __all__, "fft_")  # out= writes into the given tensor
