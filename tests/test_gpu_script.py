"""ci/gpu.sh's dry run: the GPU script's steps on CPU at tiny sizes (no GPU needed)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("gpu")
    env = os.environ | {"PYTHON": sys.executable, "ACG_GPU_DRY_RUN": "1"}
    env.pop("ACG_GPU_TESTS", None)
    proc = subprocess.run(["bash", str(ROOT / "ci" / "gpu.sh"), str(out)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)
    return {"rc": proc.returncode, "out": out, "stdout": proc.stdout, "stderr": proc.stderr}


def test_dry_run_succeeds_and_logs(dry_run) -> None:
    assert dry_run["rc"] == 0, dry_run["stdout"][-3000:] + dry_run["stderr"][-2000:]
    log = (dry_run["out"] / "gpu.log").read_text()
    assert log == dry_run["stdout"]  # the log holds everything the run printed
    summary = json.loads((dry_run["out"] / "summary.json").read_text())
    assert summary["dry_run"] and summary["ok"]
    assert list(summary["steps"]) == ["install", "environment", "tests", "bench", "warm_start"]


def test_dry_run_records_tests_and_environment(dry_run) -> None:
    env = json.loads((dry_run["out"] / "environment.json").read_text())
    assert env["jax_backend"] == "cpu" and env["dry_run"]
    tests = json.loads((dry_run["out"] / "tests.json").read_text())
    assert tests["passed"] > 0 and tests["failures"] == tests["errors"] == 0


def test_dry_run_writes_the_bench(dry_run) -> None:
    doc = json.loads((dry_run["out"] / "bench.json").read_text())
    assert doc["failures"] == []
    step = doc["step"]["workloads"]["mlp_small"]["systems"]
    for name in ("acg-compile", "jax-floor"):
        assert step[name]["error"] is None and step[name]["step"]["median_us"] > 0
    assert doc["workloads"]["mlp_small"]["systems"]["acg-compiled"]["grad_check"] == "ok"
    png = dry_run["out"] / "bench.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not png.exists() and "matplotlib is not installed" in dry_run["stdout"]
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_arguments_say_how_to_call() -> None:
    proc = subprocess.run(["bash", str(ROOT / "ci" / "gpu.sh")], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2 and "usage: ci/gpu.sh OUTDIR" in proc.stderr
