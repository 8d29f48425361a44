"""Top-level vision functions (acg.conv2d, acg.max_pool1d, acg.grid_sampler, ...) against
torch's, with torch's top-level signatures and defaults; gradients through one of them in
every execution mode."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


def _cases(rng):
    x1, x2, x3 = (rng.standard_normal(s) for s in ((2, 4, 9), (2, 4, 6, 7), (1, 4, 4, 5, 4)))
    w1, w2, w3 = (rng.standard_normal(s) for s in ((6, 2, 3), (4, 3, 2, 3), (2, 4, 2, 2, 2)))
    grid = rng.uniform(-1.2, 1.2, (2, 3, 5, 2))
    b4, b6 = rng.standard_normal(4), rng.standard_normal(6)
    return [
        ("conv1d", (x1, w1, b6), dict(stride=2, groups=2)),
        ("conv2d", (x2, rng.standard_normal((5, 4, 3, 3))), dict(padding=1)),
        ("conv3d", (x3, w3), dict(dilation=(1, 2, 1))),
        ("conv_transpose1d", (x1, rng.standard_normal((4, 3, 3))), dict(stride=2)),
        ("conv_transpose2d", (x2, w2, b6[:3 * 2]), dict(stride=2, groups=2,
                                                        output_padding=1)),
        ("conv_transpose3d", (x3, rng.standard_normal((4, 2, 2, 2, 2))), dict()),
        ("convolution", (x2, w2, None, [2, 1], [1, 0], [1, 1], True, [1, 0], 2), dict()),
        ("convolution", (x1, w1, b6, [1], [1], [2], False, [0], 2), dict()),
        ("max_pool1d", (x1, 3), dict()),
        ("max_pool1d", (x1, 3, 2, 1, 1, True), dict()),
        ("max_pool1d_with_indices", (x1, 2), dict(stride=1)),
        ("max_pool2d", (x2, 2), dict()),
        ("max_pool3d", (x3, 2), dict(stride=1, padding=1)),
        ("avg_pool1d", (x1, 3), dict(padding=1, count_include_pad=False)),
        ("adaptive_avg_pool1d", (x1, 4), dict()),
        ("adaptive_max_pool1d", (x1, 4), dict()),
        ("pixel_shuffle", (x2, 2), dict()),
        ("pixel_unshuffle", (rng.standard_normal((2, 3, 4, 6)), 2), dict()),
        ("grid_sampler", (x2, grid, 2, 2, True), dict()),
        ("grid_sampler_2d", (x2, grid, 0, 1, False), dict()),
        ("grid_sampler_3d", (x3, rng.uniform(-1, 1, (1, 2, 3, 2, 3)), 1, 0, False), dict()),
    ]


def _convert(lib, args):
    return [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def test_top_level_vision_functions_match_torch():
    torch = pytest.importorskip("torch")
    for name, args, kwargs in _cases(np.random.default_rng(0)):
        theirs = getattr(torch, name)(*_convert(torch, args), **kwargs)
        ours = getattr(acg, name)(*_convert(acg, args), **kwargs)
        assert isinstance(ours, tuple) == isinstance(theirs, tuple), name
        for a, b in zip(*((ours, theirs) if isinstance(ours, tuple) else ((ours,), (theirs,)))):
            assert tuple(a.shape) == tuple(b.shape), name
            assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_convolution_gradients_match_torch(mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 4, 5, 5)), rng.standard_normal((4, 3, 3, 3)), \
        rng.standard_normal(6)
    args = ([2, 2], [1, 1], [1, 1], True, [1, 1], 2)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    os_ = [acg.tensor(a, requires_grad=True) for a in (x, w, b)]
    tout, oout = torch.convolution(*ts, *args), acg.convolution(*os_, *args)
    cot = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    for a, t in zip(os_, ts):
        assert_close(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_top_level_errors():
    with pytest.raises(RuntimeError, match="grid_sampler_2d\\(\\): expected 4D input"):
        acg.grid_sampler_2d(acg.randn(1, 1, 2, 2, 2), acg.zeros(1, 1, 1, 1, 3), 0, 0, False)
    with pytest.raises(RuntimeError, match="expected interpolation_mode and padding_mode"):
        acg.grid_sampler(acg.randn(1, 1, 2, 2), acg.zeros(1, 1, 1, 2), 3, 0, False)
    with pytest.raises(RuntimeError, match="expected a 3-D, 4-D or 5-D weight"):
        acg.convolution(acg.randn(1, 1, 2), acg.randn(1, 1), None, [1], [0], [1], False, [0], 1)


def test_docstring_examples_run():
    import doctest
    from autograd_compile.nn import _torch_vision
    result = doctest.testmod(_torch_vision)
    assert result.failed == 0 and result.attempted > 0
