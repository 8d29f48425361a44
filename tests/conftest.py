"""Shared fixtures: every autograd behaviour runs in each execution mode."""
from __future__ import annotations

import contextlib
import os
from typing import ContextManager

import pytest

# warmgpu: the suite runs with the persistent compile cache off (before the import, which
# configures it): no writes into the user's home, no results that depend on what an earlier
# run left on disk, no lock contention between xdist workers. tests/test_compile_cache.py
# turns it on in its own subprocesses, on temporary directories.
os.environ["ACG_CACHE_DIR"] = ""

import autograd_compile as acg  # noqa: E402

EXEC_MODES = ["eager", "compiled-eager", "compiled-jax"]


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked ``slow`` run only under ACG_SLOW=1 (make test-slow); the default run
    deselects them (they are not reported as skipped)."""
    if acg.config.SLOW:
        return
    slow = [i for i in items if i.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("slow")]


# compiled autograd's backward plans (compiled_autograd/plan.py) repeat what the generic walk
# keys on: in these files every graph a plan serves is walked generically too and compared
# (ACG_CHECK's check), so a key item a plan does not check fails here, not in a user's run
_PLANS_CHECKED = {"test_hooks", "test_compiled_autograd", "test_compiled_fastpath",
                  "test_failure_safety", "test_ported_compiled_autograd"}


@pytest.fixture(autouse=True)
def _plans_checked(request, monkeypatch) -> None:
    if request.module.__name__.rsplit(".", 1)[-1] in _PLANS_CHECKED:
        monkeypatch.setattr(acg.config, "CHECK", True)


class ExecMode:
    """How a test runs its backward calls: ``with mode(): loss.backward()``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.compiled = name.startswith("compiled")

    def __call__(self) -> ContextManager:
        if not self.compiled:
            return contextlib.nullcontext()
        return acg.compiled_autograd.enable(self.name.split("-", 1)[1])

    def __repr__(self) -> str:
        return self.name


@pytest.fixture(params=EXEC_MODES)
def mode(request) -> ExecMode:
    """Eager, compiled with the eager backend, compiled with the JAX backend."""
    if request.param != "eager":
        acg.compiled_autograd.reset()
    return ExecMode(request.param)


def assert_close(actual, expected, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    import numpy as np
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def numeric_grad(f, x, eps: float = 1e-6):
    """Central differences of the scalar ``f`` at the numpy array ``x`` (a float64 oracle)."""
    import numpy as np
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def outcome(fn, *args, **kwargs):
    """(exception type name, message) of a call, None when it passes: compares errors."""
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None
