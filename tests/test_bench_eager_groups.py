"""The issue-19 bench groups (``generate``, ``data``) in smoke mode: every system runs in
its own fresh process, reports a first and a warm figure, and the systems agree (the same
generated length; the same epoch, checked by its sums). No test asserts a time."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograd_compile.benchmarks import data, fresh, generate, run
from autograd_compile.benchmarks.systems import torch_available


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("eager") / "bench.json"
    rc = run.main(["--group", "generate,data", "--smoke", "--reps", "2", "--no-progress",
                   "--json", str(out)])
    d = json.loads(out.read_text())
    d["rc"] = rc
    return d


def test_groups_run_without_failures(doc: dict) -> None:
    assert doc["rc"] == 0, doc["failures"]
    assert doc["failures"] == []


def test_generate_reports_first_and_warm_for_every_system(doc: dict) -> None:
    by = {r["system"]: r for r in doc["generate"]}
    assert set(by) == set(generate.SYSTEMS)
    for system, r in by.items():
        if system.startswith("torch") and not torch_available():
            assert r["skipped"] == "torch is not installed"
            continue
        assert r["error"] is None, r["error"]
        assert r["first_s"] > 0 and r["warm"]["median_us"] > 0 and r["warm"]["n"] == 2
        assert r["tokens"] == generate.GEN_SIZES[1]["new"]


def test_generate_under_compile_never_falls_back_to_eager(doc: dict) -> None:
    """Lengths grow every step: the compiled model still runs compiled, not eagerly."""
    c = {r["system"]: r for r in doc["generate"]}["acg-compile"]["counters_after_warm"]
    assert c["traces"] >= 1 and c["eager_runs"] == 0


def test_data_epochs_agree_across_systems(doc: dict) -> None:
    rows = doc["data"]
    assert {(r["dataset"], r["system"]) for r in rows} == \
        {(d, s) for d in data.DATASETS for s in data.SYSTEMS}
    smoke = data.DATA_SIZES[1]
    for r in rows:
        if r.get("skipped"):
            continue
        assert r["error"] is None, r["error"]
        assert r["batches"] == -(-smoke["words"] // smoke["batch"])
        assert r["getitem_us"] > 0 and r["collate_us"] > 0 and r["first_s"] > 0


def test_char_dataset_sample_matches_makemore() -> None:
    """The acg sample is makemore's: ix after a 0 in x; ix, a 0, then -1s in y."""
    import autograd_compile as acg
    ds = data.char_dataset(acg, ["abc", "hello"])
    x, y = ds[0]
    assert x.tolist() == [0, 1, 2, 3, 0, 0] and y.tolist() == [1, 2, 3, 0, -1, -1]
    assert x.dtype == acg.long


def test_fresh_child_failure_comes_back_as_an_error() -> None:
    r = fresh.run_child("autograd_compile.benchmarks.data", ["--system", "nope"])
    assert r["error"].startswith("exit status 2")
