"""PyTorch's path ``torch.nn.modules.dropout``: the same classes as ``acg.nn``."""
from ..dropout import (  # noqa: F401
    AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout)

__all__ = ['AlphaDropout', 'Dropout', 'Dropout1d', 'Dropout2d', 'Dropout3d', 'FeatureAlphaDropout']
from ..dropout import _DropoutNd  # noqa: E402,F401  (base classes)
