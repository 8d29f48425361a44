"""Eager overhead of the heavy NN ops (attention, conv2d) against the raw jitted JAX call.

Each system runs ``calls`` op calls in a loop and waits for the last result; a sample is
the loop time over ``calls``; the figure is the median of ``reps`` samples (systems are
interleaved per rep so machine load hits them alike). Systems:

- ``jax-jit``: the same computation written in plain jnp, one ``jax.jit`` function;
- ``kernel-jit``: our own JAX kernel of the op, jitted, on raw arrays (the floor for
  ``acg``: the difference is what the dispatcher, autograd and Tensor layers add);
- ``acg``: ``F.<op>`` on acg tensors that do not require grad (dispatcher + jitted kernel);
- ``acg-grad``: the same on inputs requiring grad (adds recording the autograd node).

Run: ``python -m autograd_compile.benchmarks.nn_ops [--reps N] [--calls N]``.

>>> sorted(CASES)
['conv2d', 'sdpa']
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.kernels import attention, conv


def _sdpa_jax(q: Any, k: Any, v: Any) -> Any:
    s = q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = jnp.where(jnp.tril(jnp.ones(s.shape[-2:], bool)), s, -jnp.inf)
    return jax.nn.softmax(s, -1) @ v


def _conv_jax(x: Any, w: Any, b: Any) -> Any:
    out = jax.lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)],
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return out + b[:, None, None]


# name: (input shapes, acg call, plain jax call, our kernel); small inputs: overhead shows
CASES: dict[str, tuple[list[tuple], Callable, Callable, Callable]] = {
    "sdpa": ([(2, 4, 16, 16)] * 3,
             lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), _sdpa_jax,
             lambda q, k, v: attention._sdpa(q, k, v, None, None, 0.0, True, None)),
    "conv2d": ([(4, 8, 16, 16), (16, 8, 3, 3), (16,)],
               lambda x, w, b: F.conv2d(x, w, b, padding=1), _conv_jax,
               lambda x, w, b: conv._conv(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1)),
}


def _sample(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    out = None
    for _ in range(calls):
        out = fn()
    out = out[0] if isinstance(out, tuple) else out
    jax.block_until_ready(jnp.asarray(out))
    return (time.perf_counter() - start) / calls * 1e6


def measure(name: str, reps: int = 30, calls: int = 50) -> dict[str, float]:
    """Median microseconds per call of each system on one case."""
    shapes, ours, theirs, kernel = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    raw = [jnp.asarray(a) for a in arrays]
    plain = [acg.tensor(a) for a in arrays]
    grad = [acg.tensor(a, requires_grad=True) for a in arrays]
    jitted, ours_jitted = jax.jit(theirs), jax.jit(kernel)
    systems = {"jax-jit": lambda: jitted(*raw), "kernel-jit": lambda: ours_jitted(*raw),
               "acg": lambda: ours(*plain),
               "acg-grad": lambda: ours(*grad)}
    samples: dict[str, list[float]] = {s: [] for s in systems}
    for fn in systems.values():  # warm-up: compiles
        _sample(fn, 3)
    for _ in range(reps):
        for s, fn in systems.items():
            samples[s].append(_sample(fn, calls))
    return {s: statistics.median(v) for s, v in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    print(f"{'op':8} {'jax-jit':>8} {'kernel-jit':>11} {'acg':>8} {'acg-grad':>9} "
          f"{'overhead':>9}  (us per call, median; overhead = acg - kernel-jit)")
    for name in CASES:
        m = measure(name, args.reps, args.calls)
        print(f"{name:8} {m['jax-jit']:8.1f} {m['kernel-jit']:11.1f} {m['acg']:8.1f} "
              f"{m['acg-grad']:9.1f} {m['acg'] - m['kernel-jit']:9.1f}")


if __name__ == "__main__":
    main()
