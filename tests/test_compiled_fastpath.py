"""Compiled autograd's cache-hit fast path (compiled_autograd.fastpath): same gradients, hooks,
errors and capture counts as the general path; oracles are jax.grad and eager mode."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import compiled_autograd as ca
from autograd_compile.compiled_autograd import fastpath
from autograd_compile.autograd import engine
from conftest import assert_close


@pytest.fixture(autouse=True)
def fresh_cache():
    ca.reset()
    yield
    ca.reset()


def _params(seed: int = 0, width: int = 8, dtype=np.float32):
    rng = np.random.default_rng(seed)
    w = acg.tensor(rng.standard_normal((width, width)).astype(dtype), requires_grad=True)
    b = acg.tensor(rng.standard_normal(width).astype(dtype), requires_grad=True)
    return w, b


def _loss(x, w, b, p: float = 2.0):
    return (F.linear(x, w, b).tanh() ** p).mean()


def _jax_grads(x, w, b, p: float = 2.0):
    f = lambda w, b: (jnp.tanh(x @ w.T + b) ** p).mean()
    return jax.grad(f, argnums=(0, 1))(w.detach().numpy(), b.detach().numpy())


def _x(batch: int, seed: int, width: int = 8, dtype=np.float32):
    return np.random.default_rng(100 + seed).standard_normal((batch, width)).astype(dtype)


def test_training_loop_hits_and_matches_jax(mode):
    """One capture, then every step a hit served by the fast path; grads equal jax.grad."""
    w, b = _params()
    for step in range(4):
        x = _x(16, step)
        w.grad = b.grad = None
        with mode():
            _loss(acg.tensor(x), w, b).backward()
        gw, gb = _jax_grads(x, w, b)
        assert_close(w.grad, gw, rtol=1e-5)
        assert_close(b.grad, gb, rtol=1e-5)
    if mode.compiled:
        assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 3
        assert len(fastpath._EXACT) == 1


def test_batch_sweep_one_capture_then_exact_hits(mode):
    """Sizes are symbolic in the general cache (one capture over a sweep); the exact
    cache gets one key per batch size, and revisiting a size hits it."""
    w, b = _params()
    for step, batch in enumerate((16, 32, 48, 16, 32)):
        x = _x(batch, step)
        w.grad = b.grad = None
        with mode():
            _loss(acg.tensor(x), w, b).backward()
        assert_close(w.grad, _jax_grads(x, w, b)[0], rtol=1e-5)
    if mode.compiled:
        assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 4
        assert len(fastpath._EXACT) == 3


def test_accumulating_into_grad_is_a_different_graph(mode):
    """``.grad`` already set (no zero_grad) adds; the fast key tells the two apart."""
    w, b = _params()
    x1, x2 = _x(4, 1), _x(4, 2)
    for x in (x1, x2):
        with mode():
            _loss(acg.tensor(x), w, b).backward()
    want = np.asarray(_jax_grads(x1, w, b)[0]) + np.asarray(_jax_grads(x2, w, b)[0])
    assert_close(w.grad, want, rtol=1e-5)
    if mode.compiled:
        assert ca.counters["captures"] == 2


def test_dtype_change_recaptures(mode):
    for dtype in (np.float32, np.float64, np.float32):
        w, b = _params(dtype=dtype)
        x = _x(4, 0, dtype=dtype)
        with mode():
            _loss(acg.tensor(x), w, b).backward()
        assert w.grad.dtype == w.dtype
        assert_close(w.grad, _jax_grads(x, w, b)[0], rtol=1e-5)
    if mode.compiled:
        assert ca.counters["captures"] == 2 and ca.counters["cache_hits"] == 1


def test_specialised_scalar_guard_picks_the_right_graph(mode):
    """An exponent the graph specialises on (pow's int exponent lifts with a guard) is
    not in the exact key: a hit re-checks the entry's scalar guards."""
    w, b = _params()
    for p in (2, 3, 2, 3):
        x = _x(4, p)
        w.grad = b.grad = None
        with mode():
            _loss(acg.tensor(x), w, b, p).backward()
        gw, gb = _jax_grads(x, w, b, float(p))
        assert_close(w.grad, gw, rtol=1e-5)
        assert_close(b.grad, gb, rtol=1e-5)


def test_in_place_change_of_a_saved_tensor_raises_and_leaves_grads(mode):
    w, b = _params()
    x = acg.tensor(_x(4, 0))
    for _ in range(2):  # the second backward is a cache hit
        w.grad = None
        h = F.linear(x, w, b)
        y = h.tanh()
        loss = (y * y).mean()
        if _ == 1:
            y.add_(1.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                with mode():
                    loss.backward()
            assert w.grad is None
        else:
            with mode():
                loss.backward()


def test_second_backward_without_retain_graph_raises(mode):
    w, b = _params()
    for _ in range(2):
        loss = _loss(acg.tensor(_x(4, 0)), w, b)
        with mode():
            loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        with mode():
            loss.backward()


def test_retain_graph_repeats_accumulate(mode):
    w, b = _params()
    x = _x(4, 0)
    loss = _loss(acg.tensor(x), w, b)
    for _ in range(3):
        with mode():
            loss.backward(retain_graph=True)
    assert_close(w.grad, 3 * np.asarray(_jax_grads(x, w, b)[0]), rtol=1e-5)


def test_hooks_take_the_general_path_with_eager_semantics(mode):
    """A hook anywhere in the graph: the fast walk stops and the general path plans it;
    its calls and effect match eager, step after step."""
    w, b = _params()
    calls = []

    def double(g):
        calls.append(1)
        return g * 2

    for step in range(3):
        x = _x(4, step)
        w.grad = b.grad = None
        h = F.linear(acg.tensor(x), w, b)
        h.register_hook(double)
        with mode():
            (h.tanh() ** 2).mean().backward()
        assert_close(w.grad, 2 * np.asarray(_jax_grads(x, w, b)[0]), rtol=1e-5)
    assert len(calls) == 3
    assert not fastpath._EXACT
    if mode.compiled:
        assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 2


def test_unpack_hooks_run_once_per_saved_tensor(mode):
    """saved_tensors_hooks: the fast walk never calls an unpack hook (it hands over to
    the general path first), so each runs exactly as often as eagerly."""
    counts = []
    for compiled in (False, True):
        w, b = _params()
        unpacked = []
        with acg.autograd.graph.saved_tensors_hooks(lambda t: t,
                                                    lambda t: unpacked.append(1) or t):
            loss = _loss(acg.tensor(_x(4, 0)), w, b)
        with mode() if compiled else ca.disable():
            loss.backward()
        counts.append(len(unpacked))
    assert counts[0] == counts[1] > 0


def test_reset_forgets_exact_keys(mode):
    w, b = _params()
    with mode():
        _loss(acg.tensor(_x(4, 0)), w, b).backward()
    ca.reset()
    assert not fastpath._EXACT and fastpath._LAST[0] is None
    w.grad = None
    with mode():
        _loss(acg.tensor(_x(4, 0)), w, b).backward()
    if mode.compiled:
        assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 0


def test_fast_walk_gathers_what_the_general_collect_gathers():
    """Same nodes in the same order, same runtime inputs, sizes, scalars and leaves as
    ``Collected`` on the same graph (the cached program reads them by position)."""
    w, b = _params()
    x = acg.tensor(_x(4, 0))
    y = F.linear(x, w, b)
    loss = (y.tanh() * 1.5 + y.sigmoid()).sum() + (w * w).sum()
    grads = [acg.ones(())]
    walk = fastpath.collect([loss], grads, ("h",))
    for n in walk.nodes[1:]:
        n._ca_memo = None
    task = engine.GraphTask([loss], grads, True, False, None, True)
    general = ca.cache.Collected(task, "jax")
    assert walk.nodes[1:] == general.nodes[1:]
    assert walk.col.sizes == general.col.sizes and walk.col.scalars == general.col.scalars
    assert [id(t) for t in walk.col.leaves] == [id(t) for t in general.col.leaves]
    assert [id(t) for t in walk.col.inputs[1:]] == [id(t) for t in general.col.inputs[1:]]
