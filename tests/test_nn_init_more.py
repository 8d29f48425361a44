"""nn.init's structured initialisers against PyTorch: orthogonal_ (orthogonality, gain, the
Haar measure's moments), sparse_ (zeros per column, std), dirac_ and eye_ (exact values),
and the deprecated names without underscore."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.nn import init
from conftest import assert_close

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape):
    w = init.orthogonal_(acg.empty(*shape), gain=2.0)
    assert tuple(w.shape) == shape and not w.requires_grad
    m = w.detach().numpy().reshape(shape[0], -1).astype(np.float64) / 2.0
    small = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    assert_close(small, np.eye(min(m.shape)), atol=1e-5)


def test_orthogonal_is_haar_distributed():
    # Under the Haar measure on O(n) each entry has mean 0 and variance 1/n, and the
    # diagonal is not biased positive (which QR without the sign fix would give).
    n, draws = 8, 300
    entries = np.stack([init.orthogonal_(acg.empty(n, n)).detach().numpy() for _ in range(draws)])
    assert abs(entries.mean()) < 4 / math.sqrt(entries.size * n)
    assert entries.var() == pytest.approx(1 / n, rel=0.05)
    diag = entries[:, np.arange(n), np.arange(n)]
    assert abs(diag.mean()) < 4 / math.sqrt(diag.size * n)


def test_orthogonal_errors_and_empty():
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(acg.empty(3))
    assert init.orthogonal_(acg.empty(0, 3)).shape == (0, 3)


@pytest.mark.parametrize("sparsity", [0.1, 0.5])
def test_sparse_zeros_per_column_and_std(sparsity):
    rows, cols = 40, 300
    w = init.sparse_(acg.empty(rows, cols), sparsity, std=0.05).detach().numpy()
    expected_zeros = math.ceil(sparsity * rows)
    tw = torch.nn.init.sparse_(torch.empty(rows, cols), sparsity, std=0.05).detach().numpy()
    assert ((w == 0).sum(0) == expected_zeros).all()
    assert ((w == 0).sum(0) == (tw == 0).sum(0)).all()
    nonzero = w[w != 0]
    assert nonzero.std() == pytest.approx(0.05, rel=0.05)
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(acg.empty(2, 3, 4), 0.1)


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 3, 3, 1, 5), 1),
                                          ((4, 2, 2, 2), 2)])
def test_dirac_equals_torch(shape, groups):
    w = init.dirac_(acg.empty(*shape), groups=groups)
    assert_close(w.detach().numpy(), torch.nn.init.dirac_(torch.empty(shape), groups=groups).detach().numpy())


def test_dirac_makes_a_convolution_the_identity():
    conv = acg.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    init.dirac_(conv.weight)
    x = acg.randn(1, 3, 5, 5)
    assert_close(conv(x).detach().numpy(), x.detach().numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(acg.empty(2, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(acg.empty(3, 3, 3), groups=2)


@pytest.mark.parametrize("shape", [(3, 5), (4, 2)])
def test_eye_equals_torch(shape):
    assert_close(init.eye_(acg.empty(*shape)).detach().numpy(), torch.nn.init.eye_(torch.empty(shape)).detach()
                 .numpy())


@pytest.mark.parametrize("name", ["uniform", "normal", "constant", "eye", "dirac",
                                  "xavier_uniform", "xavier_normal", "kaiming_uniform",
                                  "kaiming_normal", "orthogonal", "sparse"])
def test_deprecated_names_warn_and_fill(name):
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    w = acg.zeros(*shape)
    with pytest.warns(FutureWarning, match=rf"`nn.init.{name}` is now deprecated in favor of "
                      rf"`nn.init.{name}_`"):
        out = getattr(init, name)(w, *args)
    assert out is w and np.any(w.detach().numpy() != 0)
    assert getattr(init, name).__name__ == name
