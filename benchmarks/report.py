"""Reporting: the terminal table, the JSON document and the PNG bar chart.

>>> ratio(200.0, 100.0)
'2.00x'
"""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any, TextIO

import jax
import jaxlib
import numpy as np

from .measure import WorkloadResult, summarize
from .systems import ALL_SYSTEMS, REFERENCE

LOG_SCALE_SPREAD = 20.0  # plot on a log axis when medians span more than this factor


def environment(device: jax.Device) -> dict[str, Any]:
    """What the numbers depend on: versions, device, CPUs, XLA_FLAGS, machine load."""
    env = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
           "python": platform.python_version(), "machine": platform.machine(),
           "device": str(device), "platform": device.platform, "cpu_count": os.cpu_count(),
           "cpus_usable": len(os.sched_getaffinity(0)),
           "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""), "loadavg_at_start": os.getloadavg(),
           "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    try:
        import torch
        env |= {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    except ImportError:
        env["torch"] = None
    return env


def ratio(value: float | None, ref: float | None) -> str:
    """``value / ref`` as ``"2.00x"`` (more than 1: slower than the reference)."""
    return f"{value / ref:.2f}x" if value and ref else "-"


def medians(w: WorkloadResult) -> dict[str, float]:
    """Median microseconds of each measured system (aliases resolved)."""
    out = {n: summarize(r.samples_us)["median_us"] for n, r in w.results.items() if r.samples_us}
    out |= {a: out[t] for a, t in w.aliases.items() if t in out}
    return out


_HEADER = ("workload", "system", "median us", "IQR us", "first ms", "/jax-floor",
           "/acg-eager", "/torch-eager", "grads / note")
_BLANK = ("",) * 5


def _rows(w: WorkloadResult) -> list[tuple[str, ...]]:
    med, rows = medians(w), []
    for name, r in w.results.items():
        if r.error:
            rows.append((w.name, name, "ERROR", *_BLANK, r.error))
            continue
        s = summarize(r.samples_us)
        first = f"{r.first_us / 1e3:.1f}" if r.first_us is not None else "-"
        rows.append((w.name, name, f"{s['median_us']:.1f}", f"{s['iqr_us']:.1f}", first,
                     ratio(s["median_us"], med.get("jax-floor")),
                     ratio(s["median_us"], med.get(REFERENCE)),
                     ratio(s["median_us"], med.get("torch-eager")), r.grad_check or "-"))
    rows += [(w.name, a, "alias", *_BLANK, f"= {t} (no hooks: the same graph)")
             for a, t in w.aliases.items()]
    rows += [(w.name, n, "skipped", *_BLANK, why) for n, why in w.skipped.items()]
    return rows


def print_table(results: list[WorkloadResult], out: TextIO) -> None:
    """Backward time per system per workload, with ratios to the reference systems."""
    rows = [_HEADER] + [row for w in results for row in _rows(w)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER) - 1)] + [0]
    print("\nbackward only, median over timed reps (ratios: time / reference time, >1 = slower)",
          file=out)
    for row in rows:
        print("  ".join(c.rjust(wd) if 2 <= i < len(widths) - 1 else c.ljust(wd)
                        for i, (c, wd) in enumerate(zip(row, widths))).rstrip(), file=out)


def print_sweep(sweep: dict[str, list[dict[str, Any]]], out: TextIO) -> None:
    """Captures and compiles after each batch size (cumulative, one cache from reset)."""
    for name, rows in sweep.items():
        print(f"\nbatch-size sweep, {name} (acg-compiled; counters cumulative since reset)",
              file=out)
        print("  batch  captures  compiles  cache_hits  first ms  second ms", file=out)
        for r in rows:
            print(f"  {r['batch']:5d}  {r['captures']:8d}  {r['compiles']:8d}  "
                  f"{r['cache_hits']:10d}  {r['first_backward_us'] / 1e3:8.1f}  "
                  f"{r['second_backward_us'] / 1e3:9.2f}", file=out)


def workload_json(w: WorkloadResult) -> dict[str, Any]:
    systems = {n: r.to_json() for n, r in w.results.items()}
    systems |= {a: {**systems[t], "alias_of": t} for a, t in w.aliases.items() if t in systems}
    return {"sizes": w.sizes, "systems": systems, "skipped": w.skipped,
            "acg_counters_timed": w.acg_counters_timed, "notes": w.notes}


def write_json(path: str, doc: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1, default=str))


Panel = tuple[str, list[str], list[tuple[str, dict[str, list[float]]]]]


def _panel(title: str, order: tuple[str, ...], groups: list[tuple[str, dict[str, list[float]]]]
           ) -> Panel:
    """(title, systems in plotting order, [(workload, system -> samples)])."""
    measured = {n for _, by in groups for n, v in by.items() if v}
    return title, [n for n in order if n in measured], groups


def plot(results: list[WorkloadResult], path: str, step: list[Any] = ()) -> None:
    """Grouped bars, one group per workload, IQR as error bars: the backward group, and
    the step group in a second panel when it ran."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from .step import SYSTEMS as STEP_SYSTEMS
    panels = [_panel("backward only (us per backward, lower is better)", ALL_SYSTEMS,
                     [(w.name, {n: r.samples_us for n, r in w.results.items()})
                      for w in results])] if results else []
    if step:
        panels.append(_panel("whole step: forward + backward + SGD (us per step)",
                             tuple(STEP_SYSTEMS),
                             [(w.name, {n: r.step_us for n, r in w.results.items()})
                              for w in step]))
    widest = max(len(p[2]) for p in panels)
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(max(6.0, 1.8 * widest + 2), 4.5 * len(panels)))
    for ax, panel in zip(axes[:, 0], panels):
        _draw(ax, *panel)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _draw(ax: Any, title: str, systems: list[str],
          groups: list[tuple[str, dict[str, list[float]]]]) -> None:
    width = 0.8 / max(len(systems), 1)
    all_medians = []
    for i, name in enumerate(systems):
        xs, ys, errs = _bars(groups, name)
        all_medians += ys
        ax.bar([x + (i - (len(systems) - 1) / 2) * width for x in xs], ys, width, yerr=errs,
               label=name, capsize=2)
    if all_medians and max(all_medians) / min(all_medians) > LOG_SCALE_SPREAD:
        ax.set_yscale("log")
    ax.set_xticks(range(len(groups)), [g[0] for g in groups])
    ax.set_ylabel("us (median)")
    ax.set_title(title)
    ax.legend(fontsize="small")


def _bars(groups: list[tuple[str, dict[str, list[float]]]], name: str
          ) -> tuple[list[int], list[float], list[list[float]]]:
    """x positions, medians and [below, above] IQR error lengths of one system's bars."""
    xs, ys, lo, hi = [], [], [], []
    for x, (_, by) in enumerate(groups):
        samples = by.get(name)
        if not samples:
            continue
        s = summarize(samples)
        xs.append(x)
        ys.append(s["median_us"])
        lo.append(s["median_us"] - s["q1_us"])
        hi.append(s["q3_us"] - s["median_us"])
    return xs, ys, [lo, hi]


# -- the step group -------------------------------------------------------------------------

_STEP_HEADER = ("workload", "system", "step us", "IQR us", "forward us", "first ms",
                "/jax-floor", "/torch-eager", "grads / note")


def step_medians(w: Any) -> dict[str, float]:
    return {n: summarize(r.step_us)["median_us"] for n, r in w.results.items() if r.step_us}


def _step_rows(w: Any) -> list[tuple[str, ...]]:
    med, rows = step_medians(w), []
    for name, r in w.results.items():
        if r.error or not r.step_us:
            rows.append((w.name, name, "ERROR", *_BLANK, r.error or "no samples"))
            continue
        s, f = summarize(r.step_us), summarize(r.forward_us)
        first = f"{r.first_us / 1e3:.1f}" if r.first_us is not None else "-"
        rows.append((w.name, name, f"{s['median_us']:.1f}", f"{s['iqr_us']:.1f}",
                     f"{f['median_us']:.1f}", first, ratio(s["median_us"], med.get("jax-floor")),
                     ratio(s["median_us"], med.get("torch-eager")), r.grad_check or "-"))
    return rows + [(w.name, n, "skipped", *_BLANK, why) for n, why in w.skipped.items()]


def print_step_table(results: list[Any], skipped: dict[str, str], out: TextIO) -> None:
    """Whole-step and forward medians per system per workload, ratios to the floor."""
    rows = [_STEP_HEADER] + [row for w in results for row in _step_rows(w)]
    rows += [(name, "-", "skipped", *_BLANK, why) for name, why in skipped.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_STEP_HEADER) - 1)] + [0]
    print("\nwhole training step (forward + backward + SGD step), median over timed reps "
          "(ratios: step time / reference step time)", file=out)
    for row in rows:
        print("  ".join(c.rjust(wd) if 2 <= i < len(widths) - 1 else c.ljust(wd)
                        for i, (c, wd) in enumerate(zip(row, widths))).rstrip(), file=out)


def print_step_sweep(sweep: dict[str, list[dict[str, Any]]], out: TextIO) -> None:
    """Per workload/system: counters after each batch size (one cache from reset)."""
    for key, rows in sweep.items():
        print(f"\nstep batch-size sweep, {key} (counters cumulative since reset)", file=out)
        print("  batch  captures  compiles  compile_traces  first ms  second ms", file=out)
        for r in rows:
            print(f"  {r['batch']:5d}  {r.get('captures', 0):8d}  {r.get('compiles', 0):8d}  "
                  f"{r.get('compile_traces', 0):14d}  {r['first_step_us'] / 1e3:8.1f}  "
                  f"{r['second_step_us'] / 1e3:9.2f}", file=out)


def step_json(w: Any) -> dict[str, Any]:
    return {"sizes": w.sizes, "systems": {n: r.to_json() for n, r in w.results.items()},
            "skipped": w.skipped, "acg_counters_timed": w.acg_counters_timed}
