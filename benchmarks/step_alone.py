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
from typing import Any

def _child(args: argparse.Namespace) -> dict[str, Any]:
    if args.threads:
        import torch
        torch.set_num_threads(args.threads)
    import jax

    from .step import measure_step, torch_threads
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
