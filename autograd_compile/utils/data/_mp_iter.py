"""The DataLoader iterator with worker processes (``num_workers > 0``), PyTorch's protocol.

Tasks (a batch's indices, or ``None`` for an IterableDataset) go round-robin to the workers'
index queues, at most ``prefetch_factor * num_workers`` outstanding; results come back on one
queue and are handed out in task order (``in_order=True``), so a map-style loader yields the
same batches as with ``num_workers=0``. An IterableDataset is iterated by every worker (each
shards itself with ``get_worker_info()``); a worker whose stream ends drops out of the cycle.

Workers start with ``spawn`` (or ``forkserver``), never ``fork``: JAX is multithreaded and a
forked child deadlocks in its first computation. As with PyTorch on macOS and Windows, the
dataset, ``collate_fn`` and ``worker_init_fn`` must be picklable and a script needs the
``if __name__ == "__main__":`` guard.
"""
from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import multiprocessing.context
import os
import pickle
import queue
import time
from typing import Any, Iterator

from ._worker import (_ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration,
                      _worker_loop, _WorkerReady)

__all__: list[str] = []

_POLL = 1.0  # seconds between checks that the workers are alive while waiting for a batch
_JOIN_TIMEOUT = 5.0


def resolve_context(context: Any, num_workers: int) -> Any:
    """Check ``multiprocessing_context`` as PyTorch does; ``None`` stays None (spawn later)."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         f"(num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        valid = multiprocessing.get_all_start_methods()
        if context not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {valid!r}, but got multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        f"string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    if context.get_start_method() == "fork":
        raise ValueError("DataLoader workers cannot use the 'fork' start method: JAX is "
                         "multithreaded and a forked worker deadlocks; use 'spawn' or "
                         "'forkserver'")
    return context


def _default_context() -> Any:
    """The process-wide start method unless it is fork (or unset on Linux): then spawn."""
    method = multiprocessing.get_start_method(allow_none=True)
    return multiprocessing.get_context("spawn" if method in (None, "fork") else method)


@contextlib.contextmanager
def _cpu_only_children() -> Iterator[None]:
    """Workers run JAX on the CPU (as PyTorch's workers make CPU tensors): a worker touching
    an accelerator would claim its memory (JAX preallocates) once per process."""
    before = os.environ.get("JAX_PLATFORMS")
    os.environ["JAX_PLATFORMS"] = "cpu"  # a spawned child copies the environment at start
    try:
        yield
    finally:
        if before is None:
            del os.environ["JAX_PLATFORMS"]
        else:
            os.environ["JAX_PLATFORMS"] = before


class _InfiniteNone:
    """The 'sampler' of an IterableDataset with workers: every task is 'the next batch'."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


class MultiProcessingIter:
    """Iterator over a DataLoader's batches, loaded by ``loader.num_workers`` processes."""

    def __init__(self, loader: Any, base_seed: int) -> None:
        self._iterable = loader._iterable
        self._index_sampler = _InfiniteNone() if self._iterable else (
            loader.batch_sampler if loader.batch_sampler is not None else loader.sampler)
        self._n = loader.num_workers
        self._prefetch = 2 if loader.prefetch_factor is None else loader.prefetch_factor
        self._timeout, self._in_order = loader.timeout, loader.in_order
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context or _default_context()
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        fetcher_args = (bool(loader._auto_collation), loader.collate_fn, loader.batch_size,
                        loader.drop_last)
        self._shutdown, self._ready = False, 0
        for wid in range(self._n):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()  # never block exit on undelivered tasks
            worker = ctx.Process(target=_worker_loop, daemon=True, args=(
                loader.dataset, self._iterable, index_queue, self._result_queue,
                self._done_event, fetcher_args, loader.worker_init_fn, base_seed, wid, self._n))
            try:
                with _cpu_only_children():
                    worker.start()
            except (pickle.PicklingError, AttributeError, TypeError) as e:
                self._shutdown_workers()  # the workers already started
                raise type(e)(f"DataLoader worker processes start with "
                              f"'{ctx.get_start_method()}': the dataset, collate_fn and "
                              "worker_init_fn must be picklable (defined at module level, not "
                              f"lambdas or local functions), or use num_workers=0. {e}") from e
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._reset(first=True)

    # -- epochs --------------------------------------------------------------------------------
    def _reset(self, first: bool = False) -> None:
        """A new epoch: a fresh sampler pass; persistent workers restart their streams."""
        self._sampler_iter = iter(self._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._outstanding = 0
        self._active = [True] * self._n
        self._cycle = itertools.cycle(range(self._n))
        if not first:
            for q in self._index_queues:
                q.put(_ResumeIteration())
            remaining = self._n
            while remaining:
                task_id, _ = self._get_data()
                if isinstance(task_id, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch * self._n):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._outstanding >= self._prefetch * self._n:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._n):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return  # every worker's stream has ended
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._outstanding += 1
        self._send_idx += 1

    # -- results -------------------------------------------------------------------------------
    def __iter__(self) -> "MultiProcessingIter":
        return self

    def __next__(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:  # skip tasks of workers that have ended
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier, out of order
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            task_id, data = self._get_data()
            if isinstance(task_id, _ResumeIteration):
                continue
            self._outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                del self._task_info[task_id]
                self._mark_inactive(data.worker_id)
                self._try_put_index()
                continue
            if task_id == self._rcvd_idx:
                del self._task_info[task_id]
                self._rcvd_idx += 1
                return self._process(data)
            if not self._in_order:
                del self._task_info[task_id]
                return self._process(data)
            self._task_info[task_id] += (data,)

    def _process(self, data: Any) -> Any:
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return data

    def _mark_inactive(self, wid: int) -> None:
        """A worker's stream ended: tasks already sent to it will never be answered."""
        self._active[wid] = False
        lost = [t for t, info in self._task_info.items() if len(info) == 1 and info[0] == wid]
        for t in lost:
            del self._task_info[t]
        self._outstanding -= len(lost)
        if not self._persistent:
            self._index_queues[wid].put(None)

    def _get_data(self) -> tuple[Any, Any]:
        """The next result, raising if a worker died or ``timeout`` passed (counted once every
        worker has started: a spawned worker's imports take seconds)."""
        start = time.monotonic()
        while True:
            wait = _POLL if self._timeout <= 0 else min(
                _POLL, max(0.0, self._timeout - (time.monotonic() - start)))
            try:
                message = self._result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            else:
                if not isinstance(message[0], _WorkerReady):
                    return message
                self._ready += 1
                start = time.monotonic()
                continue
            dead = [str(w.pid) for w, on in zip(self._workers, self._active)
                    if on and not w.is_alive()]
            if dead:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(dead)}) exited "
                                   "unexpectedly")
            if self._ready == self._n and 0 < self._timeout <= time.monotonic() - start:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    # -- shutdown ------------------------------------------------------------------------------
    def _shutdown_workers(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for q in self._index_queues:
            q.put(None)
        for w in self._workers:
            w.join(timeout=_JOIN_TIMEOUT)
            if w.is_alive():
                w.terminate()
        for q in self._index_queues:
            q.close()
        self._result_queue.cancel_join_thread()
        self._result_queue.close()

    def __del__(self) -> None:
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown: queues may already be gone
            pass

    def __len__(self) -> int:
        return len(self._index_sampler)  # type: ignore[arg-type]
