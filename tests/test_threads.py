"""Compiled autograd from many threads at once.

Eight threads train their own model (own sizes, own hook closures) under
``enable("jax")`` against one shared cache. Every gradient of every step must
equal a single-threaded eager run of the same thread's loop, and the counters
must account for every compiled backward exactly once. 25 steps a thread by
default, 200 in the ``slow`` run (``make test-slow``).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import compiled_autograd as ca

THREADS = 8
STEPS = 25


class Worker:
    """One thread's model and loop; ``run(compiled)`` returns every step's gradients."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.batch = 3 + index % 3  # threads share graph structures, not all sizes
        rng = np.random.default_rng(index)
        f64 = dict(dtype=acg.float64, requires_grad=True)
        self.w1 = acg.tensor(rng.standard_normal((4, 6)) * 0.5, **f64)
        self.w2 = acg.tensor(rng.standard_normal((6, 1)) * 0.5, **f64)
        self.scale = 1.0 + index / 10  # each thread's hook closure differs
        self.w1.register_hook(lambda g: g * self.scale)
        self.seen = 0
        self.w2.register_post_accumulate_grad_hook(self._count)

    def _count(self, p):
        self.seen += 1

    def run(self, compiled: bool, start: threading.Barrier | None = None,
            steps: int = STEPS) -> list:
        rng = np.random.default_rng(1000 + self.index)
        grads = []
        if start is not None:
            start.wait()
        for _ in range(steps):
            x = acg.tensor(rng.standard_normal((self.batch, 4)), dtype=acg.float64)
            loss = ((x @ self.w1).tanh() @ self.w2).pow(2).mean()
            self.w1.grad = self.w2.grad = None
            with ca.enable("jax") if compiled else ca.disable():
                loss.backward()
            grads.append((self.w1.grad.numpy().copy(), self.w2.grad.numpy().copy()))
            with acg.no_grad():
                self.w1.sub_(self.w1.grad * 0.1)
                self.w2.sub_(self.w2.grad * 0.1)
        return grads


def run_threads(target, n: int) -> list:
    """Run target(i, barrier) in n threads; re-raise the first failure."""
    results, errors = [None] * n, []
    start = threading.Barrier(n)

    def main(i):
        try:
            results[i] = target(i, start)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            start.abort()
    threads = [threading.Thread(target=main, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return results


def threads_match_eager(steps: int) -> None:
    ca.reset()
    workers = [Worker(i) for i in range(THREADS)]
    compiled = run_threads(lambda i, start: workers[i].run(True, start, steps), THREADS)
    assert ca.counters["captures"] + ca.counters["cache_hits"] == THREADS * steps
    assert 1 <= ca.counters["captures"] <= 2  # batch 4 == width 4 may need its own graph
    for i in range(THREADS):
        assert workers[i].seen == steps
        eager = Worker(i).run(False, steps=steps)
        for step, ((g1, g2), (e1, e2)) in enumerate(zip(compiled[i], eager)):
            np.testing.assert_allclose(g1, e1, rtol=1e-10, atol=1e-12,
                                       err_msg=f"thread {i} step {step} w1")
            np.testing.assert_allclose(g2, e2, rtol=1e-10, atol=1e-12,
                                       err_msg=f"thread {i} step {step} w2")


def test_threads_match_single_threaded_eager_and_counters_add_up():
    threads_match_eager(STEPS)


@pytest.mark.slow
def test_threads_soak():
    threads_match_eager(200)


def test_enable_is_per_thread():
    """A thread outside enable() runs eagerly while another thread compiles."""
    ca.reset()
    workers = [Worker(0), Worker(1)]
    run_threads(lambda i, start: workers[i].run(i == 0, start), 2)
    assert ca.counters["captures"] + ca.counters["cache_hits"] == STEPS


def test_a_failing_thread_leaves_the_others_and_itself_intact():
    ca.reset()
    n = 4

    def work(i, start):
        x = acg.tensor([1.0, 2.0, 3.0], dtype=acg.float64, requires_grad=True)
        x.grad = acg.tensor([5.0, 5.0, 5.0], dtype=acg.float64)
        y = (x * float(i + 1)).sin()
        if i == 0:
            y.register_hook(lambda g: (_ for _ in ()).throw(ValueError("thread 0 fails")))
        loss = y.sum()
        start.wait()
        outcomes = []
        for _ in range(STEPS):
            try:
                with ca.enable("jax"):
                    loss.backward(retain_graph=True)
                outcomes.append("ok")
            except ValueError:
                outcomes.append("failed")
        return outcomes, x.grad.numpy()
    results = run_threads(work, n)
    assert results[0][0] == ["failed"] * STEPS
    np.testing.assert_array_equal(results[0][1], [5.0, 5.0, 5.0])
    for i in range(1, n):
        k = float(i + 1)
        assert results[i][0] == ["ok"] * STEPS
        want = 5.0 + STEPS * k * np.cos(k * np.array([1.0, 2.0, 3.0]))
        np.testing.assert_allclose(results[i][1], want, rtol=1e-12)


@pytest.mark.parametrize("backend", ["eager", "jax"])
def test_threads_capturing_different_graphs_at_once(backend):
    """Every thread captures a graph of its own at the same moment (integer exponents
    are specialised): captures run one at a time and each thread gets its own graph."""
    ca.reset()

    def work(i, start):
        x = acg.tensor([1.5, 2.0], dtype=acg.float64, requires_grad=True)
        p = i + 2
        loss = (x ** p).sum()
        start.wait()
        with ca.enable(backend):
            loss.backward()
        return x.grad.numpy(), p
    for grad, p in run_threads(work, THREADS):
        np.testing.assert_allclose(grad, p * np.array([1.5, 2.0]) ** (p - 1), rtol=1e-12)
    assert ca.counters["captures"] == THREADS
