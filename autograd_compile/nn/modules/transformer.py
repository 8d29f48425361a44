"""PyTorch's path ``torch.nn.modules.transformer``: the same classes as ``acg.nn``."""
from ..transformer import (  # noqa: F401
    Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer)

__all__ = [
    'Transformer', 'TransformerDecoder', 'TransformerDecoderLayer', 'TransformerEncoder',
    'TransformerEncoderLayer',
]
