"""``acg.backends.cuda``: PyTorch's CUDA switches. ``matmul.allow_tf32`` sets the float32
matmul precision (``acg.set_float32_matmul_precision``: True is "high", False "highest");
the scaled-dot-product-attention kernel switches are recorded (our attention is one fused
XLA program whichever is chosen).

>>> import autograd_compile as acg
>>> acg.backends.cuda.matmul.allow_tf32 = False; acg.get_float32_matmul_precision()
'highest'
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from .. import _flags
from ..devices.cuda import is_available as _cuda_available


class _Matmul:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` and the reduced-precision reductions."""
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _flags.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        _flags.set_float32_matmul_precision("high" if value else "highest")


matmul = _Matmul()
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    return _cuda_available()


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[None]:
    """PyTorch's older switch for the attention kernels, restored on exit (see
    ``acg.nn.attention.sdpa_kernel``)."""
    with sdp_switches({"flash": enable_flash, "math": enable_math,
                       "mem_efficient": enable_mem_efficient, "cudnn": enable_cudnn}):
        yield


@contextlib.contextmanager
def sdp_switches(switches: dict[str, bool]) -> Iterator[None]:
    """Set the attention kernel switches for the block, then put the old ones back."""
    old = dict(_sdp)
    _sdp.update({k: bool(v) for k, v in switches.items()})
    try:
        yield
    finally:
        _sdp.clear()
        _sdp.update(old)
