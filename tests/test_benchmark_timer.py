"""utils.benchmark: Timer's measurements, Measurement's statistics and printed form, Compare,
against numpy formulas and (when installed) PyTorch's own Measurement on the same times."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.utils import benchmark

_TIMES = [3e-6, 1e-6, 2e-6, 2.5e-6, 1.5e-6, 8e-6]


def _m(times=_TIMES, number=10, **spec) -> benchmark.Measurement:
    task = benchmark.TaskSpec(stmt=spec.pop("stmt", "f(x)"), setup="x = 1", **spec)
    return benchmark.Measurement(number, [t * number for t in times], task)


def test_measurement_statistics_follow_numpy() -> None:
    m = _m()
    t = np.asarray(_TIMES)
    assert np.allclose(m.times, t)
    assert np.isclose(m.mean, t.mean()) and np.isclose(m.median, np.median(t))
    assert np.isclose(m.iqr, np.quantile(t, 0.75) - np.quantile(t, 0.25))
    assert m.has_warnings and not m.meets_confidence(0.1)
    assert m.significant_figures == 1 and m.stmt == "f(x)" and m.env == "Unspecified env"


def test_measurement_repr() -> None:
    text = repr(_m(label="lab", sub_label="sub", description="d"))
    assert text.split("\n", 1)[1] == (
        "lab: sub\nd\nsetup: x = 1\n  Median: 2.25 us\n  IQR:    1.25 us (1.63 to 2.88)\n"
        "  6 measurements, 10 runs per measurement, 1 thread\n"
        "  WARNING: Interquartile range is 55.6% of the median measurement.\n"
        "           This suggests significant environmental influence.")
    assert repr(_m([4e-3], 1)).split("\n", 1)[1] == (
        "f(x)\nsetup: x = 1\n  4.00 ms\n  1 measurement, 1 runs , 1 thread")


def test_measurement_matches_torch() -> None:
    pytest.importorskip("torch")
    from torch.utils.benchmark import Measurement, TaskSpec
    for times in (_TIMES, [1.0, 1.01, 1.02, 0.99, 1.0], [5e-9] * 3):
        ours = _m(times, label="lab")
        theirs = Measurement(10, [t * 10 for t in times],
                             TaskSpec(stmt="f(x)", setup="x = 1", label="lab"))
        for attr in ("mean", "median", "iqr"):
            assert np.isclose(getattr(ours, attr), getattr(theirs, attr)), attr
        assert ours.significant_figures == theirs.significant_figures
        assert repr(ours).split("\n", 1)[1] == repr(theirs).split("\n", 1)[1]


def test_timer_runs_the_statement_with_torch_bound_to_us() -> None:
    calls = []
    t = benchmark.Timer("calls.append(torch.ones(2).sum())", globals={"calls": calls},
                        label="ones")
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.times[0] > 0
    assert len(calls) == 52 and isinstance(calls[0], acg.Tensor)  # warm-up 2, then 50
    b = t.blocked_autorange(min_run_time=0.02)
    assert sum(b.raw_times) >= 0.02 and b.title == "ones"
    a = t.adaptive_autorange(threshold=0.5, max_run_time=0.5)
    assert len(a.times) >= 4 or sum(a.raw_times) > 0.5


def test_timer_errors() -> None:
    with pytest.raises(ValueError, match="only a `str` stmt"):
        benchmark.Timer(lambda: 1)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        benchmark.Timer("pass", global_setup="int x;")
    with pytest.raises(NotImplementedError, match="blocked_autorange"):
        benchmark.Timer().autorange()


def test_compare_table() -> None:
    rows = [_m([t * k for t in _TIMES], label="op", sub_label=s, description=d)
            for s, k in (("small", 1), ("big", 4)) for d in ("eager", "compiled")]
    text = str(benchmark.Compare(rows))
    assert text.splitlines()[0].startswith("[") and " op " in text.splitlines()[0]
    assert "eager  |  compiled" in text and "1 threads: " in text
    assert "Times are in microseconds (us)." in text
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        benchmark.Compare([1])


def test_compare_matches_torch() -> None:
    pytest.importorskip("torch")
    from torch.utils.benchmark import Compare, Measurement, TaskSpec
    specs = [dict(label="op", sub_label=s, description=d, num_threads=n)
             for s in ("small", "big") for d in ("eager", "compiled") for n in (1, 4)]
    ours = [_m([t * (i + 1) for t in _TIMES], **s) for i, s in enumerate(specs)]
    theirs = [Measurement(10, [t * (i + 1) * 10 for t in _TIMES],
                          TaskSpec(stmt="f(x)", setup="x = 1", **s)) for i, s in enumerate(specs)]
    for setup in (lambda c: None, lambda c: c.trim_significant_figures(),
                  lambda c: (c.colorize(), c.highlight_warnings())):
        a, b = benchmark.Compare(ours), Compare(theirs)
        setup(a)
        setup(b)
        assert str(a) == str(b)
