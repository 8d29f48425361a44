"""Optimizers against hand-written NumPy references of PyTorch's pseudo-code.

Gradients are set directly (float64, several steps, two groups with their own options),
so each test checks the update rule alone; a training-loop test runs it after a real
backward in all three execution modes.
"""
from __future__ import annotations


import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.optim.optimizer import compile_cache_size

from conftest import assert_close


# -- NumPy references (PyTorch's documented algorithms, written out per step) ------------------
def ref_sgd(p, g, s, t, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    if momentum != 0:
        b = g if t == 1 else momentum * s["b"] + (1 - dampening) * g
        s["b"] = b
        g = g + momentum * b if nesterov else b
    return p - lr * g


def ref_adam(p, g, s, t, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             maximize=False, decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
    v = s["v"]
    if amsgrad:
        v = s["vmax"] = np.maximum(s.get("vmax", 0), v)
    m_hat = s["m"] / (1 - b1 ** t)
    return p - lr * m_hat / (np.sqrt(v / (1 - b2 ** t)) + eps)


def ref_adadelta(p, g, s, t, lr, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    s["v"] = rho * s.get("v", 0) + (1 - rho) * g * g
    dx = np.sqrt(s.get("u", 0) + eps) / np.sqrt(s["v"] + eps) * g
    s["u"] = rho * s.get("u", 0) + (1 - rho) * dx * dx
    return p - lr * dx


def ref_rmsprop(p, g, s, t, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    s["v"] = alpha * s.get("v", 0) + (1 - alpha) * g * g
    v = s["v"]
    if centered:
        s["ga"] = alpha * s.get("ga", 0) + (1 - alpha) * g
        v = v - s["ga"] ** 2
    if momentum > 0:
        s["b"] = momentum * s.get("b", 0) + g / (np.sqrt(v) + eps)
        return p - lr * s["b"]
    return p - lr * g / (np.sqrt(v) + eps)


def ref_adagrad(p, g, s, t, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                eps=1e-10, maximize=False):
    g = -g if maximize else g
    g = g + weight_decay * p
    clr = lr / (1 + (t - 1) * lr_decay)
    s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return p - clr * g / (np.sqrt(s["sum"]) + eps)


def ref_adamw(p, g, s, t, lr, weight_decay=1e-2, **kw):
    return ref_adam(p, g, s, t, lr, weight_decay=weight_decay, decoupled=True, **kw)


CASES = [
    (acg.optim.SGD, ref_sgd, {}),
    (acg.optim.SGD, ref_sgd, dict(momentum=0.9)),
    (acg.optim.SGD, ref_sgd, dict(momentum=0.9, dampening=0.3, weight_decay=0.1)),
    (acg.optim.SGD, ref_sgd, dict(momentum=0.8, nesterov=True, maximize=True)),
    (acg.optim.Adam, ref_adam, {}),
    (acg.optim.Adam, ref_adam, dict(betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    (acg.optim.Adam, ref_adam, dict(maximize=True, eps=1e-3)),
    (acg.optim.AdamW, ref_adamw, {}),
    (acg.optim.AdamW, ref_adamw, dict(weight_decay=0.3, amsgrad=True, maximize=True)),
    (acg.optim.Adadelta, ref_adadelta, {}),
    (acg.optim.Adadelta, ref_adadelta, dict(rho=0.5, weight_decay=0.1, maximize=True)),
    (acg.optim.RMSprop, ref_rmsprop, {}),
    (acg.optim.RMSprop, ref_rmsprop, dict(centered=True, momentum=0.9, weight_decay=0.1)),
    (acg.optim.RMSprop, ref_rmsprop, dict(alpha=0.9, momentum=0.5, maximize=True)),
    (acg.optim.Adagrad, ref_adagrad, {}),
    (acg.optim.Adagrad, ref_adagrad, dict(lr_decay=0.1, weight_decay=0.1,
                                           initial_accumulator_value=0.5, maximize=True)),
]
IDS = [f"{c.__name__}-{'-'.join(kw) or 'default'}" for c, _, kw in CASES]


def _run_both(cls, ref, kw, steps=4, lrs=(0.05, 0.2)):
    """Two groups (the second with its own lr), float64; returns (ours, reference) values."""
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in [(3, 4), (4,), (2, 2)]]
    params = [acg.nn.Parameter(acg.tensor(a, dtype=acg.float64)) for a in init]
    opt = cls([{"params": params[:2]}, {"params": params[2:], "lr": lrs[1]}], lr=lrs[0], **kw)
    expect, states = [a.copy() for a in init], [{} for _ in init]
    for t in range(1, steps + 1):
        grads = [rng.standard_normal(a.shape) for a in init]
        for i, (p, g) in enumerate(zip(params, grads)):
            p.grad = acg.tensor(g, dtype=acg.float64)
            lr = lrs[0] if i < 2 else lrs[1]
            expect[i] = ref(expect[i], g, states[i], t, lr, **kw)
        opt.step()
    return [p.detach().numpy() for p in params], expect, opt


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_matches_reference(cls, ref, kw):
    ours, expect, _ = _run_both(cls, ref, kw)
    for a, b in zip(ours, expect):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,ref,kw", CASES, ids=IDS)
def test_matches_torch_when_installed(cls, ref, kw):
    """The same groups, options and gradients through torch.optim (skipped without torch)."""
    torch = pytest.importorskip("torch")
    ours, _, _ = _run_both(cls, ref, kw)
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in [(3, 4), (4,), (2, 2)]]
    params = [torch.tensor(a, requires_grad=True) for a in init]
    opt = getattr(torch.optim, cls.__name__)([{"params": params[:2]},
                                              {"params": params[2:], "lr": 0.2}], lr=0.05, **kw)
    for _ in range(4):
        for p, a in zip(params, init):
            p.grad = torch.tensor(rng.standard_normal(a.shape))
        opt.step()
    for a, p in zip(ours, params):
        assert_close(a, p.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls,ref,kw", CASES[::3], ids=IDS[::3])
def test_state_dict_round_trip_continues_exactly(cls, ref, kw):
    ours, _, opt = _run_both(cls, ref, kw, steps=2)
    params = [p for g in opt.param_groups for p in g["params"]]
    fresh = [acg.nn.Parameter(acg.tensor(a)) for a in ours]
    opt2 = cls([{"params": fresh[:2]}, {"params": fresh[2:], "lr": 0.2}], lr=0.05, **kw)
    opt2.load_state_dict(opt.state_dict())
    for p, q in zip(params, fresh):
        g = acg.tensor(np.full(p.shape, 0.3), dtype=acg.float64)
        p.grad, q.grad = g, g
    opt.step(), opt2.step()
    for p, q in zip(params, fresh):
        assert_close(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=0)


def test_state_layout_and_step_counter_like_pytorch():
    w = acg.nn.Parameter(acg.ones(2))
    opt = acg.optim.Adam([w], amsgrad=True)
    for _ in range(3):
        w.grad = acg.ones(2)
        opt.step()
    st = opt.state[w]
    assert sorted(st) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert st["step"].item() == 3.0 and st["step"].dtype == acg.float32
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][0]["lr"] == 1e-3
    assert set(sd["state"]) == {0}


def test_lr_change_does_not_recompile():
    ps = [acg.nn.Parameter(acg.randn(4, 4)) for _ in range(3)]
    opt = acg.optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "betas": (0.8, 0.99)}], lr=0.1)
    expected = [p.detach().numpy().copy() for p in ps]
    states = [{} for _ in ps]
    for t in range(1, 6):
        for p in ps:
            p.grad = acg.ones(4, 4)
        opt.step()
        if t == 1:
            before = compile_cache_size()
        for i, e in enumerate(expected):
            kw = dict(betas=(0.8, 0.99)) if i else {}
            expected[i] = ref_adam(e, np.ones((4, 4)), states[i], t, 0.1 / t, **kw)
        for g in opt.param_groups:  # what a scheduler does between steps
            g["lr"] = 0.1 / (t + 1)
        opt.param_groups[1]["betas"] = (0.8, 0.99)
    assert compile_cache_size() == before
    for p, e in zip(ps, expected):
        assert_close(p.detach().numpy(), e, rtol=1e-5, atol=1e-6)


def test_params_without_grad_are_skipped_and_keep_no_state():
    a, b = acg.nn.Parameter(acg.ones(2)), acg.nn.Parameter(acg.ones(2))
    opt = acg.optim.SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = acg.ones(2)
    opt.step()
    assert a.tolist() == [0.5, 0.5] and b.tolist() == [1.0, 1.0]
    assert b not in opt.state


def test_zero_grad():
    w = acg.nn.Parameter(acg.ones(2))
    opt = acg.optim.SGD([w], lr=0.1)
    w.grad = acg.ones(2)
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_closure_is_called_with_grad_enabled_and_its_loss_returned():
    w = acg.nn.Parameter(acg.tensor([2.0]))
    opt = acg.optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with acg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0 and w.tolist() == [1.0]


def test_training_loop_in_every_mode(mode):
    """A real backward feeds the update: AdamW on a 2-layer MLP equals the NumPy reference."""
    acg.manual_seed(0)
    l1, l2 = acg.nn.Linear(3, 5), acg.nn.Linear(5, 1)
    params = list(l1.parameters()) + list(l2.parameters())
    opt = acg.optim.AdamW(params, lr=0.01)
    x, y = acg.randn(8, 3), acg.randn(8, 1)
    expect, states = [p.detach().numpy().astype(np.float64) for p in params], [{} for _ in params]
    for t in range(1, 4):
        opt.zero_grad()
        loss = ((l2(l1(x).tanh()) - y) ** 2).mean()
        with mode():
            loss.backward()
        for i, p in enumerate(params):
            expect[i] = ref_adamw(expect[i], p.grad.numpy().astype(np.float64), states[i], t,
                                  0.01)
        opt.step()
    for p, e in zip(params, expect):
        assert_close(p.detach().numpy(), e, rtol=1e-5, atol=1e-6)


def test_bfloat16_parameters_stay_bfloat16():
    w = acg.nn.Parameter(acg.ones(4, dtype=acg.bfloat16))
    opt = acg.optim.Adam([w], lr=0.5)
    w.grad = acg.ones(4, dtype=acg.bfloat16)
    opt.step()
    assert w.dtype == acg.bfloat16 and opt.state[w]["exp_avg"].dtype == acg.bfloat16
    assert_close(w.detach().numpy().astype(np.float32), np.full(4, 0.5), rtol=1e-2)


def test_hyperparameter_errors():
    w = acg.nn.Parameter(acg.ones(1))
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        acg.optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        acg.optim.SGD([w], nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        acg.optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid rho value"):
        acg.optim.Adadelta([w], rho=1.5)
    with pytest.raises(ValueError, match="Invalid alpha value"):
        acg.optim.RMSprop([w], alpha=-0.1)
    with pytest.raises(ValueError, match="Invalid lr_decay value"):
        acg.optim.Adagrad([w], lr_decay=-1)


def test_param_group_errors():
    a, b = acg.nn.Parameter(acg.ones(1)), acg.nn.Parameter(acg.ones(1))
    with pytest.raises(ValueError, match="empty parameter list"):
        acg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        acg.optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        acg.optim.SGD([{"params": {a}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        acg.optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        acg.optim.SGD([a * 2], lr=0.1)
    opt = acg.optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one"):
        opt.add_param_group({"params": [b, a]})
    assert len(opt.param_groups) == 1
    with pytest.warns(UserWarning, match="duplicate parameters"):
        acg.optim.SGD([b, b], lr=0.1)
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        acg.optim.Optimizer([{"params": [b]}], {"lr": acg.optim.required})


def test_load_state_dict_errors_leave_optimizer_unchanged():
    a, b = acg.nn.Parameter(acg.ones(2)), acg.nn.Parameter(acg.ones(3))
    opt = acg.optim.Adam([a, b], lr=0.1)
    a.grad, b.grad = acg.ones(2), acg.ones(3)
    opt.step()
    good = opt.state_dict()
    other = acg.optim.Adam([acg.nn.Parameter(acg.ones(2))])
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        other.load_state_dict(good)
    two = acg.optim.Adam([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two.load_state_dict(good)
    swapped = acg.optim.Adam([acg.nn.Parameter(acg.ones(3)), acg.nn.Parameter(acg.ones(2))],
                             lr=0.7)
    with pytest.raises(ValueError, match="has shape \\(2,\\), but its parameter has shape"):
        swapped.load_state_dict(good)
    assert not swapped.state and swapped.param_groups[0]["lr"] == 0.7


def test_load_state_dict_takes_hyperparameters_and_keeps_params():
    a = acg.nn.Parameter(acg.ones(2))
    src = acg.optim.SGD([acg.nn.Parameter(acg.ones(2))], lr=0.3, momentum=0.5)
    dst = acg.optim.SGD([a], lr=0.1)
    dst.load_state_dict(src.state_dict())
    assert dst.param_groups[0]["lr"] == 0.3 and dst.param_groups[0]["params"][0] is a


def test_step_time_report():
    """step() on mlp_small (4 Linear 64-wide layers) vs the jitted update alone (printed).

    The floor feeds the update's outputs back as the next inputs, as a training loop does.
    """
    import time

    from autograd_compile.optim.optimizer import _apply
    layers = [acg.nn.Linear(64, 64) for _ in range(4)]
    params = [p for m in layers for p in m.parameters()]
    opt = acg.optim.Adam(params)
    for p in params:
        p.grad = acg.ones(*p.shape)
    opt.step()
    g = opt.param_groups[0]
    fixed = (type(opt)._rule, (opt._static(g),))
    grads, hyper = (tuple(p._grad._data for p in params),), (opt._hyperparameters(0, g),)
    carry = [(tuple(p._data for p in params),),
             (tuple({k: v._data for k, v in opt.state[p].items()} for p in params),)]

    def floor():
        carry[:] = _apply(*fixed, carry[0], grads, carry[1], hyper)

    def timed(fn):
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    pairs = [(timed(opt.step), timed(floor)) for _ in range(60)]
    step, alone = (sorted(col)[30] for col in zip(*pairs))
    assert step < alone + 2e-3  # the Python bookkeeping stays a small part of the step
    print(f"mlp_small Adam step {step * 1e6:.0f} us, jitted update alone {alone * 1e6:.0f} us")


def test_docstring_examples_run():
    import doctest

    from autograd_compile.optim import _rules, algorithms, optimizer
    for module in (acg.optim, _rules, algorithms, optimizer):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_sgd_state_appears_when_momentum_is_turned_on_later() -> None:
    """Plain SGD skips the per-parameter state init each step; a group whose momentum is
    set after some steps gets its buffer then, as in PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w0, grads = rng.standard_normal(4), [rng.standard_normal(4) for _ in range(4)]
    w, tw = acg.nn.Parameter(acg.tensor(w0)), torch.nn.Parameter(torch.tensor(w0))
    opt, topt = acg.optim.SGD([w], lr=0.1), torch.optim.SGD([tw], lr=0.1)
    for k, g in enumerate(grads):
        if k == 2:
            opt.param_groups[0]["momentum"] = topt.param_groups[0]["momentum"] = 0.9
        w.grad, tw.grad = acg.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        assert_close(w.detach().numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert_close(opt.state[w]["momentum_buffer"].numpy(),
                 topt.state[tw]["momentum_buffer"].numpy(), rtol=1e-12, atol=1e-12)
