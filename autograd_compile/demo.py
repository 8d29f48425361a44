"""The main job: train a classifier with hooks, eager and compiled, and compare.

``python -m autograd_compile demo [--steps N] [--systems eager,compiled]``
``python -m autograd_compile demo --model gpt|cnn [--steps N]``: an example program
(``examples/``) trained eagerly and compiled, with step times side by side.

The model is an MLP classifier on a synthetic teacher task. Hooks a real
training loop uses are installed on every run:

- a tensor hook on the logits clips each example's gradient norm (in the
  ``compiled-pure`` system it is marked ``pure_hook`` and traced into XLA),
- a post-accumulate-grad hook on every parameter logs its gradient norm.

The same loop runs once per system; the loss must fall in each, and the final
parameters must agree between eager and compiled. Then backward-only time is
measured side by side (median over many steps).
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import nullcontext
from typing import Any, Callable

import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F

DIM, HIDDEN, CLASSES = 32, 128, 8


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and labels from a random teacher network (learnable, not trivial)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    teacher = rng.standard_normal((DIM, CLASSES)).astype(np.float32)
    return x, np.argmax(np.tanh(x @ teacher) + 0.1 * x[:, :CLASSES], axis=1).astype(np.int64)


def make_model(seed: int = 0) -> acg.nn.Module:
    acg.manual_seed(seed)
    return acg.nn.Sequential(acg.nn.Linear(DIM, HIDDEN), acg.nn.Tanh(),
                             acg.nn.Linear(HIDDEN, HIDDEN), acg.nn.Tanh(),
                             acg.nn.Linear(HIDDEN, CLASSES))


def clip_rows(max_norm: float) -> Callable[[acg.Tensor], acg.Tensor]:
    """Tensor hook: scale each row of the gradient to norm <= max_norm."""
    def hook(g: acg.Tensor) -> acg.Tensor:
        norms = (g * g).sum(dim=1, keepdim=True).sqrt()
        return g * (max_norm / acg.maximum(norms, max_norm))
    return hook


class GradNormLog:
    """Post-accumulate-grad hook: remembers the last gradient norm per parameter."""

    def __init__(self) -> None:
        self.norms: dict[int, float] = {}
        self.calls = 0

    def __call__(self, p: acg.Tensor) -> None:
        self.calls += 1
        self.norms[id(p)] = p.grad


def system_context(name: str) -> Any:
    """eager, or compiled with the JAX backend (compiled and compiled-pure)."""
    return nullcontext() if name == "eager" else acg.compiled_autograd.enable("jax")


def train(system: str, steps: int, batch: int, log_every: int) -> dict[str, Any]:
    """Run the loop; return losses, backward times and final parameters."""
    model = make_model()
    opt = acg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    log = GradNormLog()
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(log)
    xs, ys = make_data(batch * 16)
    losses, times, step_times = [], [], []
    for step in range(steps):
        i = (step % 16) * batch
        x, y = acg.tensor(xs[i:i + batch]), acg.tensor(ys[i:i + batch])
        step_start = time.perf_counter()  # whole step: forward + backward + optimizer
        logits = model(x)
        clip = clip_rows(1.0)
        if system == "compiled-pure":  # the clip is a pure tensor function: traced into XLA
            clip = acg.compiled_autograd.pure_hook(clip)
        logits.register_hook(clip)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        start = time.perf_counter()
        with system_context(system):
            loss.backward()
        for p in model.parameters():
            p.grad._data.block_until_ready()
        times.append(time.perf_counter() - start)
        opt.step()
        for p in model.parameters():
            p._data.block_until_ready()
        step_times.append(time.perf_counter() - step_start)
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"  [{system:8s}] step {step:4d}  loss {losses[-1]:.4f}")
    params = [p.detach().numpy() for p in model.parameters()]
    return {"losses": losses, "times": times, "params": params, "hook_calls": log.calls,
            "step_times": step_times}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m autograd_compile demo",
                                 description="Train a classifier with a tensor hook and module "
                                             "hooks, eagerly and with compiled backward; print "
                                             "the throughput of each.")
    ap.add_argument("--steps", type=int, default=200, help="training steps per system")
    ap.add_argument("--batch", type=int, default=64, help="batch size")
    ap.add_argument("--systems", default="eager,compiled,compiled-pure",
                    help="comma-separated: eager, compiled (jax backend, hooks called from the "
                         "program), compiled-pure (hooks traced in)")
    ap.add_argument("--model", choices=["mlp", "gpt", "cnn"], default="mlp",
                    help="mlp: the classifier above (default); gpt, cnn: the example programs")
    args = ap.parse_args(argv)
    if args.model != "mlp":
        return run_example(args.model, args.steps)
    systems = [s for s in args.systems.split(",") if s]
    results = {}
    for system in systems:
        print(f"training with {system} backward ({args.steps} steps, batch {args.batch})")
        results[system] = train(system, args.steps, args.batch, max(args.steps // 5, 1))
    report(results, args.steps)
    return 0


def run_example(name: str, steps: int) -> int:
    """Train ``examples/<name>.py`` eagerly and with compiled autograd; compare step times."""
    from importlib import import_module
    program = import_module(f"autograd_compile.examples.{name}")
    results = {}
    for mode in ("eager", "compiled"):
        print(f"{name}: training {steps} steps with {mode} backward")
        results[mode] = program.main(steps=steps, mode=mode, log_every=max(steps // 5, 1))
    skip = min(5, steps // 2)  # warm-up: the first steps compile
    print(f"\n{name}: whole step (forward + backward + optimizer), median after warm-up")
    for mode, r in results.items():
        med = statistics.median(r["step_times"][skip:]) * 1e3
        print(f"  {mode:9s} {med:8.2f} ms   loss {r['losses'][0]:.3f} -> {r['losses'][-1]:.3f}"
              f"   grad-norm hook calls {r['hook_calls']}")
    diff = max(float(np.max(np.abs(results["eager"]["params"][k] - v)))
               for k, v in results["compiled"]["params"].items())
    print(f"  max |param eager - param compiled| after {steps} steps: {diff:.2e}")
    if name == "gpt" and hasattr(acg, "multinomial") and hasattr(acg, "topk"):
        print("  sample:", repr(program.sample(results["compiled"]["model"],
                                               results["compiled"]["data"])))
    return 0


def report(results: dict[str, dict[str, Any]], steps: int) -> None:
    skip = min(10, steps // 2)  # warm-up: first backward includes capture + XLA compile
    print("\nbackward time per step (median over steps after warm-up)")
    base = None
    for system, r in results.items():
        med = statistics.median(r["times"][skip:]) * 1e6
        base = base or med
        first = r["times"][0] * 1e3
        print(f"  {system:14s} {med:9.1f} us   first backward {first:8.1f} ms   "
              f"speed-up vs eager {base / med:5.2f}x   loss {r['losses'][0]:.3f} -> "
              f"{r['losses'][-1]:.3f}   post-acc hook calls {r['hook_calls']}")
    for other in [s for s in results if s != "eager" and "eager" in results]:
        diff = max(float(np.max(np.abs(a - b))) for a, b in
                   zip(results["eager"]["params"], results[other]["params"]))
        print(f"  max |param eager - param {other}| after {steps} steps: {diff:.2e}")
    print(f"  compiled autograd counters: {dict(acg.compiled_autograd.counters)}")
    report_steps(results, skip)


def report_steps(results: dict[str, dict[str, Any]], skip: int) -> None:
    """Whole-step time (forward + backward + optimizer step), beside the backward table."""
    print("\nwhole step time (forward + backward + SGD step; median over steps after warm-up)")
    base = None
    for system, r in results.items():
        med = statistics.median(r["step_times"][skip:]) * 1e6
        base = base or med
        print(f"  {system:14s} {med:9.1f} us   first step {r['step_times'][0] * 1e3:8.1f} ms   "
              f"speed-up vs eager {base / med:5.2f}x")
    print("  (all systems, more models, JAX and PyTorch: python -m autograd_compile bench "
          "--group step)")
