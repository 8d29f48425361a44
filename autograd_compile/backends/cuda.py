"""``acg.backends.cuda``: PyTorch's CUDA switches. ``matmul.allow_tf32`` sets the float32
matmul precision (``acg.set_float32_matmul_precision``: True is "high", False "highest");
the scaled-dot-product-attention kernel switches are recorded (our attention is one fused
XLA program whichever is chosen).

>>> import autograd_compile as acg
>>> acg.backends.cuda.matmul.allow_tf32 = False; acg.get_float32_matmul_precision()
'highest'
"""
from __future__ import annotations

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
