"""``DistributedSampler``: each rank's share of the indices (``torch.utils.data.distributed``).

The indices (shuffled by ``seed + epoch``) are padded by wrapping around to a multiple of
``num_replicas`` (or truncated with ``drop_last``), then rank ``r`` takes every
``num_replicas``-th one from position ``r``: the ranks see disjoint shares of equal size.

>>> s = DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)
>>> list(s), len(s)
([1, 3, 0], 3)
"""
from __future__ import annotations

import math
from typing import Iterator, Sized

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default(value: int | None, getter: str) -> int:
    if value is not None:
        return value
    from ... import distributed  # lazy: the sampler must not pull the runtime in
    return getattr(distributed, getter)()  # raises like PyTorch before init()


class DistributedSampler(Sampler):
    """Restrict loading to this rank's share of ``dataset``; call ``set_epoch`` each epoch."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        num_replicas = _default(num_replicas, "get_world_size")
        rank = _default(rank, "get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:  # every rank draws the same order: same seed and epoch
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            pad = self.total_size - len(indices)
            indices += (indices * math.ceil(pad / len(indices)))[:pad] if pad else []
        return iter(indices[self.rank: self.total_size: self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Give the epoch number: shuffling differs per epoch, identically on every rank."""
        self.epoch = epoch
