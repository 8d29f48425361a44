"""Vision modules and functions (transposed convolution, N-d pools, unpooling, padding layers,
pixel shuffles, upsampling, fold/unfold) against PyTorch in float64: forward values, gradients
of inputs and parameters, state_dict keys, repr and errors, in the three execution modes; and,
without torch, gradients against finite differences and jax.vjp.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import nn
from _layer_check import check_layer_grads
from conftest import assert_close


def _torch():
    return pytest.importorskip("torch")


def _rand(rng: np.random.Generator, shape: tuple, positive: bool = False) -> np.ndarray:
    x = rng.standard_normal(shape)
    return np.abs(x) + 0.1 if positive else x


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _compare(build, shapes, mode, fwd_kwargs=None, positive=False, seed=0, rtol=1e-9,
             extra=None):
    """Build the same module from torch.nn and acg.nn, copy torch's state_dict into ours,
    run forward and backward (ours under ``mode``) on the same float64 inputs and compare
    outputs (indices too), input gradients and parameter gradients."""
    torch = _torch()
    fwd_kwargs = fwd_kwargs or {}
    torch.manual_seed(seed)
    tm, om = build(torch.nn).double(), build(nn).double()
    assert list(om.state_dict()) == list(tm.state_dict())
    assert repr(om) == repr(tm)
    om.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(seed)
    xs = [_rand(rng, s, positive) for s in shapes]
    tx = [torch.tensor(x, requires_grad=True) for x in xs]
    ox = [acg.tensor(x, requires_grad=True) for x in xs]
    more_t, more_o = (extra(torch), extra(acg)) if extra else ((), ())
    tout, oout = tm(*tx, *more_t, **fwd_kwargs), om(*ox, *more_o, **fwd_kwargs)
    if isinstance(tout, tuple):
        for a, b in zip(oout[1:], tout[1:]):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    tout, oout = _first(tout), _first(oout)
    assert tuple(oout.shape) == tuple(tout.shape)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=1e-12)
    cot = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    for a, b in zip(ox, tx):
        assert_close(a.grad.detach().numpy(), b.grad.detach().numpy(), rtol=rtol, atol=1e-12)
    for (name, p), (tname, tp) in zip(om.named_parameters(), tm.named_parameters()):
        assert name == tname
        assert_close(p.grad.detach().numpy(), tp.grad.detach().numpy(), rtol=rtol, atol=1e-12)
    return om, oout


# -- the module table: (id, constructor over an nn namespace, input shapes, options) --------
MODULES = [
    ("conv3d", lambda n: n.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=1), [(2, 2, 4, 5, 4)],
     {}),
    ("conv3d_groups_dil", lambda n: n.Conv3d(4, 2, 2, dilation=2, groups=2, bias=False),
     [(1, 4, 5, 5, 5)], {}),
    ("conv_transpose1d", lambda n: n.ConvTranspose1d(3, 2, 3, stride=2, padding=1,
                                                      output_padding=1), [(2, 3, 5)], {}),
    ("conv_transpose2d", lambda n: n.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0),
                                                      groups=2), [(2, 4, 4, 5)], {}),
    ("conv_transpose2d_dil_op", lambda n: n.ConvTranspose2d(2, 3, 3, stride=2, dilation=2,
                                                            output_padding=1, bias=False),
     [(1, 2, 3, 4)], {}),
    ("conv_transpose2d_unbatched", lambda n: n.ConvTranspose2d(2, 3, 2, stride=2), [(2, 3, 3)],
     {}),
    ("conv_transpose3d", lambda n: n.ConvTranspose3d(2, 2, 2, stride=2, padding=(0, 1, 0)),
     [(1, 2, 3, 3, 2)], {}),
    ("max_pool1d", lambda n: n.MaxPool1d(3, 2, 1, return_indices=True), [(2, 3, 9)], {}),
    ("max_pool1d_ceil_dil", lambda n: n.MaxPool1d(2, 2, 0, dilation=2, ceil_mode=True),
     [(2, 3, 8)], {}),
    ("max_pool3d", lambda n: n.MaxPool3d((2, 3, 2), (2, 1, 2), (1, 1, 0), return_indices=True),
     [(1, 2, 5, 4, 5)], {}),
    ("max_pool3d_ceil", lambda n: n.MaxPool3d(2, ceil_mode=True), [(2, 5, 5, 3)], {}),
    ("avg_pool1d", lambda n: n.AvgPool1d(3, 2, 1, count_include_pad=False), [(2, 3, 8)], {}),
    ("avg_pool1d_ceil", lambda n: n.AvgPool1d(2, ceil_mode=True), [(2, 7)], {}),
    ("avg_pool3d", lambda n: n.AvgPool3d(2, 1, 1, ceil_mode=True), [(1, 2, 4, 3, 4)], {}),
    ("avg_pool3d_divisor", lambda n: n.AvgPool3d((2, 2, 1), divisor_override=3),
     [(2, 2, 4, 4, 3)], {}),
    ("adaptive_avg_pool1d", lambda n: n.AdaptiveAvgPool1d(4), [(2, 3, 9)], {}),
    ("adaptive_avg_pool3d", lambda n: n.AdaptiveAvgPool3d((2, None, 3)), [(1, 2, 5, 3, 7)], {}),
    ("adaptive_max_pool1d", lambda n: n.AdaptiveMaxPool1d(4, return_indices=True), [(2, 3, 9)],
     {}),
    ("adaptive_max_pool2d", lambda n: n.AdaptiveMaxPool2d((3, None), return_indices=True),
     [(2, 2, 7, 5)], {}),
    ("adaptive_max_pool2d_grow", lambda n: n.AdaptiveMaxPool2d(4), [(3, 3, 5)], {}),
    ("adaptive_max_pool3d", lambda n: n.AdaptiveMaxPool3d((2, 3, 2), return_indices=True),
     [(1, 2, 5, 4, 3)], {}),
    ("lp_pool1d", lambda n: n.LPPool1d(2, 3, 2), [(2, 3, 9)], {"positive": True}),
    ("lp_pool2d", lambda n: n.LPPool2d(1.5, (2, 3), ceil_mode=True), [(2, 2, 5, 7)],
     {"positive": True}),
    ("lp_pool3d", lambda n: n.LPPool3d(3, 2), [(1, 2, 4, 4, 4)], {"positive": True}),
    ("lp_pool2d_inf", lambda n: n.LPPool2d(float("inf"), 2), [(1, 2, 4, 4)], {}),
    ("pixel_shuffle", lambda n: n.PixelShuffle(2), [(2, 8, 3, 4)], {}),
    ("pixel_shuffle_lead", lambda n: n.PixelShuffle(3), [(2, 1, 9, 2, 2)], {}),
    ("pixel_unshuffle", lambda n: n.PixelUnshuffle(2), [(2, 3, 4, 6)], {}),
    ("upsample_nearest", lambda n: n.Upsample(scale_factor=2), [(2, 3, 4, 5)], {}),
    ("upsample_nearest_size3d", lambda n: n.Upsample(size=(3, 5, 4)), [(1, 2, 2, 3, 5)], {}),
    ("upsample_nearest_exact", lambda n: n.Upsample(scale_factor=1.7, mode="nearest-exact"),
     [(1, 2, 5)], {}),
    ("upsample_linear", lambda n: n.Upsample(scale_factor=2.5, mode="linear"), [(2, 3, 4)], {}),
    ("upsample_bilinear_align", lambda n: n.Upsample(size=(7, 3), mode="bilinear",
                                                     align_corners=True), [(2, 2, 4, 5)], {}),
    ("upsample_bicubic", lambda n: n.Upsample(scale_factor=(1.5, 2.25), mode="bicubic"),
     [(1, 2, 4, 4)], {}),
    ("upsample_bicubic_recompute", lambda n: n.Upsample(
        scale_factor=1.3, mode="bicubic", align_corners=True, recompute_scale_factor=True),
     [(1, 2, 5, 4)], {}),
    ("upsample_trilinear", lambda n: n.Upsample(size=(3, 4, 2), mode="trilinear"),
     [(1, 2, 2, 3, 4)], {}),
    ("upsample_area", lambda n: n.Upsample(size=(3, 2), mode="area"), [(2, 2, 7, 5)], {}),
    ("upsampling_nearest2d", lambda n: n.UpsamplingNearest2d(scale_factor=3), [(1, 2, 2, 3)],
     {}),
    ("upsampling_bilinear2d", lambda n: n.UpsamplingBilinear2d(size=(5, 4)), [(1, 2, 3, 3)], {}),
    ("unfold", lambda n: n.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
     [(2, 3, 5, 6)], {}),
    ("unfold_unbatched", lambda n: n.Unfold(2), [(2, 4, 4)], {}),
    ("fold", lambda n: n.Fold((4, 5), (2, 2), padding=(1, 0), stride=(1, 2)), [(2, 8, 10)], {}),
    ("fold_unbatched", lambda n: n.Fold(4, 2, stride=2), [(4, 4)], {}),
    ("constant_pad1d", lambda n: n.ConstantPad1d((2, -1), 1.5), [(2, 3, 4)], {}),
    ("constant_pad3d", lambda n: n.ConstantPad3d(1, -2.0), [(1, 2, 2, 3, 2)], {}),
    ("zero_pad2d", lambda n: n.ZeroPad2d((1, 2, 0, 3)), [(2, 2, 3, 3)], {}),
    ("reflection_pad1d", lambda n: n.ReflectionPad1d((2, 3)), [(2, 3, 5)], {}),
    ("reflection_pad2d", lambda n: n.ReflectionPad2d(2), [(1, 2, 4, 5)], {}),
    ("reflection_pad3d", lambda n: n.ReflectionPad3d((1, 0, 2, 1, 1, 1)), [(1, 2, 3, 4, 3)], {}),
    ("replication_pad1d", lambda n: n.ReplicationPad1d(3), [(2, 4)], {}),
    ("replication_pad3d", lambda n: n.ReplicationPad3d((2, 1, 0, 1, 1, 2)), [(1, 2, 2, 3, 2)],
     {}),
    ("circular_pad2d", lambda n: n.CircularPad2d((1, 2, 2, 0)), [(2, 2, 3, 4)], {}),
    ("circular_pad3d", lambda n: n.CircularPad3d(1), [(1, 1, 2, 3, 2)], {}),
]
_FAST = {"conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "max_pool3d",
         "avg_pool1d", "adaptive_max_pool2d", "lp_pool2d", "pixel_shuffle", "upsample_bicubic",
         "upsample_area", "fold", "reflection_pad3d", "circular_pad2d"}


@pytest.mark.parametrize("case", [c for c in MODULES if c[0] in _FAST], ids=lambda c: c[0])
def test_module_matches_torch_in_every_mode(case, mode):
    name, build, shapes, opts = case
    _compare(build, shapes, mode, **opts)


@pytest.mark.parametrize("case", [c for c in MODULES if c[0] not in _FAST], ids=lambda c: c[0])
def test_module_matches_torch_eager(case):
    """The rest of the table, eagerly (the _FAST entries run in every mode above)."""
    name, build, shapes, opts = case
    _compare(build, shapes, acg_nullmode(), **opts)


def acg_nullmode():
    """The eager execution mode of conftest's fixture, for tests that run only it."""
    from conftest import ExecMode
    return ExecMode("eager")


# -- transposed convolution's output_size, unpooling, fractional pools ----------------------
def test_conv_transpose_output_size_and_errors(mode):
    torch = _torch()
    _compare(lambda n: n.ConvTranspose2d(2, 3, 3, stride=3, padding=1), [(1, 2, 3, 4)], mode,
             fwd_kwargs={"output_size": [8, 11]})
    up = nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1)
    tup = torch.nn.ConvTranspose2d(2, 3, 3, stride=3, padding=1)
    with pytest.raises(ValueError, match=r"requested an output size of \[10, 10\], but valid "
                                         r"sizes range from \[7, 10\] to \[9, 12\]"):
        up(acg.randn(1, 2, 3, 4), output_size=[10, 10])
    with pytest.raises(ValueError, match="requested an output size"):
        tup(torch.randn(1, 2, 3, 4), output_size=[10, 10])
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                                         'ConvTranspose1d'):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride "
                                           "or dilation"):
        F.conv_transpose2d(acg.randn(1, 2, 3, 3), acg.randn(2, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError):
        torch.nn.functional.conv_transpose2d(torch.randn(1, 2, 3, 3), torch.randn(2, 2, 3, 3),
                                             output_padding=1)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 3, 3, 3\] to have 2 channels"):
        F.conv_transpose2d(acg.randn(1, 3, 3, 3), acg.randn(2, 2, 3, 3))


def test_conv_transpose_init_matches_torch_statistics():
    big = nn.ConvTranspose2d(32, 16, 5)
    bound = 1 / np.sqrt(16 * 25)  # fan_in of the transposed layout: weight.size(1) * k * k
    for p in (big.weight, big.bias):
        assert np.abs(p.detach().numpy()).max() <= bound
    assert big.weight.detach().numpy().std() == pytest.approx(bound / np.sqrt(3), rel=0.03)
    assert big.weight.shape == (32, 16, 5, 5)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_inverts_max_pool(n, mode):
    torch = _torch()
    rng = np.random.default_rng(n)
    shape = (2, 2) + (6, 5, 4)[:n]
    x = rng.standard_normal(shape)
    pool_t = getattr(torch.nn, f"MaxPool{n}d")(2, stride=2, return_indices=True)
    pool_o = getattr(nn, f"MaxPool{n}d")(2, stride=2, return_indices=True)
    unpool_t, unpool_o = getattr(torch.nn, f"MaxUnpool{n}d")(2), getattr(nn, f"MaxUnpool{n}d")(2)
    assert repr(unpool_o) == repr(unpool_t)
    pt, it = pool_t(torch.tensor(x))
    po, io = pool_o(acg.tensor(x))
    size = list(shape[2:])
    vt = pt.detach().clone().requires_grad_(True)
    vo = acg.tensor(pt.detach().numpy(), requires_grad=True)
    ut, uo = unpool_t(vt, it, output_size=size), unpool_o(vo, io, output_size=size)
    assert_close(uo.detach().numpy(), ut.detach().numpy(), rtol=0, atol=0)
    cot = rng.standard_normal(tuple(ut.shape))
    ut.backward(torch.tensor(cot))
    with mode():
        uo.backward(acg.tensor(cot))
    assert_close(vo.grad.detach().numpy(), vt.grad.detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="invalid output_size"):
        unpool_o(vo, io, output_size=[s + 5 for s in size])


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool_matches_torch_given_samples(n, mode):
    torch = _torch()
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, 3) + (9, 8, 7)[:n])
    samples = rng.uniform(size=(2, 3, n))
    kw = dict(kernel_size=(2, 3, 2)[:n], output_size=(4, 3, 5)[:n], return_indices=True)
    tout, tidx = getattr(torch.nn.functional, f"fractional_max_pool{n}d")(
        xt := torch.tensor(x, requires_grad=True), _random_samples=torch.tensor(samples), **kw)
    xo = acg.tensor(x, requires_grad=True)
    oout, oidx = getattr(F, f"fractional_max_pool{n}d")(xo, _random_samples=acg.tensor(samples),
                                                        **kw)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=0, atol=0)
    np.testing.assert_array_equal(oidx.detach().numpy(), tidx.detach().numpy())
    cot = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    assert_close(xo.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-12)


def test_fractional_max_pool_module_draws_from_our_generator():
    pool = nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.5))
    assert repr(pool) == "FractionalMaxPool2d()"
    assert pool.output_ratio == (0.5, 0.5) and pool.kernel_size == (2, 2)
    x = acg.randn(2, 3, 10, 10)
    acg.manual_seed(3)
    a = pool(x)
    acg.manual_seed(3)
    b = pool(x)
    assert a.shape == (2, 3, 5, 5)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # every output is the max of some 2x2 window of the input
    windows = F.max_pool2d(x, 2, stride=1).detach().numpy().reshape(2, 3, -1)
    assert all(np.isin(a.detach().numpy()[i, j], windows[i, j]).all() for i in range(2) for j in range(3))
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)


# -- F.interpolate in every mode -----------------------------------------------------------------
INTERP = [
    ((2, 3, 5), dict(size=8, mode="nearest")),
    ((2, 3, 5), dict(scale_factor=0.6, mode="nearest")),
    ((1, 2, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((1, 2, 3, 4, 5), dict(scale_factor=(1.5, 2, 0.5), mode="nearest")),
    ((2, 3, 5), dict(scale_factor=1.7, mode="linear")),
    ((2, 3, 5), dict(size=3, mode="linear", align_corners=True)),
    ((1, 2, 4, 5), dict(scale_factor=2, mode="bilinear")),
    ((1, 2, 4, 5), dict(scale_factor=0.7, mode="bilinear", recompute_scale_factor=True)),
    ((1, 2, 4, 5), dict(size=(9, 2), mode="bicubic", align_corners=True)),
    ((1, 2, 6, 5), dict(scale_factor=0.5, mode="bicubic")),
    ((1, 2, 3, 2, 4), dict(size=(4, 5, 3), mode="trilinear", align_corners=False)),
    ((1, 2, 3, 2, 4), dict(scale_factor=1.5, mode="trilinear", align_corners=True)),
    ((1, 2, 7, 9), dict(scale_factor=0.5, mode="area")),
    ((2, 3, 7), dict(size=4, mode="area")),
]


@pytest.mark.parametrize("shape,kwargs", INTERP, ids=lambda v: str(v))
def test_interpolate_matches_torch(shape, kwargs):
    torch = _torch()
    x = np.random.default_rng(1).standard_normal(shape)
    xt, xo = torch.tensor(x, requires_grad=True), acg.tensor(x, requires_grad=True)
    tout = torch.nn.functional.interpolate(xt, **kwargs)
    oout = F.interpolate(xo, **kwargs)
    assert tuple(oout.shape) == tuple(tout.shape)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = np.random.default_rng(2).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    oout.backward(acg.tensor(cot))
    assert_close(xo.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-12, atol=1e-12)


ANTIALIAS = [
    ((2, 2, 17, 13), dict(size=(5, 4), mode="bilinear")),
    ((1, 2, 8, 9), dict(scale_factor=0.37, mode="bicubic")),
    ((1, 2, 5, 6), dict(size=(11, 3), mode="bicubic", align_corners=True)),
    ((1, 1, 9, 7), dict(scale_factor=(0.3, 1.7), mode="bilinear", recompute_scale_factor=True)),
]


@pytest.mark.parametrize("shape,kwargs", ANTIALIAS, ids=lambda v: str(v))
def test_interpolate_antialias_matches_torch(shape, kwargs, mode):
    """Antialiased resampling (PyTorch's separable normalised filters, widened by the scale
    when shrinking): values, float32 values and input gradients in every mode."""
    torch = _torch()
    x = np.random.default_rng(3).standard_normal(shape)
    xt, xo = torch.tensor(x, requires_grad=True), acg.tensor(x, requires_grad=True)
    tout = torch.nn.functional.interpolate(xt, antialias=True, **kwargs)
    oout = F.interpolate(xo, antialias=True, **kwargs)
    assert tuple(oout.shape) == tuple(tout.shape)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    cot = np.random.default_rng(4).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    assert_close(xo.grad.detach().numpy(), xt.grad.detach().numpy(), rtol=1e-12, atol=1e-12)
    x32 = x.astype(np.float32)
    assert_close(F.interpolate(acg.tensor(x32), antialias=True, **kwargs).detach().numpy(),
                 torch.nn.functional.interpolate(torch.tensor(x32), antialias=True,
                                                 **kwargs).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_uint8_images_match_torch():
    """uint8 images: nearest exactly, bilinear/bicubic (antialiased too) within one level
    (PyTorch's fixed-point weights) and almost everywhere exactly; other modes refuse."""
    torch = _torch()
    rng = np.random.default_rng(6)
    for shape, kw in [((1, 3, 5, 6), dict(size=(7, 9))),
                      ((1, 3, 5, 6), dict(scale_factor=2, mode="nearest-exact")),
                      ((1, 3, 5, 6), dict(size=(3, 4), mode="bilinear")),
                      ((2, 3, 32, 29), dict(size=(64, 17), mode="bilinear", align_corners=True)),
                      ((1, 3, 5, 6), dict(size=(8, 8), mode="bicubic")),
                      ((2, 3, 32, 29), dict(size=(11, 45), mode="bicubic", antialias=True))]:
        x = rng.integers(0, 256, shape).astype(np.uint8)
        theirs = torch.nn.functional.interpolate(torch.tensor(x), **kw).detach().numpy().astype(int)
        ours = F.interpolate(acg.tensor(x), **kw)
        assert str(ours.dtype) == "torch.uint8"
        diff = np.abs(ours.detach().numpy().astype(int) - theirs)
        assert diff.max() <= (0 if kw.get("mode", "nearest").startswith("nearest") else 1)
        assert (diff > 0).mean() < 0.01, kw
    with pytest.raises(RuntimeError, match="not implemented for 'Byte'"):
        F.interpolate(acg.zeros(1, 2, 4, dtype=acg.uint8), size=6, mode="linear")


@pytest.mark.parametrize("mode_name", ["nearest", "bilinear", "bicubic"])
def test_interpolate_float32_matches_torch(mode_name):
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6)).astype(np.float32)
    for kw in (dict(size=(11, 13)), dict(scale_factor=1.37), dict(size=(3, 4))):
        tout = torch.nn.functional.interpolate(torch.tensor(x), mode=mode_name, **kw)
        oout = F.interpolate(acg.tensor(x), mode=mode_name, **kw)
        assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_errors_match_torch():
    torch = _torch()
    x, xt = acg.randn(1, 2, 4, 4), torch.randn(1, 2, 4, 4)
    bad = [
        (dict(size=3, scale_factor=2), ValueError, "only one of size or scale_factor"),
        (dict(), ValueError, "either size or scale_factor should be defined"),
        (dict(size=(3, 3, 3)), ValueError, "same number of spatial dimensions"),
        (dict(scale_factor=2, align_corners=True), ValueError, "align_corners option can only"),
        (dict(size=3, recompute_scale_factor=True), ValueError, "recompute_scale_factor is not"),
        (dict(size=3, mode="linear"), NotImplementedError, "Got 4D input, but linear mode needs"),
        (dict(size=3, mode="trilinear"), NotImplementedError, "but trilinear mode needs 5D"),
        (dict(size=3, mode="nearest", antialias=True), ValueError, "Anti-alias option"),
    ]
    for kwargs, err, msg in bad:
        with pytest.raises(err, match=msg):
            F.interpolate(x, **kwargs)
        with pytest.raises(err, match=msg):
            torch.nn.functional.interpolate(xt, **kwargs)


def test_interpolate_resolves_arguments_once_per_distinct_call():
    """The resolved sizes and scales are remembered per (shape, dtype kind, arguments): a
    repeat gives the first call's result; the same arguments on another shape, a uint8 image
    or an int size instead of a float factor resolve afresh; bad arguments raise every time."""
    from autograd_compile.nn import functional_vision as fv
    torch = _torch()
    rng = np.random.default_rng(3)
    cases = [((1, 2, 5, 6), np.float32, dict(scale_factor=1.5, mode="bilinear")),
             ((1, 2, 5, 6), np.float32, dict(scale_factor=1.5, mode="bilinear")),
             ((1, 2, 7, 4), np.float32, dict(scale_factor=1.5, mode="bilinear")),
             ((1, 2, 5, 6), np.uint8, dict(scale_factor=1.5, mode="bilinear")),
             ((1, 2, 5, 6), np.float32, dict(scale_factor=2)),
             ((1, 2, 5, 6), np.float32, dict(scale_factor=2.0)),
             ((1, 2, 5, 6), np.float32, dict(size=(4, 9)))]
    fv._PLANS.clear()
    for shape, dt, kw in cases:
        x = (rng.random(shape) * 255).astype(dt)
        ours = F.interpolate(acg.tensor(x), **kw).numpy().astype(np.float64)
        theirs = torch.nn.functional.interpolate(torch.tensor(x), **kw).numpy().astype(np.float64)
        assert ours.shape == theirs.shape, (shape, dt, kw)
        assert_close(ours, theirs, rtol=1e-5, atol=1.0 if dt == np.uint8 else 1e-5)
    assert len(fv._PLANS) == 6  # the repeat hit the first entry
    for _ in range(2):
        with pytest.raises(ValueError, match="align_corners option can only"):
            F.interpolate(acg.randn(1, 2, 4, 4), scale_factor=2, align_corners=True)


def test_deprecated_upsample_functions_warn_and_resample():
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3))
    for ours, theirs, kw in [(F.upsample, torch.nn.functional.upsample, dict(scale_factor=2)),
                             (F.upsample_nearest, torch.nn.functional.upsample_nearest,
                              dict(size=5)),
                             (F.upsample_bilinear, torch.nn.functional.upsample_bilinear,
                              dict(size=(4, 5)))]:
        with pytest.warns(UserWarning, match="deprecated"):
            o = ours(acg.tensor(x), **kw)
        with pytest.warns(UserWarning, match="deprecated"):
            t = theirs(torch.tensor(x), **kw)
        assert_close(o.detach().numpy(), t.detach().numpy(), rtol=1e-12)


# -- functional forms, unbatched inputs and errors ---------------------------------------------
def test_functional_pools_and_conv_tbc_match_torch():
    torch = _torch()
    tf = torch.nn.functional
    rng = np.random.default_rng(4)
    x1, x3 = rng.standard_normal((2, 3, 9)), rng.standard_normal((3, 4, 5, 6))
    pairs = [
        (F.max_pool1d_with_indices(acg.tensor(x1), 3, 2), tf.max_pool1d_with_indices(
            torch.tensor(x1), 3, 2)),
        (F.max_pool2d_with_indices(acg.tensor(x1), 2), tf.max_pool2d_with_indices(
            torch.tensor(x1), 2)),
        (F.max_pool3d(acg.tensor(x3), 2, 1, 1), tf.max_pool3d(torch.tensor(x3), 2, 1, 1)),
        (F.avg_pool3d(acg.tensor(x3), 2), tf.avg_pool3d(torch.tensor(x3), 2)),
        (F.adaptive_max_pool3d_with_indices(acg.tensor(x3), 2),
         tf.adaptive_max_pool3d_with_indices(torch.tensor(x3), 2)),
        (F.lp_pool1d(acg.tensor(np.abs(x1)), 2.0, 3), tf.lp_pool1d(torch.tensor(np.abs(x1)), 2.0,
                                                                   3)),
    ]
    for ours, theirs in pairs:
        ours, theirs = (ours, theirs) if isinstance(ours, tuple) else ((ours,), (theirs,))
        for a, b in zip(ours, theirs):
            assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    t_in, w = rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4))
    b = rng.standard_normal(4)
    ours = F.conv_tbc(acg.tensor(t_in), acg.tensor(w), acg.tensor(b), 1)
    theirs = torch.conv_tbc(torch.tensor(t_in), torch.tensor(w), torch.tensor(b), 1)
    assert_close(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_pool_and_shuffle_errors():
    torch = _torch()
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool1d(acg.randn(1, 2, 8), 2, padding=2)
    with pytest.raises(RuntimeError):
        torch.nn.functional.max_pool1d(torch.randn(1, 2, 8), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool3d(acg.randn(1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match="pixel_shuffle expects its input's 'channel' "
                                           "dimension to be divisible by the square of "
                                           "upscale_factor"):
        F.pixel_shuffle(acg.randn(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        torch.nn.functional.pixel_shuffle(torch.randn(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match="pixel_unshuffle expects width to be divisible"):
        F.pixel_unshuffle(acg.randn(1, 1, 4, 3), 2)
    with pytest.raises(RuntimeError, match="expected size of input's dimension 2 to match the "
                                           "calculated number of sliding blocks 12"):
        F.fold(acg.randn(1, 4, 10), (4, 5), 2)
    with pytest.raises(RuntimeError, match="calculated number of sliding blocks"):
        torch.nn.functional.fold(torch.randn(1, 4, 10), (4, 5), 2)


def test_padding_layers_repr_and_f_pad_modes():
    torch = _torch()
    assert repr(nn.ZeroPad2d(1)) == repr(torch.nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"
    rng = np.random.default_rng(5)
    for mode_name in ("constant", "reflect", "replicate", "circular"):
        for n in (1, 2, 3):
            x = rng.standard_normal((2, 2) + (4, 3, 5)[:n])
            pad = [1, 2, 2, 1, 0, 2][:2 * n]
            ours = F.pad(acg.tensor(x), pad, mode=mode_name)
            theirs = torch.nn.functional.pad(torch.tensor(x), pad, mode=mode_name)
            assert_close(ours.detach().numpy(), theirs.detach().numpy(), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.CircularPad1d(1)(acg.randn(1, 1, 2, 3))


# -- without torch: finite differences, jax.vjp, compiled modules ------------------------------
@pytest.mark.parametrize("build", [
    lambda: nn.ConvTranspose2d(2, 2, 2, stride=2, padding=1, output_padding=1),
    lambda: nn.Upsample(scale_factor=1.5, mode="bicubic"),
    lambda: nn.AdaptiveMaxPool2d(2),
    lambda: nn.LPPool1d(2, 2),
], ids=["conv_transpose2d", "bicubic", "adaptive_max", "lp_pool"])
def test_gradients_against_finite_differences(build, mode):
    acg.manual_seed(0)
    module = build()
    shape = (1, 2, 3, 3) if not isinstance(module, nn.LPPool1d) else (1, 2, 5)
    x = np.random.default_rng(0).standard_normal(shape)
    if isinstance(module, nn.LPPool1d):
        x = np.abs(x) + 0.5
    check_layer_grads(module, [x], mode, rtol=1e-5, atol=1e-6)


def test_conv_transpose_matches_jax_vjp_of_convolution():
    """conv_transpose is the vjp of conv in its input: check against jax directly, and its
    own gradient (w.r.t. input and weight) against jax.vjp of that definition."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((2, 4, 3, 5)), rng.standard_normal((4, 3, 3, 2))
    stride, pad = (2, 1), (1, 0)

    def ref(x, w):
        size = (x.shape[0], w.shape[1], (x.shape[2] - 1) * 2 - 2 + 3,
                (x.shape[3] - 1) * 1 + 2)
        conv = lambda y: jax.lax.conv_general_dilated(  # noqa: E731
            y, w, stride, [(1, 1), (0, 0)], dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jax.vjp(conv, jnp.zeros(size, x.dtype))[1](x)[0]
    xo, wo = acg.tensor(x, requires_grad=True), acg.tensor(w, requires_grad=True)
    out = F.conv_transpose2d(xo, wo, stride=stride, padding=pad)
    expected, vjp = jax.vjp(ref, jnp.asarray(x), jnp.asarray(w))
    assert_close(out.detach().numpy(), np.asarray(expected), rtol=1e-12)
    cot = rng.standard_normal(out.shape)
    out.backward(acg.tensor(cot))
    gx, gw = vjp(jnp.asarray(cot))
    assert_close(xo.grad.detach().numpy(), np.asarray(gx), rtol=1e-12)
    assert_close(wo.grad.detach().numpy(), np.asarray(gw), rtol=1e-12)


def test_interpolate_double_backward_is_linear():
    """Interpolation is linear: grad of <interp(x), g> w.r.t. x is interp^T(g); its own
    gradient (through create_graph) w.r.t. g reproduces interp."""
    x = acg.randn(1, 1, 3, 4, dtype=acg.float64, requires_grad=True)
    g = acg.randn(1, 1, 5, 7, dtype=acg.float64, requires_grad=True)
    out = F.interpolate(x, size=(5, 7), mode="bilinear")
    (gx,) = acg.autograd.grad(out, x, g, create_graph=True)
    v = acg.randn(1, 1, 3, 4, dtype=acg.float64)
    (gg,) = acg.autograd.grad((gx * v).sum(), g)
    assert_close(gg.detach().numpy(), F.interpolate(v, size=(5, 7), mode="bilinear").detach().numpy(), rtol=1e-12)
    # <interp(x), g> == <x, interp^T(g)>
    assert (out * g).sum().item() == pytest.approx((x * gx).sum().item(), rel=1e-12)


def test_compiled_modules_match_eager(mode):
    acg.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(3, 4, 4, stride=2, padding=1), nn.ReLU(),
                          nn.Upsample(scale_factor=2, mode="bilinear"),
                          nn.ReflectionPad2d(1), nn.MaxPool2d(2), nn.PixelShuffle(2),
                          nn.AdaptiveMaxPool2d(3)).double()
    compiled = acg.compile(model)
    x = acg.tensor(np.random.default_rng(0).standard_normal((2, 3, 4, 4)))
    eager_out = model(x)
    assert_close(compiled(x).detach().numpy(), eager_out.detach().numpy(), rtol=1e-10)

    def grads(m):
        model.zero_grad()
        with mode():
            (m(x) ** 2).sum().backward()
        return [p.grad.detach().numpy().copy() for p in model.parameters()]
    for a, b in zip(grads(compiled), grads(model)):
        assert_close(a, b, rtol=1e-9)
