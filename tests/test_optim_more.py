"""The rest of torch.optim (RAdam, NAdam, Adamax, ASGD, Rprop, Adafactor, Muon, SparseAdam,
LBFGS) against torch.optim itself: the same parameters (float64, two groups with their own
options) and the same gradients for 25 steps, then parameters and state compared; LBFGS on a
Rosenbrock problem against torch's trajectory; a torch state_dict loaded and continued.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg

from conftest import assert_close

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4,), (2, 2)]
CASES = [
    ("RAdam", {}),
    ("RAdam", {"weight_decay": 0.1}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"weight_decay": 0.1, "betas": (0.8, 0.9), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"t0": 5, "lambd": 0.01, "alpha": 0.5, "weight_decay": 0.1}),
    ("ASGD", {"t0": 3, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"etas": (0.3, 1.5), "step_sizes": (1e-3, 0.3), "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"weight_decay": 0.1, "d": 2.0, "beta2_decay": -0.5, "maximize": True}),
    ("Adafactor", {"eps": (1e-20, 1e-2)}),
    ("Adam", {"decoupled_weight_decay": True, "weight_decay": 0.1, "amsgrad": True}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _grads(steps: int, seed: int = 0, shapes=SHAPES) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    # some gradients keep their sign and some flip, so Rprop's both branches run
    return [[rng.standard_normal(s) + (0.5 if t % 3 else -0.5) for s in shapes]
            for t in range(steps)]


def _init(shapes=SHAPES) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s) for s in shapes]


def _run_ours(name, kw, grads, init=None, opt_kw=None):
    init = _init() if init is None else init
    ps = [acg.nn.Parameter(acg.tensor(a)) for a in init]
    opt = getattr(acg.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}],
                                   lr=0.05, **kw)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = acg.tensor(g)
        opt.step()
    return ps, opt


def _run_torch(name, kw, grads, init=None):
    init = _init() if init is None else init
    ps = [torch.tensor(a, requires_grad=True) for a in init]
    opt = getattr(torch.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}],
                                     lr=0.05, **kw)
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = torch.tensor(g)
        opt.step()
    return ps, opt


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_torch_over_25_steps(name, kw):
    grads = _grads(25)
    ours, opt = _run_ours(name, kw, grads)
    theirs, topt = _run_torch(name, kw, grads)
    for a, b in zip(ours, theirs):
        assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    for a, b in zip(ours, theirs):  # the state too, key by key (PyTorch's layout)
        ours_state, their_state = opt.state[a], topt.state[b]
        assert sorted(ours_state) == sorted(their_state)
        for k, v in their_state.items():
            assert_close(ours_state[k].detach().numpy(), v.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,kw", [CASES[0], CASES[3], CASES[6], CASES[9], CASES[11],
                                     CASES[13]], ids=["RAdam", "NAdam", "Adamax", "ASGD",
                                                      "Rprop", "Adafactor"])
def test_torch_state_dict_loads_and_continues(name, kw):
    """10 steps in torch, its state_dict into ours, 10 more steps each: the same parameters."""
    grads = _grads(20, seed=3)
    theirs, topt = _run_torch(name, kw, grads[:10])
    start = [p.detach().numpy().copy() for p in theirs]
    ps = [acg.nn.Parameter(acg.tensor(a)) for a in start]
    opt = getattr(acg.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}],
                                   lr=0.05, **kw)
    opt.load_state_dict(topt.state_dict())
    for gs in grads[10:]:
        for p, q, g in zip(ps, theirs, gs):
            p.grad, q.grad = acg.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for a, b in zip(ps, theirs):
        assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_state_dict_round_trip_has_torch_keys():
    ours, opt = _run_ours("NAdam", {}, _grads(3))
    theirs, topt = _run_torch("NAdam", {}, _grads(3))
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sorted(sd["param_groups"][0]) == sorted(tsd["param_groups"][0])
    assert sd["param_groups"][1]["params"] == tsd["param_groups"][1]["params"] == [2]
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    fresh = [acg.nn.Parameter(acg.tensor(p.detach().numpy())) for p in ours]
    opt2 = acg.optim.NAdam([{"params": fresh[:2]}, {"params": fresh[2:], "lr": 0.02}], lr=0.05)
    opt2.load_state_dict(sd)
    for gs in _grads(2, seed=7):
        for p, q, g in zip(ours, fresh, gs):
            p.grad, q.grad = acg.tensor(g), acg.tensor(g)
        opt.step(), opt2.step()
    for p, q in zip(ours, fresh):
        assert_close(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=0)


def test_muon_matches_torch_within_bfloat16():
    """Muon orthogonalises in bfloat16 (as PyTorch): equal to bf16 rounding of the update."""
    shapes = [(4, 3), (3, 5)]
    init, grads = _init(shapes), _grads(10, shapes=shapes)
    ps = [acg.nn.Parameter(acg.tensor(a)) for a in init]
    tps = [torch.tensor(a, requires_grad=True) for a in init]
    for nesterov, adjust in [(True, None), (False, "match_rms_adamw")]:
        opt = acg.optim.Muon(ps, lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust)
        topt = torch.optim.Muon(tps, lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust)
        for gs in grads:
            for p, q, g in zip(ps, tps, gs):
                p.grad, q.grad = acg.tensor(g), torch.tensor(g)
            opt.step(), topt.step()
        for p, q, a in zip(ps, tps, init):
            # 10 steps of lr * O(1) updates, each to bfloat16's 3 significant digits
            assert_close(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=0.02 * 10 * 0.02)
            assert np.abs(p.detach().numpy() - a).max() > 0.05  # it moved
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        acg.optim.Muon([acg.nn.Parameter(acg.ones(3))])


def test_sparse_adam_raises_for_dense_gradients_as_torch():
    w, tw = acg.nn.Parameter(acg.ones(2)), torch.nn.Parameter(torch.ones(2))
    opt, topt = acg.optim.SparseAdam([w]), torch.optim.SparseAdam([tw])
    w.grad, tw.grad = acg.ones(2), torch.ones(2)
    with pytest.raises(RuntimeError) as theirs:
        topt.step()
    with pytest.raises(RuntimeError) as ours:
        opt.step()
    assert str(ours.value) == str(theirs.value)
    assert sorted(opt.defaults) == sorted(topt.defaults)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop",
                                  "RAdam", "NAdam", "Adamax", "ASGD", "Rprop", "SparseAdam",
                                  "Adafactor", "Muon", "LBFGS"])
def test_defaults_and_flags_like_torch(name):
    """The same defaults dict, and the implementation flags accepted/refused as torch does."""
    shape = (2, 3)
    ours = getattr(acg.optim, name)([acg.nn.Parameter(acg.ones(*shape))])
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(*shape))])
    assert ours.defaults == theirs.defaults
    for flags in [{"fused": True, "foreach": True}, {"fused": True, "differentiable": True},
                  {"foreach": False, "maximize": True, "capturable": False}]:
        def build(lib, p):
            return getattr(lib.optim, name)([p], **flags)
        try:
            build(torch, torch.nn.Parameter(torch.ones(*shape)))
        except (TypeError, RuntimeError, ValueError) as e:
            with pytest.raises(type(e)):
                build(acg, acg.nn.Parameter(acg.ones(*shape)))
        else:
            build(acg, acg.nn.Parameter(acg.ones(*shape)))


@pytest.mark.parametrize("name,bad", [("RAdam", {"betas": (1.0, 0.9)}), ("NAdam", {"momentum_decay": -1}),
                                      ("Adamax", {"eps": -1}), ("ASGD", {"weight_decay": -1}),
                                      ("Rprop", {"etas": (1.5, 1.2)}),
                                      ("Adafactor", {"d": 0.5}), ("LBFGS", {"lr": -1})])
def test_invalid_options_raise_torchs_error(name, bad):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 2))], **bad)
    with pytest.raises(ValueError) as ours:
        getattr(acg.optim, name)([acg.nn.Parameter(acg.ones(2, 2))], **bad)
    assert str(ours.value) == str(theirs.value)


# -- LBFGS ------------------------------------------------------------------------------------
def _rosenbrock(lib, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[2]) ** 2 \
        + 100 * (x[2] - x[1] ** 2) ** 2


def _lbfgs_trajectory(lib, kw, steps):
    x = lib.nn.Parameter(lib.tensor([-1.2, 1.0, 0.5], dtype=lib.float64))
    opt = lib.optim.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(lib, x)
        loss.backward()
        return loss

    path = []
    for _ in range(steps):
        opt.step(closure)
        path.append(x.detach().numpy().copy())
    return np.array(path), opt


@pytest.mark.parametrize("kw", [{"line_search_fn": "strong_wolfe"},
                                {"lr": 0.1, "max_iter": 5, "history_size": 4},
                                {"line_search_fn": "strong_wolfe", "history_size": 3,
                                 "max_iter": 4}],
                         ids=["strong_wolfe", "fixed_step", "wolfe_short_history"])
def test_lbfgs_follows_torchs_trajectory_on_rosenbrock(kw):
    ours, opt = _lbfgs_trajectory(acg, kw, 8)
    theirs, topt = _lbfgs_trajectory(torch, kw, 8)
    assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    st, tst = opt.state[opt.param_groups[0]["params"][0]], \
        topt.state[topt.param_groups[0]["params"][0]]
    assert st["func_evals"] == tst["func_evals"] and st["n_iter"] == tst["n_iter"]
    assert len(st["old_dirs"]) == len(tst["old_dirs"])
    if kw.get("line_search_fn") and "max_iter" not in kw:
        assert np.abs(ours[-1] - 1).max() < 1e-3  # it reached the minimum


def test_lbfgs_trains_a_model_in_every_mode(mode):
    """A closure with a real backward (eager / compiled modes): loss equal to torch's."""
    rng = np.random.default_rng(0)
    X, y, w0 = rng.standard_normal((16, 3)), rng.standard_normal((16, 1)), rng.standard_normal((1, 3))
    results = []
    for lib in (acg, torch):
        lin = lib.nn.Linear(3, 1).double()
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w0))
            lin.bias.zero_()
        opt = lib.optim.LBFGS(lin.parameters(), line_search_fn="strong_wolfe", max_iter=10)
        xs, ys = lib.tensor(X), lib.tensor(y)

        def closure():
            opt.zero_grad()
            loss = ((lin(xs) - ys) ** 2).mean()
            if lib is acg:
                with mode():
                    loss.backward()
            else:
                loss.backward()
            return loss

        losses = [float(opt.step(closure).detach()) for _ in range(3)]
        results.append(losses)
    assert_close(results[0], results[1], rtol=1e-6, atol=1e-8)


def test_lbfgs_one_group_only_and_bad_line_search():
    a, b = acg.nn.Parameter(acg.ones(1)), acg.nn.Parameter(acg.ones(1))
    with pytest.raises(ValueError, match="per-parameter options"):
        acg.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = acg.optim.LBFGS([a], line_search_fn="armijo")

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)


def test_new_optimizers_train_in_every_mode(mode):
    """A real backward feeds each optimizer: one step equals torch's on the same model."""
    rng = np.random.default_rng(0)
    X, w0 = rng.standard_normal((8, 3)), rng.standard_normal((2, 3))
    for name in ["RAdam", "NAdam", "Adamax", "ASGD", "Rprop", "Adafactor"]:
        out = []
        for lib in (acg, torch):
            w = lib.nn.Parameter(lib.tensor(w0))
            opt = getattr(lib.optim, name)([w], lr=0.1)
            for _ in range(3):
                opt.zero_grad()
                loss = (lib.tensor(X) @ w.T).tanh().sum()
                if lib is acg:
                    with mode():
                        loss.backward()
                else:
                    loss.backward()
                opt.step()
            out.append(w.detach().numpy())
        assert_close(out[0], out[1], rtol=1e-6, atol=1e-6)


OPTIMIZERS = ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop", "RAdam", "NAdam",
              "Adamax", "ASGD", "Rprop", "SparseAdam", "Adafactor", "Muon", "LBFGS"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_constructor_signature_equals_torchs(name):
    """Every argument (foreach, fused, maximize, capturable, differentiable ...) by name, kind
    and default, as torch.optim spells it."""
    import inspect

    def params(cls):
        return [(p.name, p.kind, p.default)
                for p in inspect.signature(cls.__init__).parameters.values()]

    assert params(getattr(acg.optim, name)) == params(getattr(torch.optim, name))


@pytest.mark.parametrize("name,kw", [CASES[1], CASES[4], CASES[7], CASES[9], CASES[12],
                                     CASES[14]], ids=["RAdam", "NAdam", "Adamax", "ASGD",
                                                      "Rprop", "Adafactor"])
def test_our_state_dict_loads_into_torch_and_continues(name, kw):
    """The other direction: 10 steps here, our state_dict into torch.optim, 10 more each."""
    grads = _grads(20, seed=5)
    ours, opt = _run_ours(name, kw, grads[:10])
    tps = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in ours]
    topt = getattr(torch.optim, name)([{"params": tps[:2]}, {"params": tps[2:], "lr": 0.02}],
                                      lr=0.05, **kw)
    sd = opt.state_dict()
    topt.load_state_dict({"state": {k: {n: torch.tensor(v.detach().numpy()) if hasattr(v, "numpy") else v
                                        for n, v in st.items()} for k, st in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    for gs in grads[10:]:
        for p, q, g in zip(ours, tps, gs):
            p.grad, q.grad = acg.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for a, b in zip(ours, tps):
        assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
