"""PyTorch's path ``torch.nn.modules.distance``: the same classes as ``acg.nn``."""
from ..distance import CosineSimilarity, PairwiseDistance  # noqa: F401

__all__ = ['CosineSimilarity', 'PairwiseDistance']
