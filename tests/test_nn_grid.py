"""F.affine_grid and F.grid_sample against PyTorch in float64 (values, gradients of input, grid
and theta, in the three execution modes and under acg.compile), errors and warnings as
PyTorch's; and, without torch, gradients against central finite differences."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import nn
from _layer_check import check_layer_grads
from conftest import assert_close

CASES = [(n, m, p, a) for n, m, p, a in itertools.product(
    (2, 3), ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection"), (False, True))
    if not (n == 3 and m == "bicubic")]
_FAST = [(2, "bilinear", "zeros", False), (2, "bicubic", "reflection", True),
         (3, "nearest", "border", False)]


def _sample_pair(torch, n, mode_name, padding_mode, align, run_mode, seed=0):
    """grid_sample forward and backward in torch and ours (ours under run_mode); grid points
    reach beyond [-1, 1] so every padding mode matters."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3) + (4, 5, 3)[:n])
    g = rng.uniform(-2.6, 2.6, (2,) + (3, 2, 4)[:n] + (n,))
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    xo, go = acg.tensor(x, requires_grad=True), acg.tensor(g, requires_grad=True)
    tout = torch.nn.functional.grid_sample(xt, gt, mode_name, padding_mode, align)
    oout = F.grid_sample(xo, go, mode_name, padding_mode, align)
    cot = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with run_mode():
        oout.backward(acg.tensor(cot))
    assert tuple(oout.shape) == tuple(tout.shape)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_close(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(go.grad.numpy(), gt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_grid_sample_matches_torch(case):
    from conftest import ExecMode
    _sample_pair(pytest.importorskip("torch"), *case, ExecMode("eager"))


@pytest.mark.parametrize("case", _FAST, ids=lambda c: "-".join(map(str, c)))
def test_grid_sample_matches_torch_in_every_mode(case, mode):
    _sample_pair(pytest.importorskip("torch"), *case, mode, seed=1)


@pytest.mark.parametrize("n,align", [(2, False), (2, True), (3, False), (3, True)])
def test_affine_grid_matches_torch(n, align, mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    theta = rng.standard_normal((2, n, n + 1))
    size = [2, 3] + [4, 3, 5][:n]
    tt, to = torch.tensor(theta, requires_grad=True), acg.tensor(theta, requires_grad=True)
    tout = torch.nn.functional.affine_grid(tt, size, align_corners=align)
    oout = F.affine_grid(to, size, align_corners=align)
    assert tuple(oout.shape) == tuple(tout.shape)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    cot = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    assert_close(to.grad.numpy(), tt.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_affine_grid_unit_size_and_identity():
    torch = pytest.importorskip("torch")
    eye = np.eye(2, 3)[None]
    for size, align in (([1, 1, 1, 3], False), ([1, 1, 4, 1], False)):
        theirs = torch.nn.functional.affine_grid(torch.tensor(eye), size, align_corners=align)
        assert_close(F.affine_grid(acg.tensor(eye), size, align_corners=align).detach().numpy(),
                     theirs.detach().numpy(), rtol=0, atol=1e-15)
    # the identity transform samples every pixel where it is
    x = acg.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)))
    for align in (False, True):
        grid = F.affine_grid(acg.tensor(eye), [1, 2, 3, 4], align_corners=align)
        assert_close(F.grid_sample(x, grid, align_corners=align).detach().numpy(), x.detach().numpy(), rtol=1e-12,
                     atol=1e-12)


def test_spatial_transformer_compiles(mode):
    """A spatial transformer (theta from a Linear layer) under acg.compile equals eager."""
    acg.manual_seed(0)

    class STN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.loc = nn.Linear(12, 6)

        def forward(self, x):
            theta = self.loc(x.flatten(1)).reshape(-1, 2, 3)
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return F.grid_sample(x, grid, align_corners=False, padding_mode="border")

    model = STN().double()
    x = acg.tensor(np.random.default_rng(0).standard_normal((2, 1, 3, 4)))
    compiled = acg.compile(model)
    assert_close(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-12)

    def grads(m):
        model.zero_grad()
        with mode():
            (m(x) ** 2).sum().backward()
        return [p.grad.numpy().copy() for p in model.parameters()]
    for a, b in zip(grads(compiled), grads(model)):
        assert_close(a, b, rtol=1e-10)


class _Sampler(nn.Module):
    def __init__(self, **kwargs) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.kwargs)


@pytest.mark.parametrize("kwargs", [dict(mode="bilinear", padding_mode="reflection"),
                                    dict(mode="bicubic", padding_mode="zeros")],
                         ids=["bilinear", "bicubic"])
def test_grid_sample_gradients_against_finite_differences(kwargs, mode):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 3, 4))
    grid = rng.uniform(-1.3, 1.3, (1, 2, 2, 2))
    check_layer_grads(_Sampler(align_corners=False, **kwargs), [x, grid], mode, rtol=1e-5,
                      atol=1e-6)


def test_grid_sample_and_affine_grid_errors_and_warnings():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, xt = acg.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    bad = [
        (dict(grid=(2, 3, 5, 2)), RuntimeError, "expected grid and input to have same batch size"),
        (dict(grid=(1, 3, 5, 1)), RuntimeError, "expected grid to have size 2 in last dimension"),
        (dict(grid=(1, 3, 5, 2), mode="cubic"), ValueError, "expected mode to be 'bilinear', "
                                                            "'nearest' or 'bicubic'"),
        (dict(grid=(1, 3, 5, 2), padding_mode="wrap"), ValueError, "expected padding_mode"),
    ]
    for kw, err, msg in bad:
        shape = kw.pop("grid")
        with pytest.raises(err, match=msg):
            F.grid_sample(x, acg.zeros(*shape), align_corners=False, **kw)
        with pytest.raises(err, match=msg):
            tf.grid_sample(xt, torch.zeros(*shape), align_corners=False, **kw)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(acg.randn(1, 1, 2, 2, 2), acg.zeros(1, 1, 1, 1, 3), mode="bicubic",
                      align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic"):
        tf.grid_sample(torch.randn(1, 1, 2, 2, 2), torch.zeros(1, 1, 1, 1, 3), mode="bicubic",
                       align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, acg.zeros(1, 3, 5, 2))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(acg.zeros(1, 2, 3), [1, 1, 2, 2])
    theta_bad = [
        ((2, 3, 3), [2, 1, 3, 4], ValueError, r"shape Nx2x3 for size \[2, 1, 3, 4\]"),
        ((2, 2, 3), [2, 1, 4], NotImplementedError, "only supports 4D and 5D sizes"),
        ((2, 2, 3), [2, 1, 0, 4], ValueError, "Expected non-zero, positive output size"),
    ]
    for shape, size, err, msg in theta_bad:
        with pytest.raises(err, match=msg):
            F.affine_grid(acg.zeros(*shape), size, align_corners=False)
        with pytest.raises(err, match=msg):
            tf.affine_grid(torch.zeros(*shape), size, align_corners=False)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(acg.zeros(1, 2, 3, dtype=acg.int32), [1, 1, 2, 2], align_corners=False)
