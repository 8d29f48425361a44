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
# -- recurrent layers (rnn) -----------------------------------------------------------------------
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # noqa: E402
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# -- vision: convolutions, pooling, padding, pixel shuffle, upsampling, fold/unfold --
from .conv import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from . import pooling as _pooling, padding as _padding  # noqa: E402
from .pooling import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: E402
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402
from .fold import Fold, Unfold  # noqa: E402

__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
            "PixelShuffle", "PixelUnshuffle", "Upsample", "UpsamplingBilinear2d",
            "UpsamplingNearest2d", "Fold", "Unfold"]
__all__ += [n for n in _pooling.__all__ + _padding.__all__ if n not in __all__]

# -- vision: lazy convolutions and LazyLinear --
from .lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: E402
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyLinear, LazyModuleMixin)
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: E402

__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyLinear", "UninitializedBuffer",
            "UninitializedParameter"]

# -- area actloss: activations, losses, distances, Bilinear, EmbeddingBag, ChannelShuffle -------
from .activation import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: E402
                         Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmax2d,
                         Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold)
from .bilinear import Bilinear  # noqa: E402
from .channelshuffle import ChannelShuffle  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .embedding_bag import EmbeddingBag  # noqa: E402
from ._adaptive import (AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss,  # noqa: E402,F401
                        LinearCrossEntropyOptions)
from .loss import (CosineEmbeddingLoss, CTCLoss,  # noqa: E402
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                   MarginRankingLoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss2d,
                   PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)

__all__ += [
    "CELU", "ELU", "GLU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
    "LeakyReLU", "LogSigmoid", "Mish", "PReLU", "ReLU6", "RReLU", "Softmax2d", "Softmin",
    "Softplus", "Softshrink", "Softsign", "Tanhshrink", "Threshold",
    "Bilinear", "ChannelShuffle", "CosineSimilarity", "PairwiseDistance", "EmbeddingBag",
    "AdaptiveLogSoftmaxWithLoss", "CosineEmbeddingLoss", "CTCLoss", "GaussianNLLLoss",
    "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions", "MarginRankingLoss", "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss2d", "PoissonNLLLoss",
    "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
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
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,  # noqa: E402
                   LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)

__all__ += ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
            "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
# -- F.multi_head_attention_forward (over MultiheadAttention's code; see functional.py) --------
from ._mha_functional import multi_head_attention_forward as _mha_forward  # noqa: E402

functional.multi_head_attention_forward = _mha_forward
# -- issue 21 (ckptact): the deprecated nn.Container ------------------------------------------
from ._container_legacy import Container  # noqa: E402

__all__ += ["Container"]
