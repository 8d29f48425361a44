"""Whole PyTorch-style training programs (tests/programs/), ported by changing only the
imports, run as scripts: they must run, learn, and give the same losses whichever backward
runs them (eager vs compiled autograd)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="module", autouse=True)
def shared_xla_cache(tmp_path_factory: pytest.TempPathFactory):
    """The runs of one program compile the same kernels: JAX's persistent compilation cache
    lets the second process load them instead of compiling again (CI time)."""
    _CACHE["dir"] = str(tmp_path_factory.mktemp("xla_cache"))
    yield


_CACHE: dict[str, str] = {}


def _run(script: str, **env: str) -> dict:
    full = {**os.environ, **env, "JAX_COMPILATION_CACHE_DIR": _CACHE["dir"],
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}
    proc = subprocess.run([sys.executable, str(PROGRAMS / script)], env=full, cwd=PROGRAMS,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_mnist_style_program_runs_and_compiled_matches_eager():
    eager, compiled = _run("mnist_style.py", MODE="eager"), _run("mnist_style.py", MODE="jax")
    assert len(eager["losses"]) == 8  # 2 epochs x 4 batches
    np.testing.assert_allclose(compiled["losses"], eager["losses"], rtol=1e-4)


def test_nanogpt_style_program_trains_checkpoints_and_samples():
    eager, compiled = _run("nanogpt_style.py", MODE="eager"), _run("nanogpt_style.py", MODE="jax")
    losses = compiled["losses"]
    assert len(losses) == 7 and losses[-1] < losses[0] - 0.1  # it learns
    np.testing.assert_allclose(losses, eager["losses"], rtol=1e-4)
    assert compiled["sample_len"] == 5


@pytest.mark.slow  # the manual-attention path and acg.compile: make test-slow
@pytest.mark.parametrize("env", [{"FLASH": "0"}, {"COMPILE": "1"}], ids=["manual_attn", "compile"])
def test_nanogpt_style_variants_match(env):
    base = _run("nanogpt_style.py", MODE="eager")
    np.testing.assert_allclose(_run("nanogpt_style.py", MODE="jax", **env)["losses"],
                               base["losses"], rtol=1e-4)
