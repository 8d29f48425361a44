"""Compiled autograd at sizes it has not compiled: the JAX backend runs the captured graph op
by op on the host tier until a size has cost a compile (``backends.ops.Tiered``), so a loop
over variable lengths neither stalls nor changes a gradient or a hook call."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from autograd_compile import compiled_autograd as ca
from autograd_compile.kernels import _xp
from conftest import ExecMode, assert_close

VOCAB = 20


@pytest.fixture(autouse=True)
def fresh_cache():
    ca.reset()
    yield
    ca.reset()


def model_and_log(seed: int = 0) -> tuple[nn.Module, list]:
    """A tiny language model whose parameters log their post-accumulate hooks."""
    acg.manual_seed(seed)
    m = nn.Sequential(nn.Embedding(VOCAB, 8), nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, VOCAB))
    log: list = []
    for name, p in m.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: log.append(name))
    return m, log


def step(m: nn.Module, tokens: np.ndarray, log: list, hook: bool) -> None:
    x = acg.tensor(tokens)
    logits = m(x)
    if hook:  # a Python hook on an activation cuts the backward into two programs
        logits.register_hook(lambda g: (log.append(("logits", tuple(g.shape))), g * 0.5)[1])
    F.cross_entropy(logits.view(-1, VOCAB), x.view(-1)).backward()


def run(mode, lengths: list[int], hook: bool) -> tuple[list, list]:
    m, log = model_and_log()
    rng = np.random.default_rng(0)
    grads = []
    with mode():
        for n in lengths:
            m.zero_grad()
            step(m, rng.integers(0, VOCAB, (3, n)), log, hook)
            grads.append([p.grad.numpy().copy() for p in m.parameters()])
    return grads, log


@pytest.mark.parametrize("hook", [False, True], ids=["one-program", "hook-cut"])
def test_new_lengths_give_eager_gradients_and_hooks(mode, hook):
    lengths = [5, 9, 6, 12, 9, 5]
    eager_grads, eager_log = run(ExecMode("eager"), lengths, hook)
    ca.reset()
    grads, log = run(mode, lengths, hook)
    assert log == eager_log  # the same hooks, as often, in the same order
    for got, want in zip(grads, eager_grads):
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-5, atol=1e-7)
    if mode.name == "compiled-jax":  # programs for the first length only; the others
        programs = ca.counters["compiles"]  # (never repeated enough) ran op by op
        assert programs == (2 if hook else 1)
        assert ca.counters["eager_shapes"] == 4 * programs
        assert ca.counters["captures"] == 1


def test_a_length_that_keeps_coming_back_gets_its_program(monkeypatch):
    """Ski rental: a size runs op by op until the time spent reaches the compile's price
    (made tiny here, so the second call at a size compiles it)."""
    monkeypatch.setattr(_xp, "COMPILE_COST", 1e-12)
    eager_grads, _ = run(ExecMode("eager"), [5, 9, 9, 9], hook=False)
    ca.reset()
    grads, _ = run(ExecMode("compiled-jax"), [5, 9, 9, 9], hook=False)
    for got, want in zip(grads, eager_grads):
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-5, atol=1e-7)
    assert ca.counters["compiles"] == 2 and ca.counters["eager_shapes"] == 1


def test_without_a_compile_budget_every_size_compiles(monkeypatch):
    """A price of zero is the old rule: each new size compiles at once."""
    monkeypatch.setattr(_xp, "COMPILE_COST", 0.0)
    run(ExecMode("compiled-jax"), [5, 9, 6], hook=False)
    assert ca.counters["compiles"] == 3 and ca.counters["eager_shapes"] == 0


def test_sizes_too_heavy_for_the_host_compile_at_once():
    w = acg.full((8, 64), 0.1, requires_grad=True)
    with ca.enable("jax"):
        for rows in (4, 20000):  # the second: 1.3M-element activations, over the host limit
            w.grad = None
            (acg.full((rows, 8), 0.1) @ w).tanh().sum().backward()
            want = rows * 0.1 * (1 - np.tanh(0.08) ** 2)
            assert_close(w.grad, np.full((8, 64), want), rtol=1e-5)
    assert ca.counters["captures"] == 1
    assert ca.counters["compiles"] == 2 and ca.counters["eager_shapes"] == 0


def test_a_failed_backward_at_a_new_size_leaves_every_grad_untouched():
    m, log = model_and_log()
    fail = [False]

    def boom(g):
        if fail[0]:
            raise ValueError("hook failed")
    m[1].weight.register_hook(boom)  # runs after the last Linear's .grad writes
    rng = np.random.default_rng(1)
    with ca.enable("jax"):
        for _ in range(2):  # (the second backward accumulates: its own capture)
            step(m, rng.integers(0, VOCAB, (3, 5)), log, hook=False)
        before = [p.grad.numpy().copy() for p in m.parameters()]
        fail[0] = True
        with pytest.raises(ValueError, match="hook failed"):  # a new length: op by op
            step(m, rng.integers(0, VOCAB, (3, 7)), log, hook=False)
    for p, b in zip(m.parameters(), before):
        np.testing.assert_array_equal(p.grad.numpy(), b)
    assert ca.counters["captures"] == 2 and ca.counters["eager_shapes"] >= 1
