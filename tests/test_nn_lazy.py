"""Lazy modules (LazyConv*, LazyConvTranspose*, LazyLinear) against PyTorch's: repr and
state_dict keys before and after the first call, inferred shapes, class change, initialisation
bounds, loading a checkpoint into a lazy module, errors; once materialised, forward values and
gradients equal torch's in the three execution modes and under acg.compile."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import nn
from conftest import assert_close

LAZY = [
    ("LazyConv1d", (4, 3), dict(stride=2, padding=1), (2, 3, 7)),
    ("LazyConv2d", (4, 3), dict(groups=2, dilation=2), (2, 6, 7, 6)),
    ("LazyConv2d", (5, (2, 3)), dict(padding_mode="reflect", padding=1, bias=False), (3, 5, 4)),
    ("LazyConv3d", (2, 2), dict(), (1, 3, 4, 3, 4)),
    ("LazyConvTranspose1d", (4, 3), dict(stride=2, output_padding=1), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 3), dict(groups=2, stride=2, padding=1), (2, 6, 3, 4)),
    ("LazyConvTranspose3d", (2, 2), dict(bias=False), (1, 3, 2, 3, 2)),
    ("LazyLinear", (5,), dict(), (2, 3, 4)),
]
_FAST = {"LazyConv2d", "LazyConvTranspose2d", "LazyLinear"}


def _pair(torch, name, args, kwargs):
    torch.manual_seed(0)
    return getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def _check_lazy(name, args, kwargs, shape, mode):
    torch = pytest.importorskip("torch")
    tm, om = _pair(torch, name, args, kwargs)
    assert repr(om) == repr(tm)
    assert list(om.state_dict()) == list(tm.state_dict())
    assert om.has_uninitialized_params() and type(om.weight).__name__ == "UninitializedParameter"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        om.weight.shape
    weight = om.weight  # the same object after materialisation (optimizers hold it)
    x = np.random.default_rng(0).standard_normal(shape)
    tm.double()(torch.tensor(x))
    om.double()(acg.tensor(x))
    assert type(om).__name__ == type(tm).__name__ == getattr(nn, name).cls_to_become.__name__
    assert repr(om) == repr(tm)
    assert om.weight is weight and type(weight) is nn.Parameter
    assert [(k, tuple(v.shape), str(v.dtype)) for k, v in om.state_dict().items()] == \
        [(k, tuple(v.shape), str(v.dtype)) for k, v in
         tm.state_dict().items()]
    # the initialiser ran: kaiming_uniform(a=sqrt(5)) bounds, 1/sqrt(fan_in)
    fan_in = int(np.prod(om.weight.shape[1:]))
    assert 0 < np.abs(om.weight.detach().numpy()).max() <= 1 / np.sqrt(fan_in)
    # then it computes as torch's with torch's values
    om.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    xt, xo = torch.tensor(x, requires_grad=True), acg.tensor(x, requires_grad=True)
    tout, oout = tm(xt), om(xo)
    assert_close(oout.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = np.random.default_rng(1).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(cot))
    with mode():
        oout.backward(acg.tensor(cot))
    assert_close(xo.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (n, p), (_, tp) in zip(om.named_parameters(), tm.named_parameters()):
        assert_close(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", LAZY, ids=lambda c: f"{c[0]}-{c[3]}")
def test_lazy_module_matches_torch(case):
    from conftest import ExecMode
    _check_lazy(*case, ExecMode("eager"))


@pytest.mark.parametrize("case", [c for c in LAZY if c[0] in _FAST][:3],
                         ids=lambda c: f"{c[0]}-{c[3]}")
def test_lazy_module_matches_torch_in_every_mode(case, mode):
    _check_lazy(*case, mode)


def test_load_state_dict_materialises_lazy_module():
    torch = pytest.importorskip("torch")
    tconv = torch.nn.Conv2d(6, 4, 3, groups=2).double()
    lazy = nn.LazyConv2d(4, 3, groups=2).double()
    tlazy = torch.nn.LazyConv2d(4, 3, groups=2).double()
    state = {k: acg.tensor(v.detach().numpy()) for k, v in tconv.state_dict().items()}
    lazy.load_state_dict(state)
    tlazy.load_state_dict(tconv.state_dict())
    assert lazy.weight.shape == tuple(tlazy.weight.shape) == (4, 3, 3, 3)
    assert not lazy.has_uninitialized_params() and type(lazy).__name__ == "LazyConv2d"
    x = np.random.default_rng(0).standard_normal((1, 6, 5, 5))
    out, tout = lazy(acg.tensor(x)), tlazy(torch.tensor(x))
    # in_channels stays 0 after a load: PyTorch infers it only in initialize_parameters
    assert type(lazy) is nn.Conv2d and repr(lazy) == repr(tlazy)
    assert_close(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert_close(out.detach().numpy(), tconv(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-12)


def test_lazy_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib, x in ((nn, acg.randn(1, 5, 4, 4)), (torch.nn, torch.randn(1, 5, 4, 4))):
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.LazyConv2d(4, 3, groups=2)(x)
    for lib, x in ((nn, acg.randn(5, 5)), (torch.nn, torch.randn(5, 5))):
        with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) "
                                               r"input to LazyConvTranspose2d, but got input of "
                                               r"size"):
            lib.LazyConvTranspose2d(4, 3)(x)


def test_lazy_module_trains_and_compiles(mode):
    """Optimizer built before the first call (it holds the placeholders), then a compiled
    model after the dry run agrees with the eager one."""
    acg.manual_seed(0)
    model = nn.Sequential(nn.LazyConv2d(4, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.LazyLinear(2)).double()
    opt = acg.optim.SGD(model.parameters(), lr=0.1)
    x = acg.tensor(np.random.default_rng(0).standard_normal((2, 3, 4, 4)))
    before = model(x)
    assert [type(m).__name__ for m in model] == ["Conv2d", "ReLU", "Flatten", "Linear"]
    w0 = model[3].weight.detach().numpy().copy()
    with mode():
        (before ** 2).sum().backward()
    opt.step()
    assert not np.allclose(model[3].weight.detach().numpy(), w0)  # the optimizer's tensor is the layer's
    compiled = acg.compile(model)
    assert_close(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-12)


def test_docstring_examples_run():
    import doctest
    from autograd_compile.nn import functional_grid, lazy, parameter
    for module in (lazy, parameter, functional_grid):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
