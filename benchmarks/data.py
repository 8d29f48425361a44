"""The ``data`` group: one DataLoader epoch over a makemore-style dataset (issue 19).

makemore's ``CharDataset.__getitem__`` builds each sample from a Python list::

    ix = torch.tensor([stoi[c] for c in word], dtype=torch.long)
    x = torch.zeros(max_len + 1, dtype=torch.long); y = torch.zeros(max_len + 1, dtype=torch.long)
    x[1:1 + len(ix)] = ix; y[:len(ix)] = ix; y[len(ix) + 1:] = -1

and ``DataLoader(batch_size=32, shuffle=True)`` stacks 32 of them with ``default_collate``.
The words are random lowercase names (lengths 3 to 15) from a fixed seed. Datasets:

- ``makemore``: the dataset above;
- ``tensors``: ``TensorDataset(X, Y)`` over the same samples built up front (indexing and
  collate alone).

Systems ``acg`` and ``torch`` (when installed), each in a fresh process: ``first_s`` is the
first epoch there (compiles included), ``warm`` the median of ``reps`` further epochs; the
warm per-sample ``__getitem__`` and per-batch ``default_collate`` are timed apart. Both
systems must see the same epoch: the sums of every x and every y over it agree.

>>> len(words(10)), DATA_SIZES[1]["words"]
(10, 64)
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from typing import Any, Callable, TextIO

import numpy as np

from . import fresh
from .measure import summarize

DATA_SIZES = ({"words": 4096, "batch": 32}, {"words": 64, "batch": 32})  # (full, smoke)
SYSTEMS = ("acg", "torch")
DATASETS = ("makemore", "tensors")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def words(n: int, seed: int = 0) -> list[str]:
    """``n`` random lowercase names, lengths 3 to 15."""
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(_ALPHABET), int(rng.integers(3, 16)))) for _ in range(n)]


def char_dataset(lib: Any, names: list[str]) -> Any:
    """makemore's CharDataset written against ``lib`` (autograd_compile or torch)."""
    stoi = {c: i + 1 for i, c in enumerate(_ALPHABET)}
    max_len = max(len(w) for w in names)

    class CharDataset(lib.utils.data.Dataset):
        def __len__(self) -> int:
            return len(names)

        def __getitem__(self, idx: int) -> tuple[Any, Any]:
            ix = lib.tensor([stoi[c] for c in names[idx]], dtype=lib.long)
            x = lib.zeros(max_len + 1, dtype=lib.long)
            y = lib.zeros(max_len + 1, dtype=lib.long)
            x[1:1 + len(ix)] = ix
            y[:len(ix)] = ix
            y[len(ix) + 1:] = -1  # index -1 masks the loss at the inactive positions
            return x, y
    return CharDataset()


def _dataset(lib: Any, kind: str, names: list[str]) -> Any:
    ds = char_dataset(lib, names)
    if kind == "makemore":
        return ds
    xs, ys = zip(*(ds[i] for i in range(len(ds))))
    return lib.utils.data.TensorDataset(lib.stack(xs), lib.stack(ys))


def _seconds(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def _epoch(lib: Any, ds: Any, batch: int, seed: int) -> tuple[int, int, int]:
    """One shuffled epoch: (batches, sum of every x, sum of every y)."""
    loader = lib.utils.data.DataLoader(ds, batch_size=batch, shuffle=True,
                                       generator=lib.Generator().manual_seed(seed))
    n = sx = sy = 0
    for x, y in loader:
        n, sx, sy = n + 1, sx + int(x.sum().item()), sy + int(y.sum().item())
    return n, sx, sy


def _median_us(fn: Callable[[], Any], calls: int) -> float:
    ts = [_seconds(fn)[0] * 1e6 for _ in range(calls)]
    return statistics.median(ts)


def measure_in_this_process(system: str, kind: str, smoke: bool, reps: int) -> dict[str, Any]:
    """The first epoch (cold caches if this process is fresh), then ``reps`` warm ones."""
    if system == "torch":
        import torch as lib
    else:
        import autograd_compile as lib
    s = DATA_SIZES[1 if smoke else 0]
    names = words(s["words"])
    ds = _dataset(lib, kind, names)
    first_s, (batches, sx, sy) = _seconds(lambda: _epoch(lib, ds, s["batch"], 0))
    warm = [_seconds(lambda: _epoch(lib, ds, s["batch"], rep + 1))[0] * 1e6 for rep in range(reps)]
    samples = [ds[i] for i in range(s["batch"])]
    collate = lib.utils.data.default_collate
    calls = 20 if smoke else 200
    return {"system": system, "dataset": kind, "sizes": s, "first_s": first_s,
            "warm_samples_us": warm, "warm": summarize(warm), "batches": batches,
            "sum_x": sx, "sum_y": sy,
            "getitem_us": _median_us(lambda: ds[len(ds) // 2], calls),
            "collate_us": _median_us(lambda: collate(samples), calls), "error": None}


def run_data(reps: int, smoke: bool, torch_ok: bool) -> list[dict[str, Any]]:
    """Every (dataset, system) in a fresh process; torch skipped without torch."""
    results = []
    for kind in DATASETS:
        for system in SYSTEMS:
            if system == "torch" and not torch_ok:
                results.append({"system": system, "dataset": kind, "error": None,
                                "skipped": "torch is not installed"})
                continue
            r = fresh.run_child("autograd_compile.benchmarks.data",
                                ["--system", system, "--dataset", kind, "--reps", str(reps)]
                                + (["--smoke"] if smoke else []))
            r.setdefault("system", system)
            r.setdefault("dataset", kind)
            results.append(r)
    return results


def failures(results: list[dict[str, Any]]) -> list[str]:
    """Errors, and epochs whose sums differ between systems on one dataset."""
    out = [f"data/{r['dataset']}/{r['system']}: {r['error']}" for r in results if r.get("error")]
    for kind in DATASETS:
        sums = {(r["batches"], r["sum_x"], r["sum_y"]) for r in results
                if r["dataset"] == kind and "sum_x" in r}
        if len(sums) > 1:
            out.append(f"data/{kind}: systems saw different epochs (batches, sum x, sum y): "
                       f"{sorted(sums)}")
    return out


def print_data(results: list[dict[str, Any]], out: TextIO) -> None:
    """One row per (dataset, system): first epoch, warm epoch, per sample and per batch."""
    if not results:
        return
    s = next((r["sizes"] for r in results if "sizes" in r), {})
    print(f"\ndata: one DataLoader epoch, {s.get('words')} makemore-style samples, batch "
          f"{s.get('batch')} (first: fresh process; warm: median; getitem, collate: median "
          "us per call)", file=out)
    for r in results:
        name = f"{r['dataset']}/{r['system']}"
        if r.get("skipped") or r.get("error"):
            why = "skipped: " + r["skipped"] if r.get("skipped") else "ERROR " + r["error"]
            print(f"  {name:<18} {why}", file=out)
            continue
        print(f"  {name:<18} first {r['first_s'] * 1e3:9.1f} ms   warm "
              f"{r['warm']['median_us'] / 1e3:9.1f} ms   getitem {r['getitem_us']:7.1f} us   "
              f"collate {r['collate_us']:7.1f} us", file=out)


def main(argv: list[str]) -> int:
    """The child: ``--child --system S --dataset D [--smoke] [--reps N]``."""
    ap = argparse.ArgumentParser(prog="python -m autograd_compile.benchmarks.data")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--system", choices=SYSTEMS, default="acg")
    ap.add_argument("--dataset", choices=DATASETS, default="makemore")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    if args.child:
        fresh.emit(measure_in_this_process(args.system, args.dataset, args.smoke, args.reps))
        return 0
    from .systems import torch_available
    results = run_data(args.reps, args.smoke, torch_available())
    print_data(results, sys.stdout)
    for f in failures(results):
        print(f"FAILED {f}", file=sys.stderr)
    return 1 if failures(results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
