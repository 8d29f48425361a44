"""acg.func and acg.autograd.functional against torch.func / torch.autograd.functional: the
same function written once for both libraries, results compared in float64; per-sample
gradients of a small MLP (functional_call + vmap(grad)) and a check that vmap really batches
(the function body runs once, on tracers, not once per sample).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import autograd_compile as acg

torch = pytest.importorskip("torch")


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy()) if hasattr(t, "detach") else np.asarray(t)


def _close(a: Any, b: Any) -> None:
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _close(a[k], b[k])
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-12)


def _t(lib: Any, seed: int, *shape: int) -> Any:
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape))


def _f(x, y):
    return (x.sin() * y).sum() + (x ** 3).sum()


def _vec(x):
    return (x[:-1] * x[1:]).tanh() + x.exp()[:2].sum()


BOTH = [acg, torch]


def _both(fn) -> tuple:
    return fn(acg), fn(torch)


def test_grad_argnums_and_has_aux() -> None:
    a, b = _both(lambda L: L.func.grad(_f, argnums=(0, 1))(_t(L, 0, 3), _t(L, 1, 3)))
    _close(a, b)
    a, b = _both(lambda L: L.func.grad(lambda x: (_f(x, x), {"aux": x * 2}), has_aux=True)(
        _t(L, 2, 4)))
    _close(a, b)


def test_grad_and_value_and_nesting() -> None:
    a, b = _both(lambda L: L.func.grad_and_value(_f)(_t(L, 3, 3), _t(L, 4, 3)))
    _close(a, b)
    a, b = _both(lambda L: L.func.grad(lambda x: L.func.grad(lambda z: (z ** 4).sum())(x).sum())(
        _t(L, 5, 3)))
    _close(a, b)


def test_vmap_in_dims_out_dims_and_nesting() -> None:
    def run(L):
        x, y = _t(L, 6, 4, 3), _t(L, 7, 3)
        one = L.func.vmap(lambda r, w: (r * w).sum(), in_dims=(0, None))(x, y)
        two = L.func.vmap(lambda c: c * 2, in_dims=1, out_dims=1)(x)
        nested = L.func.vmap(L.func.vmap(lambda e, w: e * w, in_dims=(0, 0)), in_dims=(0, None))(
            x, y)
        tup = L.func.vmap(lambda r: (r.sum(), r.max()), in_dims=0)(x)
        return one, two, nested, tup
    _close(*_both(run))


def test_vjp_jvp_linearize() -> None:
    def run(L):
        x = _t(L, 8, 4)
        out, fn = L.func.vjp(_vec, x)
        v = _t(L, 9, 3)
        o2, jv = L.func.jvp(_vec, (x,), (_t(L, 10, 4),))
        with warnings.catch_warnings():  # torch's linearize warns from its own fx tracing
            warnings.simplefilter("ignore", UserWarning)
            o3, lin = L.func.linearize(_vec, x)
        return out, fn(v), o2, jv, o3, lin(_t(L, 10, 4))
    _close(*_both(run))


def test_jacrev_jacfwd_hessian() -> None:
    def run(L):
        x, y = _t(L, 11, 4), _t(L, 12, 4)
        return (L.func.jacrev(_vec)(x), L.func.jacfwd(_vec)(x),
                L.func.jacrev(_f, argnums=(0, 1))(x, y), L.func.hessian(_f)(x, y),
                L.func.hessian(_f, argnums=1)(x, y))
    _close(*_both(run))


def _mlp(L):
    L.manual_seed(0)
    net = L.nn.Sequential(L.nn.Linear(5, 8), L.nn.Tanh(), L.nn.Linear(8, 2)).double()
    return net


def _same_weights(net, ref) -> None:
    with torch.no_grad():
        for (n, p), (m, q) in zip(net.named_parameters(), ref.named_parameters()):
            q.copy_(torch.tensor(_np(p)))


def test_per_sample_gradients_of_an_mlp_with_functional_call() -> None:
    results = []
    nets = [_mlp(acg), _mlp(torch)]
    _same_weights(*nets)
    for L, net in zip(BOTH, nets):
        params = {k: v.detach() for k, v in net.named_parameters()}
        x, y = _t(L, 13, 16, 5), _t(L, 14, 16, 2)

        def loss(p, xi, yi, L=L, net=net):
            out = L.func.functional_call(net, p, (xi.unsqueeze(0),))
            return ((out - yi.unsqueeze(0)) ** 2).mean()
        results.append(L.func.vmap(L.func.grad(loss), in_dims=(None, 0, 0))(params, x, y))
    _close(*results)


def test_vmap_runs_the_body_once() -> None:
    calls = []

    def body(r):
        calls.append(1)
        return (r ** 2).sum()
    out = acg.func.vmap(acg.func.grad(body))(acg.ones(64, 3))
    assert len(calls) == 1 and tuple(out.shape) == (64, 3)


def test_functional_call_gradients_flow_to_the_given_tensors(mode) -> None:
    nets = [_mlp(acg), _mlp(torch)]
    _same_weights(*nets)
    grads = []
    for L, net in zip(BOTH, nets):
        params = {k: v.detach().clone().requires_grad_(True) for k, v in net.named_parameters()}
        out = L.func.functional_call(net, params, _t(L, 15, 3, 5)).pow(2).sum()
        with (mode() if L is acg else torch.enable_grad()):
            out.backward()
        grads.append({k: v.grad for k, v in params.items()})
        assert all(p.grad is None for p in net.parameters())  # the module's own are untouched
    _close(*grads)


def test_stack_module_state_and_ensemble_vmap() -> None:
    results = []
    for L in BOTH:
        L.manual_seed(1)
        models = [L.nn.Linear(3, 2).double() for _ in range(4)]
        if L is torch:
            for m, ref in zip(models, acg_models):
                _same_weights(ref, m)
        else:
            acg_models = models
        params, buffers = L.func.stack_module_state(models)
        x = _t(L, 16, 5, 3)

        def call(p, b, xx, L=L, base=models[0]):
            return L.func.functional_call(base, (p, b), (xx,))
        out = L.func.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
        results.append((params, out))
        assert all(v.requires_grad for v in params.values())
    _close(*results)


def test_func_errors() -> None:
    for L in BOTH:
        with pytest.raises(RuntimeError, match="randomness"):
            L.func.vmap(lambda x: x, randomness="bad")(L.ones(2))
        with pytest.raises(RuntimeError, match="primals"):
            L.func.jvp(lambda x: x, [L.ones(2)], [L.ones(2)])
        with pytest.raises(ValueError, match="in_dims is not compatible"):
            L.func.vmap(lambda x, y: x, in_dims=(0,))(L.ones(2), L.ones(2))


# -- autograd.functional ---------------------------------------------------------------------

def _AF(L):
    return L.autograd.functional


def test_functional_jacobian_and_hessian() -> None:
    def run(L):
        x, y = _t(L, 20, 3), _t(L, 21, 3)
        return (_AF(L).jacobian(_vec, x), _AF(L).jacobian(_f, (x, y)),
                _AF(L).jacobian(lambda a, b: (a * b, a.sum() * b), (x, y)),
                _AF(L).hessian(_f, (x, y)), _AF(L).hessian(lambda a: (a ** 3).sum(), x))
    _close(*_both(run))


def test_functional_vjp_jvp_hvp_vhp() -> None:
    def run(L):
        x, y = _t(L, 22, 4), _t(L, 23, 4)
        return (_AF(L).vjp(_vec, x, _t(L, 24, 3)), _AF(L).jvp(_vec, x, _t(L, 25, 4)),
                _AF(L).vhp(_f, (x, y), (_t(L, 26, 4), _t(L, 27, 4))),
                _AF(L).hvp(_f, (x, y), (_t(L, 26, 4), _t(L, 27, 4))),
                _AF(L).vjp(lambda a: (a ** 2).sum(), x))
    _close(*_both(run))


def test_functional_create_graph_differentiates_again(mode) -> None:
    grads = []
    for L in BOTH:
        x = _t(L, 28, 3).requires_grad_(True)
        _, h = _AF(L).hvp(lambda a: (a.sin() * a ** 2).sum(), x, _t(L, 29, 3),
                          create_graph=True)
        jac = _AF(L).jacobian(lambda a: a.exp() * a, x, create_graph=True)
        with (mode() if L is acg else torch.enable_grad()):
            (h.sum() + jac.pow(2).sum()).backward()
        grads.append(x.grad)
    _close(*grads)


def test_functional_strict_and_errors() -> None:
    for L in BOTH:
        x = L.ones(2)
        with pytest.raises(RuntimeError, match="independent of input 1"):
            _AF(L).jacobian(lambda a, b: a * 2, (x, L.ones(2)), strict=True)
        with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
            _AF(L).vjp(lambda a: a, [1.0])
        with pytest.raises(RuntimeError, match="v can only be None"):
            _AF(L).vjp(lambda a: a * 2, x)
        zero = _AF(L).jacobian(lambda a, b: a * 2, (x, L.ones(2)))[1]
        assert not np.any(_np(zero))


def test_vmap_result_joins_the_callers_graph(mode) -> None:
    x0, w0 = np.random.default_rng(30).standard_normal((4, 3)), np.arange(3.0)
    grads = []
    for L in BOTH:
        w, x = L.tensor(w0, requires_grad=True), L.tensor(x0, requires_grad=True)
        out = L.func.vmap(lambda r: (r * w).tanh().sum())(x)  # w captured, x batched
        out2 = L.func.vmap(lambda r, v: r * v, in_dims=(0, None), out_dims=1)(x, w)
        assert tuple(out2.shape) == (3, 4)
        with (mode() if L is acg else torch.enable_grad()):
            (out.sum() + out2.pow(2).sum()).backward()
        grads.append((w.grad, x.grad))
    _close(*grads)


def test_doctests_of_the_funclin_modules() -> None:
    import doctest
    import importlib
    for name in ("autograd_compile.kernels._bridge", "autograd_compile.linalg",
                 "autograd_compile.fft", "autograd_compile.special",
                 "autograd_compile.kernels.api_funclin", "autograd_compile.kernels._outarg",
                 "autograd_compile.func", "autograd_compile.autograd.functional"):
        result = doctest.testmod(importlib.import_module(name))
        assert result.failed == 0 and result.attempted > 0, name


def test_compiled_transform_sees_captured_tensors_change() -> None:
    w = acg.tensor([1.0, 2.0])
    f = acg.func.vmap(lambda r: (r * w).sum())
    g = acg.func.grad(lambda r, s: (r * s * w).sum())
    x = acg.ones(3, 2)
    assert f(x).tolist() == [3.0] * 3 and g(acg.ones(2), acg.ones(2)).tolist() == [1.0, 2.0]
    w.mul_(10)  # a captured tensor changes: the next call reads the new value
    assert f(x).tolist() == [30.0] * 3 and g(acg.ones(2), acg.ones(2)).tolist() == [10.0, 20.0]


def test_compiled_transform_traces_once_per_shape() -> None:
    calls = []

    def body(p, r):
        calls.append(1)
        return ((r @ p) ** 2).sum()
    psg = acg.func.vmap(acg.func.grad(body), in_dims=(None, 0))
    p = acg.ones(3, 2)
    first = psg(p, acg.ones(8, 3))
    second = psg(p * 2, acg.ones(8, 3))
    psg(p, acg.ones(4, 3))
    assert len(calls) == 2  # one trace per batch shape, none for new values
    np.testing.assert_allclose(second.detach().numpy(), 2 * first.detach().numpy())


def test_dict_results_keep_the_argument_dicts_key_order():
    """jax sorts a dict's keys; torch.func keeps the insertion order, and code zips
    ``grads.values()`` with ``params.items()``: each gradient must sit under its own name."""
    x = acg.tensor([1.0, 2.0, 3.0])
    params = {"w": acg.tensor([0.5, -1.0, 2.0]), "b": acg.tensor(0.25)}  # not sorted

    def loss(p, x):
        return ((p["w"] * x).sum() + p["b"]) ** 2

    value = float(loss(params, x))
    for name, g in [("grad", acg.func.grad(loss)(params, x)),
                    ("grad_and_value", acg.func.grad_and_value(loss)(params, x)[0]),
                    ("jacrev", acg.func.jacrev(loss)(params, x)),
                    ("jacfwd", acg.func.jacfwd(loss)(params, x)),
                    ("vjp", acg.func.vjp(lambda p: loss(p, x), params)[1](acg.tensor(1.0))[0])]:
        assert list(g) == ["w", "b"], name
        np.testing.assert_allclose(g["w"].numpy(), 2 * value ** 0.5 * x.numpy(), rtol=1e-5)
        np.testing.assert_allclose(g["b"].numpy(), 2 * value ** 0.5, rtol=1e-5)
    per_sample = acg.func.vmap(acg.func.grad(loss), in_dims=(None, 0))(params, acg.ones(4, 3))
    assert list(per_sample) == ["w", "b"] and per_sample["w"].shape == (4, 3)
    h = acg.func.hessian(loss)(params, x)
    assert list(h) == ["w", "b"] and list(h["w"]) == ["w", "b"]
