"""Run a helper script in a fresh Python with a chosen host-device count (tests' helper).

XLA fixes the number of CPU devices when its backend starts, so every multi-device test
runs in a subprocess; the script prints one ``RESULT <json>`` line the test reads back.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child_env(devices: int, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                 "ACG_COORDINATOR"):
        env.pop(name, None)
    flags = re.sub(r"--xla_force_host_platform_device_count=\S+", "", env.get("XLA_FLAGS", ""))
    flags = f"{flags} {extra.pop('XLA_FLAGS', '')}"  # the test's flags join, not replace
    env["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={devices}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return env


def mode_ctx(mode: str) -> contextlib.AbstractContextManager:
    """The execution mode a script's step runs in: "eager", or "compiled-<backend>" (the
    backward under ``compiled_autograd.enable(backend)``)."""
    if mode == "eager":
        return contextlib.nullcontext()
    import autograd_compile as acg  # only the scripts use it: the tests' import stays light
    return acg.compiled_autograd.enable(mode.split("-", 1)[1])


def alive(pid: int) -> bool:
    """Whether process ``pid`` is still running (Linux: /proc; a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def run_bounded(cmd: list[str], timeout: float, **kwargs: object
                ) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True)`` in a session of its own:
    past ``timeout`` the whole process group (a launcher and its workers, a spawned
    script's children) is killed and the test fails with the output so far, where
    ``subprocess.run`` would kill only ``cmd`` and then wait for pipes its children
    still hold."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, nothing else
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(map(str, cmd))} still running after {timeout:g} s; "
                             f"its process group was killed.\nstdout:\n{out[-4000:]}\n"
                             f"stderr:\n{err[-4000:]}") from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def run_script(script: str, *args: str, devices: int = 8, timeout: float = 240,
               **extra: str) -> dict:
    """Run ``tests/<script>`` with ``devices`` host devices; its RESULT as a dict."""
    proc = run_bounded([sys.executable, str(HERE / script), *args], timeout,
                       env=child_env(devices, **extra))
    assert proc.returncode == 0, f"{script} {args} failed ({proc.returncode}):\n" \
                                 f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return parse_result(proc.stdout)


def parse_result(stdout: str) -> dict:
    lines = [ln for ln in stdout.splitlines() if "RESULT " in ln]
    assert lines, f"no RESULT line in:\n{stdout[-4000:]}"
    return json.loads(lines[-1].split("RESULT ", 1)[1])


def emit(**result: object) -> None:
    """In a helper script: report ``result`` to the test."""
    print("RESULT " + json.dumps(result), flush=True)
