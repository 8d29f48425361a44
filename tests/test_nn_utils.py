"""nn.utils: gradient clipping against a numpy reference, parameter/vector conversion."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import assert_close


def _params_with_grads(seed: int = 0, scale: float = 1.0) -> tuple[list, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(s) * scale for s in [(3, 4), (4,), (2, 2, 2)]]
    params = []
    for g in grads:
        p = nn.Parameter(acg.zeros(*g.shape, dtype=acg.float64))
        p.grad = acg.tensor(g)
        params.append(p)
    return params, grads


def _np_norm(grads: list[np.ndarray], p: float) -> float:
    flat = np.concatenate([g.ravel() for g in grads])
    if p == math.inf:
        return float(np.abs(flat).max())
    return float((np.abs(flat) ** p).sum() ** (1 / p))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_numpy(norm_type, max_norm):
    params, grads = _params_with_grads()
    keep = [p.grad for p in params]
    total = nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected = _np_norm(grads, norm_type)
    assert isinstance(total, acg.Tensor)
    assert total.item() == pytest.approx(expected, rel=1e-12)
    coef = min(1.0, max_norm / (expected + 1e-6))
    for p, g, k in zip(params, grads, keep):
        assert_close(p.grad.numpy(), g * coef, rtol=1e-12)
        assert p.grad is k  # clipped in place


def test_clip_grad_norm_edge_cases():
    assert nn.utils.clip_grad_norm_([nn.Parameter(acg.zeros(2))], 1.0).item() == 0.0
    single = nn.Parameter(acg.zeros(2))
    single.grad = acg.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_(single, 1.0).item() == pytest.approx(5.0)  # one tensor
    assert_close(single.grad.numpy(), [0.6, 0.8], rtol=1e-5)


def test_clip_grad_norm_nonfinite():
    params, grads = _params_with_grads()
    params[1].grad = acg.tensor([1.0, np.inf, 0.0, 0.0], dtype=acg.float64)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                       "`parameters` is non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert_close(params[0].grad.numpy(), grads[0])  # untouched
    assert math.isinf(nn.utils.clip_grad_norm_(params, 1.0).item())


def test_clip_grad_value():
    params, grads = _params_with_grads(scale=3.0)
    assert nn.utils.clip_grad_value_(params, 1.5) is None
    for p, g in zip(params, grads):
        assert_close(p.grad.numpy(), np.clip(g, -1.5, 1.5))


def test_clip_inside_training_step(mode):
    """Clipping after a (compiled) backward scales exactly the grads that backward wrote."""
    acg.manual_seed(0)
    model = nn.Linear(4, 3).double()
    x = acg.randn(8, 4, dtype=acg.float64)
    with mode():
        (model(x) ** 2).sum().backward()
    raw = [p.grad.numpy() for p in model.parameters()]
    total = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    assert total.item() == pytest.approx(_np_norm(raw, 2.0), rel=1e-12)
    for p, g in zip(model.parameters(), raw):
        assert_close(p.grad.numpy(), g * 0.1 / (total.item() + 1e-6), rtol=1e-10)


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(model.parameters())
    expected = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    assert_close(vec.detach().numpy(), expected)
    params = list(model.parameters())
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert_close(nn.utils.parameters_to_vector(model.parameters()).detach().numpy(), expected * 2)
    assert all(p.requires_grad and p.is_leaf for p in model.parameters())
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], model.parameters())


def test_parameters_to_vector_is_differentiable(mode):
    a = nn.Parameter(acg.tensor([1.0, 2.0]))
    b = nn.Parameter(acg.tensor([[3.0]]))
    with mode():
        (nn.utils.parameters_to_vector([a, b]) * acg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert a.grad.tolist() == [1.0, 2.0] and b.grad.tolist() == [[3.0]]
