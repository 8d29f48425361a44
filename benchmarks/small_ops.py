"""Small-op overhead (issue 19, item 3): microseconds per call of the ops an eager loop or
a data pipeline calls on small tensors, against PyTorch and numpy in the same process,
and where our time goes, layer by layer.

Run: ``python -m autograd_compile.benchmarks.small_ops [--calls N] [--repeat R] [--json P]``.

Per op, three figures:

- **per call**: the median over ``repeat`` loops of ``calls`` calls (gc off) of acg, torch
  (when installed) and numpy, and the ratios acg/torch and acg/numpy (the issue's target
  reads "within 3x of PyTorch", measured as a ratio to numpy in the same process, because
  the machine's speed changes between runs);
- **layers** (cProfile): the loop profiled (the shortest of three), each function's own
  time put in the layer of its file — ``method`` (tensor.py, kernels' Python surface:
  indexing, api, _methods, views ...), ``dispatch`` (autograd_compile/dispatch), ``autograd``
  (autograd_compile/autograd), ``kernel+jit`` (kernels/_jit.py, _defop.py: the per-op
  program lookup, plus the compiled program's C++ call, which cProfile counts in its
  caller), ``jax`` (jax's Python: conversions, jnp outside a program), ``other``
  (numpy, builtins, the rest) — as shares of the profiled time, and the number of
  kernel-program calls per op call;
- **direct** (single-op entries only): the same call entered at each layer — the Tensor
  method, the OpOverload (dispatcher), the Backend adapter (Tensor -> array), the kernel
  (kernels/_jit.py's ``run``), and a ``jax.jit`` of the raw kernel on the arrays (the
  floor).
  The differences are what each layer adds.

Numbers on a shared machine are noisy: compare ratios within one run.

>>> sorted(OPS)[:3]
['a * b', 'a * b (grad)', 'a.argmax(-1)']
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import sys
import time
from typing import Any, Callable, TextIO

import numpy as np

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}  # cpu: this process's CPU
# time (every thread), which a loaded shared machine disturbs less than the wall clock
CLOCK = ["wall"]  # the clock interleaved() reads; main's --clock sets it
LAYERS = ("method", "dispatch", "autograd", "kernel+jit", "jax", "other")


def _setup(lib: Any) -> dict[str, Callable[[], Any]]:
    """name -> a no-argument call, for ``lib`` = autograd_compile, torch or numpy."""
    is_np = lib is np
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((16, 64)).astype(np.float32)
    b_np = rng.standard_normal((16, 64)).astype(np.float32)
    conv = (lambda x: x.copy()) if is_np else (lambda x: lib.tensor(x))
    a, b = conv(a_np), conv(b_np)
    t = conv(np.arange(64, dtype=np.float32))
    y = conv(np.zeros(17, dtype=np.int64))
    ix = conv(np.array([3, 4, 5, 6, 7], dtype=np.int64))
    rows = [conv(np.full(17, i, dtype=np.int64)) for i in range(8)]
    s = conv(np.array(2.5, dtype=np.float32))
    long_ = np.int64 if is_np else lib.long
    cat = np.concatenate if is_np else lib.cat
    argmax = (lambda: a.argmax(-1)) if is_np else (lambda: a.argmax(-1))
    fns: dict[str, Callable[[], Any]] = {
        "t[3:20]": lambda: t[3:20],
        "t[7]": lambda: t[7],
        "y[5:] = -1": lambda: y.__setitem__(slice(5, None), -1),
        "y[1:6] = ix": lambda: y.__setitem__(slice(1, 6), ix),
        "a * b": lambda: a * b,
        "cat([a, b])": lambda: cat([a, b]),
        "a.argmax(-1)": argmax,
        "stack(8 x [17])": lambda: lib.stack(rows),
        "tensor(list5)": (lambda: np.array([3, 4, 5, 6, 7], dtype=np.int64)) if is_np
        else (lambda: lib.tensor([3, 4, 5, 6, 7], dtype=long_)),
        "zeros(17, long)": lambda: lib.zeros(17, dtype=long_),
        "item": lambda: s.item(),
        "tolist": lambda: ix.tolist(),
    }
    if not is_np:
        ag = lib.tensor(a_np, requires_grad=True)
        fns["a * b (grad)"] = lambda: ag * b
    return fns


OPS = tuple(_setup(np)) + ("a * b (grad)",)
# single-op entries: (op name in acg.ops.acg, its arguments from the setup's tensors)
_DIRECT = {"a * b": ("mul.Tensor", "ab"), "a.argmax(-1)": ("argmax", "a-1"),
           "cat([a, b])": ("cat", "[ab]")}


def per_call_us(fn: Callable[[], Any], calls: int, repeat: int) -> float:
    """Median over ``repeat`` loops of the per-call time of ``calls`` calls, gc off."""
    return interleaved({"fn": fn}, calls, repeat)["fn"]


def interleaved(fns: dict[str, Callable[[], Any]], calls: int, repeat: int) -> dict[str, float]:
    """:func:`per_call_us` of each function, their loops interleaved (load from other
    processes hits them alike)."""
    for fn in fns.values():
        for _ in range(min(calls, 20)):  # warm: the first calls compile
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    clock = CLOCKS[CLOCK[0]]
    gc.disable()
    try:
        for _ in range(repeat):
            for k, fn in fns.items():
                start = clock()
                for _ in range(calls):
                    fn()
                times[k].append((clock() - start) / calls * 1e6)
    finally:
        gc.enable()
    return {k: statistics.median(v) for k, v in times.items()}


def layer_of(filename: str, funcname: str) -> str:
    """The layer a profiled function belongs to, from its file."""
    f = filename.replace("\\", "/")
    if "/jax/" in f or "/jaxlib/" in f or "PjitFunction" in funcname or "jaxlib" in funcname:
        return "jax"
    if f.endswith(("kernels/_jit.py", "kernels/_defop.py")):
        return "kernel+jit"  # cProfile counts the compiled program's C++ call in its caller
    if "autograd_compile/dispatch/" in f:
        return "dispatch"
    if "autograd_compile/autograd/" in f:
        return "autograd"
    if "/kernels/" in f or "autograd_compile/" in f:
        return "method"
    return "other"


def _profile(fn: Callable[[], Any], calls: int) -> dict:
    # the run's clock; a loaded machine's descheduling lands on whatever function runs under
    # the wall clock, while the CPU clock's syscall per event inflates call-heavy layers a bit
    prof = cProfile.Profile(CLOCKS[CLOCK[0]])
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    return pstats.Stats(prof).stats  # type: ignore[attr-defined]


def layers(fn: Callable[[], Any], calls: int, tries: int = 3) -> tuple[dict[str, float], float]:
    """(share of profiled self time per layer, kernel-program calls per op call), from the
    least disturbed (shortest) of ``tries`` profiled loops."""
    best: tuple[float, dict[str, float], float] | None = None
    for _ in range(tries):
        shares = dict.fromkeys(LAYERS, 0.0)
        runs = 0
        for (filename, _, funcname), (_, ncalls, tottime, _, _) in _profile(fn, calls).items():
            shares[layer_of(filename, funcname)] += tottime
            if filename.endswith("kernels/_jit.py") and funcname == "run":
                runs += ncalls
        total = sum(shares.values()) or 1.0
        if best is None or total < best[0]:
            best = (total, {k: v / total for k, v in shares.items()}, runs / calls)
    return best[1], best[2]


def direct_layers(name: str, calls: int, repeat: int) -> dict[str, float]:
    """The op entered at each layer (see the module docstring), median us per call."""
    import jax

    import autograd_compile as acg
    from autograd_compile.dispatch.keys import DispatchKey
    from autograd_compile.tensor import _backend_call
    opname, argspec = _DIRECT[name]
    rng = np.random.default_rng(0)
    a = acg.tensor(rng.standard_normal((16, 64)).astype(np.float32))
    b = acg.tensor(rng.standard_normal((16, 64)).astype(np.float32))
    args = {"ab": (a, b), "a-1": (a, -1), "[ab]": ([a, b],)}[argspec]
    arrays = tuple([x._data for x in v] if isinstance(v, list) else getattr(v, "_data", v)
                   for v in args)
    op = getattr(acg.ops.acg, opname.split(".")[0])
    op = getattr(op, opname.split(".")[1]) if "." in opname else getattr(op, "default", op)
    kernel = op.table[DispatchKey.Backend].kernel.fn
    raw = kernel.__wrapped__
    statics = tuple(i for i, v in enumerate(arrays) if isinstance(v, int))
    floor = jax.jit(raw, static_argnums=statics)
    method = _setup(acg)[name]
    return interleaved({"method": method, "dispatcher": lambda: op(*args),
                        "backend adapter": lambda: _backend_call(op, kernel, args, {}),
                        "kernel run": lambda: kernel(*arrays),
                        "jax.jit floor": lambda: floor(*arrays)}, calls, repeat)


def measure(calls: int = 300, repeat: int = 7, torch_ok: bool | None = None,
            profile: bool = True) -> dict[str, dict[str, Any]]:
    """Every op of :data:`OPS`: per-call medians, layer shares, direct layers."""
    import autograd_compile as acg
    if torch_ok is None:
        from .systems import torch_available
        torch_ok = torch_available()
    libs: dict[str, Any] = {"acg": acg, "numpy": np}
    if torch_ok:
        import torch
        libs["torch"] = torch
    fns = {k: _setup(lib) for k, lib in libs.items()}
    out: dict[str, dict[str, Any]] = {}
    for name in OPS:
        row: dict[str, Any] = interleaved({k: f[name] for k, f in fns.items() if name in f},
                                          calls, repeat)
        if profile:
            row["layers"], row["kernel_calls"] = layers(fns["acg"][name], calls)
        if name in _DIRECT:
            row["direct"] = direct_layers(name, calls, repeat)
        out[name] = row
    return out


def _f(v: float | None, ratio: bool = False) -> str:
    return "-" if v is None else (f"{v:.1f}x" if ratio else f"{v:.2f}")


def print_table(rows: dict[str, dict[str, Any]], out: TextIO) -> None:
    """The per-call table, the layer shares, and the direct-entry figures."""
    print(f"small ops: median us per call, {CLOCK[0]} clock (shared machine: compare ratios "
          "within a run)", file=out)
    print(f"  {'op':<18}{'acg':>9}{'torch':>9}{'numpy':>9}{'acg/torch':>11}{'acg/numpy':>11}"
          f"{'torch/np':>10}  kernels  layers (share of acg's profiled time)", file=out)
    for name, r in rows.items():
        a, t, n = r.get("acg"), r.get("torch"), r.get("numpy")
        shares = " ".join(f"{k} {v:.0%}" for k, v in r.get("layers", {}).items() if v >= 0.005)
        kc = f"{r['kernel_calls']:.0f}" if "kernel_calls" in r else "-"
        print(f"  {name:<18}{_f(a):>9}{_f(t):>9}{_f(n):>9}"
              f"{_f(a / t if a and t else None, True):>11}"
              f"{_f(a / n if a and n else None, True):>11}"
              f"{_f(t / n if t and n else None, True):>10}  {kc:>7}  {shares}", file=out)
    direct = {k: r["direct"] for k, r in rows.items() if "direct" in r}
    if direct:
        print("\n  entered at each layer (median us per call; each row includes the ones "
              "below it)", file=out)
        for name, d in direct.items():
            print(f"  {name:<18}" + "  ".join(f"{k} {v:.2f}" for k, v in d.items()), file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograd_compile.benchmarks.small_ops")
    ap.add_argument("--calls", type=int, default=300, help="calls per timed loop")
    ap.add_argument("--repeat", type=int, default=7, help="timed loops (median taken)")
    ap.add_argument("--json", metavar="PATH", help="write the figures here")
    ap.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                    help="wall (perf_counter) or cpu (process CPU time: steadier on a loaded "
                         "machine)")
    ap.add_argument("--no-profile", action="store_true", help="skip the cProfile layers")
    args = ap.parse_args(argv)
    CLOCK[0] = args.clock
    rows = measure(args.calls, args.repeat, profile=not args.no_profile)
    print_table(rows, sys.stdout)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
