"""``acg.nn``: modules, containers, layers, losses, initialisers and utilities, under
PyTorch's names.

>>> import autograd_compile as acg
>>> model = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, 1))
>>> len(list(model.parameters()))
4
"""
from . import functional, init
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .attention import MultiheadAttention
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss,
                   SmoothL1Loss)
from .module import Module
from .norm import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding
from . import utils
from . import modules  # noqa: E402,F401  (the old module path stays importable)

__all__ = [
    "functional", "init", "utils", "Module", "Parameter",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Identity", "Linear", "Embedding", "Flatten", "Unflatten", "Dropout",
    "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "MultiheadAttention",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "BCELoss",
    "BCEWithLogitsLoss",
]

# -- [xformer] norms, dropouts, transformer, lazy modules -----------------------------------------
from .norm import (BatchNorm3d, CrossMapLRN2d, GroupNorm, InstanceNorm1d,  # noqa: E402
                   InstanceNorm2d, InstanceNorm3d, LocalResponseNorm, SyncBatchNorm)

__all__ += ["BatchNorm3d", "CrossMapLRN2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
            "InstanceNorm3d", "LocalResponseNorm", "SyncBatchNorm"]
from .dropout import (AlphaDropout, Dropout1d, Dropout2d, Dropout3d,  # noqa: E402
                      FeatureAlphaDropout)

__all__ += ["AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
from .transformer import (Transformer, TransformerDecoder, TransformerDecoderLayer,  # noqa: E402
                          TransformerEncoder, TransformerEncoderLayer)

__all__ += ["Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder",
            "TransformerEncoderLayer"]
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d,  # noqa: E402
                   LazyConv2d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,
                   LazyLinear)

__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d",
            "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear"]
