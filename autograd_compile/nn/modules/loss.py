"""PyTorch's path ``torch.nn.modules.loss``: the same classes as ``acg.nn``."""
from .._adaptive import LinearCrossEntropyLoss  # noqa: F401
from ..loss import (  # noqa: F401
    BCELoss, BCEWithLogitsLoss, CTCLoss, CosineEmbeddingLoss, CrossEntropyLoss, GaussianNLLLoss,
    HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, NLLLoss2d,
    PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
    TripletMarginWithDistanceLoss)

__all__ = [
    'BCELoss', 'BCEWithLogitsLoss', 'CTCLoss', 'CosineEmbeddingLoss', 'CrossEntropyLoss',
    'GaussianNLLLoss', 'HingeEmbeddingLoss', 'HuberLoss', 'KLDivLoss', 'L1Loss',
    'LinearCrossEntropyLoss', 'MSELoss', 'MarginRankingLoss', 'MultiLabelMarginLoss',
    'MultiLabelSoftMarginLoss', 'MultiMarginLoss', 'NLLLoss', 'NLLLoss2d', 'PoissonNLLLoss',
    'SmoothL1Loss', 'SoftMarginLoss', 'TripletMarginLoss', 'TripletMarginWithDistanceLoss',
]
from ..loss import _Loss, _WeightedLoss  # noqa: E402,F401  (base classes)
