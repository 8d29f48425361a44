"""Memory and cache bounds of compiled autograd.

- A training loop under ``enable("jax")`` with changing batch sizes reaches a
  steady state: no growth in live ``acg.Tensor`` objects or in RSS after warm-up
  (300 steps; 10 000 in the ``slow`` soak, run by ``make test-slow``).
- ``CACHE_SIZE_LIMIT`` and ``RECOMPILE_LIMIT`` bound the cache, with a warning.
- The cache holds no strong reference to user objects: dropping a model frees
  its parameters, tensors captured by hooks, and objects saved on a ctx.
"""
from __future__ import annotations

import gc
import logging
import os
import weakref

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import compiled_autograd as ca
from conftest import assert_close

BATCHES = [4, 8, 16, 5]


@pytest.fixture(autouse=True)
def fresh_cache():
    ca.reset()
    yield
    ca.reset()


def live_tensors() -> int:
    gc.collect()
    # type(), not isinstance(): isinstance reads __class__, which some modules' lazy
    # objects (e.g. torch.distributed.reduce_op) answer with a deprecation warning
    return sum(1 for o in gc.get_objects() if issubclass(type(o), acg.Tensor))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Trainer:
    """A small MLP with a gradient-clipping hook and an SGD step per batch."""

    def __init__(self, seed: int = 0) -> None:
        acg.manual_seed(seed)
        self.model = acg.nn.Sequential(acg.nn.Linear(6, 16), acg.nn.Tanh(), acg.nn.Linear(16, 1))
        self.opt = acg.optim.SGD(self.model.parameters(), lr=0.01)
        self.rng = np.random.default_rng(seed)
        for p in self.model.parameters():
            p.register_hook(lambda g: g.clamp(-1.0, 1.0))

    def step(self, batch: int) -> float:
        x = acg.tensor(self.rng.standard_normal((batch, 6)), dtype=acg.float32)
        y = acg.tensor(self.rng.standard_normal((batch, 1)), dtype=acg.float32)
        loss = ((self.model(x) - y) ** 2).mean()
        self.opt.zero_grad()
        with ca.enable("jax"):
            loss.backward()
        self.opt.step()
        return loss.item()


def soak(steps: int, rss_budget: int) -> None:
    trainer = Trainer()
    for step in range(3 * len(BATCHES)):  # warm-up: every batch size compiled
        trainer.step(BATCHES[step % len(BATCHES)])
    tensors, rss = live_tensors(), rss_bytes()
    losses = [trainer.step(BATCHES[step % len(BATCHES)]) for step in range(steps)]
    grown_tensors, grown_rss = live_tensors() - tensors, rss_bytes() - rss
    print(f"\nlive tensors {tensors} -> {tensors + grown_tensors}, "
          f"RSS {rss / 2**20:.1f} -> {(rss + grown_rss) / 2**20:.1f} MiB over {steps} steps")
    assert grown_tensors <= 2
    assert grown_rss < rss_budget
    assert ca.counters["captures"] <= 2  # first graph, then .grad defined (set_to_none=True)
    assert ca.counters["captures"] + ca.counters["cache_hits"] == steps + 3 * len(BATCHES)
    assert np.isfinite(losses).all()


def test_training_loop_reaches_a_steady_state():
    soak(300, rss_budget=24 * 2**20)


@pytest.mark.slow
def test_training_loop_soak():
    soak(10_000, rss_budget=32 * 2**20)


def test_cache_size_limit_evicts_least_recently_used_and_warns(monkeypatch, caplog):
    monkeypatch.setattr(ca, "CACHE_SIZE_LIMIT", 3)
    with caplog.at_level(logging.WARNING, logger="autograd_compile"):
        for p in range(2, 10):  # integer exponents are specialised: 8 distinct graphs
            x = acg.tensor([1.5, 2.0], dtype=acg.float64, requires_grad=True)
            with ca.enable("eager"):
                (x ** p).sum().backward()
            assert_close(x.grad, p * np.array([1.5, 2.0]) ** (p - 1), rtol=1e-12)
            assert len(ca.cache._CACHE) <= 3
    assert ca.counters["evictions"] == 5 and ca.counters["captures"] == 8
    assert "cache_size_limit" in caplog.text
    x = acg.tensor([1.5, 2.0], dtype=acg.float64, requires_grad=True)
    with ca.enable("eager"):  # evicted long ago: captured again, still right
        (x ** 2).sum().backward()
    assert_close(x.grad, [3.0, 4.0], rtol=1e-12)
    assert ca.counters["captures"] == 9


class Specialised(acg.autograd.Function):
    """The backward compares a float on ctx: each value is a guard of its own."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.k if ctx.k != 0.0 else g), None


def test_recompile_limit_bounds_recaptures_of_one_graph(monkeypatch, caplog):
    monkeypatch.setattr(ca, "RECOMPILE_LIMIT", 2)
    with caplog.at_level(logging.WARNING, logger="autograd_compile"):
        for k in (1.0, 2.0, 3.0, 4.0, 5.0):
            x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
            with ca.enable("eager"):
                Specialised.apply(x, k).sum().backward()
            assert x.grad.tolist() == [k, k]
            assert sum(len(v) for v in ca.cache._CACHE.values()) <= 2
    assert "recaptures of one graph" in caplog.text


def test_retained_graph_second_backward_hits_the_cache():
    """Regression: a node visited live (first collect) and replayed from its memo (second
    collect) gave different cache keys, so every retained graph was captured twice."""
    x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
    y = (x.sin() * 2.0).sum()
    with ca.enable("eager"):
        for k in range(3):
            x.grad = None  # same key each time: no .grad defined
            y.backward(retain_graph=k < 2)
    assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 2


# -- no strong references from the cache to user objects ---------------------------------

def test_dropping_a_model_frees_parameters_and_hook_closures():
    def train_once():
        model = acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.Tanh(), acg.nn.Linear(4, 1))
        scale = acg.tensor([0.5])  # captured by a hook's closure
        for p in model.parameters():
            p.register_hook(lambda g: g * scale)
        x = acg.randn(5, 3)
        with ca.enable("jax"):
            model(x).sum().backward()
        assert all(p.grad is not None for p in model.parameters())
        return [weakref.ref(p) for p in model.parameters()] + [weakref.ref(scale),
                                                             weakref.ref(model)]
    refs = train_once()
    gc.collect()
    assert ca.cache._CACHE, "the graph stays cached"
    assert [r() for r in refs] == [None] * len(refs)


class WithConfig(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x, cfg):
        ctx.cfg = cfg
        return x * cfg.scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.cfg.scale, None


class Config:
    scale = 2.0


def test_objects_saved_on_a_ctx_are_not_kept_alive_by_the_cache():
    """Regression: a non-tensor ctx attribute went into the cache key as the object itself,
    so the cache kept every such object (and all it references) alive."""
    def run():
        cfg = Config()
        x = acg.tensor([1.0, 2.0], requires_grad=True)
        with ca.enable("jax"):
            WithConfig.apply(x, cfg).sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        return weakref.ref(cfg)
    ref = run()
    gc.collect()
    assert ref() is None


def test_failed_backwards_leave_nothing_behind():
    """A backward that raises (in a hook) many times leaks no tensors."""
    x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)

    def bad(g):
        raise ValueError("no")
    y = (x * 2.0)
    y.register_hook(bad)
    loss = y.sum()
    for _ in range(3):
        with pytest.raises(ValueError), ca.enable("jax"):
            loss.backward()
    before = live_tensors()
    for _ in range(50):
        with pytest.raises(ValueError), ca.enable("jax"):
            loss.backward()
    assert live_tensors() - before <= 0
    assert x.grad is None
