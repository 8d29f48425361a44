"""PyTorch's path ``torch.nn.modules.pooling``: the same classes as ``acg.nn``."""
from ..pooling import (  # noqa: F401
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d,
    AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, FractionalMaxPool2d, FractionalMaxPool3d,
    LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d, MaxUnpool2d,
    MaxUnpool3d)

__all__ = [
    'AdaptiveAvgPool1d', 'AdaptiveAvgPool2d', 'AdaptiveAvgPool3d', 'AdaptiveMaxPool1d',
    'AdaptiveMaxPool2d', 'AdaptiveMaxPool3d', 'AvgPool1d', 'AvgPool2d', 'AvgPool3d',
    'FractionalMaxPool2d', 'FractionalMaxPool3d', 'LPPool1d', 'LPPool2d', 'LPPool3d', 'MaxPool1d',
    'MaxPool2d', 'MaxPool3d', 'MaxUnpool1d', 'MaxUnpool2d', 'MaxUnpool3d',
]
from ..pooling import _MaxUnpoolNd, _LPPoolNd, _AdaptiveMaxPoolNd  # noqa: E402,F401  (base classes)
