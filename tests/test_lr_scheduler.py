"""Schedulers step by step against the closed forms PyTorch's documentation gives."""
from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.optim import lr_scheduler as L
from autograd_compile.optim.optimizer import compile_cache_size


def _opt(lrs=(0.1, 0.02), cls=acg.optim.SGD, **kw):
    groups = [{"params": [acg.nn.Parameter(acg.ones(2))], "lr": lr} for lr in lrs]
    return cls(groups, **kw)


def _trace(sched, steps):
    """get_last_lr() after construction and after each of ``steps`` steps."""
    out = [sched.get_last_lr()]
    for _ in range(steps):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr())
    return np.array(out)


def _expect(fn, steps, bases=(0.1, 0.02)):
    return np.array([[fn(b, t) for b in bases] for t in range(steps + 1)])


CLOSED_FORMS = {
    "StepLR": (lambda o: L.StepLR(o, step_size=3, gamma=0.5),
               lambda b, t: b * 0.5 ** (t // 3)),
    "MultiStepLR": (lambda o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
                    lambda b, t: b * 0.1 ** bisect_right([2, 5, 5, 9], t)),
    "ExponentialLR": (lambda o: L.ExponentialLR(o, gamma=0.9), lambda b, t: b * 0.9 ** t),
    "CosineAnnealingLR": (lambda o: L.CosineAnnealingLR(o, T_max=4, eta_min=0.001),
                          lambda b, t: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * t / 4)) / 2),
    "LambdaLR": (lambda o: L.LambdaLR(o, lambda e: 1 / (1 + e)), lambda b, t: b / (1 + t)),
    "LinearLR": (lambda o: L.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=4),
                 lambda b, t: b * (0.25 + 0.5 * min(t, 4) / 4)),
    "ConstantLR": (lambda o: L.ConstantLR(o, factor=0.5, total_iters=3),
                   lambda b, t: b * (0.5 if t < 3 else 1.0)),
    "PolynomialLR": (lambda o: L.PolynomialLR(o, total_iters=6, power=2.0),
                     lambda b, t: b * (1 - min(t, 6) / 6) ** 2),
}


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_values_equal_closed_form(name):
    make, closed = CLOSED_FORMS[name]
    np.testing.assert_allclose(_trace(make(_opt()), 12), _expect(closed, 12), rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize("name", sorted(CLOSED_FORMS))
def test_state_dict_resume_continues_the_same_values(name):
    make, closed = CLOSED_FORMS[name]
    opt = _opt()
    sched = make(opt)
    _trace(sched, 5)
    opt2 = _opt()
    sched2 = make(opt2)  # PyTorch's resume order: build both, then load both
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(sched.state_dict())
    np.testing.assert_allclose(_trace(sched2, 4)[1:], _expect(closed, 9)[6:], rtol=1e-12)


def test_lambda_state_dict_saves_callable_objects_not_functions():
    class Warmup:
        def __init__(self):
            self.scale = 2.0

        def __call__(self, e):
            return self.scale * e
    w = Warmup()
    sched = L.LambdaLR(_opt(), [w, lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"scale": 2.0}, None] and "optimizer" not in sd
    w.scale = 5.0
    sched.load_state_dict(sd)
    assert w.scale == 2.0
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        L.LambdaLR(_opt(), [lambda e: 1.0])


def _one_cycle_ref(t, total, initial, top, low, pct_start, anneal, three_phase):
    """1cycle from the paper's description: phase ends at pct_start * total - 1 (, 2x - 2), total - 1."""
    cos = lambda a, b, p: b + (a - b) * (1 + math.cos(math.pi * p)) / 2  # noqa: E731
    lin = lambda a, b, p: a + (b - a) * p  # noqa: E731
    f = cos if anneal == "cos" else lin
    e1 = pct_start * total - 1
    if three_phase:
        ends = [(e1, initial, top), (2 * pct_start * total - 2, top, initial),
                (total - 1, initial, low)]
    else:
        ends = [(e1, initial, top), (total - 1, top, low)]
    start = 0.0
    for i, (end, a, b) in enumerate(ends):
        if t <= end or i == len(ends) - 1:
            return f(a, b, (t - start) / (end - start))
        start = end


@pytest.mark.parametrize("anneal,three_phase", [("cos", False), ("linear", False),
                                                ("cos", True), ("linear", True)])
def test_one_cycle_lr_and_momentum(anneal, three_phase):
    opt = _opt(cls=acg.optim.Adam)
    sched = L.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=20, pct_start=0.3,
                         anneal_strategy=anneal, three_phase=three_phase)
    betas = [opt.param_groups[0]["betas"][0]]
    lrs = [sched.get_last_lr()]
    for _ in range(19):
        opt.step(), sched.step()
        lrs.append(sched.get_last_lr())
        betas.append(opt.param_groups[0]["betas"][0])
    for t in range(20):
        for g, top in enumerate([1.0, 0.5]):
            ref = _one_cycle_ref(t, 20, top / 25, top, top / 25 / 1e4, 0.3, anneal, three_phase)
            assert lrs[t][g] == pytest.approx(ref, rel=1e-12)
        ref_m = _one_cycle_ref(t, 20, 0.95, 0.85, 0.95, 0.3, anneal, three_phase)
        assert betas[t] == pytest.approx(ref_m, rel=1e-12)
    assert opt.param_groups[0]["betas"][1] == 0.999
    with pytest.raises(ValueError, match="Tried to step 21 times"):
        sched.step(), sched.step()


def test_one_cycle_cycles_sgd_momentum_and_errors():
    opt = _opt(cls=acg.optim.SGD, momentum=0.9)
    L.OneCycleLR(opt, max_lr=0.1, epochs=2, steps_per_epoch=5)
    assert opt.param_groups[0]["momentum"] == 0.95
    with pytest.raises(ValueError, match="must define either total_steps OR"):
        L.OneCycleLR(_opt(), max_lr=0.1)
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        L.OneCycleLR(_opt(cls=acg.optim.Adagrad), max_lr=0.1, total_steps=5)
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        L.OneCycleLR(_opt(), max_lr=[0.1], total_steps=5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        L.OneCycleLR(_opt(), max_lr=0.1, total_steps=5, anneal_strategy="exp")


def test_sequential_warmup_then_cosine():
    opt = _opt()
    warm = L.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = L.CosineAnnealingLR(opt, T_max=5)
    sched = L.SequentialLR(opt, [warm, cos], milestones=[3])

    def closed(b, t):
        if t < 3:
            return b * (0.1 + 0.9 * t / 3)
        return b * (1 + math.cos(math.pi * (t - 3) / 5)) / 2
    np.testing.assert_allclose(_trace(sched, 8), _expect(closed, 8), rtol=1e-12, atol=1e-15)
    sd = sched.state_dict()
    assert [s["last_epoch"] for s in sd["_schedulers"]] == [2, 5] and "optimizer" not in sd


def test_sequential_errors():
    opt = _opt()
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        L.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match="one more than the number of milestone points"):
        L.SequentialLR(opt, [L.StepLR(opt, 2)], milestones=[1])
    with pytest.raises(ValueError, match="belong to the same optimizer"):
        L.SequentialLR(opt, [L.StepLR(opt, 2), L.StepLR(_opt(), 2)], milestones=[1])


def test_chained_scheduler_multiplies_factors_and_round_trips():
    opt = _opt()
    sched = L.ChainedScheduler([L.ExponentialLR(opt, gamma=0.9), L.StepLR(opt, 3, gamma=0.5)])
    np.testing.assert_allclose(_trace(sched, 8), _expect(lambda b, t: b * 0.9 ** t *
                                                         0.5 ** (t // 3), 8), rtol=1e-12)
    opt2 = _opt()
    again = L.ChainedScheduler([L.ExponentialLR(opt2, gamma=0.9), L.StepLR(opt2, 3, gamma=0.5)])
    opt2.load_state_dict(opt.state_dict())
    again.load_state_dict(sched.state_dict())
    np.testing.assert_allclose(_trace(again, 2)[1:], _expect(lambda b, t: b * 0.9 ** t *
                                                             0.5 ** (t // 3), 10)[9:], rtol=1e-12)
    with pytest.raises(ValueError, match="expects at least one scheduler to be chained"):
        L.ChainedScheduler([])
    with pytest.raises(ValueError, match="belong to the same optimizer"):
        L.ChainedScheduler([L.StepLR(opt, 2), L.StepLR(_opt(), 2)])


def test_old_base_class_name_can_be_subclassed():
    class Halve(L._LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]
    sched = Halve(_opt())
    np.testing.assert_allclose(_trace(sched, 3), _expect(lambda b, t: b * 0.5 ** t, 3))


def test_resume_without_initial_lr_is_a_key_error():
    with pytest.raises(KeyError, match=r"'initial_lr' is not specified in param_groups\[0\]"):
        L.StepLR(_opt(), step_size=2, last_epoch=4)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        L.StepLR([], step_size=2)


def test_epoch_argument_uses_closed_form_and_warns():
    sched = L.ExponentialLR(_opt(), gamma=0.5)
    with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step\\(\\)`"):
        sched.step(3)
    assert sched.get_last_lr() == pytest.approx([0.1 * 0.125, 0.02 * 0.125])


def test_scheduled_training_never_recompiles():
    """OneCycleLR changes lr and SGD momentum every step: the update program is reused."""
    w = acg.nn.Parameter(acg.ones(3))
    opt = acg.optim.SGD([w], lr=0.1, momentum=0.9)
    sched = L.OneCycleLR(opt, max_lr=0.5, total_steps=6)
    expect, buf = np.ones(3), None
    for t in range(6):
        w.grad = acg.ones(3)
        g = opt.param_groups[0]
        lr, mu = g["lr"], g["momentum"]
        buf = np.ones(3) if buf is None else mu * buf + 1.0
        expect = expect - lr * buf
        opt.step()
        if t == 0:
            before = compile_cache_size()
        if t < 5:
            sched.step()
    assert compile_cache_size() == before
    np.testing.assert_allclose(w.detach().numpy(), expect, rtol=1e-6)


def _plateau_ref(losses, lr, factor, patience, threshold, cooldown, min_lr, mode, th_mode):
    """ReduceLROnPlateau as its documentation describes it, written out independently."""
    best, bad, cool, out = (math.inf if mode == "min" else -math.inf), 0, 0, []
    for x in losses:
        if mode == "min":
            better = x < (best * (1 - threshold) if th_mode == "rel" else best - threshold)
        else:
            better = x > (best * (1 + threshold) if th_mode == "rel" else best + threshold)
        best, bad = (x, 0) if better else (best, bad + 1)
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad > patience:
            new = max(lr * factor, min_lr)
            lr = new if lr - new > 1e-8 else lr
            cool, bad = cooldown, 0
        out.append(lr)
    return out


@pytest.mark.parametrize("mode,th_mode", [("min", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, th_mode):
    rng = np.random.default_rng(1)
    losses = list(np.round(rng.uniform(0, 1, 40), 1))
    opt = _opt(lrs=(1.0,))
    sched = L.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2, threshold=0.05,
                                threshold_mode=th_mode, cooldown=1, min_lr=0.05)
    got = []
    for x in losses:
        sched.step(acg.tensor(x))
        got.append(sched.get_last_lr()[0])
    assert got == _plateau_ref(losses, 1.0, 0.5, 2, 0.05, 1, 0.05, mode, th_mode)
    assert got[-1] < 1.0
    sd = sched.state_dict()
    again = L.ReduceLROnPlateau(_opt(lrs=(1.0,)), mode="min")
    again.load_state_dict(sd)
    assert again.best == sched.best and again.mode == mode and "optimizer" not in sd
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        L.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        L.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        L.ReduceLROnPlateau(opt, min_lr=[0, 0])


TORCH_SPECS = [
    ("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5, 9])),
    ("ExponentialLR", dict(gamma=0.9)), ("CosineAnnealingLR", dict(T_max=4, eta_min=0.001)),
    ("LinearLR", dict(start_factor=0.25, total_iters=4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)), ("PolynomialLR", dict(power=2.0)),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=20)),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=20, three_phase=True,
                        anneal_strategy="linear")),
    ("ChainedScheduler", None),
]


@pytest.mark.parametrize("name,kw", TORCH_SPECS, ids=[n for n, _ in TORCH_SPECS])
def test_matches_torch_when_installed(name, kw):
    """lr and momentum step by step against torch.optim.lr_scheduler (skipped without torch)."""
    torch = pytest.importorskip("torch")

    def run(optim, sched_mod, make_param):
        opt = optim.SGD([{"params": [make_param()], "lr": lr} for lr in (0.1, 0.02)],
                        momentum=0.9)
        if kw is None:  # ExponentialLR and StepLR at once
            sched = sched_mod.ChainedScheduler([sched_mod.ExponentialLR(opt, 0.9),
                                                sched_mod.StepLR(opt, 3, gamma=0.5)])
        else:
            sched = getattr(sched_mod, name)(opt, **kw)
        out = []
        for _ in range(19):
            out.append([(g["lr"], g["momentum"]) for g in opt.param_groups])
            opt.step()
            sched.step()
        return np.array(out)
    ours = run(acg.optim, L, lambda: acg.nn.Parameter(acg.ones(1)))
    theirs = run(torch.optim, torch.optim.lr_scheduler,
                 lambda: torch.nn.Parameter(torch.ones(1)))
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)


def test_docstring_examples_run():
    import doctest
    result = doctest.testmod(L)
    assert result.failed == 0 and result.attempted > 0
