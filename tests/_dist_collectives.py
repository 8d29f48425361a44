"""torch.distributed's tensor collectives on local tensors, written as a PyTorch program.

test_distributed_torch_style.py runs it with PyTorch (torchrun, gloo) and, with the
imports replaced by autograd_compile's, under ``python -m autograd_compile launch`` and
``multiprocessing.spawn``; every rank prints one ``RESULT`` line that must be equal.
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def collectives(rank, world):
    out = {"rank": dist.get_rank(), "world": dist.get_world_size(),
           "initialized": dist.is_initialized(), "available": dist.is_available()}
    base = torch.tensor([1.0, -2.0, 3.0]) * (rank + 1)
    for name in ("SUM", "MAX", "MIN", "PRODUCT", "AVG"):
        t = base.clone()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, name))
        out[f"all_reduce_{name}"] = t.tolist()
    t = torch.tensor([rank + 1, 3], dtype=torch.int64)
    dist.all_reduce(t)  # default op: SUM, integer dtype kept
    out["all_reduce_int"] = [t.tolist(), t.dtype == torch.int64]
    t = base.clone()
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    out["all_reduce_async"] = t.tolist()
    t = torch.arange(4.0) + 10 * rank
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = t.tolist()
    gathered = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor([rank, rank + 0.5]))
    out["all_gather"] = [g.tolist() for g in gathered]
    flat = torch.zeros(world * 2)
    dist.all_gather_into_tensor(flat, torch.tensor([rank, 2.0 * rank]))
    out["all_gather_into_tensor"] = flat.tolist()  # (gloo has no stacked (world, 2) form)
    chunk = torch.zeros(2)
    dist.reduce_scatter_tensor(chunk, torch.arange(2.0 * world) * (rank + 1))
    out["reduce_scatter_tensor"] = chunk.tolist()
    dist.barrier()
    return out


def run(rank, world):
    dist.init_process_group(backend="gloo", init_method="env://")
    out = collectives(rank, world)
    dist.destroy_process_group()
    out["after_destroy"] = dist.is_initialized()
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")  # one write: ranks share a pipe
    sys.stdout.flush()


def spawned(rank, world, port):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend="gloo", rank=rank, world_size=world)
    out = collectives(rank, world)
    dist.destroy_process_group()
    out["after_destroy"] = dist.is_initialized()
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")  # one write: ranks share a pipe
    sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "spawn":
        mp.spawn(spawned, args=(2, int(sys.argv[2])), nprocs=2, join=True)
    else:
        run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
