"""Run under the launcher: DDP as PyTorch's (joined with init_process_group) in every
execution mode. Each rank trains on its own rows with local tensors; the oracle is one
model trained in this process on the global batch. Also ``no_sync`` gradient
accumulation and the error for a parameter that gets no gradient."""
from __future__ import annotations

import os

import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from _dist_run import emit, mode_ctx

BATCH, STEPS = 8, 3


def make_model() -> acg.nn.Module:
    acg.manual_seed(0)
    return acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, 3))


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    return (rng.standard_normal((BATCH, 4)).astype(np.float32),
            rng.integers(0, 3, BATCH).astype(np.int64))




def train(mode: str, rank: int, world: int, accumulate: bool = False) -> float:
    solo, model = make_model(), make_model()
    if rank == 1:  # DDP must start every rank from rank 0's parameters
        with acg.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    ddp = DDP(model)
    opts = [acg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (solo, model)]
    part = BATCH // world
    for step in range(STEPS):
        x, y = batch(step)
        for opt in opts:
            opt.zero_grad()
        F.cross_entropy(solo(acg.tensor(x)), acg.tensor(y)).backward()
        mine = slice(rank * part, (rank + 1) * part)
        if accumulate:  # two half batches, the first under no_sync: the same gradient
            half = part // 2
            with ddp.no_sync():
                loss = F.cross_entropy(ddp(acg.tensor(x[mine][:half])),
                                       acg.tensor(y[mine][:half])) / 2
                with mode_ctx(mode):
                    loss.backward()
            loss = F.cross_entropy(ddp(acg.tensor(x[mine][half:])),
                                   acg.tensor(y[mine][half:])) / 2
        else:
            loss = F.cross_entropy(ddp(acg.tensor(x[mine])), acg.tensor(y[mine]))
        with mode_ctx(mode):
            loss.backward()
        for opt in opts:
            opt.step()
    return max(float(np.max(np.abs(p.detach().numpy() - q.detach().numpy())))
               for p, q in zip(model.parameters(), solo.parameters()))


class Partly(acg.nn.Module):
    """A model whose second layer never takes part in the loss."""

    def __init__(self) -> None:
        super().__init__()
        self.used, self.unused = acg.nn.Linear(2, 2), acg.nn.Linear(2, 2)

    def forward(self, x: acg.Tensor) -> acg.Tensor:
        return self.used(x)


def unused() -> str:
    ddp = DDP(Partly())
    ddp(acg.ones(1, 2)).sum().backward()
    try:
        ddp(acg.ones(1, 2))
        return "no error"
    except RuntimeError as e:
        return str(e)


def main() -> None:
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"])
    out = {"rank": rank}
    for mode in ("eager", "compiled-eager", "compiled-jax"):
        out[mode] = train(mode, rank, world)
    out["no_sync"] = train("eager", rank, world, accumulate=True)
    out["unused"] = unused()
    dist.destroy_process_group()
    emit(**out)


if __name__ == "__main__":
    main()
