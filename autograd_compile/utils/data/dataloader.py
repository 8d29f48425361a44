"""``DataLoader``: a plain Python iterator of batches over a dataset (no worker processes).

>>> import autograd_compile as acg
>>> ds = TensorDataset(acg.arange(10).float(), acg.arange(10))
>>> loader = DataLoader(ds, batch_size=4, drop_last=True)
>>> [y.tolist() for _, y in loader], len(loader)
([[0, 1, 2, 3], [4, 5, 6, 7]], 2)
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from ...kernels.api import tensor
from ._collate import default_collate, default_convert
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


def _check_worker_options(num_workers: int, timeout: float, prefetch_factor: int | None,
                          persistent_workers: bool) -> None:
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_iterable(shuffle: Any, sampler: Any, batch_sampler: Any) -> None:
    for name, value in (("shuffle", shuffle), ("sampler", sampler),
                        ("batch_sampler", batch_sampler)):
        if (value is True) if name == "shuffle" else (value is not None):
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                             f"option, but got {name}={value}")


class DataLoader:
    """Batches of ``dataset`` in sampler order, collated by ``collate_fn``.

    ``num_workers``, ``pin_memory`` and the other worker options are accepted for
    compatibility; loading always runs in this process, one batch at a time.
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | None = None, batch_sampler: Any = None,
                 num_workers: int = 0, collate_fn: Callable[[Any], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Any = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset, self.num_workers, self.pin_memory = dataset, num_workers, pin_memory
        self.timeout, self.worker_init_fn, self.generator = timeout, worker_init_fn, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable(shuffle, sampler, batch_sampler)
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if batch_size is not None and self._iterable:
            BatchSampler([], batch_size, drop_last)  # the same batch_size/drop_last checks
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and batch_size)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    def __iter__(self) -> Iterator[Any]:
        if self._iterable:
            return self._iter_stream()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self._batch(indices) for indices in self.batch_sampler)

    def _batch(self, indices: list[int]) -> Any:
        if self.collate_fn is default_collate and type(self.dataset) is TensorDataset:
            # one gather per tensor instead of a sample-by-sample index + stack: same values
            index = tensor(np.asarray(indices, dtype=np.int64))
            return [t[index] for t in self.dataset.tensors]
        return self.collate_fn(self._fetch(indices))

    def _fetch(self, indices: list[int]) -> list[Any]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _iter_stream(self) -> Iterator[Any]:
        if not self.batch_size:
            yield from (self.collate_fn(x) for x in self.dataset)
            return
        batch: list[Any] = []
        for x in self.dataset:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
