"""Optimizers on complex parameters: PyTorch steps a complex parameter as ``view_as_real``
pairs (the imaginary part gets its own second moment, sign, clip), and keeps its state
complex. Each algorithm is checked three ways: against the same optimizer on the real
(..., 2) parameter (no torch needed), against PyTorch, and under ``acg.compile`` of a
whole training step against eager.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autograd_compile as acg

CONFIGS = [
    ("Adam", {}), ("Adam", dict(weight_decay=0.1, amsgrad=True)), ("Adam", dict(maximize=True)),
    ("AdamW", dict(amsgrad=True)),
    ("RMSprop", {}), ("RMSprop", dict(centered=True, momentum=0.9, weight_decay=0.1)),
    ("Adagrad", dict(lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adadelta", dict(weight_decay=0.1)),
    ("Adamax", dict(weight_decay=0.1)),
    ("NAdam", dict(weight_decay=0.1)),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", {}), ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(t0=1, weight_decay=0.1)),
    ("Rprop", {}), ("Rprop", dict(maximize=True)),
    ("SGD", dict(momentum=0.9, dampening=0.5, weight_decay=0.1)),
]
_IDS = [f"{n}-{'-'.join(k) or 'default'}" for n, k in CONFIGS]
_RNG = np.random.default_rng(0)
P0 = (_RNG.standard_normal((2, 3)) + 1j * _RNG.standard_normal((2, 3))).astype(np.complex64)
GRADS = [(_RNG.standard_normal((2, 3)) + 1j * _RNG.standard_normal((2, 3))).astype(np.complex64)
         for _ in range(4)]


def _pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], -1)


def _run(lib: Any, name: str, kw: dict, p0: np.ndarray, grads: list) -> tuple:
    """Four steps with gradients that depend on the parameter (so every step's path counts)."""
    p = lib.nn.Parameter(lib.tensor(p0))
    opt = getattr(lib.optim, name)([p], lr=0.1, **kw)
    for g in grads:
        p.grad = lib.tensor(g) + p.detach() * 0.3
        opt.step()
    state = {k: np.asarray(v.resolve_conj().numpy() if hasattr(v, "resolve_conj") else v.numpy())
             for k, v in opt.state[p].items()}
    return p.detach().numpy(), state


@pytest.mark.parametrize("name,kw", CONFIGS, ids=_IDS)
def test_complex_parameter_steps_as_its_real_pairs(name: str, kw: dict) -> None:
    z, zs = _run(acg, name, kw, P0, GRADS)
    r, rs = _run(acg, name, kw, _pairs(P0), [_pairs(g) for g in GRADS])
    np.testing.assert_allclose(_pairs(z), r, rtol=1e-5, atol=1e-6)
    for k, v in zs.items():
        want = rs[k]
        if v.dtype.kind == "c":
            assert v.dtype == P0.dtype, k  # state stays complex, as PyTorch keeps it
            v = _pairs(v)
        np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name,kw", CONFIGS, ids=_IDS)
def test_complex_parameter_matches_torch(name: str, kw: dict) -> None:
    torch = pytest.importorskip("torch")
    z, zs = _run(acg, name, kw, P0, GRADS)
    t, ts = _run(torch, name, kw, P0, GRADS)
    np.testing.assert_allclose(z, t, rtol=1e-5, atol=1e-6)
    assert set(zs) == set(ts)
    for k in ts:
        assert zs[k].dtype == ts[k].dtype, k
        np.testing.assert_allclose(zs[k], ts[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_repro_adam_and_rmsprop_move_the_imaginary_part() -> None:
    """The reported program: one step from 1+2j with gradient 0.3-1j (PyTorch's numbers)."""
    for name, want in [("Adam", 0.9 + 2.1j), ("RMSprop", 0.0 + 3.0j)]:
        p = acg.nn.Parameter(acg.tensor([1 + 2j], dtype=acg.complex64))
        opt = getattr(acg.optim, name)([p], lr=0.1)
        p.grad = acg.tensor([0.3 - 1j], dtype=acg.complex64)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), [want], atol=1e-5)


_WHOLE = [("Adam", dict(amsgrad=True)), ("RMSprop", dict(centered=True)),
          ("Adagrad", dict(initial_accumulator_value=0.5)), ("Rprop", {}), ("NAdam", {})]


@pytest.mark.parametrize("name,kw", _WHOLE, ids=[n for n, _ in _WHOLE])
def test_whole_step_with_complex_parameter_matches_eager(name: str, kw: dict) -> None:
    """acg.compile of forward + backward + opt.step() on a complex weight: the same
    parameters and state as the eager step, every step."""
    x = acg.tensor(_RNG.standard_normal((4, 2)) + 1j * _RNG.standard_normal((4, 2)),
                   dtype=acg.complex64)
    runs = []
    for compiled in (False, True):
        w = acg.nn.Parameter(acg.tensor(P0[:, :2].T.copy()))
        opt = getattr(acg.optim, name)([w], lr=0.05, **kw)

        def step() -> Any:
            opt.zero_grad()
            loss = (x @ w - 1j).abs().pow(2).sum()
            loss.backward()
            opt.step()
            return loss
        fn = acg.compile(step, fullgraph=True) if compiled else step
        runs.append([(float(fn()), w.detach().numpy().copy()) for _ in range(3)])
        runs[-1].append({k: v.numpy() for k, v in opt.state[w].items()})
    (eager, compiled_run) = runs
    for (l1, w1), (l2, w2) in zip(eager[:-1], compiled_run[:-1]):
        assert abs(l1 - l2) <= 1e-4 * max(1.0, abs(l1))
        np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)
    for k, v in eager[-1].items():
        np.testing.assert_allclose(compiled_run[-1][k], v, rtol=1e-5, atol=1e-6, err_msg=k)
