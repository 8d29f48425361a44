"""torch.profiler / torch.autograd.profiler: what is recorded, how it is summed, what it
leaves behind (nothing), and that profiling never changes a result."""
from __future__ import annotations

import gzip
import json
import os
import re
import threading
import warnings
from collections import Counter

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.autograd.profiler as autograd_profiler
import autograd_compile.profiler as profiler
from autograd_compile.aot.api import CompiledFunction
from autograd_compile.aot.program import CompiledFunctionBackward
from autograd_compile.autograd import engine
from autograd_compile.dispatch.keys import TLS
from autograd_compile.profiler import ProfilerAction, profile, record_function, schedule


def _mlp() -> acg.nn.Module:
    acg.manual_seed(0)
    return acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.ReLU(), acg.nn.Linear(8, 3))


def _rows(prof, **group) -> dict:
    return {r.key: r for r in prof.key_averages(**group)}


class _Count(acg.DispatchMode):
    """An independent count of the op calls a program makes (the mode is popped while an
    op runs, so it sees the outermost calls only)."""

    def __init__(self) -> None:
        self.names: Counter = Counter()

    def __acg_dispatch__(self, func, types, args=(), kwargs=None):
        self.names["aten::" + func.name.split(".")[0]] += 1
        return func(*args, **(kwargs or {}))


def _entry_points() -> tuple:
    return (engine.call_node, engine.COMPILED_FAST[0], engine.COMPILED_RUNNER[0],
            CompiledFunction.__dict__["__call__"], CompiledFunctionBackward.__dict__["apply"])


@pytest.fixture(autouse=True)
def _leaves_nothing_behind():
    """Every test: no mode left on the stack, every wrapped entry point restored."""
    before = _entry_points()
    yield
    assert TLS.mode_stack == []
    assert _entry_points() == before
    assert profiler.recorder.active_session() is None


# -- what is recorded -------------------------------------------------------------------------

def _train_steps(model, x, n: int) -> None:
    for _ in range(n):
        loss = model(x).sum()
        loss.backward()


def test_counts_match_the_calls_made():
    model, x = _mlp(), acg.randn(5, 4)
    _train_steps(model, x, 1)  # (first-call work outside both counts)
    with _Count() as counter:
        _train_steps(model, x, 3)
    with profile() as prof:
        _train_steps(model, x, 3)
    rows = _rows(prof)
    assert rows["aten::linear"].count == 2 * 3  # two Linear layers, three steps
    assert rows["aten::relu"].count == 3 and rows["aten::sum"].count == 3
    top_ops = Counter(e.name for e in prof.events()
                      if e.name.startswith("aten::") and not _inside_op(e))
    assert top_ops == counter.names
    node = "autograd::engine::evaluate_function: "
    assert rows[node + "LinearBackward0"].count == 6
    assert rows[node + "ReluBackward0"].count == 3
    assert rows[node + "torch::autograd::AccumulateGrad"].count == 4 * 3  # four parameters


def _inside_op(e) -> bool:
    p = e.cpu_parent
    while p is not None:
        if p.name.startswith("aten::"):
            return True
        p = p.cpu_parent
    return False


def test_backward_ops_are_children_of_their_node():
    x = acg.randn(3, 4, requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    mul_node = next(e for e in prof.events()
                    if e.name == "autograd::engine::evaluate_function: MulBackward0")
    assert mul_node.cpu_children and all(c.name.startswith("aten::")
                                         for c in mul_node.cpu_children)
    assert "aten::mul" in {c.name for c in mul_node.cpu_children}


def test_times_nest():
    model, x = _mlp(), acg.randn(5, 4)
    with profile() as prof:
        with record_function("step"):
            _train_steps(model, x, 2)
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
        assert sum(c.cpu_time_total for c in e.cpu_children) <= e.cpu_time_total
    for r in prof.key_averages():
        assert 0 <= r.self_cpu_time_total <= r.cpu_time_total
        assert r.cpu_time == pytest.approx(r.cpu_time_total / r.count)
    step = _rows(prof)["step"]
    assert step.cpu_time_total == pytest.approx(prof.events()[0].cpu_time_total)
    assert prof.key_averages().self_cpu_time_total == pytest.approx(step.cpu_time_total)


def test_composite_op_children_count_in_its_total():
    lib = acg.library.Library("prof_test", "DEF")
    try:
        lib.define("axpy(Tensor a, Tensor x, Tensor y) -> Tensor")
        lib.impl("axpy", lambda a, x, y: a * x + y, "CompositeImplicitAutograd")
        a, x, y = acg.ones(3), acg.ones(3) * 2, acg.ones(3)
        with profile() as prof:
            out = acg.ops.prof_test.axpy(a, x, y)
        assert out.tolist() == [3.0, 3.0, 3.0]
        axpy = next(e for e in prof.events() if e.name == "prof_test::axpy")
        assert [c.name for c in axpy.cpu_children] == ["aten::mul", "aten::add"]
        assert axpy.self_cpu_time_total == pytest.approx(
            axpy.cpu_time_total - sum(c.cpu_time_total for c in axpy.cpu_children))
    finally:
        lib.remove_all()


def test_record_function_ranges_hold_their_ops():
    @record_function("double")
    def double(t):
        return t * 2

    with profile() as prof:
        with record_function("outer", "some args"):
            y = double(acg.ones(2)) + 1
            with record_function("inner"):
                y = y.exp()
    names = [(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()]
    assert names == [("outer", None), ("aten::ones", "outer"), ("double", "outer"),
                     ("aten::mul", "double"), ("aten::add", "outer"), ("inner", "outer"),
                     ("aten::exp", "inner")]
    outer = prof.events()[0]
    assert outer.is_user_annotation and outer.metadata == {"args": "some args"}
    assert double(acg.ones(1)).tolist() == [2.0]  # no profiler: a plain call


def test_names_and_overloads():
    with profile() as prof:
        acg.ones(2).transpose(0, 0).sum()
    assert [(e.name, e.overload_name) for e in prof.events()] == [
        ("aten::ones", ""), ("aten::transpose", "int"), ("aten::sum", "")]
    assert "Overload Name" in prof.key_averages(group_by_overload_name=True).table()
    assert "Overload Name" not in prof.key_averages().table() + prof.events().table()


def test_input_shapes_memory_flops_stack():
    x, w = acg.ones(4, 3), acg.ones(3, 5)
    with profile(record_shapes=True, profile_memory=True, with_flops=True,
                 with_stack=True) as prof:
        with record_function("mm"):
            y = x @ w
    rng, mm = prof.events()
    assert mm.input_shapes == [[4, 3], [3, 5]]
    assert mm.cpu_memory_usage == 4 * 5 * 4 and mm.self_cpu_memory_usage == 80
    assert rng.cpu_memory_usage == 80 and rng.self_cpu_memory_usage == 0
    assert mm.flops == 2 * 4 * 5 * 3
    assert any(os.path.basename(__file__) in frame for frame in mm.stack)
    table = prof.key_averages(group_by_input_shape=True, group_by_stack_n=1).table()
    for column in ("CPU Mem", "Self CPU Mem", "Input Shapes", "Source Location", "FLOPs"):
        assert column in table
    assert y.shape == (4, 5)


def test_group_by_input_shape_splits_rows():
    with profile(record_shapes=True) as prof:
        acg.ones(2) * 2
        acg.ones(3) * 2
        acg.ones(3) * 3
    muls = [r for r in prof.key_averages(group_by_input_shape=True) if r.key == "aten::mul"]
    assert sorted((r.input_shapes[0], r.count) for r in muls) == [([2], 1), ([3], 2)]
    assert _rows(prof)["aten::mul"].count == 3


def test_table_layout():
    with profile() as prof:
        acg.ones(2) * 2
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=1)
    lines = table.splitlines()
    assert re.split(r"\s{2,}", lines[1].strip()) == [
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
        "# of Calls"]
    assert len(lines) == 6 and lines[-1].startswith("Self CPU time total: ")
    first = max(prof.key_averages(), key=lambda r: r.cpu_time_total)
    assert lines[3].split()[0] == first.key
    assert str(prof.key_averages()) == prof.key_averages().table()


# -- schedule and step ------------------------------------------------------------------------

def test_schedule_records_only_active_steps():
    cycles = []

    def ready(p):
        cycles.append((p.step_num, [e.name for e in p.events() if e.cpu_parent is None],
                       Counter(e.name for e in p.events())["aten::mul"]))

    with profile(schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=ready) as prof:
        for step in range(9):
            acg.ones(2) * step
            prof.step()
    assert cycles == [(4, ["ProfilerStep#2", "ProfilerStep#3"], 2),
                      (8, ["ProfilerStep#6", "ProfilerStep#7"], 2)]
    for e in prof.events():  # each step's ops inside its step range
        assert e.name.startswith("ProfilerStep#") or e.cpu_parent is not None


def test_schedule_actions_and_repeat():
    actions = [a.name for a in map(schedule(wait=1, warmup=1, active=2, repeat=1,
                                            skip_first=1), range(7))]
    assert actions == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "NONE"]
    with pytest.raises(AssertionError, match="Invalid profiler schedule"):
        schedule(wait=0, warmup=0, active=0)
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=0, warmup=0, active=1)


def test_no_schedule_records_everything_and_reports_on_exit():
    seen = []
    with profile(on_trace_ready=lambda p: seen.append(len(p.events()))) as prof:
        for _ in range(3):
            acg.ones(1) + 1
            prof.step()
    assert seen == [6] and prof.step_num == 3
    assert not any(e.name.startswith("ProfilerStep") for e in prof.events())


def test_start_stop_and_tensorboard_handler(tmp_path):
    prof = profile(on_trace_ready=profiler.tensorboard_trace_handler(str(tmp_path / "tb"),
                                                                      worker_name="w0"))
    prof.start()
    acg.ones(2) * 2
    prof.stop()
    (name,) = os.listdir(tmp_path / "tb")
    assert name.startswith("w0.") and name.endswith(".pt.trace.json")
    events = json.loads((tmp_path / "tb" / name).read_text())["traceEvents"]
    assert [e["name"] for e in events] == ["aten::ones", "aten::mul"]
    gz = profile(on_trace_ready=profiler.tensorboard_trace_handler(str(tmp_path), use_gzip=True))
    with gz:
        acg.ones(1)
    (gzname,) = [n for n in os.listdir(tmp_path) if n.endswith(".gz")]
    with gzip.open(tmp_path / gzname, "rt") as f:
        assert json.load(f)["traceEvents"][0]["name"] == "aten::ones"


def test_chrome_trace(tmp_path):
    model, x = _mlp(), acg.randn(5, 4)
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            _train_steps(model, x, 1)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    for te, e in zip(events, prof.events()):
        assert te["ph"] == "X" and te["name"] == e.name
        assert te["ts"] == pytest.approx(e.time_range.start)
        assert te["dur"] == pytest.approx(e.cpu_time_total) and te["dur"] >= 0
        assert te["pid"] == os.getpid() and isinstance(te["tid"], int)
    assert events[0]["cat"] == "user_annotation" and events[1]["cat"] == "cpu_op"
    assert events[1]["args"]["Input Dims"] == [[5, 4], [8, 4], [8]]


# -- profiling changes nothing ------------------------------------------------------------------

def _train(compiled: str, profiled: bool) -> tuple[list, list]:
    model = _mlp()
    x, y = acg.randn(6, 4), acg.tensor([0, 2, 1, 1, 0, 2])
    opt = acg.optim.AdamW(model.parameters(), lr=0.05)
    fwd = acg.compile(model) if compiled == "acg.compile" else model

    def step():
        opt.zero_grad()
        loss = acg.nn.functional.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        return loss

    if compiled == "whole step":
        step = acg.compile(step)
    losses = []
    with profile() if profiled else _null():
        with acg.compiled_autograd.enable("jax") if compiled == "compiled_autograd" else _null():
            for _ in range(3):
                losses.append(step().item())
    return losses, [p.detach().numpy() for p in model.parameters()]


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


@pytest.mark.parametrize("compiled", ["eager", "compiled_autograd", "acg.compile",
                                      "whole step"])
def test_results_identical_under_profiler(compiled):
    plain_losses, plain_params = _train(compiled, profiled=False)
    losses, params = _train(compiled, profiled=True)
    assert losses == plain_losses
    for a, b in zip(params, plain_params):
        np.testing.assert_array_equal(a, b)


def _many_ops() -> list:
    acg.manual_seed(3)  # values made inside the block, random draws included
    a = acg.tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    h = (a @ acg.randn(4, 5) + acg.zeros(3, 5) + 0.5).tanh()
    outs = [h.exp().sum(), acg.nn.functional.log_softmax(h, -1).mean(), h.var(0).sum(),
            acg.nn.functional.gelu(h).pow(2).sum(),
            acg.nn.functional.layer_norm(h, (5,)).sin().sum(), acg.sigmoid(h).prod()]
    sum(outs).backward()
    dropped = acg.nn.functional.dropout(acg.ones(50), 0.3)
    return [o.item() for o in outs] + [a.grad.numpy(), acg.rand(7).numpy(), dropped.numpy()]


def test_values_made_inside_are_identical():
    plain = _many_ops()
    with profile(record_shapes=True, profile_memory=True, with_flops=True):
        profiled = _many_ops()
    for a, b in zip(profiled, plain):
        np.testing.assert_array_equal(a, b)


def test_compiled_programs_are_one_event():
    f = acg.compile(lambda a, b: (a * b).sin().sum())
    a, b = acg.randn(3, requires_grad=True), acg.randn(3)
    f(a, b).backward()  # traced and compiled outside the profiler
    with profile() as prof:
        f(a, b).backward()
    rows = _rows(prof)
    assert rows[f"CompiledFunction: {f.__qualname__}"].count == 1
    assert rows["CompiledFunctionBackward"].count == 1
    assert "aten::sin" not in rows  # inside the program: not an op call here
    model, x = _mlp(), acg.randn(2, 4)
    with acg.compiled_autograd.enable("jax"):
        _train_steps(model, x, 1)
        with profile() as prof:
            _train_steps(model, x, 2)
    assert _rows(prof)["CompiledAutograd"].count == 2


def test_exception_inside_restores_everything():
    with pytest.raises(ValueError, match="boom"):
        with profile() as prof:
            with record_function("failing"):
                acg.ones(2) * 2
                raise ValueError("boom")
    assert [e.name for e in prof.events()] == ["failing", "aten::ones", "aten::mul"]
    assert all(e.time_range.end >= e.time_range.start > 0 for e in prof.events())


def test_failing_op_is_recorded_and_restores():
    with profile() as prof:
        with pytest.raises(Exception):
            acg.ones(2, 3) @ acg.ones(2, 3)
        acg.ones(1) + 1
    assert [e.name for e in prof.events()][-2:] == ["aten::ones", "aten::add"]
    assert _rows(prof)["aten::matmul"].count == 1


def test_nesting_is_refused_and_modes_entered_inside_survive():
    with profile():
        with pytest.raises(RuntimeError, match="already recording"):
            with profile():
                pass
    prof, mode = profile(), _Count()
    prof.start()
    mode.__enter__()
    prof.stop()  # the profiler leaves, the mode entered after it stays
    assert TLS.mode_stack == [mode]
    acg.ones(1) * 2
    mode.__exit__(None, None, None)
    assert mode.names["aten::mul"] == 1


def test_only_the_profiling_thread_is_recorded_and_pause():
    with profile() as prof:
        t = threading.Thread(target=lambda: acg.ones(3) + 1)
        t.start()
        t.join()
        acg.ones(2) - 1
        prof.toggle_collection_dynamic(False, [profiler.ProfilerActivity.CPU])
        acg.ones(2) * 5
        prof.toggle_collection_dynamic(True, [profiler.ProfilerActivity.CPU])
        acg.ones(2) / 5
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::sub", "aten::ones",
                                               "aten::div"]


# -- the legacy API ------------------------------------------------------------------------------

def test_autograd_profiler_legacy_api():
    x = acg.randn(3, 3, requires_grad=True)
    with autograd_profiler.profile(use_cuda=False, record_shapes=True) as prof:
        with autograd_profiler.record_function("loss"):
            loss = (x @ x).relu().sum()
        loss.backward()
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["loss"].count == 1 and rows["aten::relu"].count == 1
    assert rows["aten::matmul"].count >= 1
    assert prof.self_cpu_time_total == pytest.approx(prof.function_events.self_cpu_time_total)
    assert prof.total_average().count == len(prof.function_events)
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    assert str(prof) == prof.table()
    with autograd_profiler.profile(enabled=False) as off:
        acg.ones(1)
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.table()
    pending = autograd_profiler.profile()
    with pytest.raises(RuntimeError, match="didn't finish"):
        pending.key_averages()
    with autograd_profiler.emit_nvtx(), autograd_profiler.emit_itt():
        assert (acg.ones(1) * 2).tolist() == [2.0]


def test_profile_arguments():
    with pytest.warns(FutureWarning, match="use_cuda"):
        prof = profile(use_cuda=False)
    assert prof.activities == {profiler.ProfilerActivity.CPU} | (
        profiler.supported_activities() - {profiler.ProfilerActivity.CUDA})
    with pytest.raises(AssertionError, match="No valid profiler activities"):
        profile(activities=[])
    assert ProfilerAction.RECORD_AND_SAVE.value == 3 and not profiler.kineto_available()


# -- against PyTorch's profiler -----------------------------------------------------------------

def _simple_program(lib) -> None:
    x = lib.tensor(np.ones((4, 3), np.float32), requires_grad=True)
    w = lib.tensor(np.ones((3, 5), np.float32), requires_grad=True)
    loss = (x @ w).relu().sum()
    loss.backward()


def test_recorded_names_overlap_torch():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile() as tprof:
        _simple_program(torch)
    with profile() as prof:
        _simple_program(acg)
    theirs, ours = set(_rows(tprof)), set(_rows(prof))
    node = "autograd::engine::evaluate_function: "
    assert {"aten::matmul", "aten::relu", "aten::sum", node + "ReluBackward0",
            node + "SumBackward0", node + "torch::autograd::AccumulateGrad"} <= theirs & ours
    for name in ("aten::matmul", "aten::relu", "aten::sum"):  # the forward's calls
        assert _forward_calls(prof, name) == _forward_calls(tprof, name) == 1


def _forward_calls(prof, name: str) -> int:
    """Calls of ``name`` outside the autograd engine's node ranges."""
    def in_backward(e) -> bool:
        p = e.cpu_parent
        while p is not None and not p.name.startswith("autograd::engine"):
            p = p.cpu_parent
        return p is not None
    return sum(e.name == name and not in_backward(e) for e in prof.events())


def _header(table: str) -> list[str]:
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


@pytest.mark.parametrize("options", [{}, {"profile_memory": True}])
@pytest.mark.parametrize("by_shape", [False, True])
def test_table_header_matches_torch(options, by_shape):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.profiler.profile(record_shapes=True, **options) as tprof:
            _simple_program(torch)
    with profile(record_shapes=True, **options) as prof:
        _simple_program(acg)
    theirs = tprof.key_averages(group_by_input_shape=by_shape).table(sort_by="cpu_time_total")
    ours = prof.key_averages(group_by_input_shape=by_shape).table(sort_by="cpu_time_total")
    assert _header(ours) == _header(theirs)
    assert ours.splitlines()[-1].startswith("Self CPU time total: ")
    assert theirs.splitlines()[-1].startswith("Self CPU time total: ")


def test_schedule_matches_torch():
    torch = pytest.importorskip("torch")
    for kw in ({"wait": 1, "warmup": 1, "active": 2}, {"wait": 2, "warmup": 1, "active": 3,
                                                      "repeat": 2, "skip_first": 3},
               {"wait": 3, "warmup": 1, "active": 1, "skip_first": 2, "skip_first_wait": 1}):
        ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
        assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_docstring_examples_run():
    import doctest

    from autograd_compile.profiler import (events, instrument, kinds, legacy, recorder,
                                           table)
    from autograd_compile.profiler import profiler as profiler_module
    for m in (profiler, events, instrument, kinds, legacy, recorder, table, profiler_module,
              autograd_profiler):
        result = doctest.testmod(m)
        assert result.failed == 0 and result.attempted > 0, m.__name__
