"""Datasets, samplers and the DataLoader, with PyTorch's names and defaults (``torch.utils.data``).

Loading is a plain Python iterator in this process (``num_workers`` is accepted and ignored):
samples come from the dataset in sampler order and ``default_collate`` stacks them.

>>> import autograd_compile as acg
>>> from autograd_compile.utils.data import DataLoader, TensorDataset
>>> _ = acg.manual_seed(0)
>>> loader = DataLoader(TensorDataset(acg.randn(10, 3), acg.arange(10)), batch_size=4,
...                     shuffle=True)
>>> [tuple(x.shape) for x, _ in loader]
[(4, 3), (4, 3), (2, 3)]
"""
from ._collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset,
                      TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
           "default_collate", "default_convert", "random_split"]
