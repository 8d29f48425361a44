"""What runs inside a DataLoader worker process: ``get_worker_info``, fetchers, the worker loop.

A worker receives ``(task_id, indices)`` on its own index queue, fetches and collates that batch
with the same fetcher the single-process loader uses, and puts ``(task_id, batch)`` on the shared
result queue; an exception travels back as an ``_ExceptionWrapper`` and is raised again in the
main process with the worker's traceback (as PyTorch's ``ExceptionWrapper``).

>>> get_worker_info() is None  # in the main process
True
"""
from __future__ import annotations

import os
import queue
import random
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

__all__ = ["WorkerInfo", "get_worker_info"]

_MP_STATUS_CHECK_INTERVAL = 5.0  # seconds between checks that the main process is alive


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and its ``dataset``
    copy (an IterableDataset shards itself with ``id`` and ``num_workers``)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` inside a DataLoader worker process; ``None`` elsewhere.

    >>> import autograd_compile as acg
    >>> acg.utils.data.get_worker_info() is None
    True
    """
    return _worker_info


# -- fetchers: one batch (or one sample) from a dataset ------------------------------------------
class _MapFetcher:
    """Indices -> collated batch of a map-style dataset (the same code in every process)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any]
                 ) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        from ._collate import default_collate
        from .dataset import TensorDataset
        if self.collate_fn is default_collate and type(self.dataset) is TensorDataset:
            # one gather per tensor instead of a sample-by-sample index + stack: same values
            from ...kernels.api import tensor
            rows = tensor(np.asarray(index, dtype=np.int64))
            return [t[rows] for t in self.dataset.tensors]
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(samples)


class _IterFetcher:
    """The next batch (``batch_size`` samples) or sample of an iterable dataset's stream."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable[[Any], Any],
                 batch_size: int | None, drop_last: bool) -> None:
        self.stream: Iterator[Any] = iter(dataset)
        self.auto_collation, self.collate_fn = auto_collation, collate_fn
        self.batch_size, self.drop_last = batch_size, drop_last

    def fetch(self, _index: Any = None) -> Any:
        """Raises StopIteration when the stream has no (complete, under drop_last) batch left."""
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        batch = []
        for item in self.stream:
            batch.append(item)
            if len(batch) == self.batch_size:
                break
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate_fn(batch)


# -- messages between the main process and workers -------------------------------------------
class _ExceptionWrapper:
    """An exception caught in a worker, raised again in the main process."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        self.msg = f"Caught {type(exc).__name__} {where}.\nOriginal " + \
            "".join(traceback.format_exception(exc))

    def reraise(self) -> None:
        if self.exc_type is KeyError:  # KeyError would quote the whole message
            raise KeyError(_KeyErrorMessage(self.msg))
        try:
            exc = self.exc_type(self.msg)
        except Exception:  # an exception type that wants other arguments
            raise RuntimeError(self.msg) from None
        raise exc


class _KeyErrorMessage(str):
    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's stream of an IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _WorkerReady:
    """A worker finished starting (imports, seeding, ``worker_init_fn``)."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Persistent workers: start the dataset's stream again (a new epoch)."""

    seed: int | None = None


def _np_seed(base_seed: int, worker_id: int) -> int:
    """numpy's legacy seed for a worker (32 bits), from the base seed and the worker id."""
    return int(np.random.SeedSequence([base_seed & (2**63 - 1), worker_id])
               .generate_state(1, np.uint32)[0])


def _seed_worker(seed: int, base_seed: int, worker_id: int) -> None:
    """Every RNG a dataset may use: acg's, Python's, numpy's legacy global."""
    from ...kernels.api import manual_seed
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_np_seed(base_seed, worker_id))


def _worker_loop(dataset: Any, is_iterable: bool, index_queue: Any, result_queue: Any,
                 done_event: Any, fetcher_args: tuple, worker_init_fn: Callable | None,
                 base_seed: int, worker_id: int, num_workers: int) -> None:
    """The body of a worker process; ends on ``None`` from the index queue or the done event."""
    global _worker_info
    seed = base_seed + worker_id
    try:
        _seed_worker(seed, base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        init_error: _ExceptionWrapper | None = None
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = _make_fetcher(dataset, is_iterable, fetcher_args)
    except Exception as e:  # raised in the main process with the first batch asked for
        init_error, fetcher = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}"), None
    result_queue.put((_WorkerReady(worker_id), None))
    exhausted = False
    parent = os.getppid()
    while True:
        try:
            task = index_queue.get(timeout=_MP_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != parent:
                break
            continue
        if task is None:
            break
        if isinstance(task, _ResumeIteration):
            if task.seed is not None:
                _seed_worker(task.seed + worker_id, task.seed, worker_id)
            result_queue.put((task, None))
            exhausted, fetcher = False, _make_fetcher(dataset, is_iterable, fetcher_args)
            continue
        if done_event.is_set() or exhausted:
            continue  # draining after shutdown began, or no more data for this epoch
        task_id, index = task
        if init_error is not None:
            data: Any = init_error
            init_error = None
        else:
            try:
                data = fetcher.fetch(index)
            except Exception as e:
                if is_iterable and isinstance(e, StopIteration):
                    data, exhausted = _IterableDatasetStopIteration(worker_id), True
                else:
                    data = _ExceptionWrapper(e, f"in DataLoader worker process {worker_id}")
        result_queue.put((task_id, data))
        del data
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()


def _make_fetcher(dataset: Any, is_iterable: bool, fetcher_args: tuple) -> Any:
    auto_collation, collate_fn, batch_size, drop_last = fetcher_args
    if is_iterable:
        return _IterFetcher(dataset, auto_collation, collate_fn, batch_size, drop_last)
    return _MapFetcher(dataset, auto_collation, collate_fn)

