"""The ``generate`` group: token-by-token generation with a growing length (issue 19).

The model is the nanoGPT-style GPT of ``examples/gpt.py`` (2 layers, width 32, block 64);
from a 4-token prompt it samples 40 tokens the way nanoGPT's ``generate`` does: every step
runs the whole forward on the sequence so far, takes ``logits[:, -1]``, softmax,
``multinomial`` and ``cat``. The length grows by one each step, so every step meets shapes
it has not seen: what a per-shape compile costs shows here.

Systems, each in its own fresh process (``fresh.py``):

- ``acg-eager``: the loop on the eager model;
- ``acg-compile``: the same loop calling ``acg.compile(model)``; the aot counters (traces,
  retraces, eager fallbacks, XLA compiles) are reported;
- ``torch-eager``: PyTorch's model (the example with its import undone) when torch is
  installed, with acg's initial parameters.

Figures: ``first_s``, the first generation in the fresh process (it includes every
compile), then ``warm``: the median of ``reps`` further generations from the same prompt
(every length seen once), also given per token.

>>> GEN_SIZES[1]["new"], SYSTEMS[0]
(3, 'acg-eager')
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from typing import Any, Callable, TextIO

import numpy as np

from . import fresh
from .measure import summarize

# (full, smoke): the configuration, and a tiny one with the same structure for CI
GEN_SIZES = ({"layers": 2, "width": 32, "heads": 2, "block": 64, "vocab": 65, "prompt": 4,
              "new": 40},
             {"layers": 1, "width": 16, "heads": 2, "block": 8, "vocab": 16, "prompt": 2,
              "new": 3})
SYSTEMS = ("acg-eager", "acg-compile", "torch-eager")
_AOT_COUNTERS = ("traces", "retraces", "eager_runs", "cache_hits", "compiles")


def nanogpt_generate(forward: Callable[[Any], Any], idx: Any, new: int, block: int,
                     lib: Any) -> Any:
    """nanoGPT's sampling loop over ``forward(idx) -> (logits, loss)`` (``lib``: acg or torch)."""
    F = lib.nn.functional
    with lib.no_grad():
        for _ in range(new):
            idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
            logits, _ = forward(idx_cond)
            probs = F.softmax(logits[:, -1, :], dim=-1)
            idx = lib.cat((idx, lib.multinomial(probs, num_samples=1)), dim=1)
    return idx


def _config(gpt: Any, s: dict[str, int]) -> Any:
    return gpt.GPTConfig(block_size=s["block"], vocab_size=s["vocab"], n_layer=s["layers"],
                         n_head=s["heads"], n_embd=s["width"], dropout=0.0)


def _acg_model(s: dict[str, int]) -> Any:
    import autograd_compile as acg
    from .step_models import gpt_module
    acg.manual_seed(0)
    return gpt_module().GPT(_config(gpt_module(), s)).eval()


def _prompt(s: dict[str, int]) -> np.ndarray:
    return np.random.default_rng(0).integers(0, s["vocab"], (1, s["prompt"]), dtype=np.int64)


def _setup(system: str, s: dict[str, int]) -> tuple[Callable[[], Any], Callable[[int], None],
                                                      Callable[[], dict[str, int]]]:
    """(one generation, seed it, read counters) for ``system``."""
    model = _acg_model(s)
    if system == "torch-eager":
        import torch
        from .step_models import gpt_torch_module
        tgpt = gpt_torch_module()
        tmodel = tgpt.GPT(_config(tgpt, s)).eval()
        ours = {k: p.numpy() for k, p in model.state_dict().items()}
        with torch.no_grad():
            for k, p in tmodel.state_dict().items():
                p.copy_(torch.from_numpy(ours[k].copy()))
        prompt = torch.from_numpy(_prompt(s))
        return (lambda: nanogpt_generate(tmodel, prompt, s["new"], s["block"], torch),
                torch.manual_seed, dict)
    import autograd_compile as acg
    prompt = acg.tensor(_prompt(s))
    forward = acg.compile(model) if system == "acg-compile" else model

    def counters() -> dict[str, int]:
        return {k: int(acg.aot.counters[k]) for k in _AOT_COUNTERS} \
            if system == "acg-compile" else {}
    return (lambda: nanogpt_generate(forward, prompt, s["new"], s["block"], acg),
            acg.manual_seed, counters)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def measure_in_this_process(system: str, smoke: bool, reps: int) -> dict[str, Any]:
    """The first generation (cold caches if this process is fresh), then ``reps`` warm ones."""
    s = GEN_SIZES[1 if smoke else 0]
    gen, seed, counters = _setup(system, s)
    seed(0)
    first_s, out = _timed(gen)
    if tuple(out.shape) != (1, s["prompt"] + s["new"]):
        raise AssertionError(f"{system}: generated shape {tuple(out.shape)}")
    after_first = counters()
    warm = []
    for rep in range(reps):
        seed(rep + 1)
        warm.append(_timed(gen)[0] * 1e6)
    return {"system": system, "sizes": s, "first_s": first_s, "warm_samples_us": warm,
            "warm": summarize(warm), "tokens": s["new"], "counters_after_first": after_first,
            "counters_after_warm": counters(), "error": None}


def run_generate(reps: int, smoke: bool, torch_ok: bool,
                 systems: tuple[str, ...] = SYSTEMS) -> list[dict[str, Any]]:
    """Every system in a fresh process; torch-eager skipped (with the reason) without torch."""
    results = []
    for system in systems:
        if system.startswith("torch") and not torch_ok:
            results.append({"system": system, "error": None, "skipped": "torch is not installed"})
            continue
        flags = ["--system", system, "--reps", str(reps)] + (["--smoke"] if smoke else [])
        r = fresh.run_child("autograd_compile.benchmarks.generate", flags)
        r.setdefault("system", system)
        results.append(r)
    return results


def print_generate(results: list[dict[str, Any]], out: TextIO) -> None:
    """One row per system: first generation (fresh process), warm median, per token."""
    if not results:
        return
    sizes = next((r["sizes"] for r in results if "sizes" in r), {})
    print(f"\ngenerate: {sizes.get('new')} tokens from a {sizes.get('prompt')}-token prompt, "
          f"GPT {sizes.get('layers')} layers width {sizes.get('width')} block "
          f"{sizes.get('block')} (first: fresh process, compiles included; warm: median)",
          file=out)
    for r in results:
        if r.get("skipped") or r.get("error"):
            why = "skipped: " + r["skipped"] if r.get("skipped") else "ERROR " + r["error"]
            print(f"  {r['system']:<12} {why}", file=out)
            continue
        warm = r["warm"]["median_us"]
        c = r["counters_after_warm"]
        extra = "  " + " ".join(f"{k}={v}" for k, v in c.items()) if c else ""
        print(f"  {r['system']:<12} first {r['first_s']:8.3f} s   warm {warm / 1e3:8.2f} ms   "
              f"{warm / 1e3 / r['tokens']:6.2f} ms/token{extra}", file=out)


def main(argv: list[str]) -> int:
    """The child: ``--child --system S [--smoke] [--reps N]``; prints its RESULT line."""
    ap = argparse.ArgumentParser(prog="python -m autograd_compile.benchmarks.generate")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--system", choices=SYSTEMS, default="acg-eager")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    if args.child:
        fresh.emit(measure_in_this_process(args.system, args.smoke, args.reps))
        return 0
    from .systems import torch_available
    print_generate(run_generate(args.reps, args.smoke, torch_available()), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
