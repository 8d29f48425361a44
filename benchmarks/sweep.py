"""Captures and compiles over a batch-size sweep: one capture should serve every size."""
from __future__ import annotations

from typing import Any

import jax

import autograd_compile as acg

from .measure import time_backward
from .systems import AcgSystem
from .workloads import build

SWEEP_BATCHES = (16, 32, 48, 64)
SWEEP_WORKLOADS = ("mlp", "mlp_small")


def batch_sweep(name: str, smoke: bool, device: jax.Device) -> list[dict[str, Any]]:
    """One cache from ``reset()``; two backwards per batch size; counters after each.

    Sizes are symbolic from the first capture, so ``captures`` should stay 1; XLA compiles
    the first batch size, and a later size runs op by op (``eager_shapes``) until its calls
    have cost a compile (``backends.ops.Tiered``): on a CPU, two calls of a small model never do.
    """
    acg.compiled_autograd.reset()
    rows = []
    with jax.default_device(device):
        for batch in SWEEP_BATCHES:
            system = AcgSystem("acg-compiled", build(name, smoke, batch), device)
            first, second = time_backward(system), time_backward(system)
            rows.append({"batch": batch, "first_backward_us": first,
                         "second_backward_us": second, **acg.compiled_autograd.counters})
    return rows
