"""FSDP helper script (tests/test_distributed_fsdp.py). Modes (first argument):

- ``torch-style`` (under the launcher, 2 processes): joined by ``init_process_group``, each
  rank trains on its own rows; the oracle is one model trained here on the global batch.
  FSDP with a transformer auto-wrap policy, AdamW and ``clip_grad_norm_``; NO_SHARD;
  ``no_sync`` accumulation; FSDP2 ``fully_shard``; full state dicts (rank0_only) saved by
  rank 0 and loaded into the plain model.
- ``spmd`` (one process, 2 host devices): joined by ``acg.distributed.init``; the global
  batch split over the mesh, parameters sharded.
- ``torch-keys``: PyTorch's own FSDP (world size 1, gloo, CPU) on the same model: its
  state-dict keys and names, the oracle for ours.
"""
from __future__ import annotations

import functools
import os
import sys

import numpy as np

from _dist_run import emit

VOCAB, D, SEQ, BATCH, STEPS = 13, 8, 4, 8, 3


def build(T):  # noqa: N803  (T: autograd_compile or torch, the same program)
    """A tiny GPT-style model for the framework ``T``: (Block class, model)."""
    nn = T.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            # no bias on qkv: a key bias gets a zero gradient (softmax ignores it), and Adam
            # would turn its rounding noise into full-size steps
            self.qkv, self.proj = nn.Linear(D, 3 * D, bias=False), nn.Linear(D, D)
            self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
            att = T.softmax(q @ k.transpose(-2, -1) / D ** 0.5, dim=-1)
            x = x + self.proj(att @ v)
            return x + self.mlp(self.ln2(x))

    class Tiny(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Parameter(T.zeros(SEQ, D))
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln_f, self.head = nn.LayerNorm(D), nn.Linear(D, VOCAB)

        def forward(self, idx):
            x = self.tok(idx) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    T.manual_seed(0)
    return Block, Tiny()


def batch(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    return (rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64),
            rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int64))


def loss_of(acg, logits, y):
    return acg.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))


def params(model) -> dict:
    return {n: p.detach().numpy() for n, p in model.named_parameters()}


def diff(a: dict, b: dict) -> float:
    assert list(a) == list(b), (list(a), list(b))
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def solo(acg, steps: int = STEPS, clip: float | None = 0.5) -> tuple[dict, list[float]]:
    """The oracle: one model, eager, on the global batch."""
    _, model = build(acg)
    opt = acg.optim.AdamW(model.parameters(), lr=1e-2)
    norms = []
    for step in range(steps):
        x, y = batch(step)
        opt.zero_grad()
        loss_of(acg, model(acg.tensor(x)), acg.tensor(y)).backward()
        if clip is not None:
            norms.append(float(acg.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        opt.step()
    return params(model), norms


def train_local(acg, wrap_model, rank: int, world: int, steps: int = STEPS,
                clip: float | None = 0.5, accumulate: bool = False) -> tuple:
    """Each rank on its own rows (PyTorch style); ``wrap_model(block_cls, model)``."""
    block_cls, model = build(acg)
    net = wrap_model(block_cls, model)
    opt = acg.optim.AdamW(net.parameters(), lr=1e-2)
    part, norms = BATCH // world, []
    for step in range(steps):
        x, y = batch(step)
        x, y = x[rank * part:(rank + 1) * part], y[rank * part:(rank + 1) * part]
        opt.zero_grad()
        if accumulate:  # two halves, the first under no_sync: the same gradient
            h = part // 2
            with net.no_sync():
                (loss_of(acg, net(acg.tensor(x[:h])), acg.tensor(y[:h])) / 2).backward()
            x, y, scale = x[h:], y[h:], 2
        else:
            scale = 1
        (loss_of(acg, net(acg.tensor(x)), acg.tensor(y)) / scale).backward()
        if clip is not None:
            norms.append(float(net.clip_grad_norm_(clip)))
        opt.step()
    return net, model, norms


def torch_style(path: str) -> None:
    import autograd_compile as acg
    import autograd_compile.distributed as dist
    from autograd_compile.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel
                                                   as FSDP, ShardingStrategy, StateDictType,
                                                   fully_shard)
    from autograd_compile.distributed.fsdp.wrap import transformer_auto_wrap_policy
    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    ref, ref_norms = solo(acg)
    out: dict = {"rank": rank}

    def auto(block_cls, model):
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
        return FSDP(model, auto_wrap_policy=policy, use_orig_params=True)
    net, model, norms = train_local(acg, auto, rank, world)
    out["fsdp"] = diff(params(model), ref)
    out["norms"] = max(abs(a - b) for a, b in zip(norms, ref_norms))
    out["inner_wrapped"] = [type(b).__name__ for b in net.module.blocks]
    plain = build(acg)[1]
    out["keys_equal"] = list(net.state_dict()) == list(plain.state_dict())
    out["names_equal"] = [n for n, _ in net.named_parameters()] == \
        [n for n, _ in plain.named_parameters()]
    with FSDP.state_dict_type(net, StateDictType.FULL_STATE_DICT,
                              FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
        full = net.state_dict()
    out["full_len"] = len(full)
    if rank == 0:
        acg.save(full, path)
    dist.barrier()
    plain.load_state_dict(acg.load(path))
    out["loaded_plain"] = diff(params(plain), params(model))
    fresh = auto(*build(acg))
    fresh.load_state_dict(acg.load(path))
    out["loaded_fsdp"] = diff(params(fresh.module), params(model))

    def no_shard(block_cls, model):
        return FSDP(model, sharding_strategy=ShardingStrategy.NO_SHARD)
    out["no_shard"] = diff(params(train_local(acg, no_shard, rank, world)[1]), ref)
    ref_plain = solo(acg, clip=None)[0]
    out["no_sync"] = diff(params(train_local(acg, auto, rank, world, clip=None,
                                             accumulate=True)[1]), ref_plain)

    def fsdp2(block_cls, model):
        for block in model.blocks:
            fully_shard(block)
        return fully_shard(model)
    net2, model2, _ = train_local(acg, fsdp2, rank, world, clip=None)
    out["fully_shard"] = diff(params(model2), ref_plain)
    out["fully_shard_type"] = [type(net2).__name__, type(net2.blocks[0]).__name__]
    dist.destroy_process_group()
    emit(**out)


def spmd() -> None:
    import autograd_compile as acg
    import autograd_compile.distributed as dist
    from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    from autograd_compile.distributed.fsdp.wrap import ModuleWrapPolicy
    dist.init()
    ref, ref_norms = solo(acg)
    block_cls, model = build(acg)
    net = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({block_cls}))
    opt = acg.optim.AdamW(net.parameters(), lr=1e-2)
    norms = []
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        logits = net(acg.tensor(x))  # the forward splits the batch over the mesh
        loss_of(acg, logits, dist.shard(acg.tensor(y), net.mesh)).backward()
        norms.append(float(net.clip_grad_norm_(0.5)))
        opt.step()
    specs = {n: str(p._data.sharding.spec) for n, p in model.named_parameters()}
    state = net.state_dict()
    devices = {len(t._data.sharding.device_set) for t in state.values()}
    fresh_block, fresh = build(acg)
    fresh_net = FSDP(fresh, auto_wrap_policy=ModuleWrapPolicy({fresh_block}))
    fresh_net.load_state_dict(state)
    emit(fsdp=diff(params(model), ref), norms=max(abs(a - b) for a, b in zip(norms, ref_norms)),
         mesh=net.mesh.size, specs=specs, state_devices=sorted(devices),
         bytes=net._acg_fsdp_unit.ddp.parameters_bytes_per_device(),
         full_bytes=sum(v.numel() * 4 for v in state.values()),
         loaded=diff(params(fresh), params(model)),
         loaded_specs={n: str(p._data.sharding.spec) for n, p in fresh.named_parameters()})


def torch_keys(port: str) -> None:
    import torch
    import torch.distributed as tdist
    from torch.distributed.fsdp import FullyShardedDataParallel as TorchFSDP
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK="0", WORLD_SIZE="1")
    tdist.init_process_group("gloo")
    block_cls, model = build(torch)
    plain = list(model.state_dict())
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    net = TorchFSDP(model, auto_wrap_policy=policy, device_id=torch.device("cpu"),
                    use_orig_params=True)
    with TorchFSDP.summon_full_params(net):
        summoned = [n for n, _ in net.named_parameters()]
    emit(plain=plain, fsdp=list(net.state_dict()), summoned=summoned)
    tdist.destroy_process_group()


if __name__ == "__main__":
    {"torch-style": torch_style, "spmd": spmd, "torch-keys": torch_keys}[sys.argv[1]](*sys.argv[2:])
