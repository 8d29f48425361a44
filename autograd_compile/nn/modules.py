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

# -- area actloss: activations, losses, distances, Bilinear, EmbeddingBag, ChannelShuffle -------
from .activation import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish,  # noqa: F401
                         Hardtanh, LeakyReLU, LogSigmoid, Mish, PReLU, ReLU6, RReLU, Softmax2d,
                         Softmin, Softplus, Softshrink, Softsign, Tanhshrink, Threshold)
from .bilinear import Bilinear  # noqa: F401
from .channelshuffle import ChannelShuffle  # noqa: F401
from .distance import CosineSimilarity, PairwiseDistance  # noqa: F401
from .embedding_bag import EmbeddingBag  # noqa: F401
from .loss import (AdaptiveLogSoftmaxWithLoss, CosineEmbeddingLoss, CTCLoss,  # noqa: F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss,
                   LinearCrossEntropyLoss, LinearCrossEntropyOptions, MarginRankingLoss,
                   MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss2d,
                   PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
                   TripletMarginWithDistanceLoss)
