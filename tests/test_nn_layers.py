"""Layers: forward against numpy references, gradients against finite differences in
float64 (backward run in each execution mode), PyTorch's initialisation and repr."""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from _layer_check import check_layer_grads
from conftest import assert_close

RNG = np.random.default_rng(0)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


# -- Linear ----------------------------------------------------------------------------------
def test_linear_forward_grads_and_repr(mode):
    lin = nn.Linear(3, 2)
    x = _x(4, 3)
    out = check_layer_grads(lin, [x], mode)
    assert_close(out.numpy(), x @ lin.weight.numpy().T + lin.bias.numpy(), rtol=1e-12)
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=True)"
    nobias = nn.Linear(3, 2, bias=False)
    assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]
    check_layer_grads(nobias, [_x(2, 5, 3)], mode)


def test_linear_init_bounds():
    acg.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (lin.weight, lin.bias):
        v = p.numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    assert lin.weight.numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert nn.Linear(2, 2, dtype=acg.float64).weight.dtype == np.float64


# -- containers ------------------------------------------------------------------------------
def test_sequential_indexing_slicing_and_mutation():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    assert list(head._modules) == ["0", "1"]
    x = acg.randn(4, 2)
    assert_close(seq(x).numpy(), c(b(a(x))).numpy())
    named = nn.Sequential(OrderedDict([("fc", a), ("act", b)]))
    assert list(named._modules) == ["fc", "act"] and named.fc is a
    seq.append(nn.Tanh())
    seq.insert(1, nn.Identity())
    assert [type(m).__name__ for m in seq] == ["Linear", "Identity", "ReLU", "Linear", "Tanh"]
    assert list(seq._modules) == ["0", "1", "2", "3", "4"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear", "Tanh"]
    assert list(seq._modules) == ["0", "1", "2", "3"]
    seq.extend([nn.Sigmoid()])
    seq[0] = nn.Linear(2, 3)
    assert seq[0] is not a and len(seq) == 5 and type(seq.pop(4)).__name__ == "Sigmoid"
    with pytest.raises(IndexError, match="index 9 is out of range"):
        seq[9]


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and isinstance(layers[1:], nn.ModuleList)
    layers.append(nn.ReLU())
    layers.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in layers] == ["Tanh", "Linear", "Linear", "Linear", "ReLU"]
    assert len(list(layers.parameters())) == 6
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2", "3"]
    layers += [nn.Sigmoid()]
    assert len(layers) == 5
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        layers.extend(3)
    assert repr(nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh()])) == (
        "ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n)")
    d = nn.ModuleDict({"b": nn.Linear(1, 1), "a": nn.ReLU()})
    assert list(d) == ["b", "a"] and "a" in d and len(d) == 2
    d["c"] = nn.Tanh()
    d.update([("e", nn.Identity())])
    assert list(d.keys()) == ["b", "a", "c", "e"] and d.pop("a").__class__ is nn.ReLU
    assert [n for n, _ in d.named_parameters()] == ["b.weight", "b.bias"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        d.update([("x",)])


def test_parameter_list_and_dict():
    pl = nn.ParameterList([acg.zeros(2), nn.Parameter(acg.ones(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pl.append(acg.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    assert isinstance(pl[1:], nn.ParameterList) and len(pl[1:]) == 2
    assert "(1): Parameter containing: [float32 of size 3]" in repr(pl)
    pd = nn.ParameterDict({"w": acg.zeros(2), "b": acg.ones(1)})
    assert list(pd) == ["b", "w"]  # a plain dict is sorted, as in PyTorch
    pd["z"] = acg.zeros(1)
    assert isinstance(pd["z"], nn.Parameter) and "z" in pd and len(pd) == 3
    assert [n for n, _ in pd.named_parameters()] == ["b", "w", "z"]
    del pd["w"]
    assert list(pd.keys()) == ["b", "z"] and pd.get("w") is None
    with pytest.raises(TypeError, match="cannot be used as a key"):
        pd[3] = acg.zeros(1)
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()


# -- norm, activations, dropout, shape -------------------------------------------------------
def _layer_norm_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float, dims: int):
    axes = tuple(range(-dims, 0))
    mu = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def test_layer_norm(mode):
    ln = nn.LayerNorm((3, 4), eps=1e-3)
    assert np.all(ln.weight.numpy() == 1) and np.all(ln.bias.numpy() == 0)
    with acg.no_grad():
        ln.weight.copy_(acg.tensor(_x(3, 4)))
        ln.bias.copy_(acg.tensor(_x(3, 4)))
    x = _x(2, 3, 4)
    out = check_layer_grads(ln, [x], mode)
    assert_close(out.numpy(), _layer_norm_ref(x, ln.weight.numpy(), ln.bias.numpy(), 1e-3, 2),
                 rtol=1e-10)
    assert repr(ln) == "LayerNorm((3, 4), eps=0.001, elementwise_affine=True)"
    assert nn.LayerNorm(4, bias=False).bias is None
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert list(plain.parameters()) == [] and plain.weight is None


_ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    (nn.GELU(approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (nn.LogSoftmax(dim=-1), lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
    (nn.Identity(3, foo=1), lambda x: x),
    (nn.Flatten(), lambda x: x.reshape(x.shape[0], -1)),
    (nn.Flatten(0, 1), lambda x: x.reshape(-1, x.shape[2])),
    (nn.Unflatten(1, (1, 3)), lambda x: x.reshape(x.shape[0], 1, 3, x.shape[2])),
]


@pytest.mark.parametrize("layer, ref", _ACTIVATIONS, ids=lambda v: repr(v)[:25])
def test_activation_and_shape_layers(layer, ref, mode):
    x = _x(2, 3, 4) + 0.01  # keep away from relu's kink
    out = check_layer_grads(layer, [x], mode)
    assert_close(out.numpy(), ref(x), rtol=1e-10, atol=1e-12)


def test_activation_reprs():
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_dropout_train_and_eval():
    drop = nn.Dropout(0.25)
    x = acg.ones(400, 500)
    acg.manual_seed(0)
    a = drop(x).numpy()
    kept = a != 0
    assert kept.mean() == pytest.approx(0.75, abs=0.01)
    assert_close(a[kept], np.full(kept.sum(), 1 / 0.75), rtol=1e-6)
    b = drop(x).numpy()
    assert (a != b).any()  # fresh randomness every call
    acg.manual_seed(0)
    np.testing.assert_array_equal(drop(x).numpy(), a)  # reproducible from the global seed
    drop.eval()
    assert drop(x) is x or np.all(drop(x).numpy() == 1)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(1.5)
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"


def test_dropout_gradient_uses_the_same_mask(mode):
    drop = nn.Dropout(0.5)
    x = acg.ones(8, 8, requires_grad=True)
    out = drop(x)
    with mode():
        out.sum().backward()
    assert_close(x.grad.numpy(), out.numpy())  # d(x * mask * 2)/dx = mask * 2 = out at x = 1


# -- losses ----------------------------------------------------------------------------------
def _log_softmax(x: np.ndarray) -> np.ndarray:
    return x - np.log(np.exp(x).sum(1, keepdims=True))


def test_cross_entropy_and_nll_losses(mode):
    logits = _x(5, 4)
    target = np.array([0, 3, 1, 1, 2])
    w = np.array([1.0, 2.0, 0.5, 1.5])
    ce = nn.CrossEntropyLoss(weight=acg.tensor(w), label_smoothing=0.1)
    assert "weight" in dict(ce.named_buffers())
    out = check_layer_grads(ce, [logits, target], mode)
    logp = _log_softmax(logits)
    nll = -logp[np.arange(5), target] * w[target]
    smooth = -(logp * w).sum(1) / 4
    ref = (0.9 * nll.sum() + 0.1 * smooth.sum()) / w[target].sum()
    assert out.item() == pytest.approx(ref, rel=1e-10)
    nl = nn.NLLLoss(reduction="sum", ignore_index=1)
    out = check_layer_grads(nl, [logp, target], mode)
    assert out.item() == pytest.approx(-logp[np.arange(5), target][target != 1].sum(), rel=1e-12)


def test_regression_losses(mode):
    a, b = _x(3, 4), _x(3, 4)
    out = check_layer_grads(nn.MSELoss(), [a, b], mode)
    assert out.item() == pytest.approx(((a - b) ** 2).mean(), rel=1e-12)
    out = check_layer_grads(nn.MSELoss(reduction="none"), [a, b], mode)
    assert_close(out.numpy(), (a - b) ** 2, rtol=1e-12)
