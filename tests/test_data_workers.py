"""DataLoader worker processes (num_workers > 0) and acg.multiprocessing.

Oracles: the same loader with num_workers=0 (batches, in order), torch.utils.data's own
workers (the interleaving of an IterableDataset's shards), torch's error texts. Worker
processes start with spawn, each importing autograd_compile (seconds), so each test starts
as few loaders as it can.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.multiprocessing as acg_mp
from autograd_compile.utils.data import DataLoader, get_worker_info

from _data_workers_helpers import (Records, Shard, exit_with_three, fail_on_one, init_worker,
                                   put_rank)


def _same_batch(got: dict, ref: dict) -> None:
    for key in ("x", "i", "a"):
        assert got[key].dtype == ref[key].dtype
        np.testing.assert_array_equal(got[key].detach().numpy(), ref[key].detach().numpy())


def test_workers_return_the_same_batches_in_order():
    """Shuffled, 2 workers, prefetch 3: the batches of num_workers=0, task k from worker
    k % 2, each worker seeded base_seed + id and initialised by worker_init_fn."""
    ds = Records(11)
    acg.manual_seed(0)
    ref = list(DataLoader(ds, batch_size=3, shuffle=True))
    acg.manual_seed(0)
    loader = DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, prefetch_factor=3,
                        worker_init_fn=init_worker, pin_memory=True)
    got = list(loader)
    assert len(got) == len(ref) == len(loader) == 4
    seeds = {}
    for k, (g, r) in enumerate(zip(got, ref)):
        _same_batch(g, r)
        n = len(r["i"])
        assert r["worker"].tolist() == [-1] * n and r["pid"].tolist() == [os.getpid()] * n
        assert g["worker"].tolist() == [k % 2] * n and g["nw"].tolist() == [2] * n
        assert g["init"].tolist() == [100 + k % 2] * n
        assert os.getpid() not in g["pid"].tolist()
        assert g["platforms"] == ["cpu"] * n  # workers never claim an accelerator
        seeds[k % 2] = g["seed"][0].item()
    assert seeds[1] == seeds[0] + 1
    assert ref[0]["platforms"][0] == os.environ.get("JAX_PLATFORMS", "")  # ours untouched
    assert get_worker_info() is None


def test_persistent_workers_keep_their_processes_and_in_order_false():
    ds = Records(7)
    loader = DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    epochs = [list(loader) for _ in range(2)]
    ref = list(DataLoader(ds, batch_size=2))
    pids = [{p for b in e for p in b["pid"].tolist()} for e in epochs]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    for epoch in epochs:
        assert len(epoch) == len(ref) == 4
        for g, r in zip(epoch, ref):
            _same_batch(g, r)
    # persistent workers are not reseeded: the second epoch draws new numbers
    assert epochs[0][0]["rand"].tolist() != epochs[1][0]["rand"].tolist()


@pytest.mark.slow
def test_in_order_false_yields_every_batch():
    ref = list(DataLoader(Records(7), batch_size=2))
    unordered = list(DataLoader(Records(7), batch_size=2, num_workers=2, in_order=False))
    assert sorted(tuple(b["i"].tolist()) for b in unordered) == \
        [tuple(b["i"].tolist()) for b in ref]


def test_worker_exception_is_raised_in_the_main_process():
    loader = DataLoader(Records(8, fail_at=5), batch_size=2, num_workers=1)
    it = iter(loader)
    assert [next(it)["i"].tolist() for _ in range(2)] == [[0, 1], [2, 3]]
    with pytest.raises(ValueError) as err:
        next(it)
    assert "Caught ValueError in DataLoader worker process 0." in str(err.value)
    assert "bad sample 5" in str(err.value) and "Traceback" in str(err.value)


def test_iterable_dataset_shards_interleave_round_robin():
    """Each worker yields its shard (0,2,4,6,8 and 1,3,5,7 in batches of 2); batches come
    round-robin from the workers and a finished worker drops out (torch's protocol: the slow
    test below checks it against torch's own workers)."""
    got = [b.tolist() for b in DataLoader(Shard(9), batch_size=2, num_workers=2)]
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]


@pytest.mark.slow
@pytest.mark.parametrize("n,shard,drop_last", [(9, True, False), (7, False, True),
                                               (7, True, True)])
def test_iterable_dataset_like_torch(n, shard, drop_last):
    torch = pytest.importorskip("torch")
    from _data_workers_torch import TorchShard
    ours = DataLoader(Shard(n, shard), batch_size=2, num_workers=2, drop_last=drop_last)
    theirs = torch.utils.data.DataLoader(TorchShard(n, shard), batch_size=2, num_workers=2,
                                         drop_last=drop_last, multiprocessing_context="spawn")
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


@pytest.mark.slow
def test_timeout_counts_after_the_workers_started():
    loader = DataLoader(Records(4, sleep_at=2), batch_size=1, num_workers=1, timeout=1)
    it = iter(loader)
    assert next(it)["i"].tolist() == [0]  # the worker's start-up is not counted
    assert next(it)["i"].tolist() == [1]
    with pytest.raises(RuntimeError, match="DataLoader timed out after 1 seconds"):
        next(it)


def test_worker_options_raise_torchs_errors():
    torch = pytest.importorskip("torch")
    ds = Records(4)
    for kw in [{"num_workers": 0, "multiprocessing_context": "spawn"},
               {"num_workers": 1, "multiprocessing_context": "nope"},
               {"num_workers": 1, "multiprocessing_context": 3},
               {"num_workers": 1, "prefetch_factor": -1},
               {"num_workers": 0, "prefetch_factor": 2},
               {"num_workers": 0, "persistent_workers": True}]:
        with pytest.raises((ValueError, TypeError)) as theirs:
            torch.utils.data.DataLoader(list(range(4)), **kw)
        with pytest.raises(type(theirs.value)) as ours:
            DataLoader(ds, **kw)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="cannot use the 'fork' start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="fork")
    assert DataLoader(ds, num_workers=2).prefetch_factor == 2
    unpicklable = DataLoader(ds, num_workers=2, collate_fn=lambda batch: batch)
    with pytest.raises((pickle.PicklingError, AttributeError),
                       match="must be picklable .* or use num_workers=0"):
        iter(unpicklable)


# -- acg.multiprocessing ----------------------------------------------------------------------
def test_multiprocessing_is_pythons_with_torchs_additions():
    torch = pytest.importorskip("torch")
    for name in torch.multiprocessing.__all__:
        assert hasattr(acg_mp, name), name
    assert acg_mp.set_start_method is multiprocessing.set_start_method
    assert acg_mp.Queue is multiprocessing.Queue and acg_mp.Process is multiprocessing.Process
    assert acg_mp.get_sharing_strategy() == "file_descriptor"
    assert acg_mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    acg_mp.set_sharing_strategy("file_system")
    assert acg_mp.get_sharing_strategy() == "file_system"
    acg_mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(AssertionError, match="invalid sharing strategy 'x'"):
        acg_mp.set_sharing_strategy("x")


def test_spawn_runs_fn_with_rank_and_tensors_cross_a_queue():
    q = acg_mp.get_context("spawn").Queue()
    assert acg_mp.spawn(put_rank, args=(q, 2.0), nprocs=2) is None
    results = sorted(q.get(timeout=60) for _ in range(2))
    assert [r for r, _ in results] == [0, 1]
    for rank, t in results:
        assert isinstance(t, acg.Tensor) and t.dtype == acg.float32
        np.testing.assert_array_equal(t.detach().numpy(), np.arange(3) * 2.0 + rank)


@pytest.mark.slow
def test_spawn_raises_the_childs_error():
    with pytest.raises(acg_mp.ProcessRaisedException) as err:
        acg_mp.spawn(fail_on_one, nprocs=2)
    assert "-- Process 1 terminated with the following error:" in str(err.value)
    assert "ZeroDivisionError: rank one fails" in str(err.value)
    assert err.value.error_index == 1


@pytest.mark.slow
def test_start_processes_exit_code_and_join_false():
    ctx = acg_mp.start_processes(exit_with_three, nprocs=1, join=False)
    assert isinstance(ctx, acg_mp.ProcessContext) and len(ctx.pids()) == 1
    with pytest.raises(acg_mp.ProcessExitedException,
                       match="process 0 terminated with exit code 3") as err:
        while not ctx.join():
            pass
    assert err.value.exit_code == 3 and err.value.signal_name is None


def test_docstring_examples_run():
    import doctest
    import sys

    from autograd_compile.utils.data import _worker
    for m in (_worker, acg_mp, sys.modules["autograd_compile.multiprocessing.spawn"]):
        result = doctest.testmod(m)
        assert result.failed == 0 and result.attempted > 0, m.__name__


@pytest.mark.slow
def test_sharding_filter_shards_by_worker_like_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data.datapipes.iter import IterableWrapper as TI

    from autograd_compile.utils.data.datapipes import IterableWrapper
    ours = DataLoader(IterableWrapper(range(10)).sharding_filter(), batch_size=2, num_workers=2)
    theirs = torch.utils.data.DataLoader(TI(range(10)).sharding_filter(), batch_size=2,
                                         num_workers=2, multiprocessing_context="spawn")
    got = [b.tolist() for b in ours]
    assert got == [b.tolist() for b in theirs]
    assert sorted(sum(got, [])) == list(range(10))
