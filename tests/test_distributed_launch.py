"""The launcher and multi-process runs: 2 processes x 2 host devices over gloo on localhost.

Every rank must end with the parameters of a single-process run over the global batch
(``_dist_mp_train.py`` computes that oracle locally); faults must stop every process
within a bounded time with a non-zero exit.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _dist_run import HERE, alive, child_env, run_bounded
from autograd_compile.distributed import launch

TOL = 1e-5


def max_time(timeout: float) -> list[str]:
    """The launcher's own bound, inside the test's: a hang ends with every rank's Python
    stack and exit code 124, before ``subprocess`` would kill the launcher silently."""
    return ["--max-time", f"{max(0.8 * timeout, timeout - 30):g}"]


def launch_run(*args: str, devices: int = 2, timeout: float = 300, **env: str
               ) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = run_bounded([sys.executable, "-m", "autograd_compile", "launch",
                        *max_time(timeout), *args], timeout, cwd=HERE,
                       env=child_env(devices, **env))
    return proc, time.monotonic() - start


def results(stdout: str) -> dict[int, dict]:
    rows = [json.loads(ln.split("RESULT ", 1)[1]) for ln in stdout.splitlines() if "RESULT " in ln]
    return {r["rank"]: r for r in rows}


def test_two_processes_train_like_one_process_on_the_global_batch():
    proc, _ = launch_run("--nproc", "2", "--timeout", "60", "_dist_mp_train.py", "train")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ranks = results(proc.stdout)
    assert sorted(ranks) == [0, 1]
    for rank, r in ranks.items():
        assert (r["world"], r["mesh"]) == (2, 4)
        for mode in ("eager", "compiled-jax", "compiled-jax/sharded"):
            assert r[mode]["diff"] < TOL, (rank, mode, r[mode])
            assert r[mode]["devices"] == [4]
            assert r[mode]["replicated"] == (mode != "compiled-jax/sharded")
        # shard_parameters across processes: each parameter split along its first dim
        # that divides over the 4 devices; the bias (2,) that does not stays replicated
        assert r["compiled-jax/sharded"]["split"] == {
            "0.weight": "P('data', None)", "0.bias": "P('data',)",
            "2.weight": "P(None, 'data')", "2.bias": "P()"}
        # DistributedSampler's shares make up the global batch: 2 epochs x 2 steps
        assert r["sampler"]["steps"] == 4 and r["sampler"]["moved"] > 1e-3
        assert r["sampler"]["diff"] < TOL and r["sampler"]["loss"] < TOL
        assert r["all_reduce"] == [3.0, -1.0] and r["all_reduce_max"] == [1.0]
        assert "parameter '0.weight' has shape (6, 4) on rank 1 but (8, 4) on rank 0" \
            in r["mismatch"]


def test_a_rank_that_raises_stops_every_process():
    proc, took = launch_run("--nproc", "2", "--timeout", "60", "_dist_mp_train.py", "die")
    assert proc.returncode == 1
    assert "rank 1 fails on purpose" in proc.stderr
    assert "[launcher] rank 1 exited with code 1; stopping the other 1" in proc.stderr
    assert took < 150  # rank 0 sits in a collective rank 1 never joins: killed, not waited


@pytest.mark.slow  # the launcher's fail-fast is also covered by the tests without jax below
def test_a_rank_that_never_joins_stops_every_process():
    proc, took = launch_run("--nproc", "2", "--timeout", "60", "_dist_mp_train.py", "nojoin")
    assert proc.returncode == 4
    assert "[launcher] rank 1 exited with code 4" in proc.stderr
    assert took < 150


def _lonely(rank: int) -> subprocess.Popen:
    """One process of a world of two, alone: its peer never comes."""
    code = ("import time, autograd_compile.distributed as d\nt = time.monotonic()\n"
            "try:\n    d.init(timeout=3)\nexcept RuntimeError as e:\n"
            "    print('ERR', time.monotonic() - t, e)\n")
    env = child_env(1, WORLD_SIZE="2", RANK=str(rank), MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=str(launch.free_port()))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_a_process_whose_peers_never_come_stops_within_the_timeout():
    start = time.monotonic()
    worker, coordinator = _lonely(1), _lonely(0)  # each waits for a peer that never comes
    out, err = worker.communicate(timeout=120)
    assert out.startswith("ERR"), out + err[-2000:]  # no coordinator: a Python error
    assert float(out.split()[1]) < 3 + 2
    assert "found no coordinator at 127.0.0.1" in out
    _, err = coordinator.communicate(timeout=120)  # jax ends the coordinator process itself
    assert coordinator.returncode != 0
    assert "still waiting for its peers" in err
    assert time.monotonic() - start < 90


def test_launcher_sets_torchrun_environment_and_prefixes_output(tmp_path: Path):
    script = tmp_path / "hello.py"
    script.write_text("import os, sys\nprint('hello', os.environ['RANK'], os.environ['WORLD_SIZE'],"
                      " os.environ['LOCAL_RANK'], os.environ['MASTER_ADDR'], sys.argv[1:])\n")
    proc, _ = launch_run("--nproc", "3", str(script), "--lr", "0.1", devices=1)
    assert proc.returncode == 0, proc.stderr
    for rank in range(3):
        assert f"[rank {rank}] hello {rank} 3 {rank} 127.0.0.1 ['--lr', '0.1']" in proc.stdout


def test_launcher_exit_code_of_a_failing_script(tmp_path: Path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\nif os.environ['RANK'] == '2': sys.exit(7)\n"
                      "time.sleep(60)\n")
    proc, took = launch_run("--nproc", "3", str(script), devices=1)
    assert proc.returncode == 7 and took < 30
    assert "rank 2 exited with code 7; stopping the other 2" in proc.stderr


def test_launcher_argument_errors():
    with pytest.raises(SystemExit):
        launch.parse_args(["--nnodes", "2", "train.py"])  # several hosts need --coordinator
    with pytest.raises(SystemExit):
        launch.parse_args(["--nproc", "0", "train.py"])
    ns = launch.parse_args(["--nproc-per-node", "4", "--nnodes", "2", "--node-rank", "1",
                            "--coordinator", "h0:29500", "train.py", "--epochs", "3"])
    env = launch.child_env(ns, 2, "h0", "29500")
    assert (env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"]) == ("8", "6", "2")
    assert ns.args == ["--epochs", "3"]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_killing_the_launcher_never_leaves_workers_behind(tmp_path: Path, how: str):
    import signal
    script = tmp_path / "forever.py"
    script.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\n"
                      "while True:\n    time.sleep(0.1)\n")
    launcher = subprocess.Popen([sys.executable, "-m", "autograd_compile", "launch",
                                 *max_time(60), "--nproc", "2", str(script)],
                                stdout=subprocess.PIPE, text=True)
    pids = [int(launcher.stdout.readline().split()[-1]) for _ in range(2)]
    launcher.send_signal(getattr(signal, how))
    code = launcher.wait(timeout=30)
    launcher.stdout.close()
    assert code == (143 if how == "SIGTERM" else -9)
    deadline = time.monotonic() + 10
    while any(map(alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, pids)), f"workers {pids} outlived the launcher ({how})"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_run_past_max_time_prints_every_stack_and_stops(tmp_path: Path):
    script = tmp_path / "stuck.py"
    script.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\n"
                      "def wait_for_a_peer():\n    while True:\n        time.sleep(0.1)\n"
                      "wait_for_a_peer()\n")
    proc, took = launch_run("--nproc", "2", "--max-time", "2", str(script), devices=1)
    assert proc.returncode == 124 and took < 30, proc.stderr[-2000:]
    assert "[launcher] the run exceeded --max-time 2 s with rank 0, 1 still running" \
        in proc.stderr
    for rank in (0, 1):  # each hung rank's Python stack names where it waits
        assert re.search(rf"\[rank {rank}\]   File \".*stuck.py\", line 5 in wait_for_a_peer",
                         proc.stderr), proc.stderr[-2000:]
    assert "failed first" not in proc.stderr  # the launcher stopped them: no rank failed
    pids = [int(ln.split()[-1]) for ln in proc.stdout.splitlines() if " pid " in ln]
    assert len(pids) == 2 and not any(map(alive, pids))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_the_tests_bound_kills_a_hung_process_group(tmp_path: Path):
    """The backstop behind --max-time: a child that holds the output pipes open (a worker,
    a spawned rank) cannot keep a test waiting past its timeout."""
    code = ("import subprocess, sys\nc = subprocess.Popen([sys.executable, '-c', "
            "'import time\\nwhile True: time.sleep(0.1)'])\nprint('child', c.pid, flush=True)\n")
    start = time.monotonic()
    with pytest.raises(AssertionError, match="still running after 3 s") as info:
        run_bounded([sys.executable, "-c", code], 3)
    assert time.monotonic() - start < 20
    pid = int(re.search(r"child (\d+)", str(info.value)).group(1))
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
