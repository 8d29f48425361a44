"""Gradient oracle for layer tests: a module's analytic gradients (backward run in a
given execution mode) against central finite differences of its forward, in float64."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import autograd_compile as acg
from conftest import assert_close


def _forward(module: Any, inputs: Sequence[np.ndarray], params: Sequence[np.ndarray],
             kwargs: dict) -> np.ndarray:
    with acg.no_grad():
        for p, value in zip(module.parameters(), params):
            p.data = acg.tensor(value)
        return np.asarray(module(*[acg.tensor(x) for x in inputs], **kwargs).numpy())


def numerical_grads(module: Any, inputs: list[np.ndarray], params: list[np.ndarray],
                    differentiable: Sequence[bool], cot: np.ndarray, kwargs: dict,
                    eps: float = 1e-6) -> list[np.ndarray | None]:
    """d sum(cot * module(inputs)) / d each differentiable input and each parameter."""
    arrays = list(inputs) + list(params)
    n_in = len(inputs)
    out: list[np.ndarray | None] = []
    for k, a in enumerate(arrays):
        if k < n_in and not differentiable[k]:
            out.append(None)
            continue
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            vals = []
            for sign in (1, -1):
                moved = [x.copy() for x in arrays]
                moved[k][idx] += sign * eps
                vals.append((_forward(module, moved[:n_in], moved[n_in:], kwargs) * cot).sum())
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


def check_layer_grads(module: Any, inputs: list[np.ndarray], mode: Any, kwargs: dict | None = None,
                      rtol: float = 1e-6, atol: float = 1e-7, seed: int = 0) -> Any:
    """Run forward + backward (under ``mode``) on float64 copies and compare every input
    and parameter gradient with finite differences. Returns the forward output."""
    kwargs = kwargs or {}
    module = module.double()
    params = [p.numpy().copy() for p in module.parameters()]
    differentiable = [np.issubdtype(x.dtype, np.floating) for x in inputs]
    tensors = [acg.tensor(x, requires_grad=d) for x, d in zip(inputs, differentiable)]
    out = module(*tensors, **kwargs)
    cot = np.random.default_rng(seed).standard_normal(out.shape)
    with mode():
        out.backward(acg.tensor(cot))
    analytic = [t.grad.numpy() if d else None for t, d in zip(tensors, differentiable)]
    analytic += [p.grad.numpy() if p.grad is not None else np.zeros_like(v)
                 for p, v in zip(module.parameters(), params)]
    expected = numerical_grads(module, inputs, params, differentiable, cot, kwargs)
    with acg.no_grad():
        for p, value in zip(module.parameters(), params):
            p.data = acg.tensor(value)
    for got, want in zip(analytic, expected):
        if want is not None:
            assert_close(got, want, rtol=rtol, atol=atol)
    return out
