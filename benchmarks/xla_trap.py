"""The CPU XLA trap: ``--xla_cpu_experimental_ynn_fusion_type=-reduce`` on and off.

On jaxlib's CPU backend a chain of matmuls that ends in a reduction can be fused
into one much slower kernel; the flag keeps reductions out of those fusions.
XLA_FLAGS are read once per process, so each setting runs in its own subprocess
(``python -m autograd_compile.benchmarks.xla_trap_child OUT [bench args]``), alternated
``rounds`` times;
samples of the same setting are pooled. Each child measures the ``mlp`` workload's
backward (acg-compiled, jax-floor) through the normal bench CLI, plus the jitted
JAX *forward* loss, where the matmul chain does end in a reduction (the mean).

>>> with_trap_flag("--xla_force_host_platform_device_count=2", True).split()
['--xla_force_host_platform_device_count=2', '--xla_cpu_experimental_ynn_fusion_type=-reduce']
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

import jax

from .frameworks import JAX_OPS
from .measure import summarize
from .workloads import build

TRAP_FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce"
TRAP_SYSTEMS = ("acg-compiled", "jax-floor")
FORWARD = "jax-forward-jit"  # the forward loss, jitted: not a backward
SETTINGS = (("default", False), ("ynn_no_reduce", True))


def with_trap_flag(xla_flags: str, on: bool) -> str:
    """The user's XLA_FLAGS without any ynn fusion setting, plus the trap flag when ``on``."""
    kept = [f for f in xla_flags.split() if not f.startswith(TRAP_FLAG.split("=")[0])]
    return " ".join(kept + ([TRAP_FLAG] if on else []))


def forward_samples(smoke: bool, device: jax.Device, warmup: int, reps: int) -> list[float]:
    """Microseconds per call of the jitted JAX forward loss of ``mlp``."""
    w = build("mlp", smoke)
    params, inputs = jax.device_put((w.params, w.inputs), device)
    fwd = jax.jit(lambda p, x: w.forward(JAX_OPS, p, x))
    samples = []
    for rep in range(warmup + 1 + reps):  # +1: the first call compiles
        start = time.perf_counter()
        fwd(params, inputs).block_until_ready()
        if rep > warmup:
            samples.append((time.perf_counter() - start) * 1e6)
    return samples


def _run_child(flag_on: bool, argv: list[str]) -> dict[str, Any]:
    """One subprocess with the flag on or off; its JSON."""
    env = dict(os.environ, XLA_FLAGS=with_trap_flag(os.environ.get("XLA_FLAGS", ""), flag_on))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "trap.json")
        cmd = [sys.executable, "-m", "autograd_compile.benchmarks.xla_trap_child", out, *argv]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"xla-trap subprocess failed ({' '.join(cmd)}):\n"
                               f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return json.loads(Path(out).read_text())


def study(argv: list[str], rounds: int = 2) -> dict[str, Any]:
    """Alternate the two settings ``rounds`` times; medians of the pooled samples."""
    pooled: dict[str, dict[str, list[float]]] = {label: {} for label, _ in SETTINGS}
    flags: dict[str, str] = {}
    for _ in range(rounds):
        for label, on in SETTINGS:
            doc = _run_child(on, argv)
            flags[label] = doc["environment"]["XLA_FLAGS"]
            for name, r in doc["workloads"]["mlp"]["systems"].items():
                pooled[label].setdefault(name, []).extend(r.get("samples_us") or [])
            pooled[label].setdefault(FORWARD, []).extend(doc["forward_us"])
    return {label: {"XLA_FLAGS": flags[label],
                    "measured": {n: summarize(s) for n, s in by.items() if s}}
            for label, by in pooled.items()}


def print_study(trap: dict[str, Any], out: TextIO) -> None:
    """One row per measurement: medians without and with the flag, and their ratio."""
    print("\nCPU XLA trap, mlp (median us per call; settings in alternating subprocesses)",
          file=out)
    base, fixed = (trap[label]["measured"] for label, _ in SETTINGS)
    print(f"  {'measurement':24s} {'default':>12s} {'with flag':>12s}  default/flag", file=out)
    for name in (*TRAP_SYSTEMS, FORWARD):
        if name in base and name in fixed:
            a, b = base[name]["median_us"], fixed[name]["median_us"]
            what = f"{name} ({'forward' if name == FORWARD else 'backward'})"
            print(f"  {what:24s} {a:12.1f} {b:12.1f}  {a / b:11.2f}x", file=out)
    print(f"  flag: XLA_FLAGS={trap['ynn_no_reduce']['XLA_FLAGS']!r}", file=out)

