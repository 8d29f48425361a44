"""Datasets and functions that DataLoader worker processes unpickle (spawn imports this module,
so it stays light: no pytest, no torch)."""
from __future__ import annotations

import os
import time

import numpy as np

import autograd_compile as acg
from autograd_compile.utils.data import Dataset, IterableDataset, get_worker_info

_INIT = {"value": -1}


def init_worker(worker_id: int) -> None:
    """worker_init_fn: leaves a mark the dataset reports."""
    _INIT["value"] = 100 + worker_id


class Records(Dataset):
    """Sample i: its values, plus where and how it was loaded (pid, worker id, init mark)."""

    def __init__(self, n: int, fail_at: int | None = None, sleep_at: int | None = None) -> None:
        self.n, self.fail_at, self.sleep_at = n, fail_at, sleep_at

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        if i == self.sleep_at:
            time.sleep(3)
        info = get_worker_info()
        return {"x": acg.tensor([float(i), float(i * i)]), "i": i,
                "a": np.full((2,), i, dtype=np.int32), "pid": os.getpid(),
                "worker": -1 if info is None else info.id,
                "nw": 0 if info is None else info.num_workers,
                "seed": -1 if info is None else info.seed,
                "init": _INIT["value"], "rand": float(np.random.rand()),
                "platforms": os.environ.get("JAX_PLATFORMS", "")}


class Shard(IterableDataset):
    """range(n), split between workers by get_worker_info (every worker yields all if
    ``shard`` is False)."""

    def __init__(self, n: int, shard: bool = True) -> None:
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if info is None or not self.shard:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self) -> int:
        return self.n


def put_rank(rank: int, q, scale: float) -> None:
    """acg.multiprocessing.spawn target: a tensor computed in the child goes back on q."""
    q.put((rank, acg.arange(3).float() * scale + rank))


def fail_on_one(rank: int) -> None:
    if rank == 1:
        raise ZeroDivisionError("rank one fails")
    time.sleep(0.1)


def exit_with_three(rank: int) -> None:
    os._exit(3)
