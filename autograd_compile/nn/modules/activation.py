"""PyTorch's path ``torch.nn.modules.activation``: the same classes as ``acg.nn``."""
from ..activation import (  # noqa: F401
    CELU, ELU, GELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid,
    LogSoftmax, Mish, PReLU, RReLU, ReLU, ReLU6, SELU, SiLU, Sigmoid, Softmax, Softmax2d, Softmin,
    Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold)
from ..attention import MultiheadAttention  # noqa: F401

__all__ = [
    'CELU', 'ELU', 'GELU', 'GLU', 'Hardshrink', 'Hardsigmoid', 'Hardswish', 'Hardtanh',
    'LeakyReLU', 'LogSigmoid', 'LogSoftmax', 'Mish', 'MultiheadAttention', 'PReLU', 'RReLU',
    'ReLU', 'ReLU6', 'SELU', 'SiLU', 'Sigmoid', 'Softmax', 'Softmax2d', 'Softmin', 'Softplus',
    'Softshrink', 'Softsign', 'Tanh', 'Tanhshrink', 'Threshold',
]
