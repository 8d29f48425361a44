"""Gradient oracle for layer tests, in float64: in eager mode a module's analytic
gradients against central finite differences of its forward; in the compiled modes
against the eager backward (already checked numerically by the eager case)."""
from __future__ import annotations

import contextlib
from typing import Any, Sequence

import numpy as np

import autograd_compile as acg
from conftest import assert_close


def _forward(module: Any, inputs: Sequence[np.ndarray], params: Sequence[np.ndarray],
             kwargs: dict) -> np.ndarray:
    with acg.no_grad():
        for p, value in zip(module.parameters(), params):
            p.data = acg.tensor(value)
        return np.asarray(module(*[acg.tensor(x) for x in inputs], **kwargs).detach().numpy())


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


def _analytic(module: Any, inputs: list[np.ndarray], differentiable: list[bool], cot: Any,
              kwargs: dict, mode: Any) -> tuple[Any, list[np.ndarray | None]]:
    module.zero_grad()
    tensors = [acg.tensor(x, requires_grad=d) for x, d in zip(inputs, differentiable)]
    out = module(*tensors, **kwargs)
    cot = np.random.default_rng(cot).standard_normal(out.shape) if isinstance(cot, int) else cot
    with mode():
        out.backward(acg.tensor(cot))
    grads = [t.grad.numpy() if d else None for t, d in zip(tensors, differentiable)]
    grads += [p.grad.numpy() if p.grad is not None else np.zeros(p.shape)
              for p in module.parameters()]
    return (out, cot), grads


def check_layer_grads(module: Any, inputs: list[np.ndarray], mode: Any, kwargs: dict | None = None,
                      rtol: float = 1e-6, atol: float = 1e-7, seed: int = 0,
                      requires_grad: Sequence[bool] | None = None) -> Any:
    """Run forward + backward (under ``mode``) on float64 copies and compare every input
    and parameter gradient with the oracle. Returns the forward output.

    ``requires_grad``: which inputs to differentiate (default: the floating ones)."""
    kwargs = kwargs or {}
    module = module.double()
    params = [p.detach().numpy().copy() for p in module.parameters()]
    differentiable = list(requires_grad) if requires_grad is not None else [
        bool(np.issubdtype(x.dtype, np.floating)) for x in inputs]
    (out, cot), analytic = _analytic(module, inputs, differentiable, seed, kwargs, mode)
    if mode.compiled:
        _, expected = _analytic(module, inputs, differentiable, cot, kwargs,
                                contextlib.nullcontext)
        expected = [None if not d else g for g, d in
                    zip(expected, differentiable + [True] * len(params))]
    else:
        expected = numerical_grads(module, inputs, params, differentiable, cot, kwargs)
        with acg.no_grad():
            for p, value in zip(module.parameters(), params):
                p.data = acg.tensor(value)
    for got, want in zip(analytic, expected):
        if want is not None:
            assert_close(got, want, rtol=rtol, atol=atol)
    return out
