"""``acg.nn.modules``: every module class, as PyTorch's ``torch.nn.modules`` offers them."""
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh  # noqa: F401
from .attention import MultiheadAttention  # noqa: F401
from .containers import (ModuleDict, ModuleList, ParameterDict, ParameterList,  # noqa: F401
                         Sequential)
from .conv import Conv1d, Conv2d  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .flatten import Flatten, Unflatten  # noqa: F401
from .linear import Identity, Linear  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss,  # noqa: F401
                   NLLLoss, SmoothL1Loss)
from .module import Module  # noqa: F401
from .norm import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm  # noqa: F401
from .parameter import Parameter  # noqa: F401
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: F401
from .sparse import Embedding  # noqa: F401
# -- recurrent layers (rnn) -----------------------------------------------------------------------
from .rnn import (GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell,  # noqa: F401,E402
                  RNNCellBase)
from . import rnn  # noqa: F401,E402  (PyTorch's path: torch.nn.modules.rnn.LSTM)

# -- vision: convolutions, pooling, padding, pixel shuffle, upsampling, fold/unfold --
from .conv import Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402,F401
from .pooling import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: E402,F401
from .upsampling import (Upsample, UpsamplingBilinear2d,  # noqa: E402,F401
                         UpsamplingNearest2d)
from .fold import Fold, Unfold  # noqa: E402,F401

# -- vision: lazy convolutions and LazyLinear --
from .lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: E402,F401
                   LazyConvTranspose2d, LazyConvTranspose3d, LazyLinear, LazyModuleMixin)

# -- area actloss: activations, losses, distances, Bilinear, EmbeddingBag, ChannelShuffle -------
from .activation import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: F401
                         Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmax2d,
                         Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold)
from .bilinear import Bilinear  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .embedding_bag import EmbeddingBag  # noqa: F401
from ._adaptive import (AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss,  # noqa: E402,F401
                        LinearCrossEntropyOptions)
from .loss import (CosineEmbeddingLoss, CTCLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                   MarginRankingLoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss2d,
                   PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)
