"""acg.optim.swa_utils against torch.optim.swa_utils: the same model and weight trajectory,
averaged (SWA, EMA by avg_fn and by multi_avg_fn, with and without buffers), SWALR's learning
rates over 30 steps, update_bn's BatchNorm statistics."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.optim import swa_utils

from conftest import assert_close

torch = pytest.importorskip("torch")
tswa = torch.optim.swa_utils


def _model(lib):
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2)
                             ).double()


def _set(lib, model, arrays):
    with lib.no_grad():
        for t, a in zip(list(model.parameters()) + list(model.buffers()), arrays):
            t.copy_(lib.tensor(a, dtype=t.dtype))


def _trajectory(steps=5, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(4, 3), (4,), (4,), (4,), (2, 4), (2,), (4,), (4,), ()]
    return [[rng.standard_normal(s) if i < 8 else np.asarray(t) for i, s in enumerate(shapes)]
            for t in range(steps)]


def _values(model):
    return [np.asarray(t.detach().numpy()) for t in list(model.parameters()) +
            list(model.buffers())]


@pytest.mark.parametrize("kind", ["swa", "ema_fn", "ema_multi", "swa_multi", "swa_buffers"])
def test_averaged_model_like_torch(kind):
    kw = {"swa": ({}, {}),
          "ema_fn": ({"avg_fn": swa_utils.get_ema_avg_fn(0.9)},
                     {"avg_fn": tswa.get_ema_avg_fn(0.9)}),
          "ema_multi": ({"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.8)},
                        {"multi_avg_fn": tswa.get_ema_multi_avg_fn(0.8)}),
          "swa_multi": ({"multi_avg_fn": swa_utils.get_swa_multi_avg_fn()},
                        {"multi_avg_fn": tswa.get_swa_multi_avg_fn()}),
          "swa_buffers": ({"use_buffers": True}, {"use_buffers": True})}
    ours_kw, theirs_kw = kw[kind]
    results = []
    for lib, akw in ((acg, ours_kw), (torch, theirs_kw)):
        model = _model(lib)
        avg = (swa_utils if lib is acg else tswa).AveragedModel(model, **akw)
        for arrays in _trajectory():
            _set(lib, model, arrays)
            avg.update_parameters(model)
        results.append((_values(avg.module), avg.n_averaged.item(), sorted(avg.state_dict())))
    (ours, n, keys), (theirs, tn, tkeys) = results
    assert n == tn == 5 and keys == tkeys
    # torch's get_swa_multi_avg_fn lerps with weight 1 / (n_averaged + 1) where n_averaged is
    # an int64 tensor: the weight is a float32 (1e-8 off the float64 mean); the rest is exact
    tol = 1e-6 if kind == "swa_multi" else 1e-12
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=tol, atol=tol)


def test_averaged_model_forward_and_backward_in_every_mode(mode):
    rng = np.random.default_rng(1)
    x, arrays = rng.standard_normal((5, 3)), _trajectory(1)[0]
    grads = []
    for lib in (acg, torch):
        model = _model(lib)
        _set(lib, model, arrays)
        avg = (swa_utils if lib is acg else tswa).AveragedModel(model)
        loss = (avg(lib.tensor(x)) ** 2).sum()
        if lib is acg:
            with mode():
                loss.backward()
        else:
            loss.backward()
        grads.append([p.grad.numpy() for p in avg.parameters()])
    for a, b in zip(*grads):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("strategy,epochs", [("cos", 5), ("linear", 3), ("cos", 0),
                                             ("linear", 1)])
def test_swalr_learning_rates_like_torch(strategy, epochs):
    seqs = []
    for lib, mod in ((acg, swa_utils), (torch, tswa)):
        ps = [lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))]
        opt = lib.optim.SGD([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.3}], lr=1.0)
        sched = mod.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=epochs,
                          anneal_strategy=strategy)
        seq = [sched.get_last_lr()]
        for _ in range(30):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        seqs.append(seq)
    assert_close(np.array(seqs[0]), np.array(seqs[1]), rtol=1e-12, atol=1e-15)


def test_swalr_errors_like_torch():
    for kw in [{"anneal_strategy": "exp"}, {"anneal_epochs": -1}, {"anneal_epochs": 1.5},
               {"swa_lr": [0.1, 0.2]}]:
        kw = {"swa_lr": 0.1, **kw}
        with pytest.raises(ValueError) as theirs:
            tswa.SWALR(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1.0), **kw)
        with pytest.raises(ValueError) as ours:
            swa_utils.SWALR(acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=1.0), **kw)
        assert str(ours.value) == str(theirs.value)


def test_update_bn_like_torch():
    rng = np.random.default_rng(2)
    data, arrays = [rng.standard_normal((6, 3)) * 2 + 1 for _ in range(4)], _trajectory(1)[0]
    stats = []
    for lib, mod in ((acg, swa_utils), (torch, tswa)):
        model = _model(lib)
        _set(lib, model, arrays)
        model.eval()
        loader = [(lib.tensor(d), 0) for d in data]
        mod.update_bn(loader, model)
        bn = model[1]
        stats.append((bn.running_mean.detach().numpy(), bn.running_var.detach().numpy(),
                      bn.num_batches_tracked.item(), bn.momentum, model.training))
    (m, v, n, mom, tr), (tm, tv, tn, tmom, ttr) = stats
    assert_close(m, tm, rtol=1e-12, atol=1e-12)
    assert_close(v, tv, rtol=1e-12, atol=1e-12)
    assert (n, mom, tr) == (tn, tmom, ttr) == (4, 0.1, False)


def test_docstring_examples_run():
    import doctest
    result = doctest.testmod(swa_utils)
    assert result.failed == 0 and result.attempted > 0


def test_ema_of_an_integer_buffer_truncates_as_torch():
    """``AveragedModel(use_buffers=True, multi_avg_fn=get_ema_multi_avg_fn(0.9))`` over a
    BatchNorm: the integer ``num_batches_tracked`` is averaged in its own dtype group as
    ``ema * decay + current * (1 - decay)``, truncated (reference: that recurrence in numpy)."""
    from autograd_compile.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
    m = acg.nn.BatchNorm1d(3)
    ema = AveragedModel(m, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)
    want, counts = None, []
    for step in range(40):
        m(acg.randn(4, 3))
        ema.update_parameters(m)
        c = step + 1
        want = c if want is None else int(np.float32(want) * np.float32(0.9) +
                                          np.float32(c) * np.float32(1 - 0.9))
        counts.append(int(ema.module.num_batches_tracked))
        assert counts[-1] == want, (step, counts)
    assert counts[14:16] == [6, 6]  # torch 2.13 too (a full-float lerp gave 6, 7)
