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
    assert_close(out.detach().numpy(), x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy(), rtol=1e-12)
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=True)"
    nobias = nn.Linear(3, 2, bias=False)
    assert nobias.bias is None and [n for n, _ in nobias.named_parameters()] == ["weight"]
    check_layer_grads(nobias, [_x(2, 5, 3)], mode)


def test_linear_init_bounds():
    acg.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    for p in (lin.weight, lin.bias):
        v = p.detach().numpy()
        assert np.abs(v).max() <= bound and np.abs(v).max() > 0.95 * bound
    assert lin.weight.detach().numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
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
    assert_close(seq(x).detach().numpy(), c(b(a(x))).detach().numpy())
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
    assert "(1): Parameter containing: [torch.float32 of size 3]" in repr(pl)  # as PyTorch
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
    assert np.all(ln.weight.detach().numpy() == 1) and np.all(ln.bias.detach().numpy() == 0)
    with acg.no_grad():
        ln.weight.copy_(acg.tensor(_x(3, 4)))
        ln.bias.copy_(acg.tensor(_x(3, 4)))
    x = _x(2, 3, 4)
    out = check_layer_grads(ln, [x], mode)
    assert_close(out.detach().numpy(), _layer_norm_ref(x, ln.weight.detach().numpy(), ln.bias.detach().numpy(), 1e-3, 2),
                 rtol=1e-10)
    assert repr(ln) == "LayerNorm((3, 4), eps=0.001, elementwise_affine=True, bias=True)"
    assert nn.LayerNorm(4, bias=False).bias is None
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert list(plain.parameters()) == [] and plain.weight is None


def test_rms_norm(mode):
    rms = nn.RMSNorm([4], eps=1e-6)
    assert np.all(rms.weight.detach().numpy() == 1)
    with acg.no_grad():
        rms.weight.copy_(acg.tensor(_x(4)))
    x = _x(2, 3, 4)
    out = check_layer_grads(rms, [x], mode)
    ref = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * rms.weight.detach().numpy()
    assert_close(out.detach().numpy(), ref, rtol=1e-10)
    assert repr(rms) == "RMSNorm((4,), eps=1e-06, elementwise_affine=True)"
    plain = nn.RMSNorm(4, elementwise_affine=False)  # eps=None: float32's machine epsilon
    y = plain(acg.tensor(x.astype(np.float32)))
    ref32 = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + np.finfo(np.float32).eps)
    assert list(plain.parameters()) == [] and np.allclose(y.detach().numpy(), ref32, rtol=1e-5)


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
    assert_close(out.detach().numpy(), ref(x), rtol=1e-10, atol=1e-12)


def test_activation_reprs():
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_dropout_train_and_eval():
    drop = nn.Dropout(0.25)
    x = acg.ones(400, 500)
    acg.manual_seed(0)
    a = drop(x).detach().numpy()
    kept = a != 0
    assert kept.mean() == pytest.approx(0.75, abs=0.01)
    assert_close(a[kept], np.full(kept.sum(), 1 / 0.75), rtol=1e-6)
    b = drop(x).detach().numpy()
    assert (a != b).any()  # fresh randomness every call
    acg.manual_seed(0)
    np.testing.assert_array_equal(drop(x).detach().numpy(), a)  # reproducible from the global seed
    drop.eval()
    assert drop(x) is x or np.all(drop(x).detach().numpy() == 1)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout(1.5)
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"


def test_dropout_gradient_uses_the_same_mask(mode):
    drop = nn.Dropout(0.5)
    x = acg.ones(8, 8, requires_grad=True)
    out = drop(x)
    with mode():
        out.sum().backward()
    assert_close(x.grad.numpy(), out.detach().numpy())  # d(x * mask * 2)/dx = mask * 2 = out at x = 1


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
    assert_close(out.detach().numpy(), (a - b) ** 2, rtol=1e-12)


# -- Embedding -------------------------------------------------------------------------------
def test_embedding(mode):
    acg.manual_seed(0)
    emb = nn.Embedding(6, 3, padding_idx=-2)
    assert emb.padding_idx == 4 and np.all(emb.weight.detach().numpy()[4] == 0)
    assert repr(emb) == "Embedding(6, 3, padding_idx=4)"
    idx = np.array([[0, 4, 2], [2, 5, 4]])
    out = check_layer_grads(nn.Embedding(6, 3), [idx], mode)  # padding rows get no gradient
    assert out.shape == (2, 3, 3)
    assert_close(emb(acg.tensor(idx)).detach().numpy(), emb.weight.detach().numpy()[idx])
    emb.zero_grad()
    with mode():
        emb(acg.tensor(idx)).sum().backward()
    g = emb.weight.grad.numpy()
    assert np.all(g[4] == 0) and g[2].tolist() == [2.0, 2.0, 2.0] and np.all(g[1] == 0)
    big = nn.Embedding(1000, 200)
    assert big.weight.detach().numpy().std() == pytest.approx(1.0, rel=0.02)  # N(0, 1)
    frozen = nn.Embedding.from_pretrained(acg.tensor(_x(4, 2)))
    assert not frozen.weight.requires_grad and frozen.weight.shape == (4, 2)


# -- convolution and pooling -----------------------------------------------------------------
def _conv_ref(x, w, b, stride, padding, dilation, groups):
    """Direct N-d cross-correlation (the definition), x [N, C, *S], w [O, C/g, *K]."""
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    span = [dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(nd)]
    out_sz = [(x.shape[2 + i] - span[i]) // stride[i] + 1 for i in range(nd)]
    out = np.zeros((n, o, *out_sz))
    for pos in np.ndindex(*out_sz):
        sl = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + span[i], dilation[i])
                   for i in range(nd))
        for oc in range(o):
            grp = oc // (o // groups)
            patch = x[(slice(None), slice(grp * cg, (grp + 1) * cg)) + sl]
            out[(slice(None), oc) + pos] = (patch * w[oc]).reshape(n, -1).sum(1)
    return out + (0 if b is None else b.reshape(1, -1, *[1] * nd))


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 1},
                                    {"dilation": 2, "groups": 2, "bias": False}])
def test_conv2d(kwargs, mode):
    conv = nn.Conv2d(2, 4, 3, **kwargs)
    x = _x(2, 2, 6, 6)
    out = check_layer_grads(conv, [x], mode)
    n = 2
    ref = _conv_ref(x, conv.weight.detach().numpy(), None if conv.bias is None else conv.bias.detach().numpy(),
                    conv.stride, conv.padding, conv.dilation, conv.groups)
    assert conv.stride == (kwargs.get("stride", 1),) * n
    assert_close(out.detach().numpy(), ref, rtol=1e-10)


def test_conv1d_and_init(mode):
    conv = nn.Conv1d(3, 2, 2, stride=2, padding="valid")
    x = _x(2, 3, 7)
    out = check_layer_grads(conv, [x], mode)
    ref = _conv_ref(x, conv.weight.detach().numpy(), conv.bias.detach().numpy(), (2,), (0,), (1,), 1)
    assert_close(out.detach().numpy(), ref, rtol=1e-10)
    same = nn.Conv1d(3, 2, 3, padding="same")
    assert same(acg.randn(1, 3, 9)).shape == (1, 2, 9)
    big = nn.Conv2d(16, 32, 5)
    bound = 1 / math.sqrt(16 * 25)  # kaiming_uniform_(a=sqrt(5)) and the bias both give this
    for p in (big.weight, big.bias):
        assert np.abs(p.detach().numpy()).max() <= bound
    assert big.weight.detach().numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.03)
    assert repr(nn.Conv2d(3, 8, 3, padding=1, groups=1, bias=False)) == (
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(2, 2, 3, stride=2, padding="same")


def test_conv_padding_modes(mode):
    conv = nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect")
    assert repr(conv).endswith("padding=(1, 1), padding_mode=reflect)")
    x = _x(1, 1, 4, 5)
    out = check_layer_grads(conv, [x], mode)
    padded = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)], mode="reflect")
    ref = _conv_ref(padded, conv.weight.detach().numpy(), conv.bias.detach().numpy(), (1, 1), (0, 0), (1, 1), 1)
    assert_close(out.detach().numpy(), ref, rtol=1e-10)
    circ = nn.Conv1d(1, 1, 3, padding=2, padding_mode="circular", bias=False)
    y = _x(1, 1, 6)
    ref = _conv_ref(np.pad(y, [(0, 0), (0, 0), (2, 2)], mode="wrap"), circ.weight.detach().numpy(), None,
                    (1,), (0,), (1,), 1)
    assert_close(check_layer_grads(circ, [y], mode).detach().numpy(), ref, rtol=1e-10)


def _pool_ref(x, k, s, p, reduce, pad_value):
    x = np.pad(x, [(0, 0), (0, 0), (p, p), (p, p)], constant_values=pad_value)
    h, w = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (h, w))
    for i, j in np.ndindex(h, w):
        out[:, :, i, j] = reduce(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def test_pooling_layers(mode):
    x = _x(2, 3, 7, 7)
    mp = nn.MaxPool2d(3, stride=2, padding=1)
    out = check_layer_grads(mp, [x], mode)
    assert_close(out.detach().numpy(), _pool_ref(x, 3, 2, 1, np.max, -np.inf))
    ap = nn.AvgPool2d(2)
    out = check_layer_grads(ap, [x], mode)
    assert_close(out.detach().numpy(), _pool_ref(x, 2, 2, 0, np.mean, 0.0), rtol=1e-12)
    aap = nn.AdaptiveAvgPool2d((3, 2))
    out = check_layer_grads(aap, [x], mode)
    ref = np.zeros((2, 3, 3, 2))
    for i, j in np.ndindex(3, 2):  # PyTorch's bins: [floor(i*H/o), ceil((i+1)*H/o))
        r0, r1 = i * 7 // 3, -(-(i + 1) * 7 // 3)
        c0, c1 = j * 7 // 2, -(-(j + 1) * 7 // 2)
        ref[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean((2, 3))
    assert_close(out.detach().numpy(), ref, rtol=1e-12)
    assert repr(aap) == "AdaptiveAvgPool2d(output_size=(3, 2))"


# -- batch norm ------------------------------------------------------------------------------
def test_batch_norm_training_and_running_stats(mode):
    bn = nn.BatchNorm2d(3, momentum=0.2)
    assert [n for n, _ in bn.named_buffers()] == ["running_mean", "running_var",
                                                  "num_batches_tracked"]
    x = _x(4, 3, 2, 2) * 2 + 1
    out = check_layer_grads(bn, [x], mode)  # forward runs twice per perturbation: stats drift
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    ref = (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    assert_close(out.detach().numpy(), ref, rtol=1e-8)
    bn = nn.BatchNorm2d(3, momentum=0.2).double()
    bn(acg.tensor(x))
    assert_close(bn.running_mean.detach().numpy(), 0.2 * mean, rtol=1e-10)
    assert_close(bn.running_var.detach().numpy(), 0.8 + 0.2 * x.var((0, 2, 3), ddof=1), rtol=1e-10)
    assert bn.num_batches_tracked.item() == 1 and bn.num_batches_tracked.dtype == np.int64
    bn.eval()
    out = bn(acg.tensor(x)).detach().numpy()
    rm, rv = bn.running_mean.detach().numpy(), bn.running_var.detach().numpy()
    assert_close(out, (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5))
    assert bn.num_batches_tracked.item() == 1  # eval leaves the statistics alone


def test_batch_norm_cumulative_average_and_options():
    bn = nn.BatchNorm1d(2, momentum=None).double()
    batches = [_x(5, 2) + i for i in range(3)]
    for b in batches:
        bn(acg.tensor(b))
    assert_close(bn.running_mean.detach().numpy(), np.mean([b.mean(0) for b in batches], 0), rtol=1e-10)
    assert bn.num_batches_tracked.item() == 3
    plain = nn.BatchNorm1d(2, affine=False, track_running_stats=False)
    assert list(plain.parameters()) == [] and plain.running_mean is None
    assert "running_mean" not in plain.state_dict()
    y = plain.eval()(acg.tensor(_x(6, 2, 3)))  # no running stats: batch statistics in eval
    assert_close(y.detach().numpy().mean((0, 2)), [0, 0], atol=1e-6)
    assert repr(nn.BatchNorm1d(4)) == ("BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, "
                                       "bias=True, track_running_stats=True)")
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(2)(acg.zeros(2, 2, 2))


# -- multi-head attention --------------------------------------------------------------------
def _mha_ref(mha, q, k, v, mask=None, kpm=None):
    """PyTorch's MultiheadAttention math in numpy; inputs [L, N, E]; returns (out, avg w)."""
    e, h = mha.embed_dim, mha.num_heads
    hd = e // h
    w, b = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    qp, kp, vp = (t @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
                  for i, t in enumerate((q, k, v)))
    L, N, _ = q.shape
    S = k.shape[0]
    split = lambda t: t.reshape(t.shape[0], N, h, hd).transpose(1, 2, 0, 3)  # noqa: E731
    scores = split(qp) @ split(kp).transpose(0, 1, 3, 2) / math.sqrt(hd)  # [N, H, L, S]
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    if kpm is not None:
        scores = np.where(kpm[:, None, None, :], -np.inf, scores)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = (p @ split(vp)).transpose(2, 0, 1, 3).reshape(L, N, e)
    o = o @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()
    return o, p.mean(1)


def test_multihead_attention_matches_reference(mode):
    acg.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2).double()
    with acg.no_grad():
        mha.in_proj_bias.copy_(acg.tensor(_x(12)))
    q, k = _x(3, 2, 4), _x(5, 2, 4)
    mask = np.triu(np.ones((3, 5), bool), 3)
    kpm = np.array([[False] * 4 + [True], [False] * 5])
    out, weights = mha(acg.tensor(q), acg.tensor(k), acg.tensor(k), attn_mask=acg.tensor(mask),
                       key_padding_mask=acg.tensor(kpm))
    ref, ref_w = _mha_ref(mha, q, k, k, mask, kpm)
    assert_close(out.detach().numpy(), ref, rtol=1e-10)
    assert_close(weights.detach().numpy(), ref_w, rtol=1e-10)
    fast, none = mha(acg.tensor(q), acg.tensor(k), acg.tensor(k), need_weights=False,
                     attn_mask=acg.tensor(mask), key_padding_mask=acg.tensor(kpm))
    assert none is None
    assert_close(fast.detach().numpy(), ref, rtol=1e-10)
    self_attn = lambda x: mha(x, x, x)[0]  # noqa: E731
    wrapper = nn.Module()
    wrapper.mha = mha
    wrapper.forward = self_attn
    check_layer_grads(wrapper, [_x(3, 1, 4)], mode)


def test_multihead_attention_batch_first_causal_and_init():
    acg.manual_seed(1)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    assert [n for n, _ in mha.named_parameters()] == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert np.all(mha.in_proj_bias.detach().numpy() == 0) and np.all(mha.out_proj.bias.detach().numpy() == 0)
    assert np.abs(mha.in_proj_weight.detach().numpy()).max() <= math.sqrt(6 / (24 + 8))  # xavier
    x = acg.randn(2, 5, 8)
    causal = acg.tensor(np.triu(np.ones((5, 5), bool), 1))
    out, w = mha(x, x, x, attn_mask=causal, is_causal=True, average_attn_weights=False)
    assert out.shape == (2, 5, 8) and w.shape == (2, 2, 5, 5)
    assert np.all(np.triu(w.detach().numpy(), 1) == 0)
    xt = x.transpose(0, 1)
    ref, _ = _mha_ref(mha, xt.detach().numpy(), xt.detach().numpy(), xt.detach().numpy(), causal.detach().numpy())
    assert_close(out.transpose(0, 1).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    unbatched, uw = mha(x[0], x[0], x[0])
    assert unbatched.shape == (5, 8) and uw.shape == (5, 5)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(6, 4)


def test_l1_smooth_l1_and_binary_losses(mode):
    a, b = _x(3, 4), _x(3, 4)
    out = check_layer_grads(nn.L1Loss(), [a, b + 0.01], mode)
    assert out.item() == pytest.approx(np.abs(a - b - 0.01).mean(), rel=1e-12)
    out = check_layer_grads(nn.SmoothL1Loss(reduction="sum", beta=0.5), [a, b], mode)
    d = np.abs(a - b)
    assert out.item() == pytest.approx(np.where(d < 0.5, 0.5 * d ** 2 / 0.5, d - 0.25).sum())
    logits, t = _x(3, 4), RNG.uniform(size=(3, 4))
    w, pw = RNG.uniform(size=4) + 0.5, RNG.uniform(size=4) + 0.5
    loss = nn.BCEWithLogitsLoss(weight=acg.tensor(w), pos_weight=acg.tensor(pw))
    out = check_layer_grads(loss, [logits, t], mode, requires_grad=[True, False])
    logsig, log1m = -np.log1p(np.exp(-logits)), -np.log1p(np.exp(logits))
    assert out.item() == pytest.approx((-w * (pw * t * logsig + (1 - t) * log1m)).mean())
    p = 1 / (1 + np.exp(-logits))
    out = check_layer_grads(nn.BCELoss(), [p, t], mode, requires_grad=[True, False])
    assert out.item() == pytest.approx(-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean())
