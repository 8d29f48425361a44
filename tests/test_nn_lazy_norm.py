"""Lazy modules against PyTorch: repr and state_dict keys before the first call, the class,
shapes and initialisation after it, torch's checkpoint loaded into an uninitialised lazy
module, and forward/gradients (three modes) once materialised."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import assert_close

torch = pytest.importorskip("torch")
from _torch_compare import compare_with_torch, to_acg  # noqa: E402

# (class name, constructor args, input shape)
LAZY = [("LazyLinear", (3,), (2, 5)), ("LazyConv1d", (4, 3), (2, 3, 7)),
        ("LazyConv2d", (4, 3), (2, 3, 5, 5)), ("LazyBatchNorm1d", (), (4, 3)),
        ("LazyBatchNorm2d", (), (2, 3, 4, 4)), ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 5)), ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]
IDS = [n for n, *_ in LAZY]


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name,args,shape", LAZY, ids=IDS)
def test_lazy_module_materialises_as_torch(name, args, shape):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.has_uninitialized_params() and theirs.has_uninitialized_params()
    x = _x(*shape)
    y, ty = ours(acg.tensor(x)), theirs(torch.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]
    assert isinstance(ours, getattr(nn, name[4:])) and repr(ours) == repr(theirs)
    assert tuple(y.shape) == tuple(ty.shape)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert [tuple(v.shape) for v in sd.values()] == [tuple(v.shape) for v in tsd.values()]
    for p in ours.parameters():
        assert type(p) is nn.Parameter and p.requires_grad
    assert not ours._forward_pre_hooks  # the inference hook is gone


def test_lazy_linear_init_bounds():
    m = nn.LazyLinear(200)
    m(acg.zeros(1, 400))
    bound = 1 / np.sqrt(400)  # kaiming_uniform(a=sqrt(5)) and the bias: U(-1/sqrt(fan_in), ..)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / np.sqrt(3), rel=0.02)
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound


@pytest.mark.parametrize("name,args,shape", [LAZY[0], LAZY[2], LAZY[4]], ids=IDS[:1] + [IDS[2],
                                                                                      IDS[4]])
def test_torch_checkpoint_loads_into_uninitialised_lazy_module(mode, name, args, shape):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args)
    theirs(torch.tensor(_x(*shape, seed=5)))  # materialise (and move the running stats)
    ours = getattr(nn, name)(*args)
    ours.load_state_dict({k: to_acg(v) for k, v in theirs.state_dict().items()})
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key].detach().numpy(), value.detach().numpy())
    compare_with_torch(ours, theirs, [_x(*shape)], mode, rtol=1e-4, atol=1e-5)
    assert type(ours).__name__ == name[4:]


def test_lazy_without_parameters_and_options():
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    t = torch.nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    assert repr(m) == repr(t) and not m.has_uninitialized_params()
    assert list(nn.LazyLinear(3, bias=False).state_dict()) == ["weight"]
    conv = nn.LazyConv2d(4, 3, groups=2, bias=False)
    conv(acg.zeros(1, 6, 5, 5))
    assert conv.weight.shape == (4, 3, 3, 3) and conv.bias is None
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(acg.zeros(1, 3, 5, 5))


def test_lazy_model_trains(mode):
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    x, y = acg.tensor(_x(16, 5)), acg.tensor(_x(16, 1, seed=1))
    model(x)  # materialise, then build the optimizer (as PyTorch asks)
    opt = acg.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        with mode():
            loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
