"""Datasets, samplers and the DataLoader, with PyTorch's names and defaults (``torch.utils.data``).

Samples come from the dataset in sampler order and ``default_collate`` stacks them, in this
process or (``num_workers > 0``) in spawned worker processes, batches handed out in order.

>>> import autograd_compile as acg
>>> from autograd_compile.utils.data import DataLoader, TensorDataset
>>> _ = acg.manual_seed(0)
>>> loader = DataLoader(TensorDataset(acg.randn(10, 3), acg.arange(10)), batch_size=4,
...                     shuffle=True)
>>> [tuple(x.shape) for x, _ in loader]
[(4, 3), (4, 3), (2, 3)]
"""
from ._collate import default_collate, default_convert
from ._worker import get_worker_info
from .dataloader import DataLoader
from .dataset_extra import StackDataset
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe,
                        argument_validation, functional_datapipe,
                        guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                        runtime_validation_disabled)
from .sampler_extra import WeightedRandomSampler
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset,
                      TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
           "default_collate", "default_convert", "get_worker_info", "random_split",
           # issue 21: the rest of torch.utils.data
           "StackDataset", "WeightedRandomSampler", "DataChunk", "DFIterDataPipe",
           "IterDataPipe", "MapDataPipe", "argument_validation", "functional_datapipe",
           "guaranteed_datapipes_determinism", "non_deterministic", "runtime_validation",
           "runtime_validation_disabled"]
