"""Small gaps real PyTorch programs hit when ported by the import change (found by probes
that ran unseen programs), each against numpy and, where installed, PyTorch itself."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from conftest import assert_close


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
def test_round_to_decimals(mode, decimals):
    x0 = np.array([1.2345, -2.5, 0.55, 1.5, 15.0, 25.0, 149.99], np.float32)
    scale = np.float32(10.0 ** abs(decimals))  # PyTorch's formula, in float32
    want = np.round(x0 * scale) / scale if decimals >= 0 else np.round(x0 / scale) * scale
    x = acg.tensor(x0, requires_grad=True)
    y = acg.round(x, decimals=decimals)
    assert_close(y.detach(), want, rtol=0, atol=0)
    assert_close(x.detach().round(decimals=decimals), want, rtol=0, atol=0)
    with mode():
        (y * 3).sum().backward()
    assert_close(x.grad, np.zeros(7), rtol=0, atol=0)  # piecewise constant, as torch's
    torch = pytest.importorskip("torch")
    assert_close(y.detach(), torch.round(torch.tensor(x0), decimals=decimals).numpy(),
                 rtol=0, atol=0)


def test_round_in_place_and_integers():
    x = acg.tensor([1.26, 3.35])
    assert x.round_(decimals=1) is x
    assert_close(x, np.round(np.float32([1.26, 3.35]) * np.float32(10)) / np.float32(10), 0, 0)
    assert acg.tensor([7, 12]).round().tolist() == [7, 12]
    with pytest.raises(NotImplementedError, match="\"round_cpu\" not implemented for 'Long'"):
        acg.tensor([7, 12]).round(decimals=-1)  # PyTorch's error


def test_out_of_range_class_targets_raise_index_error():
    """PyTorch raises IndexError (``except IndexError`` must catch it); ours is also still a
    RuntimeError, as before."""
    for fn in (F.cross_entropy, F.nll_loss):
        with pytest.raises(IndexError, match="Target 5 is out of bounds"):
            fn(acg.randn(2, 3), acg.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="Target 5 is out of bounds"):
        F.cross_entropy(acg.randn(2, 3), acg.tensor([0, 5]))
