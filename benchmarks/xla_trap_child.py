"""The xla-trap study's subprocess: the bench CLI on ``mlp``, then the forward probe.

Its own module because it drives :mod:`.run`, which imports :mod:`.xla_trap`: keeping
the child here leaves that import one way (run -> xla_trap -> nothing of run).
Usage: ``python -m autograd_compile.benchmarks.xla_trap_child OUT [bench args]``.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .run import main, parse_args, resolve_device
from .xla_trap import TRAP_SYSTEMS, forward_samples


def child(argv: list[str]) -> int:
    """In the subprocess: the bench CLI on mlp, then the forward probe, into one JSON."""
    out, bench_args = argv[0], argv[1:]
    rc = main(["--group", "backward", "--workload", "mlp", "--systems", ",".join(TRAP_SYSTEMS),
               "--no-sweep",
               "--no-progress", "--json", out, *bench_args])
    args = parse_args(bench_args)
    doc = json.loads(Path(out).read_text())
    doc["forward_us"] = forward_samples(args.smoke, resolve_device(args.device), args.warmup,
                                        args.reps)
    Path(out).write_text(json.dumps(doc, default=str))
    return rc


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
