"""The makemore benchmark (issue 19) in smoke mode: every model under every system trains a
few steps from the same parameters on the same batches; acg-eager's losses agree with
PyTorch eager's (the oracle), the compiled systems' with acg-eager's, and no compiled system
runs eagerly. No test asserts a time."""
from __future__ import annotations

import numpy as np
import pytest

from autograd_compile.benchmarks import makemore as mm
from autograd_compile.benchmarks.systems import torch_available

COMPILED = ("acg-ca", "acg-compile", "acg-compile-step")
# the two with the largest programs (compiles: ~10 s each here) run under ACG_SLOW=1
_HEAVY = ("gru", "transformer")


@pytest.fixture(scope="module", params=[pytest.param(m, marks=pytest.mark.slow) if m in _HEAVY
                                        else m for m in mm.MODELS])
def result(request: pytest.FixtureRequest) -> mm.ModelResult:
    return mm.measure_model(request.param, list(mm.SYSTEMS), steps=1, warmup=0, smoke=True)


def test_every_system_runs_and_is_timed(result: mm.ModelResult) -> None:
    for name, r in result.results.items():
        assert r.error is None, f"{result.name}/{name}: {r.error}"
        assert len(r.step_us) == len(r.data_us) == 1 and r.step_us[0] > 0 and r.data_us[0] > 0
        assert r.first_us is not None and r.first_us > 0
    expected = set(mm.SYSTEMS) - ({"torch-eager"} if not torch_available() else set())
    assert set(result.results) == expected


def test_losses_train_and_agree_with_the_oracles(result: mm.ModelResult) -> None:
    ref = result.results["acg-eager"]
    assert len(ref.losses) == mm.CHECK_STEPS and all(np.isfinite(ref.losses))
    assert ref.losses[-1] != ref.losses[0]  # the parameters moved: the check compares steps
    if torch_available():
        torch = result.results["torch-eager"].losses
        np.testing.assert_allclose(ref.losses, torch, rtol=mm.LOSS_RTOL["torch-eager"])
        assert ref.check == "ok"
    for name in COMPILED:
        r = result.results[name]
        np.testing.assert_allclose(r.losses, ref.losses, rtol=mm.LOSS_RTOL["acg-eager"])
        assert r.check == "ok", r.check


@pytest.mark.parametrize("system", ("acg-compile", "acg-compile-step"))
def test_compiled_systems_never_run_eagerly(result: mm.ModelResult, system: str) -> None:
    # (llama2.c's forward leaves its loss on the module, self.last_loss: the whole step
    # holds it as a program output)
    assert result.results[system].counters.get("compile_eager_runs", 0) == 0


def test_both_libraries_get_the_same_batches_and_parameters() -> None:
    if not torch_available():
        pytest.skip("torch is not installed")
    task = mm.make_task("mlp", smoke=True)
    a, t = mm.Runner("acg-eager", task), mm.Runner("torch-eager", task)
    for (xa, ya), (xt, yt) in zip(a.fixed, t.fixed):
        np.testing.assert_array_equal(xa.numpy(), xt.numpy())
        np.testing.assert_array_equal(ya.numpy(), yt.numpy())
    assert any((y.numpy() == -1).any() for _, y in a.fixed)  # makemore's padding is masked
    for (k, pa), (kt, pt) in zip(a.model.state_dict().items(), t.model.state_dict().items()):
        assert k == kt
        np.testing.assert_array_equal(pa.numpy(), pt.numpy())


def test_loss_check_catches_a_difference() -> None:
    assert mm.compare_losses([1.0, 0.9], [1.0, 0.9], 1e-5) == "ok"
    assert mm.compare_losses([1.0, 0.9001], [1.0, 0.9], 1e-5).startswith("loss of step 2")
    assert mm.compare_losses([1.0], [1.0, 0.9], 1e-5) != "ok"
