"""Cold and warm first steps: the persistent compile cache across fresh processes.

    python -m autograd_compile.benchmarks.warm_start --runs 3

Each run is a fresh ``python`` process that imports autograd_compile, builds the GPT of
``examples/gpt.py`` under ``acg.compile``, and times its first training step (forward,
``loss.backward()`` under compiled autograd, ``clip_grad_norm_``, ``AdamW.step()``). The
first run starts on an empty cache directory (*cold*), the later ones reuse it (*warm*).
A child reports its phases: JAX's persistent-cache hits and misses, the seconds XLA spent
compiling, the seconds JAX spent loading from the cache, and the rest (our own tracing,
capture and Python), so it shows what still costs once XLA's work is cached.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

_T0 = time.perf_counter()

# JAX's monitoring names: what a child counts
_EVENTS = {"/jax/compilation_cache/cache_hits": "cache_hits",
           "/jax/compilation_cache/cache_misses": "cache_writes",
           "/jax/compilation_cache/compile_requests_use_cache": "compile_requests"}
_DURATIONS = {"/jax/core/compile/backend_compile_duration": "xla_compile_s",
              "/jax/compilation_cache/cache_retrieval_time_sec": "cache_load_s",
              "/jax/core/compile/jaxpr_trace_duration": "jax_trace_s",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "jax_lower_s"}


def _listen(counts: dict[str, float]) -> None:
    import jax.monitoring as mon

    def event(name: str, **_: Any) -> None:
        if name in _EVENTS:
            counts[_EVENTS[name]] = counts.get(_EVENTS[name], 0) + 1

    def duration(name: str, secs: float, **_: Any) -> None:
        if name in _DURATIONS:
            counts[_DURATIONS[name]] = counts.get(_DURATIONS[name], 0.0) + secs

    mon.register_event_listener(event)
    mon.register_event_duration_secs_listener(duration)


def child(steps: int, batch: int) -> dict[str, Any]:
    """One fresh process's figures (seconds)."""
    counts: dict[str, float] = {}
    import jax
    _listen(counts)
    import autograd_compile as acg
    from autograd_compile.examples import gpt as G
    imported = time.perf_counter()
    acg.manual_seed(0)
    data = G.CharData(G.DATA.read_text())
    config = G.GPTConfig(vocab_size=len(data.chars))
    model = G.GPT(config)
    compiled = acg.compile(model)
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    x, y = data.batch(batch, config.block_size)
    jax.effects_barrier()
    times, cpu, phases = [], [], []
    for _ in range(steps):
        before = dict(counts)
        start, start_cpu = time.perf_counter(), time.process_time()
        _, loss = compiled(x, y)
        opt.zero_grad(set_to_none=True)
        with acg.compiled_autograd.enable("jax"):
            loss.backward()
        acg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        jax.block_until_ready([p.__jax_array__() for p in model.parameters()])
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)  # less hostage to a loaded machine
        phases.append({k: v - before.get(k, 0) for k, v in counts.items()})
    return {"import_s": imported - _T0, "first_step_s": times[0], "steps_s": times,
            "first_step_cpu_s": cpu[0],
            "first_step_phases": phases[0], "loss": float(loss), "cache": _cache_info(acg)}


def _cache_info(acg: Any) -> dict[str, Any]:
    info = acg.compile_cache.info()
    return {k: info[k] for k in ("enabled", "entries", "bytes")}


def run_child(cache_dir: str | None, steps: int = 2, batch: int = 16,
              extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    """One fresh process on ``cache_dir`` (None: the cache disabled); its figures plus
    the process's wall time."""
    env = os.environ | {"ACG_CACHE_DIR": cache_dir or ""} | (extra_env or {})
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autograd_compile.benchmarks.warm_start",
                           "--child", "--steps", str(steps), "--batch", str(batch)],
                          env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f"warm_start child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out | {"process_s": wall}


def measure(runs: int = 3, cache_dir: str | None = None, batch: int = 16) -> dict[str, Any]:
    """``runs`` fresh processes on one cache directory (a new temporary one by default):
    the first is cold, the rest warm; plus one with the cache disabled."""
    with tempfile.TemporaryDirectory(prefix="acg-warm-") as tmp:
        where = cache_dir or tmp
        rows = [run_child(where, batch=batch) for _ in range(runs)]
        off = run_child(None, batch=batch)
    cold, warm = rows[0], rows[1:]
    summary: dict[str, Any] = {"cold_first_step_s": cold["first_step_s"],
                               "cold_first_step_cpu_s": cold["first_step_cpu_s"],
                               "disabled_first_step_s": off["first_step_s"]}
    if warm:
        med = sorted(r["first_step_s"] for r in warm)[len(warm) // 2]
        med_cpu = sorted(r["first_step_cpu_s"] for r in warm)[len(warm) // 2]
        summary |= {"warm_first_step_s": med, "warm_over_cold": med / cold["first_step_s"],
                    "warm_first_step_cpu_s": med_cpu,
                    "warm_over_cold_cpu": med_cpu / cold["first_step_cpu_s"]}
    return {"summary": summary, "runs": rows, "disabled": off}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3, help="processes on one cache (first cold)")
    ap.add_argument("--cache-dir", default=None, help="default: a new temporary directory")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.steps, args.batch)))
        return
    result = measure(args.runs, args.cache_dir, args.batch)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    for i, r in enumerate(result["runs"]):
        ph = r["first_step_phases"]
        jax_s = sum(ph.get(k, 0) for k in ("jax_trace_s", "jax_lower_s", "xla_compile_s"))
        print(f"run {i} ({'cold' if i == 0 else 'warm'}): first step {r['first_step_s']:.2f} s "
              f"wall, {r['first_step_cpu_s']:.2f} s CPU (JAX trace+lower "
              f"{ph.get('jax_trace_s', 0) + ph.get('jax_lower_s', 0):.2f} s, "
              f"XLA compile or load {ph.get('xla_compile_s', 0):.2f} s, "
              f"the rest {r['first_step_s'] - jax_s:.2f} s, "
              f"cache load {ph.get('cache_load_s', 0):.2f} s, hits {ph.get('cache_hits', 0):.0f}, "
              f"writes {ph.get('cache_writes', 0):.0f}), second step {r['steps_s'][1]:.3f} s")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
