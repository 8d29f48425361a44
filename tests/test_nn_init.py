"""nn.init: each initialiser's distribution checked statistically against its formula
(bounds, mean and standard deviation over large tensors), in place, outside autograd."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from autograd_compile.nn import init

SHAPE = (400, 500)  # one shape for every check (one compile per op); 200k samples


def _std_ok(values: np.ndarray, std: float, tol: float = 0.02) -> None:
    assert values.std() == pytest.approx(std, rel=tol)
    assert abs(values.mean()) < 5 * std / math.sqrt(values.size)


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_initialisers_work_in_place_without_autograd():
    p = nn.Parameter(acg.zeros(*SHAPE))
    version = p._version
    out = init.normal_(p, 1.0, 2.0)
    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p._version > version and p.detach().numpy().std() > 1.0
    for fn in (init.uniform_, init.zeros_, init.ones_, init.xavier_uniform_,
               init.kaiming_normal_, init.trunc_normal_, init.eye_):
        assert fn(p) is p and p.grad_fn is None
    assert init.constant_(p, 0.25) is p and np.all(p.detach().numpy() == 0.25)


def test_uniform_normal_constant_eye():
    t = acg.zeros(*SHAPE, dtype=acg.float64)
    v = init.uniform_(t, -2.0, 3.0).detach().numpy()
    assert v.dtype == np.float64 and v.min() >= -2.0 and v.max() < 3.0
    assert v.mean() == pytest.approx(0.5, abs=0.02)
    assert v.std() == pytest.approx(5 / math.sqrt(12), rel=0.01)
    v = init.normal_(acg.zeros(*SHAPE), mean=3.0, std=0.5).detach().numpy()
    assert v.mean() == pytest.approx(3.0, abs=0.01) and v.std() == pytest.approx(0.5, rel=0.01)
    assert np.all(init.ones_(acg.zeros(3)).detach().numpy() == 1)
    assert np.all(init.zeros_(acg.ones(3)).detach().numpy() == 0)
    np.testing.assert_array_equal(init.eye_(acg.ones(2, 3)).detach().numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(acg.zeros(3))


def test_xavier():
    w = acg.zeros(*SHAPE)
    a = math.sqrt(6 / 900)
    v = init.xavier_uniform_(w, gain=2.0).detach().numpy()
    assert np.abs(v).max() <= 2 * a and np.abs(v).max() > 0.99 * 2 * a
    _std_ok(v, 2 * a / math.sqrt(3))
    _std_ok(init.xavier_normal_(w, gain=0.5).detach().numpy(), 0.5 * math.sqrt(2 / 900))
    conv = acg.zeros(*SHAPE).reshape(40, 50, 10, 10)  # fans include the receptive field
    _std_ok(init.xavier_normal_(conv).detach().numpy(), math.sqrt(2 / (50 * 100 + 40 * 100)))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(acg.zeros(5))


@pytest.mark.parametrize("mode, nonlinearity, a", [("fan_in", "leaky_relu", math.sqrt(5)),
                                                   ("fan_out", "relu", 0),
                                                   ("fan_in", "tanh", 0)])
def test_kaiming(mode, nonlinearity, a):
    w = acg.zeros(*SHAPE).reshape(400, 250, 2)
    fan = 250 * 2 if mode == "fan_in" else 400 * 2
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    v = init.kaiming_uniform_(w, a=a, mode=mode, nonlinearity=nonlinearity).detach().numpy()
    bound = math.sqrt(3) * std
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    _std_ok(v, std)
    _std_ok(init.kaiming_normal_(w, a=a, mode=mode, nonlinearity=nonlinearity).detach().numpy(), std)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w, mode="fan_avg")


def _truncated_std(mean: float, std: float, a: float, b: float) -> float:
    """Standard deviation of N(mean, std^2) truncated to [a, b] (closed form)."""
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m1 = (pdf(alpha) - pdf(beta)) / z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - m1 ** 2
    return std * math.sqrt(var)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                             (1.0, 1.0, 3.0, 4.0), (0.0, 1.0, -0.5, 5.0)])
def test_trunc_normal(mean, std, a, b):
    v = init.trunc_normal_(acg.zeros(*SHAPE, dtype=acg.float64), mean, std, a, b).detach().numpy()
    assert v.min() >= a and v.max() <= b
    assert v.std() == pytest.approx(_truncated_std(mean, std, a, b), rel=0.02)


def test_global_seed_makes_init_reproducible():
    acg.manual_seed(7)
    first = [p.detach().numpy() for p in nn.Linear(5, 4).parameters()]
    acg.manual_seed(7)
    for p, q in zip(nn.Linear(5, 4).parameters(), first):
        np.testing.assert_array_equal(p.detach().numpy(), q)


def test_generator_draws_are_reproducible_and_leave_the_global_stream():
    g = acg.Generator().manual_seed(3)
    acg.manual_seed(0)
    expected_global = acg.rand(4).detach().numpy()
    acg.manual_seed(0)
    first = [fn(acg.zeros(6, 5), generator=g).detach().numpy()
             for fn in (init.normal_, init.uniform_, init.kaiming_uniform_, init.trunc_normal_)]
    np.testing.assert_array_equal(acg.rand(4).detach().numpy(), expected_global)  # global untouched
    g.manual_seed(3)
    again = [fn(acg.zeros(6, 5), generator=g).detach().numpy()
             for fn in (init.normal_, init.uniform_, init.kaiming_uniform_, init.trunc_normal_)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
