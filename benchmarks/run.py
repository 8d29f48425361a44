"""``python -m autograd_compile bench``: backward-only throughput, side by side.

Groups (``--group``, default all): ``backward`` (below), ``step`` (whole training
steps: forward + backward + optimizer step, see ``step.py``), ``ops`` (eager overhead
of one recorded op against the raw jitted JAX call, see ``ops.py``).
Issue 19 adds ``generate`` (token-by-token sampling with a growing length) and ``data`` (a
DataLoader epoch over a makemore-style dataset), each system in a fresh process: see
``eager_groups.py``. Small-op costs by layer: ``python -m autograd_compile.benchmarks.small_ops``.

Methodology
-----------
What is timed is **one backward pass and nothing else**. For every rep a system
first *prepares*, untimed: it sets every ``.grad`` to None and runs a fresh forward
(waiting for it), so the autograd graph exists before the clock starts. The timed
region is ``loss.backward()`` plus waiting for the results: ``block_until_ready``
on every parameter's gradient for autograd_compile, on the gradient pytree for the
JAX floor; PyTorch on CPU is synchronous. Garbage collection is off inside the timed
region, as in ``timeit``.

Systems (all in one process; see ``benchmarks/systems.py``):

- ``acg-eager``: plain ``loss.backward()``; the reference for gradients.
- ``acg-compiled``: the same under ``acg.compiled_autograd.enable("jax")``.
- ``acg-compiled-pure``: as above with the hooks marked ``pure_hook`` (traced into
  XLA); only workloads with tensor hooks measure it, elsewhere it is the same graph
  and is reported as an alias of ``acg-compiled``.
- ``jax-floor``: the model written in JAX. ``jax.vjp`` runs the forward once,
  untimed; the timed call is ``jax.jit(lambda vjp_fn, ct: vjp_fn(ct))`` on the
  residual-carrying ``vjp_fn``, i.e. the compiled backward alone (the JSON lists the
  primitives of that program: no forward is recomputed).
- ``torch-eager`` and ``torch-compiled-autograd``
  (``torch._dynamo.compiled_autograd`` with ``torch.compile(backend=...)``), when
  torch is importable; otherwise reported as skipped.

Each workload runs in four phases:

1. **first backward** of every system from empty caches (``compiled_autograd.reset()``,
   ``torch._dynamo.reset()``, a fresh ``jax.jit``): capture + compile time;
2. **gradient check**: every system's first gradients against ``acg-eager``'s with
   ``np.testing.assert_allclose(rtol=1e-4)`` (plus an absolute floor of 1e-6 of the
   largest gradient entry for entries that are ~0), and post-accumulate-grad hook
   calls per backward equal; a mismatch fails the run (exit status 1);
3. **warm-up** reps (dropped), then ``--reps`` timed reps. The systems are
   **interleaved**: each rep runs every system once, in an order rotated per rep, so
   that load from other processes on a shared machine hits all systems alike;
4. statistics: median and IQR (25th-75th percentile) of the timed reps. Compiled
   autograd's counters over the timed reps are recorded (captures there mean a
   cache that does not hold).

After the workloads, a batch-size sweep (16, 32, 48, 64) of ``mlp`` and ``mlp_small``
records captures and compiles: one capture should serve every batch size.
``--xla-trap`` instead runs ``mlp`` in subprocesses with and without
``XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=-reduce`` (see ``xla_trap.py``).

Numbers on a shared 2-core machine are noisy: compare ratios within one run, not
medians across runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import jax

from . import ops as ops_group
from . import report
from . import step as step_group
from .step_models import STEP_NAMES
from .measure import GRAD_ATOL_FRACTION, GRAD_RTOL, WorkloadResult, measure, runs_per_workload
from . import xla_trap
from .sweep import SWEEP_WORKLOADS, batch_sweep
from .systems import ALL_SYSTEMS, plan
from .workloads import NAMES, Workload, build

GROUPS = ("backward", "step", "ops")
GROUPS += ("generate", "data")  # issue 19: generation with a growing length, a DataLoader epoch
DEFAULT_REPS, SMOKE_REPS = 30, 3
DEFAULT_WARMUP, SMOKE_WARMUP = 5, 1


def _names(value: str, allowed: tuple[str, ...], what: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad)}; "
                                         f"choose from {', '.join(allowed)}")
    return names


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m autograd_compile bench",
                                 description="Benchmarks, systems side by side in one process: the backward "
                                             "group (backward only), the step group (forward + "
                                             "backward + optimizer) and the ops group (eager "
                                             "per-op cost).")
    ap.add_argument("--group", default=",".join(GROUPS),
                    type=lambda v: _names(v, GROUPS, "group"),
                    help=f"comma-separated, default all: {','.join(GROUPS)}")
    ap.add_argument("--workload", default=",".join(NAMES),
                    type=lambda v: _names(v, NAMES, "workload"),
                    help=f"comma-separated, default all: {','.join(NAMES)}")
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS),
                    type=lambda v: _names(v, ALL_SYSTEMS, "system"),
                    help=f"comma-separated, default all: {','.join(ALL_SYSTEMS)}")
    ap.add_argument("--step-workload", default=",".join(STEP_NAMES),
                    type=lambda v: _names(v, STEP_NAMES, "step workload"),
                    help=f"step group, comma-separated, default all: {','.join(STEP_NAMES)}")
    ap.add_argument("--step-systems", default=",".join(step_group.SYSTEMS),
                    type=lambda v: _names(v, tuple(step_group.SYSTEMS), "step system"),
                    help=f"step group, default all: {','.join(step_group.SYSTEMS)}")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                    help="jax device for parameters and data")
    ap.add_argument("--reps", type=int, default=None,
                    help=f"timed reps after warm-up (default {DEFAULT_REPS}; {SMOKE_REPS} "
                         "with --smoke)")
    ap.add_argument("--warmup", type=int, default=None,
                    help=f"untimed reps first (default {DEFAULT_WARMUP}; {SMOKE_WARMUP} "
                         "with --smoke)")
    ap.add_argument("--json", metavar="PATH", help="write every raw number here")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG bar chart here")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, 3 reps (CI)")
    ap.add_argument("--xla-trap", action="store_true",
                    help="only measure mlp with and without the CPU ynn fusion flag "
                         "(XLA_FLAGS you set are kept)")
    ap.add_argument("--no-sweep", action="store_true", help="skip the batch-size sweep")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--torch-backend", default="inductor",
                    help="torch.compile backend for torch-compiled-autograd (default inductor)")
    args = ap.parse_args(argv)
    args.reps = args.reps if args.reps is not None else SMOKE_REPS if args.smoke else DEFAULT_REPS
    args.warmup = args.warmup if args.warmup is not None else \
        SMOKE_WARMUP if args.smoke else DEFAULT_WARMUP
    if args.reps < 1 or args.warmup < 0:
        ap.error("--reps must be >= 1 and --warmup >= 0")
    return args


class DeviceUnavailable(RuntimeError):
    """The requested --device is not one jax can see."""


def resolve_device(kind: str) -> jax.Device:
    """The first jax device of ``kind``; :class:`DeviceUnavailable` when jax sees none."""
    try:
        devices = jax.devices(kind)
    except RuntimeError:
        devices = []
    if not devices:
        seen = sorted({d.platform for d in jax.devices()})
        raise DeviceUnavailable(f"--device {kind}: jax sees no {kind.upper()} device (it "
                                f"sees {', '.join(seen)}); install a jax build for it, e.g. "
                                f"pip install 'jax[cuda12]', or use --device cpu")
    return devices[0]


class _NoBar:
    """Stands in for tqdm when it is not installed."""

    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _progress(total: int, disable: bool) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        if not disable:
            print("bench: no progress bar: tqdm is not installed "
                  "(pip install 'autograd-compile[bench]' adds it)", file=sys.stderr)
        return _NoBar()
    return tqdm(total=total, unit="bwd", desc="bench", disable=disable, file=sys.stderr,
                dynamic_ncols=True)


def run_suite(args: argparse.Namespace, device: jax.Device) -> list[WorkloadResult]:
    """Measure every selected workload; one progress bar over every backward call."""
    workloads: list[Workload] = [build(n, args.smoke) for n in args.workload]
    total = sum(runs_per_workload(len(plan(w, args.systems, device)[0]), args.warmup,
                                  args.reps) for w in workloads)
    results = []
    with _progress(total, args.no_progress) as bar:
        for w in workloads:
            bar.set_description(w.name)
            results.append(measure(w, args.systems, device, args.reps, args.warmup,
                                   args.torch_backend, bar))
    return results


def _config(args: argparse.Namespace) -> dict[str, Any]:
    return {"groups": args.group, "workloads": args.workload, "systems": args.systems,
            "step_workloads": args.step_workload, "step_systems": args.step_systems,
            "reps": args.reps,
            "warmup": args.warmup, "smoke": args.smoke, "torch_backend": args.torch_backend,
            "grad_rtol": GRAD_RTOL, "grad_atol_fraction_of_max": GRAD_ATOL_FRACTION,
            "timing": "backward: the backward alone; step: forward + backward + SGD step; "
                      "ops: a loop of op calls; systems interleaved per rep; median and IQR"}


def _trap_main(args: argparse.Namespace, device: jax.Device) -> int:
    passthrough = ["--device", args.device, "--reps", str(args.reps), "--warmup",
                   str(args.warmup)] + (["--smoke"] if args.smoke else [])
    trap = xla_trap.study(passthrough)
    xla_trap.print_study(trap, sys.stdout)
    if args.json:
        report.write_json(args.json, {"environment": report.environment(device),
                                      "xla_trap": trap})
    return 0


def main(argv: list[str]) -> int:
    """Run the suite (or the XLA trap study); print, write JSON and plot; 1 on failures."""
    args = parse_args(argv)
    if args.plot and not _has_matplotlib():  # said before a long run, not after it
        print("bench: --plot needs matplotlib, which is not installed (pip install "
              "'autograd-compile[bench]' adds it); running without the PNG", file=sys.stderr)
        args.plot = None
    try:
        device = resolve_device(args.device)
    except DeviceUnavailable as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    if args.xla_trap:
        return _trap_main(args, device)
    if args.reps < DEFAULT_REPS and not args.smoke:
        print(f"bench: note: {args.reps} timed reps (< {DEFAULT_REPS}); medians will be rough",
              file=sys.stderr)
    env = report.environment(device)
    backward = "backward" in args.group
    results = run_suite(args, device) if backward else []
    sweep = {} if args.no_sweep or not backward else {
        n: batch_sweep(n, args.smoke, device) for n in SWEEP_WORKLOADS if n in args.workload}
    steps, step_skipped, step_sweep = _run_step_group(args, device)
    op_results = ops_group.run_ops(device, args.reps, args.warmup, args.smoke,
                                   _torch_available()) if "ops" in args.group else []
    env["loadavg_at_end"] = os.getloadavg()
    failures = [f for w in results + steps for f in w.failures()]
    _output(args, env, results, sweep, op_results, failures)
    _output_step(args, steps, step_skipped, step_sweep)
    failures += _run_eager_groups(args)  # issue 19: generate, data (see eager_groups.py)
    if args.plot and (results or steps):
        report.plot(results, args.plot, steps)
    elif args.plot:
        print("bench: no plot: nothing was measured for it", file=sys.stderr)
    return 1 if failures else 0


def _run_eager_groups(args: argparse.Namespace) -> list[str]:
    from .eager_groups import run_eager_groups
    return run_eager_groups(args, _torch_available())


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _run_step_group(args: argparse.Namespace, device: jax.Device) -> tuple[
        list[step_group.StepWorkloadResult], dict[str, str], dict[str, list[dict[str, Any]]]]:
    """The step group's workloads, then its batch sweep (mlp, mlp_small; compiled systems)."""
    if "step" not in args.group:
        return [], {}, {}
    steps, skipped = step_group.run_steps(args.step_workload, args.step_systems, device,
                                          args.reps, args.warmup, args.smoke,
                                          args.torch_backend)
    sweep = {}
    for w in steps if not args.no_sweep else ():
        for system in step_group.SWEEP_SYSTEMS:
            if w.name in step_group.SWEEP_WORKLOADS and system in w.results \
                    and not w.results[system].error:
                sweep[f"{w.name}/{system}"] = step_group.step_sweep(w.name, system, args.smoke,
                                                                    device)
    return steps, skipped, sweep


def _output_step(args: argparse.Namespace, steps: list[step_group.StepWorkloadResult],
                 skipped: dict[str, str], sweep: dict[str, list[dict[str, Any]]]) -> None:
    """The step table and sweep on stdout; the step section of the JSON."""
    if not steps and not skipped:
        return
    report.print_step_table(steps, skipped, sys.stdout)
    report.print_step_sweep(sweep, sys.stdout)
    if args.json:
        doc = json.loads(Path(args.json).read_text())
        doc["step"] = {"workloads": {w.name: report.step_json(w) for w in steps},
                       "skipped": skipped, "batch_sweep": sweep}
        report.write_json(args.json, doc)


def _torch_available() -> bool:
    from .systems import torch_available
    return torch_available()


def _output(args: argparse.Namespace, env: dict[str, Any], results: list[WorkloadResult],
            sweep: dict[str, list[dict[str, Any]]], op_results: list[ops_group.OpResult],
            failures: list[str]) -> None:
    """The tables and sweep on stdout, failures on stderr, then the JSON and the plot."""
    if results:
        report.print_table(results, sys.stdout)
    report.print_sweep(sweep, sys.stdout)
    if op_results:
        ops_group.print_ops(op_results, sys.stdout)
    for f in failures:
        print(f"FAILED {f}", file=sys.stderr)
    if args.json:
        report.write_json(args.json, {
            "environment": env, "config": _config(args), "failures": failures,
            "workloads": {w.name: report.workload_json(w) for w in results},
            "batch_sweep": sweep, "ops": ops_group.ops_json(op_results)})

