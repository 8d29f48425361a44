"""nn.utils beyond clipping, against PyTorch: parametrize, parametrizations (weight_norm,
spectral_norm, orthogonal), the hook-based weight_norm/spectral_norm, BatchNorm fusion,
get_total_norm/clip_grads_with_norm_, skip_init."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import assert_close

torch = pytest.importorskip("torch")
from _torch_compare import compare_with_torch, load_torch_state, to_acg  # noqa: E402

P = nn.utils.parametrizations
TP = torch.nn.utils.parametrizations


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("dim", [0, None])
def test_weight_norm_parametrization_matches_torch(mode, dim):
    torch.manual_seed(0)
    theirs = TP.weight_norm(torch.nn.Conv2d(2, 3, 3), dim=dim)
    ours = P.weight_norm(nn.Conv2d(2, 3, 3), dim=dim)
    assert list(ours.state_dict()) == ["bias", "parametrizations.weight.original0",
                                       "parametrizations.weight.original1"]
    assert ours.parametrizations.weight.original0.shape == \
        theirs.parametrizations.weight.original0.shape
    load_torch_state(ours, theirs)
    compare_with_torch(ours, theirs, [_x(2, 2, 5, 5)], mode)


def test_weight_norm_registration_splits_magnitude_and_direction():
    ours = P.weight_norm(nn.Linear(4, 3))
    w = ours.parametrizations.weight.original1.detach().numpy()
    assert_close(ours.parametrizations.weight.original0.detach().numpy()[:, 0],
                 np.linalg.norm(w, axis=1), rtol=1e-6)
    assert_close(ours.weight.detach().numpy(), w, rtol=1e-5, atol=1e-6)  # unchanged value


def test_hook_weight_norm_matches_torch(mode):
    torch.manual_seed(0)
    with pytest.warns(FutureWarning, match="torch.nn.utils.parametrizations.weight_norm"):
        ours = nn.utils.weight_norm(nn.Linear(4, 3))
    theirs = _quiet(torch.nn.utils.weight_norm, torch.nn.Linear(4, 3))
    assert sorted(ours.state_dict()) == ["bias", "weight_g", "weight_v"]
    load_torch_state(ours, theirs)
    compare_with_torch(ours, theirs, [_x(5, 4)], mode)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight"]
    assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(ours)


def _check_power_iteration(ours, theirs, x, prefix):
    """Two training forwards (each one power-iteration step) then one eval forward: outputs
    and the updated u, v buffers equal torch's."""
    for _ in range(2):
        assert_close(ours(acg.tensor(x)).detach().numpy(),
                     theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    for key in (prefix + "u", prefix + "v"):
        assert_close(sd[key].detach().numpy(), tsd[key].detach().numpy(), rtol=1e-5, atol=1e-6)
    ours.eval(), theirs.eval()
    assert_close(ours(acg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                 rtol=1e-5, atol=1e-5)


def test_hook_spectral_norm_matches_torch(mode):
    torch.manual_seed(0)
    theirs = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4))
    ours = nn.utils.spectral_norm(nn.Linear(5, 4))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    load_torch_state(ours, theirs)
    x = _x(3, 5)
    _check_power_iteration(ours, theirs, x, "weight_")
    compare_with_torch(ours, theirs, [x], mode)  # eval: gradients through sigma
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5)


def test_spectral_norm_parametrization_matches_torch(mode):
    torch.manual_seed(0)
    theirs = TP.spectral_norm(torch.nn.Conv2d(3, 2, 3), dim=1)
    ours = P.spectral_norm(nn.Conv2d(3, 2, 3), dim=1)
    assert ours.parametrizations.weight[0]._u.shape == theirs.parametrizations.weight[0]._u.shape
    load_torch_state(ours, theirs)
    x = _x(1, 3, 4, 4)
    _check_power_iteration(ours, theirs, x, "parametrizations.weight.0._")
    compare_with_torch(ours, theirs, [x], mode, rtol=1e-4, atol=1e-5)


def test_spectral_norm_divides_by_the_largest_singular_value():
    ours = P.spectral_norm(nn.Linear(6, 4))  # 15 power iterations at registration
    for _ in range(30):
        ours(acg.zeros(1, 6))
    assert np.linalg.norm(ours.weight.detach().numpy(), 2) == pytest.approx(1.0, rel=1e-4)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        P.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


@pytest.mark.parametrize("shape,orth_map", [((4, 4), "matrix_exp"), ((5, 3), "householder"),
                                            ((3, 5), "householder"), ((4, 4), "householder")])
def test_orthogonal_matches_torch(mode, shape, orth_map):
    torch.manual_seed(0)
    theirs = TP.orthogonal(torch.nn.Linear(shape[1], shape[0]), orthogonal_map=orth_map)
    ours = P.orthogonal(nn.Linear(shape[1], shape[0]), orthogonal_map=orth_map)
    load_torch_state(ours, theirs)
    w = ours.weight.detach().numpy().astype(np.float64)
    small = w @ w.T if shape[0] <= shape[1] else w.T @ w
    assert_close(small, np.eye(min(shape)), atol=1e-5)
    compare_with_torch(ours, theirs, [_x(2, shape[1])], mode, rtol=1e-4, atol=1e-5)


def test_orthogonal_assignment_and_no_trivialization():
    ours = P.orthogonal(nn.Linear(3, 5), orthogonal_map="householder", use_trivialization=False)
    assert "parametrizations.weight.0.base" not in ours.state_dict()
    q = np.linalg.qr(_x(5, 3, seed=3).astype(np.float64))[0].astype(np.float32)
    ours.weight = acg.tensor(q)  # right_inverse: Householder vectors of q
    assert_close(ours.weight.detach().numpy(), q, atol=1e-5)
    square = P.orthogonal(nn.Linear(4, 4))
    q4 = np.linalg.qr(_x(4, 4, seed=4).astype(np.float64))[0].astype(np.float32)
    square.weight = acg.tensor(q4)  # trivialization: base = q4, original = -I
    assert_close(square.weight.detach().numpy(), q4, atol=1e-5)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        P.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")


class _Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class _Scale(nn.Module):
    def forward(self, X):
        return X * 2

    def right_inverse(self, X):
        return X / 2


class _TSymmetric(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


def test_register_parametrization_matches_torch(mode):
    parametrize, tparametrize = nn.utils.parametrize, torch.nn.utils.parametrize
    torch.manual_seed(0)
    theirs = tparametrize.register_parametrization(torch.nn.Linear(3, 3), "weight", _TSymmetric())
    ours = parametrize.register_parametrization(nn.Linear(3, 3), "weight", _Symmetric())
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(ours) is nn.Linear
    assert parametrize.is_parametrized(ours) and parametrize.is_parametrized(ours, "weight")
    assert not parametrize.is_parametrized(ours, "bias")
    assert not parametrize.is_parametrized(nn.Linear(3, 3))
    assert type(nn.Linear(3, 3)) is nn.Linear  # other instances keep their class
    load_torch_state(ours, theirs)
    w = ours.weight.detach().numpy()
    assert_close(w, w.T)
    compare_with_torch(ours, theirs, [_x(2, 3)], mode)


def test_parametrization_chain_assignment_cache_and_removal():
    parametrize = nn.utils.parametrize
    m = nn.Linear(3, 3)
    w0 = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", _Scale())  # original = w0 / 2
    assert_close(m.weight.detach().numpy(), w0, rtol=1e-6)
    assert_close(m.parametrizations.weight.original.detach().numpy(), w0 / 2, rtol=1e-6)
    parametrize.register_parametrization(m, "weight", _Scale())  # chained: 2 * (2 * orig)
    assert_close(m.weight.detach().numpy(), 2 * w0, rtol=1e-6)
    m.weight = acg.ones(3, 3)  # through both right_inverses
    assert_close(m.parametrizations.weight.original.detach().numpy(), np.full((3, 3), 0.25))
    with parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    assert_close(m.weight.detach().numpy(), np.full((3, 3), 0.25))
    assert list(m.state_dict()) == ["bias", "weight"]  # re-registered last, as PyTorch
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(m, "weight", nn.Flatten(0))
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        parametrize.register_parametrization(m, "nope", _Scale())


def test_parametrized_parameter_trains(mode):
    m = P.weight_norm(nn.Linear(3, 2))
    opt = acg.optim.SGD(m.parameters(), lr=0.1)
    x, y = acg.tensor(_x(8, 3)), acg.tensor(_x(8, 2, seed=1))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        with mode():
            loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def _random_bn(tbn):
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1), tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 2), tbn.bias.uniform_(-1, 1)
    return tbn


def test_fuse_conv_bn_eval_matches_torch():
    torch.manual_seed(0)
    tconv, tbn = torch.nn.Conv2d(2, 3, 3).eval(), _random_bn(torch.nn.BatchNorm2d(3).eval())
    conv, bn = nn.Conv2d(2, 3, 3).eval(), nn.BatchNorm2d(3).eval()
    load_torch_state(conv, tconv), load_torch_state(bn, tbn)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    tfused = torch.nn.utils.fuse_conv_bn_eval(tconv, tbn)
    assert type(fused) is type(conv) and fused is not conv
    for name in ("weight", "bias"):
        assert isinstance(getattr(fused, name), nn.Parameter)
        assert_close(getattr(fused, name).detach().numpy(),
                     getattr(tfused, name).detach().numpy(), rtol=1e-5, atol=1e-6)
    x = _x(1, 2, 5, 5)
    assert_close(fused(acg.tensor(x)).detach().numpy(), tbn(tconv(torch.tensor(x))).detach()
                 .numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_conv_bn_weights_transposed_matches_torch():
    torch.manual_seed(0)
    tbn = _random_bn(torch.nn.BatchNorm2d(3))
    w, b = torch.randn(2, 3, 3, 3), None  # a transposed convolution's (in, out, kh, kw)
    args = (tbn.running_mean, tbn.running_var, tbn.eps, tbn.weight, tbn.bias)
    tw, tb = torch.nn.utils.fuse_conv_bn_weights(w, b, *args, transpose=True)
    fw, fb = nn.utils.fuse_conv_bn_weights(to_acg(w), None, *(to_acg(a) if hasattr(a, "numpy")
                                                              else a for a in args),
                                           transpose=True)
    assert_close(fw.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(fb.detach().numpy(), tb.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_fuse_linear_bn_eval_matches_torch():
    torch.manual_seed(0)
    tlin, tbn = torch.nn.Linear(4, 3).eval(), torch.nn.BatchNorm1d(3).eval()
    _random_bn(tbn)
    lin, bn = nn.Linear(4, 3).eval(), nn.BatchNorm1d(3).eval()
    load_torch_state(lin, tlin), load_torch_state(bn, tbn)
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    tfused = torch.nn.utils.fuse_linear_bn_eval(tlin, tbn)
    assert_close(fused.weight.detach().numpy(), tfused.weight.detach().numpy(), rtol=1e-5)
    assert_close(fused.bias.detach().numpy(), tfused.bias.detach().numpy(), rtol=1e-5,
                 atol=1e-6)
    with pytest.raises(AssertionError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(4, 2).eval(), bn)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,), (2, 2)]]
    total = nn.utils.get_total_norm([acg.tensor(g) for g in grads], norm_type)
    ttotal = torch.nn.utils.get_total_norm([torch.tensor(g) for g in grads], norm_type)
    assert total.item() == pytest.approx(ttotal.item(), rel=1e-6)
    params = [nn.Parameter(acg.zeros(*g.shape)) for g in grads]
    tparams = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for p, tp, g in zip(params, tparams, grads):
        p.grad, tp.grad = acg.tensor(g), torch.tensor(g)
    nn.utils.clip_grads_with_norm_(params, 1.0, total)
    torch.nn.utils.clip_grads_with_norm_(tparams, 1.0, ttotal)
    for p, tp in zip(params, tparams):
        assert_close(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6)


def test_skip_init():
    m = nn.utils.skip_init(nn.Linear, 4, 3, bias=False)
    assert list(m.state_dict()) == ["weight"] and m.weight.shape == (3, 4)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        nn.utils.skip_init(_Scale)


def test_torch_state_dict_loads_into_parametrized_module():
    torch.manual_seed(0)
    theirs = TP.weight_norm(torch.nn.Linear(4, 3))
    ours = P.weight_norm(nn.Linear(4, 3))
    ours.load_state_dict({k: to_acg(v) for k, v in theirs.state_dict().items()})
    assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6)


def test_cayley_map_is_reported_missing():
    # no matrix inverse/solve op exists yet (torch.linalg is another part): a clear error
    with pytest.raises(NotImplementedError, match="orthogonal_map='cayley' needs a matrix "
                                                  "inverse op"):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley")


def test_docstring_examples_run():
    import doctest
    import importlib
    for name in ("nn.utils.parametrize", "nn.utils.parametrizations", "nn.utils.weight_norm",
                 "nn.utils.fusion", "nn.lazy", "_legacy"):
        module = importlib.import_module(f"autograd_compile.{name}")
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, name
