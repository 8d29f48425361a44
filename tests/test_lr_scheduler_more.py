"""Every scheduler of torch.optim.lr_scheduler side by side with PyTorch's over 100 steps:
the learning rates (and cycled momentum) of two parameter groups, ``last_epoch``,
``get_last_lr`` and a ``state_dict`` resume halfway.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autograd_compile as acg

torch = pytest.importorskip("torch")

STEPS = 100


def _pair(opt_name="SGD", **opt_kw):
    """The same two-group optimizer in both libraries."""
    opt_kw = opt_kw or ({"momentum": 0.9} if opt_name == "SGD" else {})
    out = []
    for lib in (acg, torch):
        groups = [{"params": [lib.nn.Parameter(lib.ones(2))], "lr": 0.1},
                  {"params": [lib.nn.Parameter(lib.ones(2))], "lr": 0.02}]
        out.append(getattr(lib.optim, opt_name)(groups, **opt_kw))
    return out


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum", 0.0) for g in opt.param_groups]


SCHEDULES = {
    "LambdaLR": ("SGD", lambda L, o: L.LambdaLR(o, [lambda e: 0.95 ** e, lambda e: 1 / (1 + e)])),
    "MultiplicativeLR": ("SGD", lambda L, o: L.MultiplicativeLR(o, lambda e: 0.97)),
    "MultiplicativeLR-groups": ("SGD", lambda L, o: L.MultiplicativeLR(
        o, [lambda e: 0.97, lambda e: 1.0 if e % 2 else 0.9])),
    "StepLR": ("SGD", lambda L, o: L.StepLR(o, step_size=7, gamma=0.5)),
    "MultiStepLR": ("SGD", lambda L, o: L.MultiStepLR(o, [10, 30, 30, 80], gamma=0.3)),
    "ConstantLR": ("SGD", lambda L, o: L.ConstantLR(o, factor=0.25, total_iters=17)),
    "LinearLR": ("SGD", lambda L, o: L.LinearLR(o, start_factor=0.1, end_factor=0.9,
                                                total_iters=40)),
    "ExponentialLR": ("SGD", lambda L, o: L.ExponentialLR(o, gamma=0.97)),
    "PolynomialLR": ("SGD", lambda L, o: L.PolynomialLR(o, total_iters=60, power=1.7)),
    "CosineAnnealingLR": ("SGD", lambda L, o: L.CosineAnnealingLR(o, T_max=30, eta_min=1e-3)),
    "CosineAnnealingWarmRestarts": ("SGD", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=10, eta_min=1e-4)),
    "CosineAnnealingWarmRestarts-Tmult": ("SGD", lambda L, o: L.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=1e-3)),
    "CyclicLR-triangular": ("SGD", lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=7)),
    "CyclicLR-triangular2": ("SGD", lambda L, o: L.CyclicLR(
        o, [0.01, 0.001], [0.1, 0.05], step_size_up=5, step_size_down=9, mode="triangular2",
        base_momentum=0.7, max_momentum=0.95)),
    "CyclicLR-exp_range": ("Adam", lambda L, o: L.CyclicLR(
        o, 0.001, 0.1, step_size_up=6, mode="exp_range", gamma=0.98)),
    "CyclicLR-scale_fn": ("SGD", lambda L, o: L.CyclicLR(
        o, 0.001, 0.1, step_size_up=4, scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations",
        cycle_momentum=False)),
    "OneCycleLR": ("SGD", lambda L, o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS + 1)),
    "OneCycleLR-three_phase-linear": ("Adam", lambda L, o: L.OneCycleLR(
        o, max_lr=0.3, epochs=4, steps_per_epoch=26, three_phase=True,
        anneal_strategy="linear")),
    "SequentialLR": ("SGD", lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=10), L.ExponentialLR(o, gamma=0.97),
            L.CosineAnnealingLR(o, T_max=20)], milestones=[10, 50])),
    "ChainedScheduler": ("SGD", lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.5, total_iters=20), L.ExponentialLR(o, gamma=0.98),
         L.MultiplicativeLR(o, lambda e: 0.99)])),
}


def _run(make, opt, L, steps, start=0):
    sched = make(L, opt)
    return sched, _trace(sched, opt, steps)


def _trace(sched, opt, steps):
    rows = [sched.get_last_lr() + _momenta(opt)]
    for _ in range(steps):
        opt.step()
        sched.step()
        rows.append(list(sched.get_last_lr()) + _momenta(opt))
    return np.array(rows, dtype=np.float64)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_sequence_equals_torch_over_100_steps(name):
    opt_name, make = SCHEDULES[name]
    ours_opt, their_opt = _pair(opt_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about step order with no gradients
        ours, theirs = _run(make, ours_opt, acg.optim.lr_scheduler, STEPS), \
            _run(make, their_opt, torch.optim.lr_scheduler, STEPS)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=1e-15)
    assert getattr(ours[0], "last_epoch", None) == getattr(theirs[0], "last_epoch", None)
    assert [g["lr"] for g in ours_opt.param_groups] == pytest.approx(
        [g["lr"] for g in their_opt.param_groups], rel=1e-12)


@pytest.mark.parametrize("name", ["MultiplicativeLR", "CyclicLR-triangular2",
                                  "CosineAnnealingWarmRestarts-Tmult", "OneCycleLR",
                                  "SequentialLR", "ChainedScheduler"])
def test_state_dict_resume_halfway_equals_torch(name):
    """50 steps, state_dict into a fresh scheduler (fresh optimizer at the same lrs), 50 more."""
    opt_name, make = SCHEDULES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        their_opt = _pair(opt_name)[1]
        tsched = make(torch.optim.lr_scheduler, their_opt)
        _trace(tsched, their_opt, 50)
        theirs = _trace(tsched, their_opt, 50)
        ours_opt = _pair(opt_name)[0]
        sched = make(acg.optim.lr_scheduler, ours_opt)
        _trace(sched, ours_opt, 50)
        state, opt_state = sched.state_dict(), ours_opt.state_dict()
        fresh_opt = _pair(opt_name)[0]
        fresh = make(acg.optim.lr_scheduler, fresh_opt)
        fresh_opt.load_state_dict(opt_state)
        fresh.load_state_dict(state)
        ours = _trace(fresh, fresh_opt, 50)
    np.testing.assert_allclose(ours[1:], theirs[1:], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", ["CyclicLR-triangular2", "CosineAnnealingWarmRestarts",
                                  "MultiplicativeLR", "OneCycleLR"])
def test_state_dict_keys_like_torch(name):
    opt_name, make = SCHEDULES[name]
    ours_opt, their_opt = _pair(opt_name)
    ours, theirs = make(acg.optim.lr_scheduler, ours_opt), make(torch.optim.lr_scheduler,
                                                                their_opt)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    public = {k for k in tsd if not k.startswith("_") or k in ("_last_lr", "_scale_fn_custom")}
    assert public <= set(sd)
    for k in public:
        if isinstance(tsd[k], (int, float, str)):
            assert sd[k] == pytest.approx(tsd[k]), k


def test_warm_restarts_fractional_epochs_equal_torch():
    """Per-batch stepping with ``step(epoch + i / iters)`` (and a jump back) as PyTorch."""
    ours_opt, their_opt = _pair()
    L, TL = acg.optim.lr_scheduler, torch.optim.lr_scheduler
    s, ts = L.CosineAnnealingWarmRestarts(ours_opt, T_0=2, T_mult=3, eta_min=0.001), \
        TL.CosineAnnealingWarmRestarts(their_opt, T_0=2, T_mult=3, eta_min=0.001)
    epochs = [e + i / 7 for e in range(12) for i in range(7)] + [0.5, 3.25, 30.0]
    got, want = [], []
    for e in epochs:
        s.step(e), ts.step(e)
        got.append(s.get_last_lr() + [s.T_cur, s.T_i, s.last_epoch])
        want.append(ts.get_last_lr() + [ts.T_cur, ts.T_i, ts.last_epoch])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw", [dict(mode="min"), dict(mode="max", threshold_mode="abs",
                                                       threshold=0.05),
                                dict(mode="min", cooldown=3, patience=2, min_lr=[0.01, 0.005],
                                     factor=0.5),
                                dict(mode="min", eps=0.02, factor=0.7, patience=0)])
def test_reduce_on_plateau_equals_torch_over_100_steps(kw):
    rng = np.random.default_rng(0)
    metrics = np.cumsum(rng.standard_normal(STEPS)) * 0.1 + np.linspace(1, 0, STEPS)
    ours_opt, their_opt = _pair()
    s = acg.optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **kw)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(their_opt, **kw)
    got, want = [], []
    for m in metrics:
        s.step(m), ts.step(m)
        got.append(s.get_last_lr() + [s.num_bad_epochs, s.cooldown_counter, s.last_epoch])
        want.append(ts.get_last_lr() + [ts.num_bad_epochs, ts.cooldown_counter, ts.last_epoch])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)
    assert got[-1][:2] != [0.1, 0.02] or kw.get("mode") == "max"  # it did reduce


@pytest.mark.parametrize("bad,err", [
    (lambda L, o: L.CyclicLR(o, 0.1, 1.0, mode="zigzag"), ValueError),
    (lambda L, o: L.CyclicLR(o, [0.1], 1.0), ValueError),
    (lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=0), ValueError),
    (lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5), ValueError),
    (lambda L, o: L.MultiplicativeLR(o, [lambda e: 1.0]), ValueError),
    (lambda L, o: L.MultiplicativeLR(o, 0.5), TypeError),
])
def test_bad_arguments_raise_torchs_error(bad, err):
    ours_opt, their_opt = _pair()
    with pytest.raises(err) as theirs:
        bad(torch.optim.lr_scheduler, their_opt)
    with pytest.raises(err) as ours:
        bad(acg.optim.lr_scheduler, ours_opt)
    assert str(ours.value) == str(theirs.value)


def test_chained_refuses_reduce_on_plateau_as_torch():
    ours_opt, their_opt = _pair()
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.ChainedScheduler(
            [torch.optim.lr_scheduler.ReduceLROnPlateau(their_opt)])
    with pytest.raises(ValueError) as ours:
        acg.optim.lr_scheduler.ChainedScheduler(
            [acg.optim.lr_scheduler.ReduceLROnPlateau(ours_opt)])
    assert str(ours.value) == str(theirs.value)


def test_cyclic_momentum_needs_a_momentum_optimizer():
    ours_opt, their_opt = _pair("Adagrad")
    with pytest.raises(ValueError) as theirs:
        torch.optim.lr_scheduler.CyclicLR(their_opt, 0.01, 0.1)
    with pytest.raises(ValueError) as ours:
        acg.optim.lr_scheduler.CyclicLR(ours_opt, 0.01, 0.1)
    assert str(ours.value) == str(theirs.value)
    assert math.isclose(acg.optim.lr_scheduler.CyclicLR(ours_opt, 0.01, 0.1,
                                                        cycle_momentum=False).get_last_lr()[0],
                        0.01)
