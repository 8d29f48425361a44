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


def plot(results: list[WorkloadResult], path: str) -> None:
    """Grouped bars: median us per backward, one group per workload, IQR as error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    measured = {n for w in results for n, r in w.results.items() if r.samples_us}
    systems = [n for n in ALL_SYSTEMS if n in measured]  # aliases would repeat a bar
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(results) + 2), 4.5))
    width = 0.8 / max(len(systems), 1)
    for i, name in enumerate(systems):
        xs, ys, errs = _bars(results, name)
        ax.bar([x + (i - (len(systems) - 1) / 2) * width for x in xs], ys, width, yerr=errs,
               label=name, capsize=2)
    all_medians = [m for w in results for m in medians(w).values()]
    if all_medians and max(all_medians) / min(all_medians) > LOG_SCALE_SPREAD:
        ax.set_yscale("log")
    ax.set_xticks(range(len(results)), [w.name for w in results])
    ax.set_ylabel("us per backward (median)")
    ax.set_title("backward-only time per system (lower is better)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _bars(results: list[WorkloadResult], name: str
          ) -> tuple[list[int], list[float], list[list[float]]]:
    """x positions, medians and [below, above] IQR error lengths of one system's bars."""
    xs, ys, lo, hi = [], [], [], []
    for x, w in enumerate(results):
        r = w.results.get(name)
        if r is None or not r.samples_us:
            continue
        s = summarize(r.samples_us)
        xs.append(x)
        ys.append(s["median_us"])
        lo.append(s["median_us"] - s["q1_us"])
        hi.append(s["q3_us"] - s["median_us"])
    return xs, ys, [lo, hi]
