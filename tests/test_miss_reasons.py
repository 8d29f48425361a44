"""Compiled autograd explains a cache miss in words a user can act on (the texts are pinned)."""
from __future__ import annotations

import logging

import pytest

import autograd_compile as acg
from autograd_compile import config

ca = acg.compiled_autograd


@pytest.fixture
def misses(monkeypatch, caplog):
    monkeypatch.setattr(config, "LOGS", frozenset({"compiled_autograd_verbose"}))
    caplog.set_level(logging.DEBUG, logger="autograd_compile.compiled_autograd")
    ca.reset()
    yield lambda: [r.getMessage() for r in caplog.records if "cache miss" in r.getMessage()]
    ca.reset()


def test_a_grad_that_now_exists_is_named_with_the_fix(misses) -> None:
    net = acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.Linear(4, 1))
    x = acg.randn(5, 3)
    with ca.enable("eager"):
        for _ in range(3):  # no zero_grad: .grad exists from the second backward on
            net(x).sum().backward()
    assert misses() == [
        "cache miss: first graph",
        "cache miss: .grad of 1.weight was None at capture and is a tensor now: call "
        "opt.zero_grad() before backward (or keep .grad consistent from step to step)"]
    assert ca.counters["captures"] == 2  # the third backward reuses the second capture


def test_a_different_forward_names_the_ops(misses) -> None:
    w = acg.ones(3, requires_grad=True)
    with ca.enable("eager"):
        (w * 2).sum().backward()
        w.grad = None
        (w + 2).sum().backward()
    assert misses()[1].startswith("cache miss: the graph differs: an acg::mul")
    assert "acg::add" in misses()[1]


def test_a_dtype_change_is_named(misses) -> None:
    with ca.enable("eager"):
        for dtype in (acg.float32, acg.float64):
            w = acg.ones(3, dtype=dtype, requires_grad=True)
            (w * w).sum().backward()
    assert "float32 at capture, float64 now" in misses()[1]


def test_sizes_that_part_ways_are_named(misses, caplog) -> None:
    w = acg.ones(4, 4, requires_grad=True)
    with ca.enable("eager"):
        (w @ acg.ones(4, 4)).sum().backward()  # all sizes 4: one duck-sized symbol
        w2 = acg.ones(4, 6, requires_grad=True)
        (w2 @ acg.ones(6, 4)).sum().backward()
    text = " ".join(misses())
    assert "sizes that were equal at capture now differ: size #" in text
    assert "is 4 and size #" in text and "is 6" in text
