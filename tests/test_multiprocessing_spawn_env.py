"""``acg.multiprocessing.spawn`` starts its processes with the environment
``init_process_group(init_method="env://")`` reads (issue 24, item 2).

PyTorch's ``spawn`` sets none of it; ours fills in what the parent lacks and keeps what it
has. Oracles: the variables each child sees against the rule; a DDP script in the style
of PyTorch's ddp-tutorial-series ``multigpu.py`` (``_ddp_tutorial_spawn.py``, ported by
the import change) on 2 spawned processes against the same script in one process on the
global batch.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.multiprocessing as mp
from _dist_run import HERE, alive, child_env, run_bounded
from autograd_compile.distributed import launch
from test_distributed_torch_style import port

TOL = 1e-6
NAMES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK")


def report_env(i: int, out: str) -> None:
    """A spawned child: its rendezvous variables, as JSON, to ``out.<i>``."""
    with open(f"{out}.{i}", "w") as f:
        json.dump({n: os.environ.get(n) for n in NAMES}, f)


def hang_forever(i: int, out: str) -> None:
    """A spawned child that never ends: its pid to ``out.<i>``, then sleep."""
    with open(f"{out}.{i}", "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.1)


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal, /proc")
def test_spawned_children_stop_when_their_parent_is_killed(tmp_path):
    out = tmp_path / "pid"
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r})\n"
            "import autograd_compile.multiprocessing as mp, test_multiprocessing_spawn_env as t\n"
            f"mp.spawn(t.hang_forever, args=({str(out)!r},), nprocs=2)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], cwd=HERE, env=child_env(1))
    try:
        deadline = time.monotonic() + 120
        while not all(Path(f"{out}.{i}").exists() and Path(f"{out}.{i}").read_text()
                      for i in range(2)):
            assert time.monotonic() < deadline and parent.poll() is None, "children never started"
            time.sleep(0.1)
        pids = [int(Path(f"{out}.{i}").read_text()) for i in range(2)]
    finally:
        parent.kill()  # SIGKILL: the parent cannot stop its children itself
        parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, pids)), f"children {pids} outlived their parent"


def _spawned_env(tmp_path: Path, nprocs: int) -> list[dict]:
    out = str(tmp_path / "env")
    ctx = mp.spawn(report_env, args=(out,), nprocs=nprocs, join=False)
    deadline = time.monotonic() + 120  # a hung child fails the test instead of hanging it
    while not ctx.join(timeout=1.0):
        if time.monotonic() > deadline:
            ctx._terminate_others(grace_period=5.0)
            pytest.fail(f"spawned children still running after 120 s: {ctx.pids()}")
    return [json.loads(Path(f"{out}.{i}").read_text()) for i in range(nprocs)]


def test_spawn_fills_in_the_missing_rendezvous_environment(tmp_path, monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    envs = _spawned_env(tmp_path, 2)
    assert [e["RANK"] for e in envs] == ["0", "1"] == [e["LOCAL_RANK"] for e in envs]
    assert {e["WORLD_SIZE"] for e in envs} == {"2"} == {e["LOCAL_WORLD_SIZE"] for e in envs}
    assert {e["MASTER_ADDR"] for e in envs} == {"127.0.0.1"}
    ports = {e["MASTER_PORT"] for e in envs}
    assert len(ports) == 1 and 0 < int(ports.pop()) < 65536  # one free port for the group
    assert all(os.environ.get(n) is None for n in NAMES)  # the parent's stays as it was


def test_spawn_keeps_what_the_parent_has_set(tmp_path, monkeypatch):
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "localhost")
    monkeypatch.setenv("MASTER_PORT", "23456")
    envs = _spawned_env(tmp_path, 2)
    assert {(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs} == {("localhost", "23456")}
    assert [e["RANK"] for e in envs] == ["0", "1"] and {e["WORLD_SIZE"] for e in envs} == {"2"}


def _train(script: Path, out: Path, world: int, batch: int, setup: str) -> str:
    proc = run_bounded(
        [sys.executable, str(script), "3", "--world_size", str(world), "--batch_size",
         str(batch), "--port", str(launch.free_port()), "--setup", setup, "--out", str(out)],
        240, cwd=HERE, env=child_env(1))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _params(path: Path) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in acg.load(str(path)).items()}


@pytest.fixture(scope="module")
def ported(tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """The ported script, and its parameters after one process on the global batch."""
    tmp = tmp_path_factory.mktemp("spawn")
    script = port(HERE / "_ddp_tutorial_spawn.py", tmp / "multigpu.py")
    _train(script, tmp / "solo.pt", 1, 16, "explicit")
    return script, _params(tmp / "solo.pt")


def _check(ported: tuple, tmp_path: Path, setup: str) -> None:
    script, want = ported
    stdout = _train(script, tmp_path / "two.pt", 2, 8, setup)
    assert "[GPU1] Epoch 2 | Batchsize: 8 | Steps: 4" in stdout
    assert "rank 1: RANK=1 WORLD_SIZE=2" in stdout  # spawn's environment in the child
    got = _params(tmp_path / "two.pt")
    assert sorted(got) == sorted(want) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    acg.manual_seed(0)  # the script's initialisation: training moved it
    start = acg.nn.Sequential(acg.nn.Linear(20, 8), acg.nn.Tanh(), acg.nn.Linear(8, 1))
    for k, v in start.state_dict().items():
        assert np.max(np.abs(got[k] - want[k])) <= TOL, k
        assert np.max(np.abs(want[k] - v.detach().numpy())) > 1e-3, k


def test_ported_multigpu_spawn_script_matches_one_process(ported, tmp_path):
    _check(ported, tmp_path, "explicit")  # ddp_setup sets MASTER_ADDR/PORT, passes rank


def test_ported_spawn_script_joining_from_the_environment(ported, tmp_path):
    _check(ported, tmp_path, "env")  # init_process_group("gloo") alone
