"""DistributedDataParallel on 8 host CPU devices (one subprocess runs every case).

Oracles: the same model trained on one device over the global batch, and ``jax.grad``
of a hand-written forward (see ``_dist_ddp.py``); the compiled backward's HLO is read
from XLA's dump to find the gradient collectives.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import autograd_compile as acg
from _dist_run import run_script

MODES = ["eager", "compiled-eager", "compiled-jax"]
TOL = 1e-5  # float32: 3 SGD steps on a tiny MLP


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory) -> tuple[dict, Path]:
    dump = tmp_path_factory.mktemp("hlo")
    flags = f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_module_re=.*_(trace|counted).*"
    return run_script("_dist_ddp.py", devices=8, XLA_FLAGS=flags), dump


def test_reference_matches_jax_grad(ddp_run):
    assert ddp_run[0]["jax_vs_ref"] < TOL


@pytest.mark.parametrize("shard", [False, True], ids=["replicated", "sharded"])
@pytest.mark.parametrize("mode", MODES)
def test_ddp_equals_single_device_global_batch(ddp_run, mode, shard):
    r = ddp_run[0][f"{mode}/{shard}"]
    assert r["grads"] < TOL and r["params"] < TOL, r
    assert set(r["devices"].values()) == {8}
    want = "P('data', None)" if shard else "P()"
    assert r["specs"]["0.weight"] == want and r["specs"]["2.weight"] == want
    # optimizer state (momentum) lives where its parameter lives
    assert r["state"] and all(s == p for s, p in r["state"]), r["state"]
    assert r["captures"] == (0 if mode == "eager" else 1)  # one capture serves every step


def test_shard_parameters_divides_bytes_per_device(ddp_run):
    full = ddp_run[0]["eager/False"]["bytes"]
    assert full == (4 * 16 + 16 + 16 * 8 + 8) * 4
    for mode in MODES:
        assert ddp_run[0][f"{mode}/True"]["bytes"] * 8 == full


@pytest.mark.parametrize("mode", MODES)
def test_hooks_under_ddp_see_the_reduced_gradient(ddp_run, mode):
    r = ddp_run[0][f"{mode}/hooks"]
    assert r["calls"] == 3 and r["devices"] == [8, 8, 8]
    assert r["post_acc_first"] < TOL  # the global-batch gradient, as PyTorch DDP
    assert r["doubled"] < TOL  # a tensor hook on a parameter still replaces its gradient


def _collectives(dump: Path) -> list[set[str]]:
    found = []
    for f in sorted([*dump.glob("*jit__trace*after_optimizations.txt"),
                     *dump.glob("*jit__counted*after_optimizations.txt")]):
        text = f.read_text()
        found.append(set(re.findall(r"\b(all-reduce|reduce-scatter|all-gather|dynamic-slice)"
                                    r"(?:-start)?\(", text)))
    return found


def test_compiled_backward_holds_the_gradient_collectives(ddp_run):
    programs = _collectives(ddp_run[1])
    assert programs, "no compiled backward program was dumped"
    # replicated parameters: the gradient all-reduce is inside the one backward program
    assert any("all-reduce" in p and "all-gather" not in p for p in programs), programs
    # sharded parameters: weights gathered for compute, gradients reduced to shards
    # (XLA's CPU pipeline writes reduce-scatter as all-reduce + dynamic-slice)
    assert any("all-gather" in p and ("reduce-scatter" in p or {"all-reduce", "dynamic-slice"}
                                      <= p) for p in programs), programs


@pytest.mark.parametrize("where", ["outer", "inner"])  # acg.compile(DDP(m)), DDP(acg.compile(m))
@pytest.mark.parametrize("shard", [False, True], ids=["replicated", "sharded"])
def test_acg_compile_with_ddp_on_sharded_inputs(ddp_run, shard, where):
    r = ddp_run[0][f"compile/{where}/{shard}"]
    assert r["grads"] < TOL and r["params"] < TOL, r
    assert r["out"] == "P('data', None)"  # the compiled forward keeps the batch split
    assert r["aot"].get("eager_runs", 0) == 0 and r["aot"]["traces"] == 1, r["aot"]
    assert r["specs"]["0.weight"] == ("P('data', None)" if shard else "P()")


def test_ddp_forward_passes_through_and_exposes_module():
    model = acg.nn.Linear(3, 2)
    ddp = acg.nn.parallel.DistributedDataParallel(model)
    assert ddp.module is model and ddp.mesh.size == 1
    x = acg.ones(4, 3)
    assert ddp(x).tolist() == model(x).tolist()
    assert [n for n, _ in ddp.named_parameters()] == ["module.weight", "module.bias"]
