"""Eager cost of ``F.conv_transpose2d`` and ``F.interpolate`` against the jitted JAX call.

Same method as :mod:`.nn_ops` (interleaved reps of a loop of calls, waiting for the last
result); the figure is the fastest rep, as on a shared, loaded machine the median mostly
measures the other tenants (``--median`` prints medians instead). Systems per case:

- ``jax-jit``: the computation in plain JAX (``lax.conv_general_dilated`` with an input
  dilation and a flipped kernel; ``jax.image.resize``; ``jnp.repeat``), one ``jax.jit``;
- ``kernel-jit``: our own kernel of the op on raw arrays, jitted (bicubic has no plain-JAX
  twin with PyTorch's a = -0.75, so this is its floor);
- ``acg``: ``F.<op>`` on acg tensors without grad; ``acg-grad``: inputs requiring grad.

``ratio`` is acg over jax-jit (kernel-jit where there is no jax-jit); the target is <= 1.2.
Each case first checks that the systems agree. Run:
``python -m benchmarks.vision_ops [--reps N] [--calls N]``.

>>> sorted(CASES)
['bicubic', 'bilinear', 'conv_transpose2d', 'nearest', 'nearest-large']
"""
from __future__ import annotations

import argparse
import statistics
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.kernels import vision

from .nn_ops import _sample


def _convt_jax(x: Any, w: Any, b: Any) -> Any:
    """PyTorch's conv_transpose2d(stride=2, padding=1) with a [C_in, C_out, 4, 4] kernel, as
    the forward convolution of the 2-dilated input with the flipped, transposed kernel."""
    k, p = w.shape[-1], 1
    rhs = jnp.flip(jnp.swapaxes(w, 0, 1), (2, 3))
    out = jax.lax.conv_general_dilated(x, rhs, (1, 1), [(k - 1 - p, k - 1 - p)] * 2,
                                       lhs_dilation=(2, 2),
                                       dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return out + b[:, None, None]


def _resize(method: str) -> Callable:
    return lambda x: jax.image.resize(x, x.shape[:2] + (2 * x.shape[2], 2 * x.shape[3]), method)


def _nearest_jax(x: Any) -> Any:
    return jnp.repeat(jnp.repeat(x, 2, 2), 2, 3)


def _upsample_kernel(mode: str) -> Callable:
    return lambda x: vision._upsample(x, [2 * x.shape[2], 2 * x.shape[3]], mode, False,
                                      vision.encode_scales([2.0, 2.0]))


# name: (input shapes, acg call, plain jax call or None, our kernel); DCGAN-sized inputs
CASES: dict[str, tuple[list[tuple], Callable, Callable | None, Callable]] = {
    "conv_transpose2d": (
        [(8, 32, 16, 16), (32, 16, 4, 4), (16,)],
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1), _convt_jax,
        lambda x, w, b: vision._convt(x, w, b, (2, 2), (1, 1), (0, 0), (1, 1), 1)),
    "nearest": ([(8, 16, 32, 32)], lambda x: F.interpolate(x, scale_factor=2), _nearest_jax,
                _upsample_kernel("nearest")),
    "nearest-large": ([(8, 16, 64, 64)], lambda x: F.interpolate(x, scale_factor=2),
                      _nearest_jax, _upsample_kernel("nearest")),
    "bilinear": ([(8, 16, 32, 32)],
                 lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                 _resize("bilinear"), _upsample_kernel("linear")),
    "bicubic": ([(8, 16, 32, 32)], lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"),
                None, _upsample_kernel("cubic")),
}


def measure(name: str, reps: int = 30, calls: int = 50,
            pick: Callable = min) -> dict[str, float]:
    """Microseconds per call of each system on one case (``pick`` of the reps: min or
    median), after checking that the systems agree."""
    shapes, ours, theirs, kernel = CASES[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    raw = [jnp.asarray(a) for a in arrays]
    plain = [acg.tensor(a) for a in arrays]
    grad = [acg.tensor(a, requires_grad=True) for a in arrays]
    systems = {"kernel-jit": (lambda f: lambda: f(*raw))(jax.jit(kernel)),
               "acg": lambda: ours(*plain), "acg-grad": lambda: ours(*grad)}
    if theirs is not None:
        systems["jax-jit"] = (lambda f: lambda: f(*raw))(jax.jit(theirs))
    reference = np.asarray(systems.get("jax-jit", systems["kernel-jit"])())
    for s, fn in systems.items():  # warm-up (compiles) and agreement
        out = fn()
        out = out.detach().numpy() if isinstance(out, acg.Tensor) else np.asarray(out)
        np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4, err_msg=f"{name}: {s}")
        _sample(fn, 3)
    samples: dict[str, list[float]] = {s: [] for s in systems}
    for _ in range(reps):
        for s, fn in systems.items():
            samples[s].append(_sample(fn, calls))
    return {s: pick(v) for s, v in samples.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--median", action="store_true", help="median of reps, not the fastest")
    args = parser.parse_args(argv)
    pick = statistics.median if args.median else min
    print(f"device: {jax.devices()[0].device_kind}")
    print(f"{'op':17} {'jax-jit':>8} {'kernel-jit':>11} {'acg':>8} {'acg-grad':>9} "
          f"{'ratio':>6}  (us per call, {pick.__name__} of {args.reps} reps; "
          f"ratio = acg / jax-jit)")
    for name in CASES:
        m = measure(name, args.reps, args.calls, pick)
        floor = m.get("jax-jit", m["kernel-jit"])
        jit = f"{m['jax-jit']:8.1f}" if "jax-jit" in m else f"{'-':>8}"
        print(f"{name:17} {jit} {m['kernel-jit']:11.1f} {m['acg']:8.1f} {m['acg-grad']:9.1f} "
              f"{m['acg'] / floor:6.2f}")


if __name__ == "__main__":
    main()
