"""DDP (replicated and ``shard_parameters=True``) under the whole-step compile.

Run in one process with several host devices, or under the launcher (N processes): each
configuration trains ``acg.compile(train_step)`` (forward, ``loss.backward()``,
``opt.step()``, ``opt.zero_grad()``) on this process's part of each global batch, written
the way the README's DDP loop is (``cross_entropy(model(x), dist.shard(y, model.mesh))``);
``module-OPT/...`` configurations compile ``DDP(model)`` alone (``acg.compile(ddp)``).
Oracle: the same model trained eagerly on one local device over the whole global batch.
Reported per configuration: the largest parameter difference, the compile counters of
every step, where parameters and optimizer state live afterwards, whether the step's
program donates its inputs, and the collectives in the step program's optimized HLO.
"""
from __future__ import annotations

import re
import sys

import jax
import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.aot import counters
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from _dist_run import emit

STEPS, BATCH, CLASSES = 4, 16, 8
OPTS = {"sgd": lambda ps: acg.optim.SGD(ps, lr=0.1, momentum=0.9),
        "adamw": lambda ps: acg.optim.AdamW(ps, lr=0.05)}


def make_model(seed: int = 0) -> acg.nn.Module:
    acg.manual_seed(seed)
    return acg.nn.Sequential(acg.nn.Linear(4, 16), acg.nn.Tanh(), acg.nn.Linear(16, CLASSES))


def global_batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(200 + step)
    return (rng.standard_normal((BATCH, 4)).astype(np.float32),
            rng.integers(0, CLASSES, BATCH).astype(np.int64))


def reference(opt_name: str) -> tuple[dict[str, np.ndarray], list[float]]:
    """One process, one device, the whole global batch, eager: parameters and losses."""
    model = make_model()
    opt = OPTS[opt_name](model.parameters())
    losses = []
    for step in range(STEPS):
        x, y = global_batch(step)
        loss = F.cross_entropy(model(acg.tensor(x)), acg.tensor(y))
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.item()))
    return {n: p.detach().numpy() for n, p in model.named_parameters()}, losses


def value(t: acg.Tensor) -> np.ndarray:
    """The whole value of a tensor split over processes (every rank calls)."""
    if t._data.is_fully_addressable or t._data.is_fully_replicated:
        return t.detach().numpy()
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(t._data, tiled=True))


def _spec(a: jax.Array) -> str:
    return str(getattr(a.sharding, "spec", "single-device"))


def whole_step(opt_name: str, shard: bool, rank: int, world: int) -> dict:
    model = make_model(seed=rank)  # DDP must take rank 0's initialisation
    ddp = DDP(model, shard_parameters=shard)
    opt = OPTS[opt_name](ddp.parameters())

    @acg.compile
    def train_step(x, y):
        loss = F.cross_entropy(ddp(x), dist.shard(y, ddp.mesh))
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    per_step, donated, losses = [], [], []
    part = BATCH // world
    for step in range(STEPS):
        x, y = global_batch(step)
        x, y = x[rank * part:(rank + 1) * part], y[rank * part:(rank + 1) * part]
        before = dict(counters)
        loss = train_step(acg.tensor(x), acg.tensor(y))
        per_step.append({k: v - before.get(k, 0) for k, v in counters.items()
                         if v != before.get(k, 0)})
        losses.append(float(loss.item()))
    entry = train_step._whole.entries[0]
    hlo = entry.program[1].as_text()
    # donated inputs: the program writes its outputs into their buffers (holding an old
    # array here to see it deleted would make the step copy it first: wholestep._owned)
    donated.append("input_output_alias" in hlo)
    return dict(
        params={n: value(p) for n, p in model.named_parameters()},
        per_step=per_step, donated=donated, losses=losses,
        specs={n: _spec(p._data) for n, p in model.named_parameters()},
        devices=sorted({len(p._data.sharding.device_set) for p in model.parameters()}),
        state={f"{n}.{k}": _spec(v._data) for n, p in model.named_parameters()
               for k, v in opt.state[p].items() if v.ndim > 0},
        collectives=sorted(set(re.findall(r"\b(all-reduce|reduce-scatter|all-gather|"
                                          r"dynamic-slice)(?:-start)?\(", hlo))))


def compiled_module(opt_name: str, shard: bool, rank: int, world: int) -> dict:
    """``acg.compile(DDP(model))`` fed this process's rows: DDP splits them before the trace,
    the forward and backward programs run on the global batch; the optimizer runs eagerly."""
    model = make_model(seed=rank)
    net = acg.compile(DDP(model, shard_parameters=shard))
    opt = OPTS[opt_name](net.parameters())
    part, per_step, out_specs, losses = BATCH // world, [], [], []
    for step in range(STEPS):
        x, y = global_batch(step)
        x, y = x[rank * part:(rank + 1) * part], y[rank * part:(rank + 1) * part]
        before = dict(counters)
        out = net(acg.tensor(x))
        loss = F.cross_entropy(out, dist.shard(acg.tensor(y), net.mesh))
        loss.backward()
        per_step.append({k: v - before.get(k, 0) for k, v in counters.items()
                         if v != before.get(k, 0)})
        opt.step()
        opt.zero_grad()
        out_specs.append(_spec(out._data))
        losses.append(float(loss.item()))
    return dict(params={n: value(p) for n, p in model.named_parameters()}, per_step=per_step,
                out_specs=out_specs, losses=losses,
                specs={n: _spec(p._data) for n, p in model.named_parameters()})


def main(configs: list[str]) -> None:
    dist.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    out: dict = dict(rank=rank, world=world, mesh=dist.device_mesh().size)
    refs: dict = {}
    for config in configs:
        opt_name, placement = config.split("/")
        run = compiled_module if opt_name.startswith("module-") else whole_step
        opt_name = opt_name.removeprefix("module-")
        if opt_name not in refs:
            refs[opt_name] = reference(opt_name)
        ref, ref_losses = refs[opt_name]
        r = run(opt_name, placement == "sharded", rank, world)
        params = r.pop("params")
        r["diff"] = max(float(np.max(np.abs(params[n] - ref[n]))) for n in ref)
        # loss.item() on each rank: the loss over the global batch
        r["loss_diff"] = max(abs(a - b) for a, b in zip(r["losses"], ref_losses))
        out[config] = r
    emit(**out)


if __name__ == "__main__":
    main(sys.argv[1:] or ["sgd/replicated", "adamw/sharded", "module-sgd/sharded"])
