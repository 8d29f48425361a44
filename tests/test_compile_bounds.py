"""Index bounds and class targets checked inside compiled programs: under ``acg.compile``
and in compiled autograd's backward programs, an out-of-range index raises the error eager
raises (type and text), not a clamped or NaN result; ``ACG_CHECKS=0`` removes the checks.
The oracle is the same code run eagerly."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import runtime_checks
from autograd_compile.aot import counters
from tests.conftest import assert_close

_RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    acg.aot.reset()
    acg.compiled_autograd.reset()


def _x(*shape: int) -> acg.Tensor:
    return acg.tensor(_RNG.standard_normal(shape).astype(np.float32))


def _i(*values: Any) -> acg.Tensor:
    return acg.tensor(np.asarray(values, dtype=np.int64))


def _written(x, idx):
    y = x.clone()
    y[idx] = 1.0
    return y


def _filled(x, idx):
    y = x * 1
    y.index_fill_(0, idx, 2.0)
    return y


# (name, fn, args): each fn raises for its args in eager
CASES: list[tuple[str, Callable, Callable[[], tuple]]] = [
    ("embedding_high", lambda w, i: F.embedding(i, w), lambda: (_x(10, 4), _i(1, 10))),
    ("embedding_negative", lambda w, i: F.embedding(i, w), lambda: (_x(10, 4), _i(-1, 2))),
    ("embedding_module", acg.nn.Embedding(10, 4), lambda: (_i([3, 10], [0, 1]),)),
    ("gather", lambda x, i: x.gather(1, i), lambda: (_x(2, 3), _i([7], [0]))),
    ("gather_negative", lambda x, i: acg.gather(x, 0, i), lambda: (_x(3), _i(-4))),
    ("index_select", lambda x, i: x.index_select(0, i), lambda: (_x(10), _i(-11))),
    ("index_select_high", lambda x, i: acg.index_select(x, 1, i), lambda: (_x(2, 5), _i(0, 5))),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), lambda: (_x(2, 3), _i(0, 5))),
    ("cross_entropy_negative", lambda x, t: F.cross_entropy(x, t, reduction="sum"),
     lambda: (_x(3, 4), _i(-100, -1, 2))),
    ("nll_loss", lambda x, t: F.nll_loss(F.log_softmax(x, 1), t), lambda: (_x(2, 3), _i(3, 1))),
    ("index_add", lambda x, i, s: x.index_add(0, i, s), lambda: (_x(4, 2), _i(1, 5), _x(2, 2))),
    ("index_copy", lambda x, i, s: acg.index_copy(x, 0, i, s),
     lambda: (_x(4, 2), _i(4), _x(1, 2))),
    ("index_fill", _filled, lambda: (_x(4), _i(-5))),
    ("scatter", lambda x, i, s: x.scatter(1, i, s), lambda: (_x(2, 3), _i([0], [3]), _x(2, 1))),
    ("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
     lambda: (_x(3), _i(0, 9), _x(2))),
    ("scatter_reduce", lambda x, i, s: x.scatter_reduce(0, i, s, "amax"),
     lambda: (_x(3), _i(2, 3), _x(2))),
    ("take_along_dim", lambda x, i: acg.take_along_dim(x, i, 1),
     lambda: (_x(2, 3), _i([0], [-4]))),
    ("advanced_read", lambda x, i: x[i] * 2, lambda: (_x(4, 2), _i(0, 4))),
    ("advanced_read_2d", lambda x, i, j: x[i, j], lambda: (_x(4, 3), _i(0, 1), _i(2, -5))),
    ("advanced_write", _written, lambda: (_x(4), _i(-5))),
    ("one_hot", lambda i: F.one_hot(i, 3), lambda: (_i(0, 3),)),
]


def _error(fn: Callable, args: tuple) -> BaseException:
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
def test_compiled_raises_the_eager_error(name, fn, make):
    args = make()
    want = _error(fn, args)
    assert isinstance(want, (IndexError, RuntimeError)), want
    got = _error(acg.compile(fn, fullgraph=True), args)
    assert type(got) is type(want) and str(got) == str(want)
    assert counters["eager_runs"] == 0 and counters["traces"] == 1  # raised by the program


@pytest.mark.parametrize("name,fn,make", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_a_cached_program_checks_every_call(name, fn, make):
    args = make()
    good = [a.clamp(0, 1) if a.dtype == acg.int64 else a for a in args]
    cf = acg.compile(fn, fullgraph=True)
    assert_close(cf(*good), fn(*good))
    want = _error(fn, args)
    got = _error(cf, args)
    assert type(got) is type(want) and str(got) == str(want)
    assert counters["traces"] == 1 and counters["cache_hits"] == 1


def test_a_failed_call_writes_nothing_back():
    x, idx = _x(4, 2), _i(1, 9)
    before = np.asarray(x).copy()

    @acg.compile(fullgraph=True)
    def f(x, idx, s):
        x.index_add_(0, idx, s)  # a mutated input: functionalised, written back after the call
        return x.sum()
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        f(x, idx, _x(2, 2))
    np.testing.assert_array_equal(np.asarray(x), before)


def test_in_range_indices_give_eager_values_and_gradients(mode):
    w, idx, t = _x(10, 4), _i([0, 9, -1 + 10], [3, 3, 4]), _i(1, 2)
    w.requires_grad_(True)

    def f(w, idx, t):
        h = F.embedding(idx, w).sum(1)
        return F.cross_entropy(h[:, :3], t) + h.gather(1, t[:, None]).sum()
    want = f(w, idx, t)
    with mode():
        want.backward()
    gw, w.grad = np.asarray(w.grad), None
    got = acg.compile(f, fullgraph=True)(w, idx, t)
    assert_close(got, want, rtol=1e-5)
    with mode():
        got.backward()
    assert_close(w.grad, gw, rtol=1e-5, atol=1e-6)


class PickRows(acg.autograd.Function):
    """A backward that reads rows by an index only the backward uses."""

    @staticmethod
    def forward(ctx, x, idx):
        ctx.save_for_backward(idx)
        ctx.n = x.shape[0]
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return g.index_select(0, idx) * 2, None


@pytest.mark.parametrize("bad", [False, True])
def test_compiled_autograd_backward_raises_the_eager_error(mode, bad):
    x = _x(3, 2).requires_grad_(True)
    idx = _i(2, 1, 5 if bad else 0)
    loss = PickRows.apply(x, idx).sum()
    if not bad:
        with mode():
            loss.backward()
        assert_close(x.grad, np.full((3, 2), 2.0))
        return
    with pytest.raises(IndexError) as eager:
        acg.autograd.backward(PickRows.apply(x, idx).sum())
    with pytest.raises(IndexError) as got:
        with mode():
            loss.backward()
    assert str(got.value) == str(eager.value)
    assert str(got.value).startswith("acg::index.Tensor: index 5 is out of bounds for dimension 0 "
                                     "with size 3\n  called with (self: Tensor[3, 2] float32")
    assert x.grad is None


def test_backward_program_of_a_compiled_region_checks(mode):
    """A compiled region's backward program carries the checks of its backward ops."""
    x = _x(3, 2).requires_grad_(True)
    idx = _i(2, 1, 7)
    want = _error(lambda: acg.autograd.backward(PickRows.apply(x, idx).sum()), ())
    out = acg.compile(lambda x, idx: PickRows.apply(x, idx).sum())(x, idx)
    with pytest.raises(type(want)) as got:
        with mode():
            out.backward()
    assert str(got.value) == str(want)


def test_checks_off_leaves_them_out_of_new_programs():
    prev = runtime_checks.set_enabled(False)
    try:
        w = _x(10, 4)
        out = acg.compile(lambda w, i: F.embedding(i, w), fullgraph=True)(w, _i(10))
        assert out.shape == (1, 4)  # no error: jax's clamped lookup
    finally:
        runtime_checks.set_enabled(prev)
    with pytest.raises(IndexError):
        acg.compile(lambda w, i: F.embedding(i, w), fullgraph=True)(w, _i(10))


def test_acg_checks_environment_variable():
    code = ("import autograd_compile as acg, autograd_compile.nn.functional as F\n"
            "f = acg.compile(lambda x, t: F.cross_entropy(x, t))\n"
            "print(f(acg.zeros(2, 3), acg.tensor([0, 5])).isnan().item())\n")
    env = {**os.environ, "ACG_CHECKS": "0", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() in ("True", "False")  # computed, whatever jax makes of it


def test_runtime_checks_docstring_example_runs() -> None:
    import doctest
    result = doctest.testmod(runtime_checks)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("bad", ["embedding", "target"])
def test_a_whole_training_step_raises_the_eager_error_and_changes_nothing(bad):
    """acg.compile(train_step): an out-of-range token or class target raises eager's
    error (type and text) before the step runs, so parameters, gradients and optimizer
    state keep their values (the step donates them); a later good call is a cache hit."""
    def setup():
        acg.manual_seed(0)
        model = acg.nn.Sequential(acg.nn.Embedding(10, 4), acg.nn.Flatten(),
                                  acg.nn.Linear(8, 3))
        opt = acg.optim.Adam(model.parameters(), lr=1e-2)

        def step(tokens, target):
            opt.zero_grad()
            loss = F.cross_entropy(model(tokens), target)
            loss.backward()
            opt.step()
            return loss
        return model, opt, step

    good = (_i([1, 2], [3, 4]), _i(0, 2))
    wrong = (_i([1, 2], [3, 10]), _i(0, 2)) if bad == "embedding" else \
        (_i([1, 2], [3, 4]), _i(0, 3))
    m1, o1, eager = setup()
    m2, o2, step = setup()
    compiled = acg.compile(step, fullgraph=True)
    assert_close(compiled(*good), eager(*good))
    want = _error(eager, wrong)
    before = [(p.detach().numpy().copy(), p.grad.numpy().copy()) for p in m2.parameters()]
    state = [{k: v.numpy().copy() for k, v in o2.state[p].items()} for p in m2.parameters()]
    got = _error(compiled, wrong)
    assert type(got) is type(want) and str(got) == str(want)
    for p, (w, g), st in zip(m2.parameters(), before, state):
        np.testing.assert_array_equal(p.detach().numpy(), w)
        np.testing.assert_array_equal(p.grad.numpy(), g)
        for k, v in o2.state[p].items():
            np.testing.assert_array_equal(v.numpy(), st[k])
    m1.load_state_dict(m2.state_dict())  # eager's failed call did run part of its step
    o1.load_state_dict(o2.state_dict())
    assert_close(compiled(*good), eager(*good), rtol=1e-5)
    # two traces: the first step (Adam's state made), then the rest; the last call hits
    assert counters["eager_runs"] == 0 and counters["traces"] == 2
