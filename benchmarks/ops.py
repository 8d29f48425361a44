"""The ``ops`` group: eager overhead of one recorded op, against the raw JAX call.

What is timed is a loop of ``calls`` op calls on small inputs (so Python work, not
arithmetic, dominates), then one wait for the last result; the figure is the loop
time divided by ``calls``. Systems, interleaved per rep in a rotated order:

- ``acg``: the op on ``acg`` tensors that do not require grad (dispatcher + kernel);
- ``acg-grad``: the same with inputs that require grad (adds the autograd node);
- ``jax-jit``: the same computation as one ``jax.jit`` function on the raw arrays
  (the floor: JAX's own dispatch of one compiled program);
- ``torch`` and ``torch-grad``: PyTorch eager on CPU, when torch is importable.

``overhead`` in the table is ``acg - jax-jit``: what our Python layers add per op.

>>> OPS
('mul', 'tanh', 'matmul', 'linear')
"""
from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F

from .measure import summarize

OPS = ("mul", "tanh", "matmul", "linear")
SYSTEMS = ("acg", "acg-grad", "jax-jit", "torch", "torch-grad")
BATCH, WIDTH = 16, 64  # small: the op's arithmetic is a few microseconds
CALLS, SMOKE_CALLS = 200, 5

_ACG: dict[str, Callable[..., Any]] = {
    "mul": lambda x, w, b: x * x, "tanh": lambda x, w, b: x.tanh(),
    "matmul": lambda x, w, b: x @ w, "linear": F.linear,
}
_JAX: dict[str, Callable[..., Any]] = {
    "mul": lambda x, w, b: x * x, "tanh": lambda x, w, b: jnp.tanh(x),
    "matmul": lambda x, w, b: x @ w, "linear": lambda x, w, b: x @ w.T + b,
}


@dataclass
class OpResult:
    """Per-call microseconds of every system on one op."""

    op: str
    samples_us: dict[str, list[float]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def medians(self) -> dict[str, float]:
        return {s: summarize(v)["median_us"] for s, v in self.samples_us.items() if v}


def _data(device: jax.Device) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    shapes = ((BATCH, WIDTH), (WIDTH, WIDTH), (WIDTH,))
    return tuple(rng.standard_normal(s).astype(np.float32) for s in shapes)


def _callables(op: str, device: jax.Device, torch_ok: bool
               ) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    """system -> (one op call, wait for its result)."""
    arrays = jax.device_put(_data(device), device)
    wait = jax.block_until_ready
    plain = tuple(acg.tensor(a) for a in arrays)
    grad = tuple(acg.tensor(a, requires_grad=True) for a in arrays)
    jitted = jax.jit(_JAX[op])
    out = {"acg": (lambda: _ACG[op](*plain), lambda t: wait(t.__jax_array__())),
           "acg-grad": (lambda: _ACG[op](*grad), lambda t: wait(t.__jax_array__())),
           "jax-jit": (lambda: jitted(*arrays), wait)}
    if torch_ok:
        out |= _torch_callables(op)
    return out


def _torch_callables(op: str) -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import torch
    import torch.nn.functional as TF
    fns = {"mul": lambda x, w, b: x * x, "tanh": lambda x, w, b: x.tanh(),
           "matmul": lambda x, w, b: x @ w, "linear": TF.linear}
    plain = tuple(torch.from_numpy(a.copy()) for a in _data(jax.devices("cpu")[0]))
    grad = tuple(t.clone().requires_grad_(True) for t in plain)
    return {"torch": (lambda: fns[op](*plain), lambda t: None),
            "torch-grad": (lambda: fns[op](*grad), lambda t: None)}


def per_call_us(call: Callable[[], Any], wait: Callable[[Any], Any], calls: int) -> float:
    """Microseconds per call of a loop of ``calls`` calls (gc off, as in timeit)."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            out = call()
        wait(out)
        return (time.perf_counter() - start) / calls * 1e6
    finally:
        gc.enable()


def measure_op(op: str, device: jax.Device, reps: int, warmup: int, calls: int,
               torch_ok: bool) -> OpResult:
    """Warm every system (first calls compile), then ``reps`` interleaved timings."""
    systems = _callables(op, device, torch_ok)
    result = OpResult(op, {s: [] for s in systems})
    if not torch_ok:
        result.skipped = {s: "torch is not installed" for s in SYSTEMS if s.startswith("torch")}
    names = list(systems)
    for rep in range(warmup + reps):
        k = rep % len(names)
        for name in names[k:] + names[:k]:
            t = per_call_us(*systems[name], calls)
            if rep >= warmup:
                result.samples_us[name].append(t)
    return result


def run_ops(device: jax.Device, reps: int, warmup: int, smoke: bool,
            torch_ok: bool) -> list[OpResult]:
    """Every op of :data:`OPS`; torch columns only on a CPU device."""
    calls = SMOKE_CALLS if smoke else CALLS
    torch_ok = torch_ok and device.platform == "cpu"
    with jax.default_device(device):
        return [measure_op(op, device, reps, warmup, calls, torch_ok) for op in OPS]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def print_ops(results: list[OpResult], out: TextIO) -> None:
    """One row per op: median us per call of each system, overhead and ratios."""
    print(f"\neager overhead per op call, inputs [{BATCH}, {WIDTH}] (median us per call; "
          "overhead = acg - jax-jit)", file=out)
    head = ("op", "acg", "acg-grad", "jax-jit", "torch", "torch-grad", "overhead",
            "grad overhead", "acg/jax", "acg-grad/torch-grad")
    rows = [head]
    for r in results:
        m = r.medians()
        a, g, j, t, tg = (m.get(s) for s in SYSTEMS)
        rows.append((r.op, _fmt(a), _fmt(g), _fmt(j), _fmt(t), _fmt(tg),
                     _fmt(a - j if a and j else None), _fmt(g - j if g and j else None),
                     f"{a / j:.2f}x" if a and j else "-", f"{g / tg:.2f}x" if g and tg else "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))), file=out)


def ops_json(results: list[OpResult]) -> dict[str, Any]:
    return {r.op: {"systems": {s: {**summarize(v), "samples_us": v}
                               for s, v in r.samples_us.items() if v},
                   "skipped": r.skipped, "shapes": {"x": [BATCH, WIDTH], "w": [WIDTH, WIDTH]}}
            for r in results}
