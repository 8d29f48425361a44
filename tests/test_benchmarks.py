"""The benchmark suite must not rot: a smoke run of every workload, checked for
completeness and for equal gradients across systems. No test asserts a time."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from autograd_compile.benchmarks import ops, run, step, step_models, sweep, xla_trap
from autograd_compile.benchmarks.measure import compare_grads
from autograd_compile.benchmarks.systems import JaxFloor, torch_available
from autograd_compile.benchmarks.workloads import NAMES, build

# torch-compiled-autograd spends 10-70 s per workload in inductor: the slow tier runs it.
SMOKE_SYSTEMS = ["acg-eager", "acg-compiled", "acg-compiled-pure", "jax-floor"] + \
    (["torch-eager"] if torch_available() else [])


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One ``--smoke`` run of every workload: its exit status, JSON and plot path."""
    tmp = tmp_path_factory.mktemp("bench")
    out, png = tmp / "bench.json", tmp / "bench.png"
    rc = run.main(["--group", "backward", "--smoke", "--no-sweep", "--no-progress",
                   "--systems", ",".join(SMOKE_SYSTEMS), "--json", str(out), "--plot", str(png)])
    return {"rc": rc, "doc": json.loads(out.read_text()), "png": png}


STEP_SMOKE_SYSTEMS = ["acg-eager", "acg-compiled", "acg-compile", "jax-floor"] + \
    (["torch-eager"] if torch_available() else [])
STEP_SMOKE_WORKLOADS = ["mlp_small", "rnn"]  # gpt's first steps take tens of seconds: the slow tier


@pytest.fixture(scope="module")
def step_smoke(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One ``--smoke`` run of the step group (and its sweep): status, JSON, plot path."""
    tmp = tmp_path_factory.mktemp("step")
    out, png = tmp / "step.json", tmp / "step.png"
    rc = run.main(["--group", "step", "--smoke", "--no-progress", "--step-workload",
                   ",".join(STEP_SMOKE_WORKLOADS), "--step-systems", ",".join(STEP_SMOKE_SYSTEMS),
                   "--json", str(out), "--plot", str(png)])
    return {"rc": rc, "doc": json.loads(out.read_text()), "png": png}


def test_step_group_runs_and_agrees_with_acg_eager(step_smoke: dict) -> None:
    assert step_smoke["rc"] == 0, step_smoke["doc"]["failures"]
    workloads = step_smoke["doc"]["step"]["workloads"]
    assert sorted(workloads) == sorted(STEP_SMOKE_WORKLOADS)
    for name, w in workloads.items():
        for system in STEP_SMOKE_SYSTEMS:
            r = w["systems"][system]
            assert r["error"] is None, f"{name}/{system}: {r['error']}"
            assert r["grad_check"] == ("reference" if system == "acg-eager" else "ok")
            assert len(r["step_samples_us"]) == run.SMOKE_REPS
            # both measured (no ordering asserted: 3 smoke reps on a loaded machine can time a
            # forward longer than a whole step; speed is the benchmark's to report)
            assert r["forward"]["median_us"] > 0 and r["step"]["median_us"] > 0
            assert r["first_step_us"] > 0


def test_step_sweep_traces_and_captures_once(step_smoke: dict) -> None:
    sweep = step_smoke["doc"]["step"]["batch_sweep"]
    rows = sweep["mlp_small/acg-compile"]
    assert [r["batch"] for r in rows] == list(step.SWEEP_BATCHES)
    assert rows[-1]["compile_traces"] == 1 and rows[-1]["captures"] == 1
    assert sweep["mlp_small/acg-compiled"][-1]["captures"] == 1


def test_step_plot_is_written(step_smoke: dict) -> None:
    assert step_smoke["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_step_system_without_its_feature_is_skipped_with_the_reason() -> None:
    model = step_models.build_step("mlp_small", smoke=True)
    cpu = jax.devices("cpu")[0]
    assert step.SYSTEMS["acg-eager"].needs(model, cpu) is None
    why = step.SYSTEMS["torch-eager"].needs(model, cpu)
    assert (why is None) == torch_available()


def test_ops_group_measures_every_op(tmp_path: Path) -> None:
    out = tmp_path / "ops.json"
    assert run.main(["--group", "ops", "--smoke", "--reps", "2", "--warmup", "0",
                     "--json", str(out)]) == 0
    doc = json.loads(out.read_text())["ops"]
    assert sorted(doc) == sorted(ops.OPS)
    for op, r in doc.items():
        for system in ("acg", "acg-grad", "jax-jit"):
            assert r["systems"][system]["median_us"] > 0 and r["systems"][system]["n"] == 2


def test_ops_group_computes_what_jax_computes() -> None:
    """The timed acg call and the jax-jit floor compute the same values."""
    cpu = jax.devices("cpu")[0]
    for op in ops.OPS:
        calls = ops._callables(op, cpu, torch_ok=False)
        got = calls["acg-grad"][0]().detach().numpy()
        np.testing.assert_allclose(got, np.asarray(calls["jax-jit"][0]()), rtol=1e-5, atol=1e-5)


def test_smoke_run_succeeds(smoke: dict) -> None:
    assert smoke["doc"]["failures"] == []
    assert smoke["rc"] == 0


@pytest.mark.parametrize("workload", NAMES)
def test_every_system_has_a_positive_median(smoke: dict, workload: str) -> None:
    systems = smoke["doc"]["workloads"][workload]["systems"]
    for name in SMOKE_SYSTEMS:
        assert name in systems, f"{workload}: {name} missing"
        assert systems[name]["error"] is None, systems[name]["error"]
        assert systems[name]["median_us"] > 0
        assert len(systems[name]["samples_us"]) == run.SMOKE_REPS


@pytest.mark.parametrize("workload", NAMES)
def test_gradients_agree_with_acg_eager(smoke: dict, workload: str) -> None:
    systems = smoke["doc"]["workloads"][workload]["systems"]
    assert systems["acg-eager"]["grad_check"] == "reference"
    for name in SMOKE_SYSTEMS[1:]:
        assert systems[name]["grad_check"] == "ok", f"{workload}/{name}: {systems[name]}"


def test_plot_is_written(smoke: dict) -> None:
    assert smoke["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_environment_is_recorded(smoke: dict) -> None:
    env = smoke["doc"]["environment"]
    assert {"jax", "device", "cpu_count", "XLA_FLAGS"} <= set(env)


def test_hook_workload_calls_its_hooks_every_backward(smoke: dict) -> None:
    systems = smoke["doc"]["workloads"]["train"]["systems"]
    n_params = len(build("train", smoke=True).params)
    for name in ("acg-eager", "acg-compiled", "acg-compiled-pure"):
        assert systems[name]["hook_calls_per_backward"] == n_params


def test_compare_grads_catches_a_wrong_gradient() -> None:
    ref = {"w": np.array([1.0, 2.0, 3.0], np.float32)}
    assert compare_grads({"w": ref["w"] * (1 + 1e-6)}, ref) == "ok"
    assert compare_grads({"w": ref["w"] * 1.01}, ref).startswith("w:")
    assert compare_grads({"v": ref["w"]}, ref) != "ok"


def test_jax_floor_runs_the_backward_only() -> None:
    w = build("mlp", smoke=True)
    layers = w.sizes["layers"]
    prims = JaxFloor(w, jax.devices("cpu")[0]).info()["backward_primitives"]
    # backward of `layers` Linear layers: a weight grad each, an input grad for all but
    # the first (x needs none); a re-run forward would add `layers` more.
    assert prims["dot_general"] == 2 * layers - 1


def test_batch_sweep_captures_once() -> None:
    rows = sweep.batch_sweep("mlp_small", smoke=True, device=jax.devices("cpu")[0])
    assert [r["batch"] for r in rows] == list(sweep.SWEEP_BATCHES)
    assert rows[-1]["captures"] == 1
    assert rows[-1]["compiles"] == 1  # the first size; two calls at the others run op by op
    assert rows[-1]["eager_shapes"] == 2 * (len(sweep.SWEEP_BATCHES) - 1)


def test_xla_trap_flag_keeps_the_users_flags() -> None:
    user = "--xla_dump_to=/tmp/x --xla_cpu_experimental_ynn_fusion_type=dot"
    assert xla_trap.with_trap_flag(user, False) == "--xla_dump_to=/tmp/x"
    assert xla_trap.with_trap_flag(user, True) == f"--xla_dump_to=/tmp/x {xla_trap.TRAP_FLAG}"


def test_gpu_request_without_a_gpu_is_a_clear_error(capsys: pytest.CaptureFixture) -> None:
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax sees a GPU here")
    assert run.main(["--device", "gpu"]) == 2
    assert "jax sees no GPU device" in capsys.readouterr().err


def test_bench_runs_from_any_directory(tmp_path: Path) -> None:
    """The suite is installed as autograd_compile.benchmarks; no top-level name is claimed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = "import importlib.util as u; print(u.find_spec('benchmarks') is None)"
    claimed = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env,
                             capture_output=True, text=True, check=True)
    assert claimed.stdout.strip() == "True"
    proc = subprocess.run([sys.executable, "-m", "autograd_compile", "bench", "--help"],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "--workload" in proc.stdout and "--device" in proc.stdout


def test_unknown_workload_is_rejected(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        run.main(["--workload", "nope"])
    assert "unknown workload nope" in capsys.readouterr().err


@pytest.mark.slow  # make test-slow; needs torch (pip install torch==2.13.0)
# torch's compiled autograd reads a non-leaf's .grad internally; the UserWarning this
# raises must not become an error (pytest's filterwarnings=error) inside its FakeTensorMode.
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_torch_compiled_autograd_smoke(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "torch.json"
    rc = run.main(["--smoke", "--no-sweep", "--no-progress", "--workload", "mlp_small,train",
                   "--systems", "acg-eager,torch-eager,torch-compiled-autograd",
                   "--json", str(out)])
    doc = json.loads(out.read_text())
    assert rc == 0, doc["failures"]
    for workload in ("mlp_small", "train"):
        system = doc["workloads"][workload]["systems"]["torch-compiled-autograd"]
        assert system["grad_check"] == "ok" and system["median_us"] > 0


@pytest.mark.slow  # four subprocesses
def test_xla_trap_study_measures_both_settings(tmp_path: Path) -> None:
    out = tmp_path / "trap.json"
    assert run.main(["--xla-trap", "--smoke", "--json", str(out)]) == 0
    trap = json.loads(out.read_text())["xla_trap"]
    assert xla_trap.TRAP_FLAG in trap["ynn_no_reduce"]["XLA_FLAGS"]
    assert xla_trap.TRAP_FLAG not in trap["default"]["XLA_FLAGS"]
    for setting in trap.values():
        assert set(setting["measured"]) == {*xla_trap.TRAP_SYSTEMS, xla_trap.FORWARD}


@pytest.mark.slow  # first steps of every system on the GPT example: about a minute
def test_step_group_on_the_gpt_example(tmp_path: Path) -> None:
    if step_models.available("gpt") is not None:
        pytest.skip(step_models.available("gpt"))
    out = tmp_path / "gpt.json"
    systems = ["acg-eager", "acg-compiled", "acg-compile", "jax-floor"] + \
        (["torch-eager"] if torch_available() else [])
    rc = run.main(["--group", "step", "--smoke", "--no-sweep", "--no-progress",
                   "--step-workload", "gpt", "--step-systems", ",".join(systems),
                   "--json", str(out)])
    doc = json.loads(out.read_text())
    assert rc == 0, doc["failures"]
    for system in systems[1:]:
        assert doc["step"]["workloads"]["gpt"]["systems"][system]["grad_check"] == "ok"


# -- warmgpu: the honest floor and torch in its own process --------------------------------

def test_jax_floor_step_is_the_step_program_alone() -> None:
    cpu = jax.devices("cpu")[0]
    s = step.JaxStep(step_models.build_step("mlp_small", smoke=True), cpu)
    calls, forward = [], s.forward
    s.forward = lambda *a: calls.append(1) or forward(*a)
    s.step()
    assert calls == []  # the timed step runs no forward of its own
    model = step_models.build_step("mlp_small", smoke=True)
    ref = jax.grad(lambda p: step_models.jax_loss(model)(p, model.inputs))(model.params)
    for k, g in s.grads().items():  # and it is still the whole step: gradients of the loss
        np.testing.assert_allclose(g, np.asarray(ref[k]), rtol=1e-5, atol=1e-6)
    _, fwd = step.timed_step(s)
    assert calls == [1] and fwd > 0  # the forward column comes from a separate call


def test_torch_eager_alone_runs_in_its_own_process() -> None:
    pytest.importorskip("torch")
    doc = step.run_alone("mlp_small", "torch-eager", 3, 1, True, 1)
    assert doc.get("error") is None, doc
    assert doc["threads"] == 1 and len(doc["step_samples_us"]) == 3
    assert all(v > 0 for v in doc["step_samples_us"])


def test_torch_runs_beside_a_cpu_device_and_says_why_not_elsewhere() -> None:
    from autograd_compile.benchmarks import systems
    cpu = jax.devices("cpu")[0]
    if systems.torch_available():
        assert systems.torch_device(cpu) == "cpu" and systems.torch_skip_reason(cpu) is None
    else:
        assert "not installed" in systems.torch_skip_reason(cpu)

    class FakeGpu:  # a JAX GPU beside a torch without CUDA (the CPU wheel installed here)
        platform = "gpu"
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        assert systems.torch_device(FakeGpu()) is None
        assert "no CUDA" in systems.torch_skip_reason(FakeGpu())
