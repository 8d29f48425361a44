"""Run a helper script in a fresh Python with a chosen host-device count (tests' helper).

XLA fixes the number of CPU devices when its backend starts, so every multi-device test
runs in a subprocess; the script prints one ``RESULT <json>`` line the test reads back.
"""
from __future__ import annotations

import json
import os
import re
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


def run_script(script: str, *args: str, devices: int = 8, timeout: float = 240,
               **extra: str) -> dict:
    """Run ``tests/<script>`` with ``devices`` host devices; its RESULT as a dict."""
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True,
                          text=True, timeout=timeout, env=child_env(devices, **extra))
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
