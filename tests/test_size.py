"""``Tensor.shape`` and ``Tensor.size()`` are ``acg.Size`` (``torch.Size``): a tuple that
keeps its type through slicing, ``+`` and ``*``, and that every op reads as the tuple."""
import pickle

import jax
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


def test_shape_and_size_are_size_and_equal_the_tuple():
    x = acg.zeros(2, 3, 4)
    assert type(x.shape) is acg.Size and type(x.size()) is acg.Size
    assert x.shape == (2, 3, 4) and hash(x.shape) == hash((2, 3, 4))
    assert type(x.size(1)) is int and x.size(-1) == 4
    assert repr(x.shape) == "acg.Size([2, 3, 4])"


def test_size_keeps_its_type_like_torch():
    s = acg.zeros(2, 3, 4).shape
    assert type(s[1:]) is acg.Size and s[1:] == (3, 4) and s[1:].numel() == 12
    assert type(s[0]) is int and s[-1] == 4
    for got, want in [(s + (5,), (2, 3, 4, 5)), ((1,) + s, (1, 2, 3, 4)), (s * 2, (2, 3, 4) * 2),
                      (2 * s, (2, 3, 4) * 2), (s + s, (2, 3, 4, 2, 3, 4))]:
        assert type(got) is acg.Size and got == want
    assert acg.Size([]).numel() == 1 and acg.zeros(()).shape == ()


def test_size_matches_torch():
    torch = pytest.importorskip("torch")
    ts, s = torch.zeros(2, 3, 4).shape, acg.zeros(2, 3, 4).shape
    for f in (lambda v: v[1:], lambda v: v + (5,), lambda v: (1,) + v, lambda v: v * 2,
              lambda v: v[::-1], lambda v: v[1:].numel(), lambda v: v.numel()):
        a, b = f(ts), f(s)
        assert (type(a).__name__, a) == (type(b).__name__, b)


def test_ops_take_a_size_as_the_tuple(mode):
    x = acg.randn(2, 3, 4, requires_grad=True)
    y = acg.randn(2, 12)
    with mode():
        out = (x.view(y.shape) * y).sum() + acg.zeros(x.shape).sum() + \
            x.new_ones(x.shape[1:]).sum() + x.reshape(x.shape[0], -1).sum() + \
            x[:1].expand(x.size()).sum() + acg.ones(x.size()[:-1] + (1,)).sum()
        out.backward()
    want = np.asarray(y.view(2, 3, 4)) + 1
    want[0] += 2  # x[:1] expanded over both rows
    assert_close(x.grad, want)


def test_size_in_compiled_functions_with_changing_sizes():
    # dynamic sizes: the Size holds symbolic ints inside the trace and plain ints outside
    @acg.compile
    def f(x):
        return x.view(x.shape[0], -1) * x.shape[1:].numel(), x.shape

    for n in (2, 3, 5):
        out, shape = f(acg.ones(n, 3, 4))
        assert out.shape == (n, 12) and float(out[0, 0]) == 12.0
        assert shape == (n, 3, 4) and type(shape) is acg.Size
        assert all(type(d) is int for d in shape)  # no symbolic size leaks out


def test_size_pickles_and_saves():
    s = acg.zeros(2, 3).shape
    assert type(pickle.loads(pickle.dumps(s))) is acg.Size
    assert jax.tree_util.tree_leaves(s) == [2, 3]  # JAX sees the tuple


def test_size_saved_loads_in_torch_as_torch_size(tmp_path):
    torch = pytest.importorskip("torch")
    acg.save({"s": acg.zeros(2, 3).shape}, tmp_path / "a.pt")
    assert torch.load(tmp_path / "a.pt")["s"] == torch.Size([2, 3])
    torch.save({"s": torch.zeros(4).shape}, tmp_path / "t.pt")
    got = acg.load(tmp_path / "t.pt")["s"]
    assert type(got) is acg.Size and got == (4,)


def test_numpy_takes_a_size():
    assert np.zeros(acg.zeros(2, 3).shape).shape == (2, 3)


class _SumTo(acg.autograd.Function):
    """A custom Function keeping the input's Size on ctx, as PyTorch programs do."""

    @staticmethod
    def forward(ctx, x):
        ctx.shape = x.shape
        return x.sum()

    @staticmethod
    def backward(ctx, g):
        assert type(ctx.shape) is acg.Size  # a Size in every mode (symbolic when captured)
        return g.expand(ctx.shape) * ctx.shape[1:].numel()


def test_ctx_size_is_a_symbolic_size_under_compiled_autograd(mode):
    from autograd_compile import compiled_autograd
    compiled_autograd.reset()
    for n in (2, 3, 4):
        x = acg.randn(n, 5, requires_grad=True)
        with mode():
            _SumTo.apply(x).backward()
        assert_close(x.grad, np.full((n, 5), 5.0))
    if mode.name != "eager":  # one capture serves every length: the sizes are lifted
        assert compiled_autograd.counters["captures"] == 1
