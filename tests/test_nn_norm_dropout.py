"""Norm layers (GroupNorm, InstanceNorm1-3d, BatchNorm3d, SyncBatchNorm, LocalResponseNorm,
CrossMapLRN2d) against PyTorch with its state loaded: forward, gradients in the three modes,
running statistics, eval behaviour, repr, errors; the channel and alpha dropouts by their
statistics, eval identity and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import assert_close

torch = pytest.importorskip("torch")
from _layer_check import check_layer_grads  # noqa: E402
from _torch_compare import compare_with_torch, load_torch_state  # noqa: E402


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# (class name, constructor args, constructor kwargs, input shape): one sample per entry
NORMS = [
    ("GroupNorm", (2, 4), {}, (2, 4, 3, 3)),
    ("GroupNorm", (1, 4), {"affine": False}, (2, 4, 5)),
    ("InstanceNorm1d", (3,), {}, (2, 3, 5)),
    ("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True}, (3, 5)),
    ("InstanceNorm2d", (3,), {"affine": True}, (2, 3, 4, 4)),
    ("InstanceNorm3d", (2,), {"track_running_stats": True}, (2, 2, 3, 3, 3)),
    ("BatchNorm3d", (2,), {}, (2, 2, 3, 3, 3)),
    ("SyncBatchNorm", (3,), {}, (2, 3, 4, 4)),
    ("LocalResponseNorm", (3,), {"alpha": 0.1, "k": 2.0}, (2, 5, 4, 4)),
    ("LocalResponseNorm", (2,), {}, (2, 5, 6)),
]
IDS = [f"{n}-{i}" for i, (n, *_) in enumerate(NORMS)]


def _pair(name, args, kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    with torch.no_grad():  # non-trivial affine parameters and running statistics
        for p in theirs.parameters():
            p.uniform_(0.5, 1.5)
        for b in theirs.buffers():
            if b.is_floating_point():
                b.uniform_(0.5, 1.5)
    load_torch_state(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("name,args,kwargs,shape", NORMS, ids=IDS)
def test_norm_train_matches_torch(mode, name, args, kwargs, shape):
    ours, theirs = _pair(name, args, kwargs)
    compare_with_torch(ours, theirs, [_x(*shape)], mode, rtol=1e-4, atol=1e-5)
    for key, value in theirs.state_dict().items():  # running statistics updated alike
        assert_close(ours.state_dict()[key].detach().numpy(), value.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,args,kwargs,shape", NORMS, ids=IDS)
def test_norm_eval_matches_torch(name, args, kwargs, shape):
    ours, theirs = _pair(name, args, kwargs)
    ours.eval(), theirs.eval()
    x = _x(*shape, seed=1)
    with torch.no_grad():
        want = theirs(torch.tensor(x)).detach().numpy()
    assert_close(ours(acg.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)


def test_cross_map_lrn2d_forward_as_torch_gradient_exact(mode):
    # PyTorch's hand-written legacy backward for CrossMapLRN2d is not the derivative of its
    # own forward (off by ~5% near the channel edges); ours is autograd's exact one, checked
    # against float64 finite differences, and the forward equals PyTorch's
    x = _x(2, 5, 3, 3)
    ours = nn.CrossMapLRN2d(3, alpha=0.1)
    assert repr(ours) == repr(torch.nn.CrossMapLRN2d(3, alpha=0.1))
    with torch.no_grad():
        want = torch.nn.CrossMapLRN2d(3, alpha=0.1)(torch.tensor(x)).detach().numpy()
    assert_close(ours(acg.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    check_layer_grads(ours, [x.astype(np.float64)[:1, :, :2, :2]], mode, rtol=1e-5,
                      atol=1e-7)
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D"):
        ours(acg.zeros(2, 5, 3))


def test_batch_norm_3d_momentum_none_is_cumulative():
    ours, theirs = nn.BatchNorm3d(2, momentum=None), torch.nn.BatchNorm3d(2, momentum=None)
    for seed in range(3):
        x = _x(2, 2, 2, 2, 2, seed=seed)
        ours(acg.tensor(x)), theirs(torch.tensor(x))
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key].detach().numpy(), value.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_norm_errors_as_torch():
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups "
                                         r"\(3\)"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        nn.BatchNorm3d(2)(acg.zeros(2, 2, 3, 3))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        nn.InstanceNorm2d(2)(acg.zeros(2, 3))
    with pytest.warns(UserWarning, match="input's size at dim=0 does not match num_features"):
        nn.InstanceNorm2d(3)(acg.zeros(2, 3, 4))


def test_convert_sync_batchnorm_keeps_state():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3))
    model[1].running_mean.fill_(0.5)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is nn.SyncBatchNorm
    assert_close(converted[1].running_mean.detach().numpy(), np.full(3, 0.5))
    assert list(converted.state_dict()) == list(model.state_dict())


# -- dropouts -----------------------------------------------------------------------------

CHANNEL_DROPOUTS = [("Dropout1d", (64, 40, 3)), ("Dropout2d", (64, 40, 2, 2)),
                    ("Dropout3d", (64, 40, 2, 1, 2))]


@pytest.mark.parametrize("name,shape", CHANNEL_DROPOUTS)
def test_channel_dropout_statistics_and_gradient(mode, name, shape):
    p = 0.3
    layer = getattr(nn, name)(p)
    assert repr(layer) == repr(getattr(torch.nn, name)(p))
    x = acg.tensor(np.abs(_x(*shape)) + 0.5, requires_grad=True)
    y = layer(x)
    ratio = (y / x).detach().numpy().reshape(shape[0], shape[1], -1)
    # whole channels are dropped or scaled by 1 / (1 - p)
    assert np.allclose(ratio, ratio[..., :1], rtol=1e-6)
    kept = ratio[..., 0]
    assert np.all((kept == 0) | np.isclose(kept, 1 / (1 - p), rtol=1e-6))
    assert (kept == 0).mean() == pytest.approx(p, abs=0.04)  # 2560 channels
    with mode():
        y.sum().backward()
    assert_close(x.grad.numpy(), (y / x).detach().numpy(), rtol=1e-6)
    layer.eval()
    assert layer(x) is x or np.array_equal(layer(x).detach().numpy(), x.detach().numpy())


def test_channel_dropout_errors_and_warnings_as_torch():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        nn.Dropout2d(1.5)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a "
                                           "4D input"):
        nn.Dropout1d(0.5)(acg.zeros(3, 4, 5, 6))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d"):
        nn.Dropout2d(0.5)(acg.ones(3, 4))


def test_dropout1d_unbatched_drops_rows():
    y = nn.Dropout1d(0.5)(acg.ones(400, 3)).detach().numpy()
    assert np.all(y == y[:, :1])


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_keeps_mean_and_variance(mode, name):
    p = 0.2
    layer = getattr(nn, name)(p)
    assert repr(layer) == repr(getattr(torch.nn, name)(p))
    shape = (200, 100, 4) if name == "FeatureAlphaDropout" else (400, 200)
    x = acg.tensor(_x(*shape), requires_grad=True)
    y = layer(x)
    out = y.detach().numpy()
    # SELU's self-normalising property: a standard normal input stays (0, 1)
    assert abs(out.mean()) < 0.02 and out.std() == pytest.approx(1.0, abs=0.03)
    ref = getattr(torch.nn, name)(p)(torch.tensor(_x(*shape))).detach().numpy()
    assert out.std() == pytest.approx(ref.std(), abs=0.03)
    with mode():
        y.sum().backward()
    g = x.grad.numpy()
    a = (1 / np.sqrt((1 - p) * (1 + p * 1.7580993408473766 ** 2)))
    dropped = g == 0
    assert_close(g[~dropped], np.full((~dropped).sum(), a), rtol=1e-5)
    assert dropped.mean() == pytest.approx(p, abs=0.03)
    if name == "FeatureAlphaDropout":  # a channel is dropped as a whole
        assert np.all(dropped == dropped[..., :1])
        assert np.allclose(out[dropped], out[dropped].flat[0])
    layer.eval()
    assert_close(layer(x).detach().numpy(), x.detach().numpy())
