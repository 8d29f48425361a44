"""PyTorch's path ``torch.nn.modules.sparse``: the same classes as ``acg.nn``."""
from ..embedding_bag import EmbeddingBag  # noqa: F401
from ..sparse import Embedding  # noqa: F401

__all__ = ['Embedding', 'EmbeddingBag']
