"""``acg.func`` transforms inside ``acg.compile``: ``vmap(grad(f))`` and ``grad(f)`` trace into
the region's program (one op each, their kernel the JAX program) instead of failing on fake
tensors; values and gradients against numpy's closed forms. A transformed function that reads
a tensor it captured runs eagerly (the program would keep the value the trace saw)."""
from __future__ import annotations

from typing import Any

import numpy as np

import autograd_compile as acg
import autograd_compile.func as F
from autograd_compile.aot.program import counters
from conftest import assert_close

_RNG = np.random.default_rng(0)
W, X = _RNG.normal(size=3), _RNG.normal(size=(4, 3))


def _loss(w: Any, x: Any) -> Any:
    return (w * x).sum() ** 2


def _per_sample_grads(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """d/dw (w . x_i)^2 = 2 (w . x_i) x_i, one row per sample."""
    return 2 * (x @ w)[:, None] * x


def test_vmap_of_grad_compiles_whole() -> None:
    psg = F.vmap(F.grad(_loss), in_dims=(None, 0))
    f = acg.compile(lambda w, x: psg(w, x), fullgraph=True)
    for x in (X, 2 * X):  # the trace, then the cached program on other values
        got = f(acg.tensor(W), acg.tensor(x))
        assert not got.requires_grad
        assert_close(got.numpy(), _per_sample_grads(W, x), rtol=1e-12, atol=1e-12)


def test_vmap_of_grad_joins_the_callers_graph() -> None:
    """Inputs that require grad: the batched program is one differentiable op, in eager and
    compiled alike; d/dw sum_i 2 (w . x_i) x_i = 2 sum_i x_i x_i^T (times ones)."""
    psg = F.vmap(F.grad(_loss), in_dims=(None, 0))
    f = acg.compile(lambda w, x: psg(w, x).sum(), fullgraph=True)
    w = acg.tensor(W, requires_grad=True)
    out = f(w, acg.tensor(X))
    out.backward()
    assert_close(out.item(), _per_sample_grads(W, X).sum(), rtol=1e-12)
    assert_close(w.grad.numpy(), 2 * (X.T @ X).sum(1), rtol=1e-12, atol=1e-12)


def test_grad_compiles_whole() -> None:
    f = acg.compile(lambda w, x: F.grad(_loss)(w, x) * 3, fullgraph=True)
    x = X[0]
    got = f(acg.tensor(W), acg.tensor(x))
    assert_close(got.numpy(), 3 * 2 * (W @ x) * x, rtol=1e-12, atol=1e-12)
    g, value = acg.compile(lambda w, x: F.grad_and_value(_loss)(w, x), fullgraph=True)(
        acg.tensor(W), acg.tensor(x))
    assert_close(value.item(), (W @ x) ** 2, rtol=1e-12)
    assert_close(g.numpy(), 2 * (W @ x) * x, rtol=1e-12, atol=1e-12)


def test_captured_tensor_runs_eagerly_and_stays_current() -> None:
    w = acg.tensor(W)
    psg = F.vmap(F.grad(lambda x: (w * x).sum() ** 2))
    f = acg.compile(lambda x: psg(x))
    before = counters["eager_runs"]
    for scale in (1.0, 2.0):  # d/dx (w . x)^2 = 2 (w . x) w, with w as it is now
        ws = scale * W
        assert_close(f(acg.tensor(X)).numpy(), 2 * (X @ ws)[:, None] * ws, rtol=1e-12,
                     atol=1e-12)
        w.mul_(2.0)
    assert counters["eager_runs"] > before


def test_ensemble_step_over_a_meta_base_model_compiles():
    """torch.func's ensembling recipe: ``base = copy.deepcopy(models[0]).to("meta")`` and
    ``vmap(functional_call(base, ...))`` over stacked parameters, in a compiled training
    step: the meta module holds no state of the program (it crashed reading its data)."""
    import copy

    from autograd_compile.aot import counters

    def run(compiled: bool) -> list[float]:
        models = [acg.nn.Linear(4, 3) for _ in range(2)]
        with acg.no_grad():
            for i, m in enumerate(models):
                m.weight.fill_(0.1 * (i + 1))
                m.bias.zero_()
        params, buffers = acg.func.stack_module_state(models)
        params = {k: v.detach().clone().requires_grad_() for k, v in params.items()}
        base = copy.deepcopy(models[0]).to("meta")
        opt = acg.optim.SGD(list(params.values()), lr=0.1)
        x = acg.ones(5, 4)

        def step():
            out = acg.func.vmap(lambda p, b, x: acg.func.functional_call(base, (p, b), (x,)),
                                in_dims=(0, 0, None))(params, buffers, x)
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        step = acg.compile(step) if compiled else step
        return [float(step()) for _ in range(3)]
    want = run(False)
    counters.clear()
    np.testing.assert_allclose(run(True), want, rtol=1e-6)
    np.testing.assert_allclose(want, [0.4, 0.277778, 0.192901], rtol=1e-5)  # torch 2.13's
    assert counters["eager_runs"] == 0
