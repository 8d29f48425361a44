"""Activations, losses, distances, Bilinear, EmbeddingBag and ChannelShuffle against PyTorch.

One table of module samples (in the spirit of PyTorch's ModuleInfo: a constructor written once
for both libraries, input shapes and kinds) drives forward values, gradients of inputs and
parameters (backward in every execution mode), ``state_dict`` keys, ``repr``, the three
reductions of every loss and errors for bad shapes. A second table does the same for the
``nn.functional`` names that no module reaches (in-place forms, ``pdist``, ``gumbel_softmax``...).
Where torch is missing, float64 finite differences still check every module's gradients.
"""
from __future__ import annotations

import inspect
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from _layer_check import check_layer_grads
from conftest import assert_close

REDUCTIONS = ("none", "mean", "sum")


# -- inputs --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class In:
    """One input: normal floats (differentiated), ``const`` floats, ``pos`` floats in [0.5, 2],
    ``sign`` (+-1 constants), ``int`` in [0, hi), or a fixed ``value``."""

    shape: tuple = ()
    kind: str = "float"
    hi: int = 0
    value: Any = None

    @property
    def grad(self) -> bool:
        return self.kind in ("float", "pos")

    def make(self, rng: np.random.Generator) -> np.ndarray:
        if self.value is not None:
            return np.asarray(self.value)
        if self.kind == "int":
            return rng.integers(0, self.hi, size=self.shape).astype(np.int64)
        if self.kind == "sign":
            return np.where(rng.random(self.shape) > 0.5, 1.0, -1.0)
        if self.kind in ("pos", "cpos"):
            return rng.uniform(0.5, 2.0, size=self.shape)
        if self.kind == "prob":  # rows of a distribution, constant
            p = rng.uniform(0.1, 1.0, size=self.shape)
            return p / p.sum(-1, keepdims=True)
        return rng.standard_normal(self.shape)


def X(*shape: int) -> In:
    return In(shape)


def K(value: Any, kind: str = "const") -> In:  # a fixed constant input
    return In(np.shape(value), kind, value=np.asarray(value))


@dataclass
class Sample:
    """``make(lib, **kw)`` builds the module from ``lib`` (torch or autograd_compile);
    ``call(lib, module, *inputs)`` runs it (default: ``module(*inputs)``)."""

    name: str
    make: Callable[..., Any]
    inputs: tuple
    call: Callable[..., Any] | None = None
    reduction: bool = False  # a loss whose make takes reduction=
    rtol: float = 1e-7
    atol: float = 1e-9
    slow: bool = False
    meta: dict = field(default_factory=dict)


def _arrays(s: Sample) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(s.name.encode()))
    return [i.make(rng) for i in s.inputs]


def _ctc_call(lib: Any, m: Any, logits: Any, targets: Any) -> Any:
    # torch's CTC backward assumes log_probs come out of log_softmax: compare through it
    return m(logits.log_softmax(2), targets, (6, 5), (3, 2))


def _asm_call(lib: Any, m: Any, x: Any, t: Any) -> Any:
    out = m(x, t)
    return out.output + out.loss  # checks both fields and their gradients


def _nll_call(lib: Any, m: Any, x: Any, t: Any) -> Any:
    return m(x.log_softmax(1), t)


_MLM_TARGET = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [-1, 2, 0, 0, 0]])

MODULES = [
    # activations
    Sample("LeakyReLU", lambda lib: lib.nn.LeakyReLU(0.2), (X(2, 3, 4),)),
    Sample("ELU", lambda lib: lib.nn.ELU(alpha=0.7), (X(2, 3, 4),)),
    Sample("SELU", lambda lib: lib.nn.SELU(), (X(2, 3, 4),)),
    Sample("CELU", lambda lib: lib.nn.CELU(alpha=1.3), (X(2, 3, 4),)),
    Sample("GLU", lambda lib: lib.nn.GLU(dim=1), (X(2, 4, 3),)),
    Sample("Hardtanh", lambda lib: lib.nn.Hardtanh(-0.5, 0.8), (X(2, 3, 4),)),
    Sample("Hardswish", lambda lib: lib.nn.Hardswish(), (In((2, 3, 4), value=np.linspace(
        -4, 4, 24).reshape(2, 3, 4) + 0.01),)),
    Sample("Hardsigmoid", lambda lib: lib.nn.Hardsigmoid(), (In((2, 3, 4), value=np.linspace(
        -4, 4, 24).reshape(2, 3, 4) + 0.01),)),
    Sample("Hardshrink", lambda lib: lib.nn.Hardshrink(0.3), (X(2, 3, 4),)),
    Sample("Softshrink", lambda lib: lib.nn.Softshrink(0.3), (X(2, 3, 4),)),
    Sample("Tanhshrink", lambda lib: lib.nn.Tanhshrink(), (X(2, 3, 4),)),
    Sample("Softplus", lambda lib: lib.nn.Softplus(beta=2, threshold=1.5), (X(2, 3, 4),)),
    Sample("Softsign", lambda lib: lib.nn.Softsign(), (X(2, 3, 4),)),
    Sample("Softmin", lambda lib: lib.nn.Softmin(dim=1), (X(2, 3, 4),)),
    Sample("Softmax2d", lambda lib: lib.nn.Softmax2d(), (X(2, 3, 4, 5),)),
    Sample("Softmax2d_3d", lambda lib: lib.nn.Softmax2d(), (X(3, 4, 5),), slow=True),
    Sample("LogSigmoid", lambda lib: lib.nn.LogSigmoid(), (X(2, 3, 4),)),
    Sample("Mish", lambda lib: lib.nn.Mish(), (X(2, 3, 4),)),
    Sample("PReLU", lambda lib: lib.nn.PReLU(), (X(2, 3, 4),)),
    Sample("PReLU_channels", lambda lib: lib.nn.PReLU(3, init=0.1), (X(2, 3, 4),)),
    Sample("PReLU_1d", lambda lib: lib.nn.PReLU(), (X(5),), slow=True),
    Sample("RReLU_eval", lambda lib: lib.nn.RReLU(0.1, 0.3).eval(), (X(2, 3, 4),)),
    Sample("ReLU6", lambda lib: lib.nn.ReLU6(), (In((2, 3, 4), value=np.linspace(
        -8, 8, 24).reshape(2, 3, 4) + 0.01),)),
    Sample("Threshold", lambda lib: lib.nn.Threshold(0.1, 20.0), (X(2, 3, 4),)),
    # distances and layers
    Sample("Bilinear", lambda lib: lib.nn.Bilinear(3, 4, 5), (X(2, 3), X(2, 4))),
    Sample("Bilinear_nobias_3d", lambda lib: lib.nn.Bilinear(3, 2, 4, bias=False),
           (X(2, 5, 3), X(2, 5, 2)), slow=True),
    Sample("CosineSimilarity", lambda lib: lib.nn.CosineSimilarity(dim=1), (X(3, 5), X(3, 5))),
    Sample("CosineSimilarity_bcast", lambda lib: lib.nn.CosineSimilarity(dim=-1, eps=1e-6),
           (X(2, 3, 4), X(3, 4)), slow=True),
    Sample("PairwiseDistance", lambda lib: lib.nn.PairwiseDistance(), (X(3, 5), X(3, 5))),
    Sample("PairwiseDistance_p1_keepdim", lambda lib: lib.nn.PairwiseDistance(
        p=1.5, keepdim=True), (X(3, 5), X(1, 5))),
    Sample("ChannelShuffle", lambda lib: lib.nn.ChannelShuffle(2), (X(2, 4, 3, 2),)),
    Sample("EmbeddingBag_mean", lambda lib: lib.nn.EmbeddingBag(10, 3), (In((2, 4), "int", 10),)),
    Sample("EmbeddingBag_sum_offsets", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="sum"),
           (K([1, 4, 4, 9, 0, 2], "int"), K([0, 2, 2, 5], "int"))),
    Sample("EmbeddingBag_max", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="max"),
           (K([1, 4, 3, 9, 0, 2], "int"), K([0, 2, 3], "int"))),
    Sample("EmbeddingBag_psw_last_offset", lambda lib: lib.nn.EmbeddingBag(
        10, 3, mode="sum", include_last_offset=True, padding_idx=4),
        (K([1, 4, 3, 9, 0, 2], "int"), K([0, 2, 3, 6], "int"), X(6))),
    # losses
    Sample("KLDivLoss", lambda lib, **kw: lib.nn.KLDivLoss(**kw), (X(3, 5), In((3, 5), "prob")),
           reduction=True),
    Sample("KLDivLoss_batchmean_log_target", lambda lib: lib.nn.KLDivLoss(
        reduction="batchmean", log_target=True), (X(3, 5), X(3, 5))),
    Sample("HuberLoss", lambda lib, **kw: lib.nn.HuberLoss(delta=0.5, **kw), (X(3, 4), X(3, 4)),
           reduction=True),
    Sample("SoftMarginLoss", lambda lib, **kw: lib.nn.SoftMarginLoss(**kw),
           (X(3, 4), In((3, 4), "sign")), reduction=True),
    Sample("MultiMarginLoss", lambda lib, **kw: lib.nn.MultiMarginLoss(**kw),
           (X(4, 5), In((4,), "int", 5)), reduction=True),
    Sample("MultiMarginLoss_p2_weight", lambda lib: lib.nn.MultiMarginLoss(
        p=2, margin=0.7, weight=lib.tensor([1.0, 0.5, 2.0, 1.5, 0.3])),
        (X(4, 5), In((4,), "int", 5))),
    Sample("MultiMarginLoss_1d", lambda lib: lib.nn.MultiMarginLoss(), (X(5), K(2, "int")),
           slow=True),
    Sample("MultiLabelMarginLoss", lambda lib, **kw: lib.nn.MultiLabelMarginLoss(**kw),
           (X(3, 5), K(_MLM_TARGET, "int")), reduction=True),
    Sample("MultiLabelMarginLoss_1d", lambda lib: lib.nn.MultiLabelMarginLoss(),
           (X(4), K([2, 1, -1, 0], "int")), slow=True),
    Sample("MultiLabelSoftMarginLoss", lambda lib, **kw: lib.nn.MultiLabelSoftMarginLoss(**kw),
           (X(3, 5), In((3, 5), "int", 2)), reduction=True),
    Sample("MultiLabelSoftMarginLoss_weight", lambda lib: lib.nn.MultiLabelSoftMarginLoss(
        weight=lib.tensor([1.0, 0.5, 2.0, 1.5, 0.3])),
        (X(3, 5), In((3, 5), "int", 2))),
    Sample("TripletMarginLoss", lambda lib, **kw: lib.nn.TripletMarginLoss(**kw),
           (X(4, 6), X(4, 6), X(4, 6)), reduction=True),
    Sample("TripletMarginLoss_p_swap", lambda lib: lib.nn.TripletMarginLoss(
        margin=0.5, p=1.5, swap=True), (X(4, 6), X(4, 6), X(4, 6))),
    Sample("TripletMarginLoss_1d", lambda lib: lib.nn.TripletMarginLoss(margin=3.0),
           (X(6), X(6), X(6)), slow=True),
    Sample("TripletMarginWithDistanceLoss", lambda lib, **kw: lib.nn.TripletMarginWithDistanceLoss(
        **kw), (X(4, 6), X(4, 6), X(4, 6)), reduction=True),
    Sample("TripletMarginWithDistanceLoss_cosine_swap",
           lambda lib: lib.nn.TripletMarginWithDistanceLoss(
               distance_function=lambda a, b: 1.0 - lib.nn.functional.cosine_similarity(a, b),
               margin=0.8, swap=True), (X(4, 6), X(4, 6), X(4, 6))),
    Sample("CTCLoss", lambda lib, **kw: lib.nn.CTCLoss(**kw),
           (X(6, 2, 4), K([[1, 2, 2], [3, 1, 0]], "int")), call=_ctc_call, reduction=True),
    Sample("CTCLoss_blank_last", lambda lib: lib.nn.CTCLoss(blank=3),
           (X(6, 2, 4), K([[1, 2, 2], [0, 1, 0]], "int")), call=_ctc_call, slow=True),
    Sample("PoissonNLLLoss", lambda lib, **kw: lib.nn.PoissonNLLLoss(**kw),
           (X(3, 4), In((3, 4), "int", 5)), reduction=True),
    Sample("PoissonNLLLoss_full_rates", lambda lib: lib.nn.PoissonNLLLoss(
        log_input=False, full=True), (In((3, 4), "pos"), In((3, 4), "int", 5))),
    Sample("GaussianNLLLoss", lambda lib, **kw: lib.nn.GaussianNLLLoss(**kw),
           (X(3, 4), X(3, 4), In((3, 4), "pos")), reduction=True),
    Sample("GaussianNLLLoss_full_var_column", lambda lib: lib.nn.GaussianNLLLoss(full=True),
           (X(3, 4), X(3, 4), In((3, 1), "pos"))),
    Sample("GaussianNLLLoss_var_one_dim_less", lambda lib: lib.nn.GaussianNLLLoss(eps=0.6),
           (X(3, 4), X(3, 4), In((3,), "pos")), slow=True),
    Sample("CosineEmbeddingLoss", lambda lib, **kw: lib.nn.CosineEmbeddingLoss(margin=0.2, **kw),
           (X(4, 5), X(4, 5), In((4,), "sign")), reduction=True),
    Sample("MarginRankingLoss", lambda lib, **kw: lib.nn.MarginRankingLoss(margin=0.1, **kw),
           (X(5), X(5), In((5,), "sign")), reduction=True),
    Sample("HingeEmbeddingLoss", lambda lib, **kw: lib.nn.HingeEmbeddingLoss(margin=0.8, **kw),
           (X(3, 4), In((3, 4), "sign")), reduction=True),
    Sample("NLLLoss2d", lambda lib, **kw: lib.nn.NLLLoss2d(**kw),
           (X(2, 3, 2, 2), In((2, 2, 2), "int", 3)), call=_nll_call, reduction=True),
    Sample("AdaptiveLogSoftmaxWithLoss", lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(
        8, 10, [3, 6], div_value=2.0), (X(5, 8), K([0, 4, 9, 2, 7], "int")), call=_asm_call),
    Sample("AdaptiveLogSoftmaxWithLoss_head_bias_1d", lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(
        6, 7, [4], head_bias=True), (X(6), K(5, "int")), call=_asm_call, slow=True),
    Sample("LinearCrossEntropyLoss", lambda lib, **kw: lib.nn.LinearCrossEntropyLoss(
        6, 5, options=lib.nn.LinearCrossEntropyOptions(batch_chunk_size=2), **kw),
           (X(4, 6), In((4,), "int", 5)), reduction=True),
    Sample("LinearCrossEntropyLoss_bias_smoothing", lambda lib: lib.nn.LinearCrossEntropyLoss(
        6, 5, bias=True, label_smoothing=0.2, ignore_index=1), (X(4, 6), K([1, 0, 4, 1], "int"))),
]

_BY_NAME = {s.name: s for s in MODULES}


# -- the torch oracle ----------------------------------------------------------------------------
def _pair(s: Sample, torch: Any, **kw: Any) -> tuple[Any, Any]:
    """The sample's module in torch and here, float64, ours loaded from torch's state_dict."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # NLLLoss2d's deprecation (tested above)
        theirs = s.make(torch, **kw).double()
        ours = s.make(acg, **kw).double()
    ours.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


def _run(lib: Any, s: Sample, module: Any, arrays: list[np.ndarray]) -> tuple[Any, list]:
    tensors = [lib.tensor(a, requires_grad=i.grad) if i.grad else lib.tensor(a)
               for a, i in zip(arrays, s.inputs)]
    out = (s.call or (lambda _lib, m, *xs: m(*xs)))(lib, module, *tensors)
    return out, tensors


def _grads(tensors: list, module: Any) -> dict[str, np.ndarray]:
    got = {f"input{k}": t.grad for k, t in enumerate(tensors) if t.requires_grad}
    got.update(dict(module.named_parameters()))
    got.update({n: p.grad for n, p in module.named_parameters()})
    return {n: None if g is None else np.asarray(g.detach().numpy() if hasattr(g, "detach")
                                                 else g.detach().numpy()) for n, g in got.items()}


def _check_against_torch(s: Sample, mode: Any, **kw: Any) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(s, torch, **kw)
    arrays = _arrays(s)
    with warnings.catch_warnings(record=True) as warned_t:
        warnings.simplefilter("always")
        out_t, xs_t = _run(torch, s, theirs, arrays)
    with warnings.catch_warnings(record=True) as warned_o:
        warnings.simplefilter("always")
        out_o, xs_o = _run(acg, s, ours, arrays)
    assert [w.category for w in warned_o] == [w.category for w in warned_t]  # torch's warnings
    want = out_t.detach().numpy()
    assert out_o.shape == tuple(want.shape) and out_o.dtype == np.float64
    assert_close(out_o.detach().numpy(), want, rtol=s.rtol, atol=s.atol)
    cot = np.random.default_rng(1).standard_normal(want.shape)
    out_t.backward(torch.tensor(cot))
    with mode():
        out_o.backward(acg.tensor(cot))
    got, expected = _grads(xs_o, ours), _grads(xs_t, theirs)
    assert got.keys() == expected.keys()
    for name, g in expected.items():
        mine = got[name]
        if g is None:  # a parameter the forward never reached
            assert mine is None or not np.any(mine), name
        else:
            assert mine is not None, name
            assert_close(mine, g, rtol=max(s.rtol, 1e-6), atol=max(s.atol, 1e-8))


def _params(samples: list[Sample]) -> list:
    return [pytest.param(s, id=s.name, marks=[pytest.mark.slow] if s.slow else [])
            for s in samples]


@pytest.mark.parametrize("s", _params(MODULES))
def test_module_matches_torch(s: Sample, mode: Any) -> None:
    """Forward values, input and parameter gradients (backward in ``mode``) equal torch's."""
    _check_against_torch(s, mode)


@pytest.mark.parametrize("s", _params(MODULES))
def test_module_state_dict_and_repr(s: Sample) -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        theirs = s.make(torch)
        n_theirs = len(warned)
        ours = s.make(acg)
    assert [w.category for w in warned[n_theirs:]] == [w.category for w in warned[:n_theirs]]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert ours.state_dict()[k].shape == tuple(v.shape), k
        assert ours.state_dict()[k].dtype == np.dtype(str(v.dtype).split(".")[1]), k
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("s", _params(MODULES))
def test_module_float32(s: Sample) -> None:
    """In float32 (the default dtype) the output keeps torch's dtype and values."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        theirs, ours = s.make(torch), s.make(acg)
        ours.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        arrays = [a.astype(np.float32) if a.dtype == np.float64 else a for a in _arrays(s)]
        want = _run(torch, s, theirs, arrays)[0].detach().numpy()
        got = _run(acg, s, ours, arrays)[0].detach().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_close(got, want, rtol=1e-4, atol=1e-5)


_COMPILED = {"GLU", "PReLU_channels", "EmbeddingBag_max", "EmbeddingBag_psw_last_offset",
             "MultiMarginLoss_p2_weight", "MultiLabelMarginLoss", "TripletMarginLoss_p_swap",
             "CTCLoss", "GaussianNLLLoss", "AdaptiveLogSoftmaxWithLoss", "Bilinear"}


@pytest.mark.parametrize("s", [pytest.param(s, id=s.name, marks=[] if s.name in _COMPILED
                                            else [pytest.mark.slow]) for s in MODULES])
def test_module_under_acg_compile(s: Sample) -> None:
    """``acg.compile(module, fullgraph=True)`` traces the whole forward (no eager fallback)
    and gives the eager values and gradients."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        acg.manual_seed(0)
        module = s.make(acg).double()
    compiled = acg.compile(module, fullgraph=True)
    arrays = _arrays(s)
    results = []
    for fn in (module, compiled):
        module.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # kl_div's 'mean' (tested above)
            out, xs = _run(acg, s, fn, arrays)
        out.backward(acg.tensor(np.random.default_rng(1).standard_normal(out.shape)))
        results.append((out.detach().numpy(), _grads(xs, module)))
    (want, gwant), (got, ggot) = results
    assert_close(got, want, rtol=1e-9, atol=1e-12)
    for name, g in gwant.items():
        assert (ggot[name] is None) == (g is None), name
        if g is not None:
            assert_close(ggot[name], g, rtol=1e-9, atol=1e-12)


_REDUCED = [s for s in MODULES if s.reduction]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("s", _params(_REDUCED))
def test_loss_reductions(s: Sample, reduction: str) -> None:
    """Each loss under 'none', 'mean' and 'sum': values and gradients (eager)."""
    _check_against_torch(s, _EAGER, reduction=reduction)


class _Eager:
    compiled = False

    def __call__(self) -> Any:
        import contextlib
        return contextlib.nullcontext()


_EAGER = _Eager()


_NUMERIC = ["LeakyReLU", "GLU", "PReLU_channels", "Softmax2d", "Bilinear", "PairwiseDistance",
            "EmbeddingBag_psw_last_offset", "HuberLoss", "MultiMarginLoss_p2_weight",
            "MultiLabelMarginLoss", "TripletMarginLoss_p_swap", "GaussianNLLLoss",
            "CosineEmbeddingLoss", "CTCLoss", "AdaptiveLogSoftmaxWithLoss"]


class _Called(nn.Module):
    """A sample's module with its call convention, for the finite-difference oracle."""

    def __init__(self, s: Sample) -> None:
        super().__init__()
        self.s, self.inner = s, s.make(acg)

    def forward(self, *xs: Any) -> Any:
        return (self.s.call or (lambda _lib, m, *a: m(*a)))(acg, self.inner, *xs)


@pytest.mark.parametrize("name", _NUMERIC)
def test_module_grads_numerically(name: str, mode: Any) -> None:
    """No torch needed: gradients against float64 finite differences (eager) and the eager
    backward (compiled modes)."""
    s = _BY_NAME[name]
    acg.manual_seed(0)
    arrays = _arrays(s)
    check_layer_grads(_Called(s), arrays, mode, requires_grad=[i.grad for i in s.inputs],
                      rtol=1e-5, atol=1e-7)


def test_legacy_size_average_and_reduce() -> None:
    torch = pytest.importorskip("torch")
    x, t = np.random.default_rng(0).standard_normal((2, 2, 3))
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        for name in ("SoftMarginLoss", "KLDivLoss", "HingeEmbeddingLoss",
                     "MultiLabelSoftMarginLoss"):
            with pytest.warns(UserWarning):
                theirs = getattr(torch.nn, name)(**kw)
            with pytest.warns(UserWarning):
                ours = getattr(nn, name)(**kw)
            assert ours.reduction == theirs.reduction
            tt = {"KLDivLoss": np.abs(t), "MultiLabelSoftMarginLoss": (t > 0) * 1.0}.get(
                name, np.sign(t))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # kl_div's 'mean' warning, tested in the table
                assert_close(ours(acg.tensor(x), acg.tensor(tt)).detach().numpy(),
                             theirs(torch.tensor(x), torch.tensor(tt)).detach().numpy(), rtol=1e-10)


def test_rrelu_train_and_eval(mode: Any) -> None:
    """Training draws one slope per negative element in [lower, upper] (the backward uses the
    same slope); eval uses their mean, as torch."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((50, 40))
    m = nn.RReLU(0.1, 0.3)
    assert m.training
    acg.manual_seed(0)
    xt = acg.tensor(x, requires_grad=True)
    y = m(xt)
    with mode():
        y.sum().backward()
    neg = x < 0
    slopes = y.detach().numpy()[neg] / x[neg]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert_close(y.detach().numpy()[~neg], x[~neg], rtol=0)
    assert_close(xt.grad.numpy()[neg], slopes, rtol=1e-10)
    assert_close(xt.grad.numpy()[~neg], 1.0, rtol=0)
    acg.manual_seed(0)
    assert_close(m(acg.tensor(x)).detach().numpy(), y.detach().numpy(), rtol=0)  # the seed fixes the draw
    assert not np.array_equal(m(acg.tensor(x)).detach().numpy(), y.detach().numpy())
    m.eval()
    assert_close(m(acg.tensor(x)).detach().numpy(), torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(x)).detach().numpy(),
                 rtol=1e-12)
    assert_close(F.rrelu(acg.tensor(x)).detach().numpy(), torch.nn.functional.rrelu(torch.tensor(x)).detach().numpy(),
                 rtol=1e-12)


def test_rrelu_inplace_training() -> None:
    x = acg.tensor(np.linspace(-2, 2, 9))
    acg.manual_seed(0)
    y = F.rrelu_(x, training=True)
    assert y is x and (x.detach().numpy()[:4] > -2).all() and (x.detach().numpy()[:4] < 0).all()


# -- errors --------------------------------------------------------------------------------------
def _e(lib: Any, *shape: int, kind: str = "float") -> Any:
    if kind == "int":
        return lib.zeros(shape, dtype=lib.int64)
    return lib.ones(shape)


ERRORS = {
    "glu_odd": lambda lib: lib.nn.GLU()(_e(lib, 2, 3)),
    "glu_scalar": lambda lib: lib.nn.functional.glu(_e(lib)),
    "prelu_channels": lambda lib: lib.nn.PReLU(3)(_e(lib, 2, 4)),
    "softmax2d_2d": lambda lib: lib.nn.Softmax2d()(_e(lib, 2, 3)),
    "bilinear_features": lambda lib: lib.nn.Bilinear(3, 4, 5)(_e(lib, 2, 3), _e(lib, 2, 5)),
    "bilinear_batch": lambda lib: lib.nn.Bilinear(3, 4, 5)(_e(lib, 2, 3), _e(lib, 3, 4)),
    "channel_shuffle_groups": lambda lib: lib.nn.ChannelShuffle(3)(_e(lib, 2, 4, 2, 2)),
    "channel_shuffle_ndim": lambda lib: lib.nn.ChannelShuffle(2)(_e(lib, 4)),
    "pairwise_shapes": lambda lib: lib.nn.PairwiseDistance()(_e(lib, 3, 4), _e(lib, 3, 5)),
    "cosine_shapes": lambda lib: lib.nn.CosineSimilarity()(_e(lib, 3, 4), _e(lib, 2, 4)),
    "embedding_bag_2d_offsets": lambda lib: lib.nn.EmbeddingBag(5, 2)(
        _e(lib, 2, 3, kind="int"), lib.tensor([0, 1])),
    "embedding_bag_mode": lambda lib: lib.nn.EmbeddingBag(5, 2, mode="median")(
        _e(lib, 2, 3, kind="int")),
    "embedding_bag_psw_mean": lambda lib: lib.nn.EmbeddingBag(5, 2)(
        _e(lib, 2, 3, kind="int"), per_sample_weights=_e(lib, 2, 3)),
    "reduction_name": lambda lib: lib.nn.HuberLoss(reduction="avg")(_e(lib, 2), _e(lib, 2)),
    "huber_shapes": lambda lib: lib.nn.HuberLoss()(_e(lib, 2, 3), _e(lib, 4)),
    "multi_margin_target": lambda lib: lib.nn.MultiMarginLoss()(_e(lib, 3, 4),
                                                                _e(lib, 2, kind="int")),
    "multi_margin_p": lambda lib: lib.nn.MultiMarginLoss(p=3),
    "multilabel_margin_target": lambda lib: lib.nn.MultiLabelMarginLoss()(
        _e(lib, 3, 4), _e(lib, 3, 3, kind="int")),
    "triplet_ndim": lambda lib: lib.nn.TripletMarginLoss()(_e(lib, 3, 4), _e(lib, 3, 4),
                                                           _e(lib, 4)),
    "cosine_embedding_target": lambda lib: lib.nn.CosineEmbeddingLoss()(
        _e(lib, 3, 4), _e(lib, 3, 4), _e(lib, 3, 1)),
    "margin_ranking_shapes": lambda lib: lib.nn.MarginRankingLoss()(
        _e(lib, 3), _e(lib, 4), _e(lib, 3)),
    "gaussian_var_negative": lambda lib: lib.nn.GaussianNLLLoss()(
        _e(lib, 3, 2), _e(lib, 3, 2), -_e(lib, 3, 2)),
    "gaussian_var_shape": lambda lib: lib.nn.GaussianNLLLoss()(
        _e(lib, 3, 2), _e(lib, 3, 2), _e(lib, 2, 2)),
    "ctc_log_probs_ndim": lambda lib: lib.nn.CTCLoss()(
        _e(lib, 5, 1, 4, 2), _e(lib, 1, 2, kind="int"), (5,), (2,)),
    "asm_in_features": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2])(
        _e(lib, 3, 5), _e(lib, 3, kind="int")),
    "asm_batch": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2])(
        _e(lib, 3, 4), _e(lib, 2, kind="int")),
    "asm_cutoffs": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [3, 2]),
    "asm_target_range": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2])(
        _e(lib, 3, 4), lib.tensor([0, 1, 6])),
    "kl_div_shapes": lambda lib: lib.nn.KLDivLoss()(_e(lib, 3, 4), _e(lib, 3, 5)),
    "threshold_args": lambda lib: lib.nn.Threshold(0.1),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name: str) -> None:
    """Bad shapes and arguments raise torch's exception class."""
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch)
    with pytest.raises(theirs.type):
        ERRORS[name](acg)


# -- nn.functional names no module reaches -------------------------------------------------------
@dataclass
class Fn:
    name: str
    call: Callable[..., Any]  # (F, *inputs) -> tensor
    inputs: tuple
    rtol: float = 1e-7
    grad: bool = True  # torch has no derivative for it


FUNCTIONS = [
    Fn("threshold", lambda f, x: f.threshold(x, 0.2, -1.0), (X(3, 4),)),
    Fn("hardtanh", lambda f, x: f.hardtanh(x, -0.3, 0.6), (X(3, 4),)),
    Fn("elu", lambda f, x: f.elu(x, 0.5), (X(3, 4),)),
    Fn("celu", lambda f, x: f.celu(x, 0.5), (X(3, 4),)),
    Fn("leaky_relu", lambda f, x: f.leaky_relu(x, 0.3), (X(3, 4),)),
    Fn("prelu", lambda f, x, w: f.prelu(x, w), (X(2, 3, 4), In((3,), "pos"))),
    Fn("glu", lambda f, x: f.glu(x), (X(3, 4),)),
    Fn("logsigmoid", lambda f, x: f.logsigmoid(x), (X(3, 4),)),
    Fn("softmin_dtype", lambda f, x: f.softmin(x, dim=0), (X(3, 4),)),
    Fn("pdist", lambda f, x: f.pdist(x), (X(5, 3),)),
    Fn("pdist_p1", lambda f, x: f.pdist(x, p=1), (X(4, 3),)),
    Fn("pdist_p3", lambda f, x: f.pdist(x, p=3), (X(4, 3),)),
    Fn("pdist_inf", lambda f, x: f.pdist(x, p=float("inf")), (X(4, 3),)),
    Fn("pairwise_distance_inf", lambda f, a, b: f.pairwise_distance(a, b, p=float("inf")),
       (X(3, 4), X(3, 4))),
    Fn("pairwise_distance_p0", lambda f, a, b: f.pairwise_distance(a, b, p=0),
       (X(3, 4), X(3, 4)), grad=False),
    Fn("cosine_similarity_dim0", lambda f, a, b: f.cosine_similarity(a, b, dim=0),
       (X(3, 4), X(3, 4))),
    Fn("bilinear", lambda f, a, b, w, c: f.bilinear(a, b, w, c),
       (X(2, 3), X(2, 4), X(5, 3, 4), X(5))),
    Fn("embedding_bag", lambda f, i, w: f.embedding_bag(i, w, mode="sum"),
       (In((3, 2), "int", 6), X(6, 3))),
    Fn("embedding_bag_offsets_psw", lambda f, i, o, w, p: f.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=p), (K([0, 2, 5, 5], "int"),
                                                     K([0, 1], "int"), X(6, 3), X(4))),
    Fn("channel_shuffle", lambda f, x: f.channel_shuffle(x, 3), (X(2, 6, 2),)),
    Fn("native_channel_shuffle", lambda f, x: f.native_channel_shuffle(x, 2), (X(1, 4, 2, 2),),
       grad=False),
    Fn("kl_div", lambda f, a, b: f.kl_div(a, b, reduction="sum"), (X(3, 4), In((3, 4), "pos"))),
    Fn("huber_loss_weight", lambda f, a, b, w: f.huber_loss(a, b, delta=0.7, weight=w),
       (X(3, 4), X(3, 4), In((3, 4), "cpos"))),
    Fn("soft_margin_loss", lambda f, a, t: f.soft_margin_loss(a, t), (X(5,), In((5,), "sign"))),
    Fn("multi_margin_loss", lambda f, a, t: f.multi_margin_loss(a, t, p=2, reduction="none"),
       (X(3, 4), In((3,), "int", 4))),
    Fn("multilabel_margin_loss", lambda f, a, t: f.multilabel_margin_loss(a, t),
       (X(2, 4), K([[3, 3, -1, 0], [0, 1, 2, 3]], "int"))),
    Fn("multilabel_soft_margin_loss", lambda f, a, t: f.multilabel_soft_margin_loss(
        a, t, reduction="sum"), (X(2, 4), In((2, 4), "int", 2))),
    Fn("triplet_margin_loss", lambda f, a, p, n: f.triplet_margin_loss(a, p, n, p=1),
       (X(3, 4), X(3, 4), X(3, 4))),
    Fn("triplet_margin_with_distance_loss", lambda f, a, p, n: f.triplet_margin_with_distance_loss(
        a, p, n, distance_function=f.pairwise_distance, margin=2.0), (X(3, 4), X(3, 4), X(3, 4))),
    Fn("ctc_loss_tensor_lengths", lambda f, lp, t, il, tl: f.ctc_loss(
        lp.log_softmax(2), t, il, tl, reduction="sum"),
        (X(5, 3, 4), K([1, 2, 1, 3, 3, 2], "int"), K([5, 4, 5], "int"), K([2, 1, 3], "int"))),
    Fn("ctc_loss_unbatched", lambda f, lp, t: f.ctc_loss(lp.log_softmax(1), t, (5,), (2,)),
       (X(5, 4), K([1, 2], "int"))),
    Fn("ctc_loss_impossible_zero_infinity", lambda f, lp, t: f.ctc_loss(
        lp.log_softmax(2), t, (2, 5), (3, 2), reduction="none", zero_infinity=True),
        (X(5, 2, 4), K([[1, 1, 1], [2, 3, 0]], "int"))),
    Fn("poisson_nll_loss", lambda f, a, t: f.poisson_nll_loss(a, t, full=True, reduction="none"),
       (X(3, 4), In((3, 4), "int", 4))),
    Fn("gaussian_nll_loss_scalar_var", lambda f, a, t: f.gaussian_nll_loss(a, t, 0.5),
       (X(3, 4), X(3, 4))),
    Fn("cosine_embedding_loss", lambda f, a, b, t: f.cosine_embedding_loss(a, b, t, margin=-0.3),
       (X(3, 4), X(3, 4), In((3,), "sign"))),
    Fn("cosine_embedding_loss_1d", lambda f, a, b, t: f.cosine_embedding_loss(a, b, t),
       (X(4), X(4), K(-1.0))),
    Fn("margin_ranking_loss", lambda f, a, b, t: f.margin_ranking_loss(a, b, t, margin=0.3),
       (X(4), X(4), In((4,), "sign"))),
    Fn("hinge_embedding_loss", lambda f, a, t: f.hinge_embedding_loss(a, t, reduction="sum"),
       (X(3, 4), In((3, 4), "sign"))),
    Fn("linear_cross_entropy", lambda f, x, w, t: f.linear_cross_entropy(x, w, t),
       (X(4, 6), X(5, 6), In((4,), "int", 5))),
    Fn("linear_cross_entropy_bias_smoothing", lambda f, x, w, b, t: f.linear_cross_entropy(
        x, w, t, linear_bias=b, label_smoothing=0.1, ignore_index=2, reduction="sum"),
        (X(4, 6), X(5, 6), X(5), K([1, 2, 4, 0], "int"))),
]


def _fn_params() -> list:
    return [pytest.param(f, id=f.name) for f in FUNCTIONS]


@pytest.mark.parametrize("fn", _fn_params())
def test_functional_matches_torch(fn: Fn, mode: Any) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(zlib.crc32(fn.name.encode()))
    arrays = [i.make(rng) for i in fn.inputs]
    results = []
    for lib, ctx in ((torch, None), (acg, mode)):
        xs = [lib.tensor(a, requires_grad=i.grad) if i.grad and fn.grad else lib.tensor(a)
              for a, i in zip(arrays, fn.inputs)]
        out = fn.call(lib.nn.functional, *xs)
        if not fn.grad:
            results.append((out.detach().numpy(), []))
            continue
        cot = np.random.default_rng(1).standard_normal(tuple(out.shape))
        if lib is torch:
            out.backward(torch.tensor(cot))
            val = out.detach().numpy()
        else:
            with ctx():
                out.backward(acg.tensor(cot))
            val = out.detach().numpy()
        results.append((val, [x.grad.numpy() if x.grad is not None else None
                              for x in xs if x.requires_grad]))
    (want, gwant), (got, ggot) = results
    assert got.shape == want.shape
    assert_close(got, want, rtol=fn.rtol, atol=1e-9)
    for g, w in zip(ggot, gwant):
        assert (g is None) == (w is None)
        if w is not None:
            assert_close(g, w, rtol=1e-6, atol=1e-8)


_INPLACE = [("threshold_", (0.1, 5.0)), ("relu_", ()), ("hardtanh_", (-0.2, 0.4)), ("elu_", (0.5,)),
            ("selu_", ()), ("celu_", (0.7,)), ("leaky_relu_", (0.2,)), ("rrelu_", (0.1, 0.3))]


@pytest.mark.parametrize("name, args", _INPLACE, ids=[n for n, _ in _INPLACE])
def test_inplace_functionals(name: str, args: tuple) -> None:
    """The ``_`` forms write into their input and return it, with torch's values."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4))
    ours, theirs = acg.tensor(x), torch.tensor(x)
    assert getattr(F, name)(ours, *args) is ours
    getattr(torch.nn.functional, name)(theirs, *args)
    assert_close(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    for act in ("threshold", "hardtanh", "elu", "celu", "leaky_relu", "relu6", "selu",
                "hardsigmoid", "hardswish", "mish"):
        if name.rstrip("_") == act:
            y = acg.tensor(x)
            assert getattr(F, act)(y, *args, inplace=True) is y
            assert_close(y.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", ["ReLU6", "Hardsigmoid", "Hardswish", "Mish", "ELU", "SELU",
                                  "CELU", "LeakyReLU", "Hardtanh", "RReLU"])
def test_inplace_modules(name: str) -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4)) * 4
    ours, theirs = acg.tensor(x), torch.tensor(x)
    m = getattr(nn, name)(inplace=True).eval()
    assert m(ours) is ours
    getattr(torch.nn, name)(inplace=True).eval()(theirs)
    assert_close(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    assert repr(m) == repr(getattr(torch.nn, name)(inplace=True))


def test_gumbel_softmax() -> None:
    """Soft samples are distributions whose argmax follows softmax(logits); hard ones are
    one-hot in the forward and carry the soft sample's gradient."""
    logits = acg.tensor(np.log([0.6, 0.3, 0.1]) * np.ones((4000, 1)), requires_grad=True)
    acg.manual_seed(0)
    y = F.gumbel_softmax(logits, tau=0.5)
    assert_close(y.detach().numpy().sum(-1), 1.0, rtol=1e-6)
    freq = np.bincount(y.detach().numpy().argmax(-1), minlength=3) / 4000
    assert_close(freq, [0.6, 0.3, 0.1], atol=0.03)
    hard = F.gumbel_softmax(logits, hard=True, dim=-1)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0} and (hard.detach().numpy().sum(-1) == 1).all()
    (hard * acg.tensor(np.arange(3.0))).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    assert_close(logits.grad.numpy().sum(-1), 0.0, atol=1e-9)  # softmax's gradient sums to 0


def test_adaptive_log_softmax_log_prob_and_predict() -> None:
    torch = pytest.importorskip("torch")
    s = _BY_NAME["AdaptiveLogSoftmaxWithLoss"]
    ours, theirs = _pair(s, torch)
    x = np.random.default_rng(0).standard_normal((6, 8))
    assert_close(ours.log_prob(acg.tensor(x)).detach().numpy(),
                 theirs.log_prob(torch.tensor(x)).detach().numpy(), rtol=1e-10)
    assert (ours.predict(acg.tensor(x)).detach().numpy() == theirs.predict(torch.tensor(x)).detach().numpy()).all()


def test_embedding_bag_from_pretrained_and_max_norm() -> None:
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(0).standard_normal((6, 3)) * 2
    idx = np.array([[0, 2], [5, 2]])
    ours = nn.EmbeddingBag.from_pretrained(acg.tensor(w), mode="max", max_norm=1.0)
    theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="max", max_norm=1.0)
    assert not ours.weight.requires_grad
    assert_close(ours(acg.tensor(idx)).detach().numpy(), theirs(torch.tensor(idx)).detach().numpy(), rtol=1e-10)
    assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-10)  # renormed rows
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["Bilinear", "PReLU", "EmbeddingBag_mean",
                                  "AdaptiveLogSoftmaxWithLoss"])
def test_initialisation_moments(name: str) -> None:
    """Parameters start with torch's distribution (same bounds and spread on large layers)."""
    torch = pytest.importorskip("torch")
    make = {"Bilinear": lambda lib: lib.nn.Bilinear(40, 30, 20),
            "PReLU": lambda lib: lib.nn.PReLU(7, init=0.3),
            "EmbeddingBag_mean": lambda lib: lib.nn.EmbeddingBag(300, 40),
            "AdaptiveLogSoftmaxWithLoss": lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(
                64, 100, [20, 50])}[name]
    acg.manual_seed(0)
    ours, theirs = dict(make(acg).named_parameters()), dict(make(torch).named_parameters())
    for k, p in theirs.items():
        v, w = ours[k].detach().numpy(), p.detach().numpy()
        noise = 4 / np.sqrt(w.size)  # sampling noise of the moments
        assert v.shape == w.shape and v.dtype == w.dtype
        assert_close(np.quantile(np.abs(v), 0.9), np.quantile(np.abs(w), 0.9), rtol=0.03 + noise)
        assert_close(v.std(), w.std(), rtol=0.02 + noise, atol=1e-9)
        assert_close(v.mean(), w.mean(), atol=noise * max(w.std(), 1e-3) + 1e-9)


def test_signatures_match_torch() -> None:
    """Constructor and function parameters (names, kinds, defaults) are torch's."""
    torch = pytest.importorskip("torch")
    mine = {"activation", "loss", "distance", "bilinear", "embedding_bag", "channelshuffle",
            "_adaptive"}  # this file's modules (other families compare in their own tests)
    names = [n for n in nn.__all__[nn.__all__.index("CELU"):]
             if getattr(nn, n).__module__.rpartition(".")[2] in mine]
    for n in names:
        _same_params(getattr(nn, n).__init__, getattr(torch.nn, n).__init__, n)
    from autograd_compile.nn import (_activation_functional, _distance_functional,
                                     _loss_functional)
    for mod in (_activation_functional, _distance_functional, _loss_functional):
        for n in mod.__all__:
            try:
                inspect.signature(getattr(torch.nn.functional, n))
            except ValueError:  # a C builtin without a Python signature
                continue
            _same_params(getattr(F, n), getattr(torch.nn.functional, n), n)


def _same_params(a: Callable, b: Callable, name: str) -> None:
    pa, pb = inspect.signature(a).parameters, inspect.signature(b).parameters
    assert [(p.name, p.kind, p.default) for p in pa.values()] == [
        (p.name, p.kind, p.default) for p in pb.values()], name


def test_compiled_module_matches_eager(mode: Any) -> None:
    """``acg.compile`` of a model mixing the new layers: same loss and gradients as eager."""
    acg.manual_seed(0)
    model = _Mixed()
    compiled = acg.compile(model)
    rng = np.random.default_rng(0)
    x = acg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    t = acg.tensor(rng.integers(0, 5, (5,)))
    results = []
    for fn in (model, compiled):
        model.zero_grad()
        loss = fn(x, t)
        with mode():
            loss.backward()
        results.append((loss.item(), [p.grad.numpy().copy() for p in model.parameters()]))
    (le, ge), (lc, gc) = results
    assert lc == pytest.approx(le, rel=1e-5)
    for a, b in zip(gc, ge):
        assert_close(a, b, rtol=1e-4, atol=1e-6)


class _Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bil = nn.Bilinear(4, 4, 6)
        self.act = nn.Sequential(nn.PReLU(6), nn.Mish(), nn.Hardswish(), nn.ELU())
        self.head = nn.Linear(6, 5)
        self.loss = nn.MultiMarginLoss()

    def forward(self, x: Any, t: Any) -> Any:
        h = self.act(self.bil(x, x.flip(0)))
        logits = self.head(h)
        return self.loss(logits, t) + nn.functional.huber_loss(
            logits, logits.detach() * 0.5) + F.softmin(logits, 1).pow(2).mean()


def test_ctc_impossible_sample_gets_nan_gradients_like_torch(mode: Any) -> None:
    """An impossible sample (more labels than frames) with zero_infinity=False: loss inf and
    NaN gradients over its frames even when only another sample's loss is backpropagated, as
    PyTorch's kernel gives (how programs notice bad data); other samples stay finite."""
    rng = np.random.default_rng(0)
    raw = rng.standard_normal((6, 2, 5)).astype(np.float32)
    targets, lengths = [[1, 1, 1, 1], [1, 2, 0, 0]], ([4, 6], [4, 2])
    lp = acg.tensor(raw, requires_grad=True)
    with mode():
        loss = acg.nn.functional.ctc_loss(lp.log_softmax(-1), acg.tensor(targets),
                                          acg.tensor(lengths[0]), acg.tensor(lengths[1]),
                                          reduction="none")
        loss[1].backward()
    grad = np.asarray(lp.grad)
    assert np.isinf(float(loss[0])) and np.isfinite(float(loss[1]))
    assert np.isnan(grad[:4, 0]).all() and (grad[4:, 0] == 0).all()
    assert np.isfinite(grad[:, 1]).all()
    torch = pytest.importorskip("torch")
    t = torch.tensor(raw, requires_grad=True)
    torch.nn.functional.ctc_loss(t.log_softmax(-1), torch.tensor(targets),
                                 torch.tensor(lengths[0]), torch.tensor(lengths[1]),
                                 reduction="none")[1].backward()
    np.testing.assert_array_equal(np.isnan(grad), t.grad.isnan().numpy())
    np.testing.assert_allclose(grad[:, 1], t.grad[:, 1].numpy(), rtol=1e-4, atol=1e-5)


def _ce_reference(x: np.ndarray, t: np.ndarray, ignore: int = -100) -> np.ndarray:
    """Per-row cross entropy in float64, -inf logits kept out of the log-sum-exp."""
    m = x.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(x - m).sum(1))
    return np.where(t == ignore, 0.0, lse - x[np.arange(len(t)), np.where(t == ignore, 0, t)])


def test_cross_entropy_with_minus_inf_logits_is_finite(mode):
    """NT-Xent masks the similarity diagonal with -inf: the loss stays finite (it was NaN
    from 0 * inf in the smoothing term), the gradient softmax's, ignored rows 0."""
    x = np.array([[-np.inf, 1.0, 2.0], [0.5, -np.inf, 0.0], [-np.inf, 0.3, 0.1]], np.float32)
    t = np.array([2, 0, -100])
    want = _ce_reference(x.astype(np.float64), t)
    xt = acg.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xt, acg.tensor(t), reduction="none")
    assert_close(loss.detach().numpy(), want, rtol=1e-6)
    with mode():
        F.cross_entropy(xt, acg.tensor(t)).backward()
    soft = np.exp(x - x.max(1, keepdims=True))
    soft /= soft.sum(1, keepdims=True)
    grad = soft.copy()
    grad[[0, 1], [2, 0]] -= 1
    grad[2] = 0
    assert_close(xt.grad.numpy(), grad / 2, atol=1e-6)
    smoothed = F.cross_entropy(acg.tensor(x[:2]), acg.tensor(t[:2]), label_smoothing=0.1)
    assert smoothed.item() == np.inf  # -log p of a -inf class: as torch
