"""makemore's six models and a llama2.c-style Llama: one training step per system (issue 19).

    python -m benchmarks.makemore [--models bigram,mlp,...] [--steps N] [--smoke] [--json P]

The models (:mod:`.makemore_models`) are written once against ``lib`` and run on
autograd_compile and on PyTorch. Data is makemore's: a ``CharDataset`` over ~2000 seeded
random names (:func:`.data.char_dataset`: ``__getitem__`` builds x/y with ``zeros`` and slice
writes from a Python list), batches of 32 from a ``DataLoader`` whose
``RandomSampler(replacement=True)`` never ends (makemore's ``InfiniteDataLoader``); the Llama
reads 65-token chunks of a seeded token array (llama2.c's ``PretokDataset``), 16 a batch.
makemore's step: ``logits, loss = model(X, Y)``, ``model.zero_grad(set_to_none=True)``,
``loss.backward()``, ``AdamW.step()``; the Llama's adds ``clip_grad_norm_(1.0)`` (llama2.c).

Systems (:data:`SYSTEMS`): ``acg-eager``; ``acg-ca`` (eager forward, backward under
``compiled_autograd.enable("jax")``, as the step group's ``acg-compiled``); ``acg-compile``
(``acg.compile(model)`` plus the compiled backward); ``acg-compile-step``
(``acg.compile(train_step)``: the whole step one program, :mod:`autograd_compile.aot.wholestep`);
``torch-eager`` when torch is installed.

Every system starts from the same parameters. First each runs :data:`CHECK_STEPS` steps on the
same fixed batches (the first one's time is *first*, caches cold) and its losses are compared:
``acg-eager`` with ``torch-eager`` (the oracle), every other acg system with ``acg-eager``.
Then, interleaved in one process with the order rotated per rep, after warm-up, two figures
per step: **step** (the batch already built, cycling through the fixed batches) and
**+data** (the DataLoader's ``next`` inside the timed region, the way makemore's loop runs).
Every step waits for its updated parameters. ``acg.compile``'s and compiled autograd's
counters over the timed steps show fallbacks (``eager_runs``) and retraces. The *first*
column depends on the persistent compile cache (``ACG_CACHE_DIR``): a second run loads the
programs the first compiled.

>>> SIZES[1]["makemore"]["n_embd"], SYSTEMS[-1]
(8, 'torch-eager')
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import traceback
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TextIO

import numpy as np

import autograd_compile as acg

from . import data
from .makemore_models import MAKEMORE, LlamaArgs, ModelConfig, classes
from .measure import rep_order, summarize
from .report import environment, ratio, write_json
from .step import acg_counters
from .systems import torch_available

MODELS = MAKEMORE + ("llama",)
SYSTEMS = ("acg-eager", "acg-ca", "acg-compile", "acg-compile-step", "torch-eager")
REFERENCE = "torch-eager"  # the oracle for acg-eager's losses and the timing reference
ACG_REFERENCE = "acg-eager"  # the oracle of the other acg systems
CHECK_STEPS = 3
LOSS_RTOL = {"torch-eager": 2e-4, "acg-eager": 1e-5}  # across libraries: float32 order of sums
LLAMA_CLIP = 1.0
# (full, smoke): makemore's defaults; a small llama2.c model
SIZES = ({"words": 2000, "max_len": 15, "batch": 32, "batches": 8,
          "makemore": {"n_layer": 4, "n_embd": 64, "n_embd2": 64, "n_head": 4},
          "llama": {"dim": 64, "n_layers": 4, "n_heads": 4, "vocab_size": 64, "max_seq_len": 64},
          "llama_batch": 16, "llama_chunks": 2000},
         {"words": 256, "max_len": 5, "batch": 4, "batches": 2,
          "makemore": {"n_layer": 1, "n_embd": 8, "n_embd2": 8, "n_head": 2},
          "llama": {"dim": 16, "n_layers": 1, "n_heads": 2, "vocab_size": 16, "max_seq_len": 8},
          "llama_batch": 2, "llama_chunks": 32})


# -- data -------------------------------------------------------------------------------------

def llama_dataset(lib: Any, tokens: np.ndarray, seq: int) -> Any:
    """llama2.c's pretokenised chunks, map-style: sample i is tokens[i*seq : i*seq+seq+1],
    x its first ``seq`` tokens, y the last ``seq``."""

    class PretokDataset(lib.utils.data.Dataset):
        def __len__(self) -> int:
            return (len(tokens) - 1) // seq

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            chunk = lib.from_numpy(tokens[i * seq:i * seq + seq + 1].astype(np.int64))
            return chunk[:-1], chunk[1:]
    return PretokDataset()


class InfiniteDataLoader:
    """makemore's loader: a DataLoader over a sampler with replacement that never ends."""

    def __init__(self, lib: Any, dataset: Any, batch_size: int, seed: int = 0) -> None:
        sampler = lib.utils.data.RandomSampler(dataset, replacement=True,
                                               num_samples=int(1e10),
                                               generator=lib.Generator().manual_seed(seed))
        self.loader = lib.utils.data.DataLoader(dataset, sampler=sampler, batch_size=batch_size)
        self.it: Iterator[Any] = iter(self.loader)

    def next(self) -> Any:
        try:
            return next(self.it)
        except StopIteration:  # never with 1e10 samples, as in makemore
            self.it = iter(self.loader)
            return next(self.it)


@dataclass
class Task:
    """One model's setup, shared by every system: its config, initial parameters (numpy),
    the dataset factory and the indices of the fixed batches."""

    name: str
    config: Any
    init: dict[str, np.ndarray]
    dataset: Callable[[Any], Any]
    batch: int
    fixed: list[np.ndarray]
    sizes: dict[str, int]


def make_task(name: str, smoke: bool) -> Task:
    """``name``'s config and data; parameters initialised once (acg, seed 0)."""
    s = SIZES[1 if smoke else 0]
    rng = np.random.default_rng(1)
    if name == "llama":
        cfg: Any = LlamaArgs(**s["llama"])
        seq, n = cfg.max_seq_len, s["llama_chunks"]
        tokens = np.random.default_rng(0).integers(0, cfg.vocab_size, n * seq + 1)
        tokens = tokens.astype(np.uint16)  # llama2.c's .bin shards are uint16

        def dataset(lib: Any) -> Any:
            return llama_dataset(lib, tokens, seq)
        batch, n_items = s["llama_batch"], n
        sizes = {**s["llama"], "batch": batch}
    else:
        names = [w for w in data.words(s["words"]) if len(w) <= s["max_len"]]  # smoke: short
        block = max(len(w) for w in names) + 1
        cfg = ModelConfig(block_size=block, vocab_size=len(data._ALPHABET) + 1, **s["makemore"])

        def dataset(lib: Any) -> Any:
            return data.char_dataset(lib, names)
        batch, n_items = s["batch"], len(names)
        sizes = {**s["makemore"], "block_size": block, "vocab_size": cfg.vocab_size,
                 "batch": batch, "words": len(names)}
    acg.manual_seed(0)
    init = {k: v.numpy().copy() for k, v in classes(acg)[name](cfg).state_dict().items()}
    fixed = [rng.integers(0, n_items, batch) for _ in range(s["batches"])]
    return Task(name, cfg, init, dataset, batch, fixed, sizes)


# -- systems ----------------------------------------------------------------------------------

def _optimizer(lib: Any, name: str, model: Any) -> Any:
    """makemore's AdamW; llama2.c's (weight decay on matrices only, betas 0.9/0.95)."""
    if name != "llama":
        return lib.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01,
                               betas=(0.9, 0.99), eps=1e-8)
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    return lib.optim.AdamW(groups, lr=5e-4, betas=(0.9, 0.95))


class Runner:
    """One system on one task: its own model (loaded with the task's initial parameters),
    optimizer, loader and fixed batches."""

    def __init__(self, system: str, task: Task) -> None:
        self.name, self.task = system, task
        lib: Any
        if system == "torch-eager":
            import torch as lib
        else:
            lib = acg
        self.lib, self.acg = lib, lib is acg
        self.model = classes(lib)[task.name](task.config)
        self.model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in task.init.items()},
                                   strict=False)
        self.params = list(self.model.parameters())
        self.opt = _optimizer(lib, task.name, self.model)
        ds = task.dataset(lib)
        self.loader = InfiniteDataLoader(lib, ds, task.batch)
        self.fixed = [tuple(lib.stack(list(t)) for t in zip(*(ds[int(i)] for i in idx)))
                      for idx in task.fixed]
        self.k = 0
        forward = acg.compile(self.model) if system == "acg-compile" else self.model
        backward_ctx: Callable[[], AbstractContextManager] = (
            lambda: acg.compiled_autograd.enable("jax")) if system in (
                "acg-ca", "acg-compile") else nullcontext
        self.step_fn = self._train_step(forward, backward_ctx)
        if system == "acg-compile-step":
            self.step_fn = acg.compile(self.step_fn)

    def _train_step(self, forward: Any, backward_ctx: Callable[[], AbstractContextManager]
                    ) -> Callable[[Any, Any], Any]:
        model, opt, lib, llama = self.model, self.opt, self.lib, self.task.name == "llama"

        def train_step(x: Any, y: Any) -> Any:
            if llama:
                forward(x, y)
                loss = model.last_loss
            else:
                _, loss = forward(x, y)
            model.zero_grad(set_to_none=True)
            with backward_ctx():
                loss.backward()
            if llama:
                lib.nn.utils.clip_grad_norm_(model.parameters(), LLAMA_CLIP)
            opt.step()
            return loss
        return train_step

    def wait(self) -> None:
        """Until every updated parameter is computed (torch's CPU ops are synchronous)."""
        if self.acg:
            import jax
            jax.block_until_ready([p.__jax_array__() for p in self.params])

    def step(self, batch: Any = None) -> Any:
        """One step on ``batch`` (default: the next fixed batch); its loss."""
        if batch is None:
            batch, self.k = self.fixed[self.k % len(self.fixed)], self.k + 1
        loss = self.step_fn(*batch)
        self.wait()
        return loss

    def loaded_step(self) -> Any:
        """The loader's next batch, then one step on it."""
        return self.step(tuple(self.loader.next()))


# -- measuring --------------------------------------------------------------------------------

@dataclass
class Result:
    """One system on one model."""

    name: str
    step_us: list[float] = field(default_factory=list)
    data_us: list[float] = field(default_factory=list)
    first_us: float | None = None
    losses: list[float] = field(default_factory=list)
    check: str | None = None
    error: str | None = None
    counters: dict[str, int] = field(default_factory=dict)  # acg's, over the timed steps

    def to_json(self) -> dict[str, Any]:
        out = {"first_step_us": self.first_us, "losses": self.losses, "check": self.check,
               "error": self.error, "counters_timed": self.counters,
               "step_samples_us": self.step_us, "data_samples_us": self.data_us}
        if self.step_us:
            out |= {"step": summarize(self.step_us), "step_with_data": summarize(self.data_us)}
        return out


@dataclass
class ModelResult:
    name: str
    sizes: dict[str, int]
    results: dict[str, Result] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def failures(self) -> list[str]:
        """Errors and failed loss checks, one line each."""
        out = [f"{self.name}/{r.name}: {r.error}" for r in self.results.values() if r.error]
        out += [f"{self.name}/{r.name}: {r.check}" for r in self.results.values()
                if r.check not in (None, "ok", "reference")]
        return out + [f"{self.name}/{r.name}: ran eagerly {r.counters['compile_eager_runs']}x "
                      "under acg.compile" for r in self.results.values()
                      if r.counters.get("compile_eager_runs")]


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}{where}"


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(microseconds, result) of ``fn()`` with gc off, as timeit."""
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return (time.perf_counter() - start) * 1e6, out
    finally:
        gc.enable()


def compare_losses(losses: list[float], ref: list[float], rtol: float) -> str:
    """"ok", or the first step whose loss differs from the reference's beyond ``rtol``."""
    for i, (a, b) in enumerate(zip(losses, ref)):
        if not abs(a - b) <= rtol * abs(b):
            return f"loss of step {i + 1} {a!r} != {b!r} (rtol {rtol:g})"
    return "ok" if len(losses) == len(ref) else f"{len(losses)} losses, reference {len(ref)}"


def _check_losses(out: ModelResult) -> None:
    for name, r in out.results.items():
        ref_name = REFERENCE if name == ACG_REFERENCE else ACG_REFERENCE
        ref = out.results.get(ref_name)
        if name == REFERENCE or (name == ACG_REFERENCE and ref is None):
            r.check = "reference"
        elif r.losses and ref is not None and ref.losses:
            r.check = compare_losses(r.losses, ref.losses, LOSS_RTOL[ref_name])


def _first_steps(runners: list[Runner], out: ModelResult, steps: int) -> list[Runner]:
    """:data:`CHECK_STEPS`-like ``steps`` steps each on the fixed batches from the shared
    initial parameters: the losses, and the first step's time."""
    alive = []
    for r in runners:
        res = out.results[r.name]
        try:
            for i in range(steps):
                t, loss = _timed(r.step)
                res.first_us = t if i == 0 else res.first_us
                res.losses.append(float(loss.detach()))
            alive.append(r)
        except Exception as exc:  # noqa: BLE001 - a broken system is reported, not fatal
            res.error = f"step {len(res.losses) + 1}: {_error(exc)}"
    _check_losses(out)
    return alive


def _interleaved(alive: list[Runner], out: ModelResult, reps: int, record: bool) -> None:
    """Each rep: every system's step alone then its step with the loader, in a shuffled
    order (:func:`.measure.rep_order`)."""
    for rep in range(reps):
        for r in rep_order(alive, rep):
            res = out.results[r.name]
            before = acg_counters()
            try:
                t_step, _ = _timed(r.step)
                t_data, _ = _timed(r.loaded_step)
            except Exception as exc:  # noqa: BLE001
                res.error = f"rep {rep}: {_error(exc)}"
                alive.remove(r)
                continue
            if record:
                res.step_us.append(t_step)
                res.data_us.append(t_data)
                for key, v in acg_counters().items():
                    if v - before.get(key, 0):
                        res.counters[key] = res.counters.get(key, 0) + v - before.get(key, 0)


def measure_model(name: str, systems: list[str], steps: int, warmup: int,
                  smoke: bool) -> ModelResult:
    """Build every system on ``name``, check its first losses, warm up, time ``steps``."""
    task = make_task(name, smoke)
    out = ModelResult(name, task.sizes)
    runners = []
    for system in systems:
        if system == "torch-eager" and not torch_available():
            out.skipped[system] = "torch is not installed"
            continue
        out.results[system] = Result(system)
        try:
            runners.append(Runner(system, task))
        except Exception as exc:  # noqa: BLE001
            out.results[system].error = f"build: {_error(exc)}"
    alive = _first_steps(runners, out, CHECK_STEPS)
    _interleaved(alive, out, warmup, False)
    _interleaved(alive, out, steps, True)
    return out


# -- reporting --------------------------------------------------------------------------------

_HEADER = ("model", "system", "step ms", "IQR", "/torch", "+data ms", "IQR", "/torch",
           "first ms", "losses / note")
_BLANK = ("",) * 7


def _note(r: Result) -> str:
    counters = {k: v for k, v in r.counters.items()
                if k in ("compile_eager_runs", "compile_traces", "compile_retraces",
                         "captures", "eager_runs")}
    return (r.check or "-") + (f"  timed counters {counters}" if counters else "")


def _rows(m: ModelResult) -> list[tuple[str, ...]]:
    med = {n: (summarize(r.step_us)["median_us"], summarize(r.data_us)["median_us"])
           for n, r in m.results.items() if r.step_us}
    ref = med.get(REFERENCE, (None, None))
    rows = []
    for name, r in m.results.items():
        if r.error or not r.step_us:
            rows.append((m.name, name, "ERROR", *_BLANK, r.error or "no samples"))
            continue
        s, d = summarize(r.step_us), summarize(r.data_us)
        rows.append((m.name, name, f"{s['median_us'] / 1e3:.2f}", f"{s['iqr_us'] / 1e3:.2f}",
                     ratio(s["median_us"], ref[0]), f"{d['median_us'] / 1e3:.2f}",
                     f"{d['iqr_us'] / 1e3:.2f}", ratio(d["median_us"], ref[1]),
                     f"{r.first_us / 1e3:.0f}", _note(r)))
    return rows + [(m.name, n, "skipped", *_BLANK, why) for n, why in m.skipped.items()]


def print_table(results: list[ModelResult], steps: int, out: TextIO) -> None:
    """Per model and system: step and step-with-loader medians, ratios to torch eager."""
    rows = [_HEADER] + [row for m in results for row in _rows(m)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADER) - 1)] + [0]
    print(f"\nmakemore / llama training step, median of {steps} interleaved steps "
          "(step: batch built; +data: with the DataLoader's next; /torch: time / torch-eager "
          "time, >1 = slower; first: first step, cold caches)", file=out)
    for row in rows:
        print("  ".join(c.rjust(wd) if 2 <= i < len(widths) - 1 else c.ljust(wd)
                        for i, (c, wd) in enumerate(zip(row, widths))).rstrip(), file=out)


def targets(results: list[ModelResult]) -> list[str]:
    """Issue 19's targets, each met or missed, on both figures."""
    lines = []
    goals = [(m, "acg-compile", "<", 1.0) for m in MAKEMORE] + \
        [(m, "acg-eager", "<=", 2.0) for m in MAKEMORE] + [("llama", "acg-ca", "<=", 1.5)]
    by = {m.name: m for m in results}
    for model, system, op, bound in goals:
        m = by.get(model)
        r, t = (m.results.get(system), m.results.get(REFERENCE)) if m else (None, None)
        if not (r and t and r.step_us and t.step_us):
            continue
        figs = []
        for label, a, b in (("step", r.step_us, t.step_us), ("+data", r.data_us, t.data_us)):
            q = summarize(a)["median_us"] / summarize(b)["median_us"]
            ok = q < bound if op == "<" else q <= bound
            figs.append(f"{label} {q:.2f}x {'met' if ok else 'MISSED'}")
        lines.append(f"{model:<12} {system:<12} {op} {bound}x torch-eager: {'; '.join(figs)}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.makemore",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated")
    ap.add_argument("--steps", type=int, default=100, help="timed steps per system")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, 2 timed steps")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch's intra-op threads (default: this process's CPUs)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    models, systems = args.models.split(","), args.systems.split(",")
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    for s in systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system {s!r}; choose from {', '.join(SYSTEMS)}")
    steps, warmup = (2, 1) if args.smoke else (args.steps, args.warmup)
    threads = set_torch_threads(args.threads)
    results = [measure_model(m, systems, steps, warmup, args.smoke) for m in models]
    print(f"torch threads {threads}, CPUs {len(os.sched_getaffinity(0))}, load "
          f"{os.getloadavg()[0]:.1f}", file=sys.stdout)
    print_table(results, steps, sys.stdout)
    lines = targets(results)
    if lines:
        print("\nissue 19 targets (median ratios to torch-eager):\n  " + "\n  ".join(lines))
    failures = [f for m in results for f in m.failures()]
    for f in failures:
        print(f"FAILED {f}", file=sys.stderr)
    if args.json:
        import jax
        write_json(args.json, {"environment": environment(jax.devices("cpu")[0]),
                               "torch_threads": threads, "steps": steps, "warmup": warmup,
                               "models": {m.name: {"sizes": m.sizes, "skipped": m.skipped,
                                                   "systems": {n: r.to_json() for n, r in
                                                               m.results.items()}}
                                          for m in results},
                               "targets": lines, "failures": failures})
    return 1 if failures else 0


def set_torch_threads(threads: int | None) -> int | None:
    """torch's intra-op threads: ``threads``, or as many as this process may use (the step
    group's alone runs likewise pin torch to a count); None without torch."""
    if not torch_available():
        return None
    import torch
    torch.set_num_threads(threads or len(os.sched_getaffinity(0)))
    return torch.get_num_threads()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
