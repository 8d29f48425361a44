"""DDP and ``shard_parameters=True`` under ``acg.compile(train_step)`` (issue 24, item 5).

One SPMD program per step, gradient reductions inside, parameters / gradients /
optimizer state kept at DDP's placement and donated. Oracle: the same model trained
eagerly on one device over the whole global batch (``_dist_whole_step.py``), max
|diff| <= 1e-6 in float32; one process x 4 host devices, and 2 processes x 2 devices
through ``python -m autograd_compile launch``.
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.aot import Unsupported, counters
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from _dist_run import run_script
from test_distributed_launch import launch_run, results

TOL = 1e-6
CONFIGS = ["sgd/replicated", "sgd/sharded", "adamw/replicated", "adamw/sharded"]
MODULE_CONFIGS = ["module-sgd/replicated", "module-adamw/sharded"]  # acg.compile(DDP(model))
ONE_PROGRAM = [{"traces": 1, "compiles": 1},  # first step: optimizer state not made yet
               {"traces": 1, "compiles": 1, "retraces": 1},  # with state: the last trace
               {"cache_hits": 1}, {"cache_hits": 1}]  # then one program per step, nothing else


def _check(r: dict, config: str, mesh: int) -> None:
    assert r["diff"] <= TOL and r["loss_diff"] <= TOL, (config, r["diff"], r["loss_diff"])
    assert r["per_step"] == ONE_PROGRAM, (config, r["per_step"])
    assert all(r["donated"]), r["donated"]  # parameters updated in place
    assert r["devices"] == [mesh]
    sharded = config.endswith("sharded")
    want = {"0.weight": "P('data', None)", "0.bias": "P('data',)"} if sharded else \
        {"0.weight": "P()", "0.bias": "P()"}
    assert {k: r["specs"][k] for k in want} == want
    for name, spec in r["state"].items():  # optimizer state lives where its parameter lives
        assert spec == r["specs"][name.rsplit(".", 1)[0]], (name, spec)
    # the gradient reduction is inside the step program: an all-reduce, and for sharded
    # parameters the gather for compute plus the reduce-scatter (XLA:CPU writes it as
    # all-reduce + dynamic-slice)
    assert "all-reduce" in r["collectives"] or "reduce-scatter" in r["collectives"], r
    if sharded:
        assert "all-gather" in r["collectives"], r
        assert "reduce-scatter" in r["collectives"] or "dynamic-slice" in r["collectives"], r


def _check_module(r: dict, config: str) -> None:
    """``acg.compile(DDP(model))`` on each process's rows: one forward trace, its output
    split over the mesh like the batch, parameters as one process on the global batch."""
    assert r["diff"] <= TOL and r["loss_diff"] <= TOL, (config, r["diff"], r["loss_diff"])
    assert r["per_step"][0].get("traces") == 1 and "eager_runs" not in r["per_step"][0], r
    assert all(s == {"cache_hits": 1} for s in r["per_step"][1:]), r["per_step"]
    assert r["out_specs"] == ["P('data', None)"] * len(r["per_step"])
    assert r["specs"]["0.weight"] == ("P('data', None)" if config.endswith("sharded") else "P()")


@pytest.fixture(scope="module")
def one_process() -> dict:
    return run_script("_dist_whole_step.py", *CONFIGS, *MODULE_CONFIGS, devices=4, timeout=240)


@pytest.mark.parametrize("config", MODULE_CONFIGS)
def test_compiled_ddp_module_splits_local_inputs(one_process, config):
    _check_module(one_process[config], config)


@pytest.mark.parametrize("config", CONFIGS)
def test_whole_step_with_ddp_is_one_spmd_program_per_step(one_process, config):
    assert (one_process["world"], one_process["mesh"]) == (1, 4)
    _check(one_process[config], config, 4)


def test_whole_step_with_ddp_on_two_processes():
    proc, _ = launch_run("--nproc", "2", "--timeout", "60", "_dist_whole_step.py",
                         "adamw/sharded", "module-sgd/sharded", timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = results(proc.stdout)
    assert sorted(ranks) == [0, 1]
    for rank, r in ranks.items():
        assert (r["world"], r["mesh"]) == (2, 4)
        _check(r["adamw/sharded"], "adamw/sharded", 4)
        _check_module(r["module-sgd/sharded"], "module-sgd/sharded")
        # loss.item() is the loss over the global batch, the same on every rank
        assert r["adamw/sharded"]["losses"] == ranks[0]["adamw/sharded"]["losses"]


def _torch_style_run(compiled: bool, fullgraph: bool = False) -> list[np.ndarray]:
    acg.manual_seed(0)
    model = acg.nn.Linear(3, 2)
    ddp = DDP(model, spmd=False)  # PyTorch's DDP: per-process gradients averaged on the host
    opt = acg.optim.SGD(ddp.parameters(), lr=0.1)

    def train_step(x, y):
        loss = F.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    step = acg.compile(train_step, fullgraph=fullgraph) if compiled else train_step
    for i in range(3):
        step(acg.ones(4, 3) * i, acg.zeros(4, 2))
    return [p.detach().numpy() for p in model.parameters()]


def test_pytorch_style_ddp_falls_back_to_eager_with_one_line(caplog):
    counters.clear()
    with caplog.at_level(logging.WARNING, logger="autograd_compile"):
        got = _torch_style_run(compiled=True)
    msgs = [r.getMessage() for r in caplog.records if "eagerly" in r.getMessage()]
    assert len(msgs) == 1 and "\n" not in msgs[0], msgs
    assert "init_process_group" in msgs[0] and "whole-step compile" in msgs[0], msgs
    assert counters["eager_runs"] == 3
    for a, b in zip(got, _torch_style_run(compiled=False)):
        np.testing.assert_allclose(a, b, rtol=0, atol=TOL)
    with pytest.raises(Unsupported, match="init_process_group"):
        _torch_style_run(compiled=True, fullgraph=True)
