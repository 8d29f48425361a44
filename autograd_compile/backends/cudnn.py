"""``acg.backends.cudnn``: PyTorch's cuDNN switches. XLA chooses convolution algorithms
itself, so ``benchmark``, ``deterministic`` and ``allow_tf32`` are recorded for programs
that read them back; ``acg.use_deterministic_algorithms`` and
``acg.set_float32_matmul_precision`` are the switches XLA honours.

>>> import autograd_compile as acg
>>> acg.backends.cudnn.benchmark = True; acg.backends.cudnn.enabled
True
"""
from ..devices.cuda import is_available as _cuda_available

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """True when JAX sees a GPU (XLA's GPU backend links cuDNN)."""
    return _cuda_available()


def version() -> int | None:
    return None
