"""The process-level calls training scripts make around the model: torch.random and
fork_rng, torch.cuda's seeds and memory statistics, thread counts, torch.compiler and
torch._dynamo's settings."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.aot import api as aot_api


def test_fork_rng_restores_the_global_state():
    acg.random.manual_seed(3)
    with acg.random.fork_rng():
        inside = acg.rand(4).tolist()
    assert acg.rand(4).tolist() == inside
    with acg.random.fork_rng(enabled=False):
        acg.rand(1)
    assert acg.rand(4).tolist() != inside
    assert acg.random.initial_seed() == 3 and acg.random.get_rng_state is acg.get_rng_state


def test_a_pytorch_generator_state_restores_a_stream():
    """A PyTorch checkpoint's torch.get_rng_state() (5056 bytes) is accepted: its initial
    seed is kept, and equal states give equal draws afterwards."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(1234)
    torch.rand(10)
    state = acg.tensor(torch.get_rng_state().numpy())
    acg.set_rng_state(state)
    first = acg.rand(5).tolist()
    assert acg.initial_seed() == 1234
    acg.set_rng_state(state)
    assert acg.rand(5).tolist() == first
    torch.rand(1)
    acg.set_rng_state(acg.tensor(torch.get_rng_state().numpy()))
    assert acg.rand(5).tolist() != first  # another point of the stream, another stream
    with pytest.raises(RuntimeError, match="expected a uint8 tensor of 40 bytes"):
        acg.set_rng_state(acg.zeros(7, dtype=acg.uint8))


def test_cuda_seeds_and_memory_calls_of_a_seed_everything_helper():
    acg.cuda.manual_seed_all(5)
    acg.cuda.manual_seed(5)
    a = acg.rand(3).tolist()
    acg.manual_seed(5)
    assert acg.rand(3).tolist() == a  # one generator serves every device
    state = acg.cuda.get_rng_state()
    b = acg.rand(2).tolist()
    acg.cuda.set_rng_state(state)
    assert acg.rand(2).tolist() == b
    acg.cuda.empty_cache()
    acg.cuda.reset_peak_memory_stats()
    if not acg.cuda.is_available():
        assert acg.cuda.memory_allocated() == acg.cuda.max_memory_allocated() == 0


def test_thread_counts():
    before = acg.get_num_threads()
    acg.set_num_threads(1)
    acg.set_num_interop_threads(2)
    assert (acg.get_num_threads(), acg.get_num_interop_threads()) == (1, 2)
    with pytest.raises(RuntimeError, match="Expected positive number of threads"):
        acg.set_num_threads(0)
    acg.set_num_threads(before)


def test_compiler_disable_is_compiling_and_reset(caplog):
    seen = []

    @acg.compiler.disable
    def log_stats(x):
        seen.append(float(x.sum()))
        return x

    def step(x):
        seen.append(acg.compiler.is_compiling())
        return log_stats(x * 2) + 1

    f = acg.compile(step)
    with caplog.at_level(logging.WARNING):
        assert f(acg.ones(2)).tolist() == [3.0, 3.0]
    assert "marked torch.compiler.disable" in caplog.text
    assert seen[-2:] == [False, 4.0] and True in seen  # traced once, then run eagerly
    assert not acg.compiler.is_compiling()
    g = acg.compile(lambda x: x * 3)
    g(acg.ones(1))
    assert acg.aot.counters["traces"] >= 1
    acg.compiler.reset()
    assert acg.aot.counters["traces"] == 0


def test_dynamo_config_sets_the_trace_limit():
    prev = acg._dynamo.config.cache_size_limit
    try:
        acg._dynamo.config.cache_size_limit = 2
        assert aot_api.CACHE_SIZE_LIMIT == 2
        f = acg.compile(lambda x: x.sum(), dynamic=False)
        for n in range(1, 5):
            f(acg.ones(n))
        assert acg.aot.counters["traces"] == 2 and acg.aot.counters["eager_runs"] == 2
        acg._dynamo.config.suppress_errors = True
        assert acg._dynamo.config.suppress_errors is True
        with pytest.raises(AttributeError, match="no setting"):
            acg._dynamo.config.no_such_setting
    finally:
        acg._dynamo.config.cache_size_limit = prev
