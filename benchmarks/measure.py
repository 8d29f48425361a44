"""Timing one workload: first backward, gradient check, then interleaved timed reps.

>>> summarize([3.0, 1.0, 2.0, 4.0])["median_us"]
2.5
"""
from __future__ import annotations

import gc
import random
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

import jax
import numpy as np

import autograd_compile as acg

from . import systems as S
from .workloads import Workload

GRAD_RTOL = 1e-4
# rtol alone cannot judge float32 entries that are ~0: two correct orders of summation
# differ there by rounding (attention's key bias has an exactly-zero gradient that comes
# out as +-1e-9 noise). So entries also pass within this fraction of the workload's
# largest reference gradient entry.
GRAD_ATOL_FRACTION = 1e-6


class Progress(Protocol):
    def update(self, n: int = 1) -> Any: ...


@dataclass
class SystemResult:
    """Everything measured for one system on one workload."""

    name: str
    samples_us: list[float] = field(default_factory=list)
    first_us: float | None = None
    grad_check: str | None = None  # "ok", "reference" or what differed
    hook_calls_per_backward: int | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        stats = summarize(self.samples_us) if self.samples_us else {}
        return {**stats, "first_backward_us": self.first_us, "grad_check": self.grad_check,
                "hook_calls_per_backward": self.hook_calls_per_backward, "error": self.error,
                "info": self.info, "samples_us": self.samples_us}


@dataclass
class WorkloadResult:
    """One workload's results, plus the systems that were skipped or aliased."""

    name: str
    sizes: dict[str, int]
    results: dict[str, SystemResult] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    acg_counters_timed: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def failures(self) -> list[str]:
        """Errors and failed gradient checks, one line each."""
        out = [f"{self.name}/{r.name}: {r.error}" for r in self.results.values() if r.error]
        return out + [f"{self.name}/{r.name}: gradients differ from {S.REFERENCE}: {r.grad_check}"
                      for r in self.results.values() if r.grad_check not in (None, "ok",
                                                                             "reference")]


def summarize(samples_us: list[float]) -> dict[str, float]:
    """Median, quartiles, IQR, min and mean of the samples (in microseconds)."""
    q1, med, q3 = np.percentile(samples_us, [25, 50, 75])
    return {"median_us": float(med), "q1_us": float(q1), "q3_us": float(q3),
            "iqr_us": float(q3 - q1), "min_us": float(np.min(samples_us)),
            "mean_us": float(np.mean(samples_us)), "n": len(samples_us)}


def time_backward(system: S.System) -> float:
    """Prepare (untimed), then the backward alone, in microseconds; gc off as in timeit."""
    system.prepare()
    gc.disable()
    try:
        start = time.perf_counter()
        system.backward()
        return (time.perf_counter() - start) * 1e6
    finally:
        gc.enable()


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first_line}{where}"


def _first_backward(system: S.System, result: SystemResult) -> dict[str, np.ndarray]:
    """Time a first backward from empty caches; return its gradients."""
    system.reset_caches()
    calls = system.hook_calls()
    result.first_us = time_backward(system)
    if calls is not None:
        result.hook_calls_per_backward = system.hook_calls() - calls
    return system.grads()


def compare_grads(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> str:
    """"ok", or the first parameter whose gradient is not allclose to the reference."""
    if set(actual) != set(expected):
        return f"parameters {sorted(actual)} != {sorted(expected)}"
    scale = max(float(np.max(np.abs(ref), initial=0.0)) for ref in expected.values())
    for k, ref in expected.items():
        try:
            np.testing.assert_allclose(actual[k], ref, rtol=GRAD_RTOL,
                                       atol=GRAD_ATOL_FRACTION * scale)
        except AssertionError as exc:
            detail = " ".join(line.strip() for line in str(exc).splitlines()[3:6])
            return f"{k}: {detail}"
    return "ok"


def _check(results: dict[str, SystemResult], grads: dict[str, dict[str, np.ndarray]]) -> None:
    """Compare every system's first gradients and hook calls with the reference's."""
    ref = grads.get(S.REFERENCE)
    for name, r in results.items():
        if name == S.REFERENCE:
            r.grad_check = "reference"
        elif ref is not None and name in grads:
            r.grad_check = compare_grads(grads[name], ref)
            want = results[S.REFERENCE].hook_calls_per_backward
            if r.grad_check == "ok" and r.hook_calls_per_backward not in (None, want):
                r.grad_check = (f"post-accumulate-grad hook calls "
                                f"{r.hook_calls_per_backward} != {want}")


def _build(names: list[str], w: Workload, device: jax.Device, torch_backend: str,
           results: dict[str, SystemResult]) -> list[S.System]:
    built = []
    for name in names:
        results[name] = SystemResult(name)
        try:
            built.append(S.make(name, w, device, torch_backend))
        except Exception as exc:  # noqa: BLE001 - a broken system is reported, not fatal
            results[name].error = _error(exc)
    return built


def _first_and_check(systems: list[S.System], results: dict[str, SystemResult],
                     bar: Progress) -> list[S.System]:
    """First backward of each system, then the gradient check; drop systems that fail."""
    grads, ok = {}, []
    for s in systems:
        try:
            grads[s.name] = _first_backward(s, results[s.name])
            ok.append(s)
        except Exception as exc:  # noqa: BLE001
            results[s.name].error = f"first backward: {_error(exc)}"
        bar.update(1)
    _check(results, grads)
    return ok


def rep_order(alive: list, rep: int) -> list:
    """The systems of one rep in a shuffled order (seeded by ``rep``, so runs repeat): over
    the reps each system follows every other one alike. A fixed rotation always put the
    same system after the same neighbour, whose wake (torch's thread pool winding down,
    its allocator, the caches it evicted) then fell on that one system only."""
    return random.Random(rep).sample(alive, len(alive))


def _interleaved(alive: list[S.System], results: dict[str, SystemResult], reps: int,
                 record: bool, bar: Progress) -> None:
    """Each rep runs every system once, in a shuffled order (:func:`rep_order`); a system
    that raises is dropped from ``alive``. ``record``: keep the times (False for warm-up)."""
    for rep in range(reps):
        for s in rep_order(alive, rep):
            try:
                t = time_backward(s)
            except Exception as exc:  # noqa: BLE001
                results[s.name].error = f"rep {rep}: {_error(exc)}"
                alive.remove(s)
                continue
            if record:
                results[s.name].samples_us.append(t)
            bar.update(1)


def measure(w: Workload, names: list[str], device: jax.Device, reps: int, warmup: int,
            torch_backend: str, bar: Progress) -> WorkloadResult:
    """Build the systems, time their first backward, check gradients, time ``reps`` reps."""
    run, skipped, aliases = S.plan(w, names, device)
    out = WorkloadResult(w.name, w.sizes, skipped=skipped, aliases=aliases, notes=list(w.notes))
    with jax.default_device(device):
        systems = _first_and_check(_build(run, w, device, torch_backend, out.results),
                                   out.results, bar)
        _interleaved(systems, out.results, warmup, False, bar)
        before = dict(acg.compiled_autograd.counters)
        _interleaved(systems, out.results, reps, True, bar)
        after = dict(acg.compiled_autograd.counters)
    out.acg_counters_timed = {k: after[k] - before.get(k, 0) for k in after}
    for s in systems:
        out.results[s.name].info |= s.info()
    return out


def runs_per_workload(n_systems: int, warmup: int, reps: int) -> int:
    """Backward calls one workload makes (for the progress bar)."""
    return n_systems * (1 + warmup + reps)
