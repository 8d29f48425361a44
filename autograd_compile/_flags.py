"""Process-wide numeric settings PyTorch programs set at start-up, mapped onto JAX's own:
matmul precision (``set_float32_matmul_precision``, ``backends.cuda.matmul.allow_tf32``) and
deterministic algorithms.

>>> import autograd_compile as acg
>>> acg.set_float32_matmul_precision("highest"); acg.get_float32_matmul_precision()
'highest'
"""
from __future__ import annotations

import os
import warnings

import jax

# PyTorch's names -> JAX's ``jax_default_matmul_precision`` values (XLA's operand precision)
_PRECISIONS = {"highest": "float32", "high": "tensorfloat32", "medium": "bfloat16"}
_DETERMINISTIC_FLAG = "--xla_gpu_deterministic_ops=true"
_state = {"precision": None, "deterministic": False, "warn_only": False}


def set_float32_matmul_precision(precision: str) -> None:
    """The internal precision of float32 matmuls and convolutions: "highest" (float32),
    "high" (TensorFloat32 where the GPU has it) or "medium" (bfloat16). On CPU XLA always
    computes in float32; JAX's jitted programs retrace under the new setting."""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid float32 matmul precision {precision!r}: expected one of "
                           f"{sorted(_PRECISIONS)}")
    jax.config.update("jax_default_matmul_precision", _PRECISIONS[precision])
    _state["precision"] = precision


def get_float32_matmul_precision() -> str:
    """What ``set_float32_matmul_precision`` set; unset, what XLA does by default (float32
    on CPU; TensorFloat32 where a GPU has it, hence "high")."""
    if _state["precision"] is not None:
        return _state["precision"]
    return "high" if any(d.platform == "gpu" for d in jax.devices()) else "highest"


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for run-to-run identical results. XLA on CPU is deterministic already; on GPU it
    needs ``--xla_gpu_deterministic_ops``, which XLA reads when its GPU backend starts: set
    here when that has not happened yet, otherwise a warning says to set it in XLA_FLAGS."""
    _state["deterministic"], _state["warn_only"] = bool(mode), warn_only
    if not mode or _DETERMINISTIC_FLAG in os.environ.get("XLA_FLAGS", ""):
        return
    if not _backends_started():
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " +
                                   _DETERMINISTIC_FLAG).strip()
    elif any(d.platform == "gpu" for d in jax.devices()):
        warnings.warn(f"use_deterministic_algorithms(True): JAX's GPU backend has already "
                      f"started; set XLA_FLAGS={_DETERMINISTIC_FLAG} before the first "
                      f"computation for deterministic GPU kernels", UserWarning, stacklevel=2)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def _backends_started() -> bool:
    try:  # private, but the only way to know whether XLA read its flags yet
        from jax._src import xla_bridge
        return bool(xla_bridge._backends)
    except (ImportError, AttributeError):  # pragma: no cover - a different jax layout
        return True


__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled"]
