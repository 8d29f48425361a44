"""``autograd_compile.distributed.fsdp``: PyTorch's FSDP (and FSDP2's ``fully_shard``) on
our sharded DistributedDataParallel.

- 2 processes joined by ``init_process_group`` (a ported PyTorch program), each on its own
  rows: FSDP with a transformer auto-wrap policy, AdamW and ``clip_grad_norm_`` ends with
  the parameters of one process trained on the global batch; likewise NO_SHARD,
  ``no_sync`` and ``fully_shard``; a FULL_STATE_DICT (rank0_only) saved by rank 0 loads
  into the plain model. (``_dist_fsdp.py torch-style``)
- one process on 2 host devices joined by ``acg.distributed.init``: the same training
  with parameters really sharded. (``_dist_fsdp.py spmd``)
- PyTorch's own FSDP on the same model, for the state-dict keys. (``_dist_fsdp.py
  torch-keys``)
- in this process: the import paths, the wrap policies, world size 1, nesting, mixed
  precision.
"""
from __future__ import annotations

import functools
import socket
import sys

import numpy as np
import pytest

import autograd_compile as acg
from _dist_fsdp import build
from _dist_run import HERE, child_env, parse_result, run_bounded, run_script
from test_distributed_launch import launch_run, results

TOL = 1e-5  # float32, 3 AdamW steps on a tiny model


# -- 2 processes, PyTorch style ---------------------------------------------------------------

@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> dict[int, dict]:
    path = str(tmp_path_factory.mktemp("fsdp") / "full.pt")
    proc, _ = launch_run("--nproc", "2", "--timeout", "120", "_dist_fsdp.py", "torch-style",
                         path, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = results(proc.stdout)
    assert sorted(out) == [0, 1]
    return out


def test_fsdp_adamw_clip_grad_norm_equals_one_process_on_the_global_batch(ranks):
    for rank, r in ranks.items():
        assert r["fsdp"] < TOL and r["norms"] < TOL, (rank, r)
        # the transformer policy wrapped each block in an inner unit, as PyTorch's does
        assert r["inner_wrapped"] == ["FullyShardedDataParallel"] * 2


@pytest.mark.parametrize("case", ["no_shard", "no_sync", "fully_shard"])
def test_no_shard_no_sync_and_fully_shard_train_like_one_process(ranks, case):
    for rank, r in ranks.items():
        assert r[case] < TOL, (rank, case, r[case])
    assert ranks[0]["fully_shard_type"] == ["FSDPTiny", "FSDPBlock"]


def test_state_dict_keys_are_the_plain_models_and_a_full_dict_loads_unwrapped(ranks):
    for rank, r in ranks.items():
        assert r["keys_equal"] and r["names_equal"], (rank, r)
        assert r["loaded_plain"] == 0.0 and r["loaded_fsdp"] == 0.0, (rank, r)
    # rank0_only: rank 0 holds the full dict, rank 1 an empty one (PyTorch's behaviour)
    assert ranks[0]["full_len"] == len(build(acg)[1].state_dict()) and ranks[1]["full_len"] == 0


# -- one process, 2 devices, SPMD: parameters really sharded ---------------------------------

def test_spmd_fsdp_shards_parameters_and_trains_like_one_device():
    r = run_script("_dist_fsdp.py", "spmd", devices=2)
    assert r["fsdp"] < TOL and r["norms"] < TOL, r
    assert r["mesh"] == 2 and r["specs"]["blocks.0.qkv.weight"] == "P('data', None)"
    assert r["bytes"] < 0.55 * r["full_bytes"]  # only head.bias (13,) stays replicated
    assert r["state_devices"] == [1]  # the full state dict is gathered
    assert r["loaded"] == 0.0 and r["loaded_specs"] == r["specs"]  # loading keeps the shards


# -- PyTorch's FSDP as the oracle for keys ---------------------------------------------------

def test_state_dict_keys_equal_pytorch_fsdp_keys_for_the_same_model():
    pytest.importorskip("torch")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    proc = run_bounded([sys.executable, str(HERE / "_dist_fsdp.py"), "torch-keys", port], 240,
                       cwd=HERE, env=child_env(1))
    if proc.returncode != 0 and "FSDP" in proc.stderr and "cpu" in proc.stderr.lower():
        pytest.skip("this PyTorch build cannot run FSDP on CPU")
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = parse_result(proc.stdout)
    from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    from autograd_compile.distributed.fsdp.wrap import transformer_auto_wrap_policy
    block_cls, model = build(acg)
    plain = list(model.state_dict())
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    ours = FSDP(model, auto_wrap_policy=policy, use_orig_params=True)
    assert theirs["plain"] == plain  # the same model in both frameworks
    assert theirs["fsdp"] == theirs["plain"] == list(ours.state_dict())
    assert theirs["summoned"] == [n for n, _ in ours.named_parameters()]


# -- in this process -------------------------------------------------------------------------

IMPORTS = """
from torch.distributed.fsdp import (FullyShardedDataParallel as FSDP, ShardingStrategy,
    MixedPrecision, CPUOffload, StateDictType, FullStateDictConfig, BackwardPrefetch)
from torch.distributed.fsdp.wrap import (transformer_auto_wrap_policy,
    size_based_auto_wrap_policy, ModuleWrapPolicy, enable_wrap, wrap)
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy, CPUOffloadPolicy
import torch.distributed.fsdp
"""


def test_pytorch_import_paths_resolve():
    scope: dict = {}
    exec(IMPORTS.replace("torch", "autograd_compile"), scope)
    assert scope["FSDP"].__name__ == "FullyShardedDataParallel"
    assert acg.distributed.fsdp.FullyShardedDataParallel is scope["FSDP"]
    assert acg.distributed.fsdp.wrap.wrap is scope["wrap"]


def _numel(m) -> int:
    return sum(p.numel() for p in m.parameters())


def test_wrap_policies_with_pytorchs_signatures():
    from autograd_compile.distributed.fsdp.wrap import (
        ModuleWrapPolicy, always_wrap_policy, lambda_auto_wrap_policy,
        size_based_auto_wrap_policy, transformer_auto_wrap_policy)
    block_cls, model = build(acg)
    block = model.blocks[0]
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    assert policy(module=block, recurse=False, nonwrapped_numel=0)
    assert not policy(module=model.head, recurse=False, nonwrapped_numel=0)
    assert policy(module=model.head, recurse=True, nonwrapped_numel=0)  # always recurse
    assert ModuleWrapPolicy({block_cls})(block, False)
    assert always_wrap_policy(module=model, recurse=False, nonwrapped_numel=0)
    lam = functools.partial(lambda_auto_wrap_policy, lambda_fn=lambda m: m is model.head)
    assert lam(module=model.head, recurse=False, nonwrapped_numel=0)
    size = functools.partial(size_based_auto_wrap_policy, min_num_params=100)
    assert size(module=block, recurse=False, nonwrapped_numel=_numel(block))
    assert not size(module=model.blocks, recurse=False, nonwrapped_numel=10 ** 6)  # ModuleList
    assert not size(module=model.ln_f, recurse=False, nonwrapped_numel=16)


def test_size_based_auto_wrap_wraps_children_first():
    from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    from autograd_compile.distributed.fsdp.wrap import size_based_auto_wrap_policy
    _, model = build(acg)
    keys = list(model.state_dict())
    net = FSDP(model, auto_wrap_policy=functools.partial(size_based_auto_wrap_policy,
                                                         min_num_params=_numel(model.blocks[0])))
    assert all(isinstance(b, FSDP) for b in net.module.blocks)
    assert not isinstance(net.module.head, FSDP)  # 117 parameters: below the threshold
    assert list(net.state_dict()) == keys


def test_world_size_one_process_group_and_methods():
    import autograd_compile.distributed as dist
    from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=1, rank=0)
    try:
        _, model = build(acg)
        net = FSDP(model)
        assert net.module is model and net.check_is_root()
        opt = acg.optim.AdamW(net.parameters(), lr=1e-2)
        x = acg.tensor(np.arange(8).reshape(2, 4) % 13)
        out = net(x)
        out.sum().backward()
        norm = net.clip_grad_norm_(1e-3)
        grads = [p.grad for p in net.parameters()]
        total = float(acg.linalg.vector_norm(acg.stack([acg.linalg.vector_norm(g) for g in grads])))
        assert abs(total - 1e-3) < 1e-6 and float(norm) > 1e-3  # clipped to max_norm
        opt.step()
        with FSDP.summon_full_params(net):
            names = [n for n, _ in net.named_parameters()]
            assert names == [n for n, _ in model.named_parameters()]
        osd = FSDP.optim_state_dict(net, opt)
        assert sorted(osd["state"]) == sorted(n for n, _ in model.named_parameters())
        back = FSDP.optim_state_dict_to_load(net, opt, osd)
        assert back["param_groups"][0]["params"] == opt.state_dict()["param_groups"][0]["params"]
        with net.no_sync():
            net(x).sum().backward()
    finally:
        dist.destroy_process_group()


def test_inner_units_are_transparent_and_the_outer_owns_the_sharding():
    from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    from autograd_compile.distributed.fsdp.wrap import enable_wrap, wrap
    block_cls, model = build(acg)
    with enable_wrap(wrapper_cls=FSDP):
        model.blocks[0] = wrap(model.blocks[0])
    inner = model.blocks[0]
    assert isinstance(inner, FSDP) and inner.check_is_root()  # a root until wrapped again
    net = FSDP(model)
    assert net.check_is_root() and not inner.check_is_root()
    assert FSDP.fsdp_modules(net) == [net, inner]
    assert FSDP.fsdp_modules(net, root_only=True) == [net]
    assert list(net.state_dict()) == list(build(acg)[1].state_dict())
    with pytest.raises(RuntimeError, match="root FSDP instance"):
        inner.clip_grad_norm_(1.0)
    assert wrap(model.head) is model.head  # outside enable_wrap: unchanged


def test_mixed_precision_computes_in_bf16_with_float32_parameters():
    from autograd_compile.distributed.fsdp import (FullyShardedDataParallel as FSDP,
                                                   MixedPrecision, MixedPrecisionPolicy,
                                                   fully_shard)
    mp = MixedPrecision(param_dtype=acg.bfloat16, reduce_dtype=acg.float32)
    x = acg.tensor(np.arange(8).reshape(2, 4) % 13)
    _, model = build(acg)
    out = FSDP(model, mixed_precision=mp)(x)
    assert out.dtype == acg.bfloat16
    out.float().sum().backward()
    assert {p.dtype for p in model.parameters()} == {p.grad.dtype for p in model.parameters()} \
        == {acg.float32}
    # the oracle: the same forward with every parameter cast by hand
    _, ref = build(acg)
    with acg.no_grad():
        for p in ref.parameters():
            p.copy_(p.to(acg.bfloat16).float())
    ref_out = acg.func.functional_call(
        ref, {n: p.to(acg.bfloat16) for n, p in ref.named_parameters()}, (x,))
    assert np.array_equal(out.detach().float().numpy(), ref_out.detach().float().numpy())
    _, model2 = build(acg)
    fully_shard(model2, mp_policy=MixedPrecisionPolicy(param_dtype=acg.bfloat16,
                                                       output_dtype=acg.float32))
    assert model2(x).dtype == acg.float32 and model2.head.weight.dtype == acg.float32
