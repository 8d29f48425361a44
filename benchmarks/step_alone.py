"""One step-group system timed in a process of its own.

Interleaved in one process, torch eager's thread pool and XLA's compete for the same
cores, which slows torch by more than its own work costs. Here the system runs alone,
in a fresh process, with the thread count it had in the interleaved run, so the two
torch figures bracket what torch costs on this machine.

    python -m autograd_compile.benchmarks.step_alone --workload mlp --system torch-eager
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

ALONE_SUFFIX = "-alone"


def torch_threads() -> int | None:
    """torch's intra-op thread count in this process (None without torch)."""
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401
        except ImportError:
            return None
    return sys.modules["torch"].get_num_threads()


def run_alone(workload: str, system: str, reps: int, warmup: int, smoke: bool,
              threads: int | None) -> dict[str, Any]:
    """``system`` on ``workload`` in a fresh process: the system's JSON (``step``,
    ``forward``, ``first_step_us`` ...) plus ``threads``; ``error`` when it failed."""
    cmd = [sys.executable, "-m", "autograd_compile.benchmarks.step_alone", "--workload",
           workload, "--system", system, "--reps", str(reps), "--warmup", str(warmup)]
    cmd += (["--smoke"] if smoke else []) + (["--threads", str(threads)] if threads else [])
    env = os.environ | ({"OMP_NUM_THREADS": str(threads)} if threads else {})
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        return {"error": f"own process failed ({proc.returncode}): {proc.stderr[-500:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _child(args: argparse.Namespace) -> dict[str, Any]:
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    import jax

    from .step import measure_step
    device = jax.devices("cpu")[0]
    with jax.default_device(device):
        out = measure_step(args.workload, [args.system], device, args.reps, args.warmup,
                           args.smoke, "inductor", alone=())
    r = out.results[args.system]
    return r.to_json() | {"threads": torch_threads()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", required=True)
    ap.add_argument("--system", default="torch-eager")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--threads", type=int, default=None)
    print(json.dumps(_child(ap.parse_args(argv))))


if __name__ == "__main__":
    main()
