"""Run under the launcher: N processes x 2 host devices train one model with DDP.

``train``: every rank starts from a different initialisation (DDP must take rank 0's),
feeds its slice of the global batch, trains in eager and compiled-jax mode, and
compares its parameters with a single-process run over the whole batch (computed here
on one local device). Also: ``all_reduce`` across processes, a DataLoader fed by ``DistributedSampler``, a model that differs
between ranks (an error naming the parameter). Fault modes: ``die`` (rank 1 raises after
joining), ``nojoin`` (rank 1 dies before joining).
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from autograd_compile.utils.data import DataLoader, TensorDataset
from autograd_compile.utils.data.distributed import DistributedSampler
from _dist_run import emit

STEPS, BATCH = 3, 16


def make_model(seed: int, hidden: int = 8) -> acg.nn.Module:
    acg.manual_seed(seed)
    return acg.nn.Sequential(acg.nn.Linear(4, hidden), acg.nn.Tanh(), acg.nn.Linear(hidden, 2))


def global_batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + step)
    return (rng.standard_normal((BATCH, 4)).astype(np.float32),
            rng.standard_normal((BATCH, 2)).astype(np.float32))


def run(model: acg.nn.Module, net: acg.nn.Module, mode: str, rank: int, world: int) -> dict:
    opt = acg.optim.Adam(model.parameters(), lr=0.05)
    for step in range(STEPS):
        x, y = global_batch(step)
        if world:  # this rank's rows of the global batch
            part = BATCH // world
            x, y = x[rank * part:(rank + 1) * part], y[rank * part:(rank + 1) * part]
        target = dist.shard(acg.tensor(y), net.mesh) if world else acg.tensor(y)
        opt.zero_grad()
        loss = F.mse_loss(net(acg.tensor(x)), target)
        ctx = acg.compiled_autograd.enable("jax") if mode == "compiled-jax" else \
            contextlib.nullcontext()
        with ctx:
            loss.backward()
        opt.step()
    return {n: p for n, p in model.named_parameters()}


def sampler_batches(dataset: Any, world: int, rank: int | None, epoch: int) -> list:
    """This rank's index batches for ``epoch`` (rank/world from the runtime when None)."""
    sampler = DistributedSampler(dataset) if rank is None else \
        DistributedSampler(dataset, num_replicas=world, rank=rank)
    sampler.set_epoch(epoch)
    indices = list(sampler)
    part = BATCH // world
    return [indices[i:i + part] for i in range(0, len(indices), part)]


def train_with_sampler(rank: int, world: int) -> dict:
    """Two epochs fed by DataLoader + DistributedSampler (rank and world size from init())
    against one process stepping over the union of every rank's batches."""
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((2 * BATCH, 4)).astype(np.float32)
    ys = rng.standard_normal((2 * BATCH, 2)).astype(np.float32)
    dataset = TensorDataset(acg.tensor(xs), acg.tensor(ys))
    solo, model = make_model(0), make_model(rank)
    ddp = DDP(model)
    opt_solo = acg.optim.SGD(solo.parameters(), lr=0.1)
    opt = acg.optim.SGD(model.parameters(), lr=0.1)
    steps, losses = 0, []
    for epoch in range(2):
        sampler = DistributedSampler(dataset)
        sampler.set_epoch(epoch)
        loader = DataLoader(dataset, batch_size=BATCH // world, sampler=sampler)
        every = [sampler_batches(dataset, world, r, epoch) for r in range(world)]
        for step, (x, y) in enumerate(loader):
            opt.zero_grad()
            loss = F.mse_loss(ddp(x), dist.shard(y, ddp.mesh))
            loss.backward()
            opt.step()
            rows = [i for batches in every for i in batches[step]]  # the global batch
            opt_solo.zero_grad()
            solo_loss = F.mse_loss(solo(acg.tensor(xs[rows])), acg.tensor(ys[rows]))
            solo_loss.backward()
            losses.append(abs(loss.item() - solo_loss.item()))  # a replicated scalar reads
            opt_solo.step()
            steps += 1
    diff = max(float(np.max(np.abs(p.detach().numpy() - q.detach().numpy())))
               for p, q in zip(model.parameters(), solo.parameters()))
    moved = max(float(np.max(np.abs(p.detach().numpy() - q.detach().numpy())))
                for p, q in zip(model.parameters(), make_model(0).parameters()))
    return dict(diff=diff, steps=steps, moved=moved, loss=max(losses))


def value(t: acg.Tensor) -> np.ndarray:
    """The whole value of a tensor split over processes (a collective: every rank calls)."""
    if t._data.is_fully_addressable or t._data.is_fully_replicated:
        return t.detach().numpy()
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(t._data, tiled=True))


def train(rank: int, world: int) -> dict:
    solo = make_model(0)
    ref = {n: p.detach().numpy() for n, p in run(solo, solo, "eager", 0, 0).items()}
    out = {}
    for mode, sharded in (("eager", False), ("compiled-jax", False), ("compiled-jax", True)):
        model = make_model(seed=rank)  # ranks differ: DDP must broadcast rank 0's values
        params = run(model, DDP(model, shard_parameters=sharded), mode, rank, world)
        out[mode + ("/sharded" if sharded else "")] = dict(
            diff=max(float(np.max(np.abs(value(p) - ref[n]))) for n, p in params.items()),
            replicated=all(p._data.is_fully_replicated for p in params.values()),
            split={n: str(p._data.sharding.spec) for n, p in params.items()},
            devices=sorted({len(p._data.sharding.device_set) for p in params.values()}))
    out["sampler"] = train_with_sampler(rank, world)
    out["all_reduce"] = dist.all_reduce(acg.tensor([rank + 1.0, -rank]), op="sum").tolist()
    out["all_reduce_max"] = dist.all_reduce(acg.tensor([float(rank)]), op="max").tolist()
    try:
        DDP(make_model(0, hidden=8 if rank == 0 else 6))
        out["mismatch"] = None
    except RuntimeError as e:
        out["mismatch"] = str(e)
    dist.barrier()
    return out


def main(what: str) -> None:
    rank = int(os.environ["RANK"])
    if what == "nojoin" and rank == 1:
        sys.exit(4)
    dist.init()
    assert dist.get_rank() == rank and dist.get_world_size() == int(os.environ["WORLD_SIZE"])
    if what == "die":
        if rank == 1:
            raise RuntimeError("rank 1 fails on purpose")
        DDP(make_model(0))  # a collective rank 1 never joins
        dist.barrier()
        return
    emit(rank=rank, world=dist.get_world_size(), mesh=dist.device_mesh().size,
         **train(rank, dist.get_world_size()))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train")
