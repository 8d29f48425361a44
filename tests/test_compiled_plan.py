"""Compiled autograd's backward plans (compiled_autograd/plan.py): a plan serves only graphs
whose walk equals the one it was written from. Each test builds one structure until its plan
exists, then hands the plan graphs that differ in one thing the key holds (node type, hooks,
a leaf's .grad, dtype, size, grad mode, node sharing, versions): the plan must refuse them,
and every backward's gradients, hook calls and errors must equal eager mode's."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import compiled_autograd as ca
from autograd_compile.autograd import engine
from autograd_compile.compiled_autograd import fastpath, plan as plans
from autograd_compile.dispatch.keys import TLS
from conftest import assert_close

WIDTH = 6


@pytest.fixture(autouse=True)
def fresh_cache():
    ca.reset()
    yield
    ca.reset()


class Model:
    """Two linear layers; one copy runs eagerly, one compiled (same values)."""

    def __init__(self, dtype=np.float32, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.values = [rng.standard_normal(s).astype(dtype)
                       for s in ((WIDTH, WIDTH), (WIDTH,), (WIDTH, WIDTH), (WIDTH,))]
        self.params = [acg.tensor(v, requires_grad=True) for v in self.values]

    def loss(self, x, act=None, scale: float = 1.5, power: int = 2, hook=None):
        w0, b0, w1, b1 = self.params
        h = F.linear(x, w0, b0)
        h = (act or acg.Tensor.tanh)(h)
        if hook is not None:
            h.register_hook(hook)
        h = F.linear(h * scale, w1, b1).tanh()
        return (h ** power).mean()


def _x(batch: int = 4, seed: int = 1, dtype=np.float32):
    return acg.tensor(np.random.default_rng(seed).standard_normal((batch, WIDTH)).astype(dtype))


def _served() -> plans.Plan | None:
    """The plan that served the last backward (tried first next time)."""
    return fastpath._RECENT[0][2] if fastpath._RECENT else None


def _header() -> tuple:
    return (ca.api.lookup_backend("jax"), False, True, TLS.grad_enabled)


def _grads(m: Model) -> list:
    return [None if p.grad is None else p.grad.numpy().copy() for p in m.params]


def _step(eager: Model, compiled: Model, zero: bool = True, batch: int = 4, **kw) -> None:
    """One backward of each copy (``kw`` picks the variant); grads must agree."""
    for m, compiled_mode in ((eager, False), (compiled, True)):
        if zero:
            for p in m.params:
                p.grad = None
        loss = m.loss(_x(batch, dtype=m.values[0].dtype), **kw)
        if compiled_mode:
            with ca.enable("jax"):
                loss.backward()
        else:
            loss.backward()
    for a, b in zip(_grads(eager), _grads(compiled)):
        assert (a is None) == (b is None)
        if a is not None:
            assert_close(b, a, rtol=1e-5, atol=1e-6)


def _warm(eager: Model, compiled: Model, **kw) -> plans.Plan:
    for _ in range(3):
        _step(eager, compiled, **kw)
    plan = _served()
    assert isinstance(plan, plans.Plan), "the loop's exact key should have a plan"
    for p in eager.params + compiled.params:  # as the loop's next step starts
        p.grad = None
    return plan


def _refuses(plan: plans.Plan, loss) -> bool:
    roots = [loss]
    return plan.fn(roots, engine._root_grads(roots, [None]), _header()) is None


def test_a_loop_is_served_by_its_plan_with_eager_gradients():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    hits = ca.counters["cache_hits"]
    for _ in range(3):
        _step(eager, compiled)
    assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == hits + 3
    assert _served() is plan
    assert "def forward(roots, grads, header):" in plan.source
    for p in compiled.params:
        p.grad = None
    assert not _refuses(plan, compiled.loss(_x()))  # the same structure again: served


@pytest.mark.parametrize("variant", [
    dict(act=acg.Tensor.sigmoid),                  # another node type
    dict(batch=3),                                  # another size
])
def test_plan_refuses_another_structure(variant):
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    kw = {k: v for k, v in variant.items() if k != "batch"}
    assert _refuses(plan, Model().loss(_x(variant.get("batch", 4)), **kw))
    _step(eager, compiled, **variant)
    _step(eager, compiled)  # and back


def test_lifted_float_changes_are_served_and_read_afresh():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    assert not _refuses(plan, Model().loss(_x(), scale=-0.25))
    _step(eager, compiled, scale=-0.25)
    assert _served() is plan and ca.counters["captures"] == 1


def test_a_power_guard_picks_its_own_entry():
    """pow's int exponent is a lifted scalar with a guard: the plan serves the graph,
    the entry whose guard holds runs it."""
    eager, compiled = Model(), Model()
    _warm(eager, compiled)
    for p in (3, 2, 3, 2):
        _step(eager, compiled, power=p)


def test_plan_refuses_a_tensor_hook_and_the_hook_runs_as_eager():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    calls = {"eager": 0, "compiled": 0}

    def hook_for(name):
        def hook(g):
            calls[name] += 1
            return g * 3.0
        return hook
    assert _refuses(plan, Model().loss(_x(), hook=lambda g: None))
    for m, name, ctx in ((eager, "eager", None), (compiled, "compiled", ca.enable("jax"))):
        for p in m.params:
            p.grad = None
        loss = m.loss(_x(), hook=hook_for(name))
        if ctx is None:
            loss.backward()
        else:
            with ctx:
                loss.backward()
    assert calls == {"eager": 1, "compiled": 1}
    for a, b in zip(_grads(eager), _grads(compiled)):
        assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_plan_refuses_a_post_accumulate_hook_and_it_runs_after_the_write():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    seen = {}

    def watch(name):
        def hook(p):
            seen[name] = p.grad.numpy().copy()
        return hook
    eager.params[2].register_post_accumulate_grad_hook(watch("eager"))
    handle = compiled.params[2].register_post_accumulate_grad_hook(watch("compiled"))
    assert _refuses(plan, compiled.loss(_x()))
    _step(eager, compiled)
    assert_close(seen["compiled"], seen["eager"], rtol=1e-5, atol=1e-6)
    handle.remove()
    seen.clear()
    _step(eager, compiled)
    assert "compiled" not in seen and "eager" in seen


def test_plan_refuses_a_defined_grad_and_accumulates_as_eager():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    assert not _refuses(plan, compiled.loss(_x()))
    _step(eager, compiled)
    assert _refuses(plan, compiled.loss(_x()))  # every .grad is defined now
    for _ in range(3):
        _step(eager, compiled, zero=False)  # accumulate: its own key, its own plan
    compiled.params[1].grad = eager.params[1].grad = None  # one leaf's .grad only
    _step(eager, compiled, zero=False)


def test_plan_refuses_another_dtype():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    assert _refuses(plan, Model(np.float64).loss(_x(dtype=np.float64)))
    e64, c64 = Model(np.float64), Model(np.float64)
    for _ in range(3):
        _step(e64, c64)
    assert all(p.grad.dtype == acg.float64 for p in c64.params)


def test_plan_refuses_another_grad_mode():
    """The header holds grad mode: backward under no_grad is another key."""
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    loss = compiled.loss(_x())
    with acg.no_grad():
        roots = [loss]
        assert plan.fn(roots, engine._root_grads(roots, [None]), _header()) is None


def test_plan_refuses_a_shared_node_where_it_saw_two():
    """Two edges to two equal-looking nodes, then two edges to one node: another walk."""
    w = acg.tensor(np.linspace(-1, 1, WIDTH).astype(np.float32), requires_grad=True)
    x = _x()

    def loss(shared: bool):
        a = x * w
        b = a if shared else x * w
        return (a.tanh() * b.tanh()).mean()
    with ca.enable("jax"):
        for _ in range(3):
            w.grad = None
            loss(False).backward()
    plan = _served()
    assert isinstance(plan, plans.Plan)
    w.grad = None
    assert not _refuses(plan, loss(False))
    assert _refuses(plan, loss(True))
    w.grad = None
    loss(True).backward()
    expected = w.grad.numpy().copy()
    w.grad = None
    with ca.enable("jax"):
        loss(True).backward()
    assert_close(w.grad, expected, rtol=1e-6)


def test_in_place_change_after_the_plan_raises_eagers_error_and_keeps_grads():
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    before = _grads(compiled)
    w0, b0, w1, b1 = compiled.params
    h = F.linear(_x(), w0, b0).tanh()
    loss = (F.linear(h * 1.5, w1, b1).tanh() ** 2).mean()
    h.add_(1.0)  # saved by the tanh (as its output) and by mul: a stale version
    assert _refuses(plan, loss)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with ca.enable("jax"):
            loss.backward()
    for a, b in zip(before, _grads(compiled)):
        np.testing.assert_array_equal(a, b)


def test_retain_graph_backward_twice_matches_eager():
    eager, compiled = Model(), Model()
    _warm(eager, compiled)
    for m, ctx in ((eager, None), (compiled, ca.enable("jax"))):
        for p in m.params:
            p.grad = None
        loss = m.loss(_x())
        for _ in range(2):
            if ctx is None:
                loss.backward(retain_graph=True)
            else:
                with ca.enable("jax"):
                    loss.backward(retain_graph=True)
    for a, b in zip(_grads(eager), _grads(compiled)):
        assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_check_mode_verifies_every_served_graph(monkeypatch):
    """ACG_CHECK: each graph a plan serves is walked generically too and compared."""
    monkeypatch.setattr(fastpath.config, "CHECK", True)
    calls = []
    real = fastpath._verify
    monkeypatch.setattr(fastpath, "_verify", lambda *a: calls.append(1) or real(*a))
    eager, compiled = Model(), Model()
    _warm(eager, compiled)
    for kw in (dict(), dict(scale=0.5), dict(batch=3), dict(batch=3), dict()):
        _step(eager, compiled, **kw)
    assert calls


def test_graphs_without_a_plan_keep_the_generic_walk():
    """A custom Function's node is not planned: the loop still hits, with eager's grads."""
    class Cube(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x
    w = acg.tensor(np.linspace(-1, 1, WIDTH).astype(np.float32), requires_grad=True)
    for _ in range(3):
        w.grad = None
        with ca.enable("jax"):
            Cube.apply(w).sum().backward()
    assert _served() is None and set(fastpath._PLANS.values()) == {False}
    assert ca.counters["captures"] == 1
    assert_close(w.grad, 3 * np.linspace(-1, 1, WIDTH) ** 2, rtol=1e-5)


def test_a_compiled_regions_backward_is_planned_and_matches_eager():
    """acg.compile's backward node (aot/program.py) has its own planner: the region is
    part of what the plan checks; another batch size is refused and still right."""
    eager, compiled = Model(), Model()

    def fn(x, w0, b0, w1, b1):
        return (F.linear(F.linear(x, w0, b0).tanh(), w1, b1).tanh() ** 2).mean()
    region = acg.compile(fn)

    def step(batch: int) -> None:
        for m, run in ((eager, fn), (compiled, region)):
            for p in m.params:
                p.grad = None
            loss = run(_x(batch), *m.params)
            if m is compiled:
                with ca.enable("jax"):
                    loss.backward()
            else:
                loss.backward()
        for a, b in zip(_grads(eager), _grads(compiled)):
            assert_close(b, a, rtol=1e-5, atol=1e-6)
    for _ in range(3):
        step(4)
    plan = _served()
    assert isinstance(plan, plans.Plan) and "n.region is not" in plan.source
    for p in compiled.params:
        p.grad = None
    assert not _refuses(plan, region(_x(4), *compiled.params))
    assert _refuses(plan, region(_x(5), *compiled.params))
    for batch in (5, 5, 4, 5):
        step(batch)


def test_check_mode_catches_a_plan_that_reads_the_wrong_values(monkeypatch):
    """The checker itself: a corrupted plan (its inputs out of order) is caught on the
    first graph it serves, with a message that names the plan."""
    monkeypatch.setattr(fastpath.config, "CHECK", True)
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)
    good = plan.fn

    def swapped(roots, grads, header):
        got = good(roots, grads, header)
        return None if got is None else (got[0][::-1],) + got[1:]
    plan.fn = swapped
    with pytest.raises(AssertionError, match="a backward plan served a graph"):
        _step(eager, compiled)
    assert all(p.grad is None for p in compiled.params)  # nothing was written


def test_two_alternating_backwards_are_both_served_by_their_plans():
    """A GAN-style loop alternates two graphs: each keeps its plan (tried newest first)."""
    eager, compiled = Model(), Model()
    for _ in range(3):
        _step(eager, compiled)
        _step(eager, compiled, act=acg.Tensor.sigmoid)
    assert len(fastpath._RECENT) == 2
    served = []
    for _, _, plan in fastpath._RECENT:
        def counted(*a, _fn=plan.fn):
            got = _fn(*a)
            served.append(got is not None)
            return got
        plan.fn = counted
    for _ in range(3):
        _step(eager, compiled)
        _step(eager, compiled, act=acg.Tensor.sigmoid)
    assert served.count(True) == 6  # every backward served; the other plan refused first
    assert ca.counters["captures"] == 2


def test_a_plan_that_meets_unexpected_state_hands_over_to_the_walk():
    """A plan that raises (state it was not written for) refuses; the walk decides."""
    eager, compiled = Model(), Model()
    plan = _warm(eager, compiled)

    def broken(roots, grads, header):
        raise AttributeError("no aval")
    plan.fn = broken
    _step(eager, compiled)  # served by the generic walk, with eager's gradients
    assert ca.counters["captures"] == 1
