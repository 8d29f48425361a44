"""The launcher is quiet by default (issue 24, item 4): gloo's connection lines and what
other ranks print after one rank failed (the C++ runtime's log and stack of a process
whose peer died) appear only with ``ACG_LOGS=distributed``; the rank that failed first is
named with its exception. 2 processes x 2 host devices over gloo, and the line filter on
its own."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _dist_run import HERE, child_env
from autograd_compile.distributed import launch
from test_distributed_launch import launch_run, max_time

GLOO = ("[Gloo] Rank 1 is connected to 3 peer ranks. Expected number of connected peer "
        "ranks is : 3\n")
LOOP = """import os, time
import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
dist.init()
model = DDP(acg.nn.Linear(4, 2))
model(acg.ones(4, 4)).sum().backward()   # a program with collectives: gloo connects
print("pid", os.getpid(), flush=True)
while True:
    dist.barrier()
    time.sleep(0.05)
"""


def test_output_drops_gloo_lines_and_echoes_after_the_first_failure():
    out = io.StringIO()
    quiet = launch.Output(verbose=False)
    quiet.write(0, GLOO, out, 1.0, False)
    quiet.write(0, "[Gloo] Rank [Gloo] Rank 23 is connected to  is connected to 33 peer ranks.  "
                "peer ranks. Expected number of connected peer ranks is : 3\n", out, 1.0, False)
    quiet.write(0, "Expected number of connected peer ranks is : 3\n", out, 1.0, False)
    quiet.write(0, "3\n", out, 1.0, False)  # a user's own line is kept
    quiet.write(0, "epoch 1\n", out, 1.0, False)
    for line in ("Traceback (most recent call last):\n", '  File "t.py", line 3\n',
                 "ValueError: bad batch\n"):
        quiet.write(1, line, out, 1.9, True)
    quiet.failed(1, 1, 2.0)
    quiet.failed(0, -15, 2.5)  # stopped afterwards: not the first failure
    quiet.write(0, "F1124 client.h:80] Terminating process\n", out, 2.01, True)
    quiet.write(1, "still rank 1\n", out, 2.2, True)  # the failed rank itself: kept
    assert out.getvalue() == ("[rank 0] 3\n[rank 0] epoch 1\n[rank 1] Traceback (most recent call last):\n"
                              '[rank 1]   File "t.py", line 3\n[rank 1] ValueError: bad batch\n'
                              "[rank 1] still rank 1\n")
    assert quiet.summary() == ("[launcher] rank 1 failed first (exit code 1): ValueError: bad "
                               "batch (its traceback is above); the output of rank 0 after "
                               "that is hidden (ACG_LOGS=distributed shows it)")
    loud, out = launch.Output(verbose=True), io.StringIO()
    loud.write(0, GLOO, out, 1.0, False)
    loud.failed(1, -9, 2.0)
    loud.write(0, "F1124 client.h:80] Terminating process\n", out, 2.01, True)
    assert out.getvalue() == f"[rank 0] {GLOO}[rank 0] F1124 client.h:80] Terminating process\n"
    assert loud.summary() == "[launcher] rank 1 failed first (killed by SIGKILL)"
    assert launch.Output(verbose=False).summary() is None


def test_a_rank_that_raises_is_named_with_its_exception():
    proc, _ = launch_run("--nproc", "2", "--timeout", "60", "_dist_mp_train.py", "die")
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith(
        "[launcher] rank 1 failed first (exit code 1): RuntimeError: rank 1 fails on purpose "
        "(its traceback is above); the output of rank 0 after that is hidden "
        "(ACG_LOGS=distributed shows it)") or proc.stderr.rstrip().endswith(
        "[launcher] rank 1 failed first (exit code 1): RuntimeError: rank 1 fails on purpose "
        "(its traceback is above)"), proc.stderr[-2000:]
    assert "[rank 1] Traceback (most recent call last)" in proc.stderr
    assert "[Gloo]" not in proc.stdout
    assert "[rank 0] " not in proc.stderr  # stopped by the launcher: its echo is hidden


def _kill_rank0(tmp_path: Path, logs: str) -> tuple[int, str, str]:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "autograd_compile", "launch", *max_time(120), "--nproc", "2",
         "--timeout", "60", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=HERE,
        env=child_env(2, ACG_LOGS=logs))
    lines = []
    while not any(ln.startswith("[rank 0] pid") for ln in lines):
        line = launcher.stdout.readline()
        assert line, "the launcher ended before rank 0 started"
        lines.append(line)
    pid = int(next(ln for ln in lines if ln.startswith("[rank 0] pid")).split()[-1])
    time.sleep(1.0)  # both ranks in their barrier loop
    os.kill(pid, signal.SIGKILL)
    out, err = launcher.communicate(timeout=120)
    return launcher.returncode, "".join(lines) + out, err


@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL of a worker")
def test_a_killed_rank_is_named_and_its_peers_echo_hidden(tmp_path: Path):
    code, out, err = _kill_rank0(tmp_path, "")
    assert code == 137, err
    assert "[Gloo]" not in out
    assert err.rstrip().splitlines()[-1].startswith(
        "[launcher] rank 0 failed first (killed by SIGKILL)"), err
    # the peer's C++ log and stack ("Terminating process ... Check failure stack trace")
    # and its Python error from the broken collective are the death's echo: hidden
    assert "[rank 1]" not in err, err


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="SIGKILL of a worker")
def test_acg_logs_distributed_shows_everything(tmp_path: Path):
    code, out, err = _kill_rank0(tmp_path, "distributed")
    assert code == 137
    assert "[rank 0] [Gloo] Rank 0 is connected to" in out
    assert err.rstrip().splitlines()[-1] == "[launcher] rank 0 failed first (killed by SIGKILL)"
