"""``DataLoader``: batches over a dataset, in this process or in ``num_workers`` worker processes.

>>> import autograd_compile as acg
>>> ds = TensorDataset(acg.arange(10).float(), acg.arange(10))
>>> loader = DataLoader(ds, batch_size=4, drop_last=True)
>>> [y.tolist() for _, y in loader], len(loader)
([[0, 1, 2, 3], [4, 5, 6, 7]], 2)
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from ._collate import default_collate, default_convert
from ._mp_iter import MultiProcessingIter, resolve_context
from ._worker import _IterFetcher, _MapFetcher
from .datapipes import IterDataPipe, apply_shuffle_settings
from .dataset import IterableDataset, TensorDataset  # noqa: F401  (the doctest uses it)
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

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
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
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

    With ``num_workers > 0`` worker processes (started with ``spawn``: see ``_mp_iter``) fetch
    and collate batches ahead (``prefetch_factor`` each), handed out in order (``in_order``);
    ``persistent_workers`` keeps them across epochs. ``pin_memory`` is accepted and changes
    nothing (arrays live in JAX's memory).
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
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.persistent_workers, self.in_order = persistent_workers, in_order
        self.pin_memory_device = pin_memory_device
        self.multiprocessing_context = resolve_context(multiprocessing_context, num_workers)
        self._iterator: MultiProcessingIter | None = None
        self._iterable = isinstance(dataset, IterableDataset)
        if isinstance(dataset, IterDataPipe):  # a DataPipe takes shuffle as a graph setting
            dataset = self.dataset = apply_shuffle_settings(dataset, shuffle)
            shuffle = None
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
        if self.num_workers > 0 and self.persistent_workers and self._iterator is not None:
            self._iterator._reset()  # the same workers, a new epoch
            return self._iterator
        # as PyTorch, every new iterator draws the workers' base seed first (so a shuffled
        # order is the same with and without workers)
        base_seed = _draw_seed(self.generator) & (2**63 - 1)
        if self.num_workers > 0:
            it = MultiProcessingIter(self, base_seed)
            if self.persistent_workers:
                self._iterator = it
            return it
        if self._iterable:
            return self._iter_stream()
        fetcher = _MapFetcher(self.dataset, bool(self._auto_collation), self.collate_fn)
        index_sampler = self.batch_sampler if self.batch_sampler is not None else self.sampler
        return (fetcher.fetch(index) for index in index_sampler)

    def _iter_stream(self) -> Iterator[Any]:
        fetcher = _IterFetcher(self.dataset, bool(self._auto_collation), self.collate_fn,
                               self.batch_size, self.drop_last)
        while True:
            try:
                yield fetcher.fetch()
            except StopIteration:
                return

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
