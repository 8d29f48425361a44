"""The deprecated ``size_average``/``reduce`` flags of every ``nn.functional`` loss that has them
in PyTorch, and of the loss modules: accepted in PyTorch's positions and resolved as PyTorch's
``torch.nn._reduction.legacy_get_string`` (its deprecation warning included).

One table of losses (inputs written once) drives the comparison with torch for every flag
combination, positional and keyword; without torch the same table checks each combination
against the ``reduction=`` it stands for, from PyTorch's truth table.
"""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from autograd_compile.nn import _reduction
from conftest import assert_close

_RNG = np.random.default_rng(0)


def _floats(*shape: int) -> np.ndarray:
    return _RNG.standard_normal(shape)


def _log_probs(*shape: int) -> np.ndarray:
    x = _floats(*shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@dataclass(frozen=True)
class Loss:
    """A loss's name and its inputs by PyTorch's parameter names (first: differentiated)."""

    name: str
    inputs: dict[str, np.ndarray]


_TABLE = [
    Loss("l1_loss", {"input": _floats(3, 4), "target": _floats(3, 4)}),
    Loss("mse_loss", {"input": _floats(3, 4), "target": _floats(3, 4)}),
    Loss("smooth_l1_loss", {"input": _floats(3, 4), "target": _floats(3, 4)}),
    Loss("nll_loss", {"input": _log_probs(3, 4), "target": np.array([0, 3, 1])}),
    Loss("cross_entropy", {"input": _floats(3, 4), "target": np.array([0, 3, 1])}),
    Loss("binary_cross_entropy", {"input": _RNG.uniform(0.1, 0.9, (3, 4)),
                                  "target": _RNG.uniform(0, 1, (3, 4))}),
    Loss("binary_cross_entropy_with_logits", {"input": _floats(3, 4),
                                              "target": _RNG.uniform(0, 1, (3, 4))}),
    Loss("kl_div", {"input": _log_probs(3, 4), "target": np.exp(_log_probs(3, 4))}),
    Loss("poisson_nll_loss", {"input": _floats(3, 4), "target": _RNG.uniform(0, 3, (3, 4))}),
    Loss("soft_margin_loss", {"input": _floats(3, 4), "target": np.sign(_floats(3, 4))}),
    Loss("multilabel_soft_margin_loss", {"input": _floats(3, 4),
                                         "target": (_floats(3, 4) > 0) * 1.0}),
    Loss("multilabel_margin_loss", {"input": _floats(3, 4), "target": np.array(
        [[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]])}),
    Loss("multi_margin_loss", {"input": _floats(3, 4), "target": np.array([0, 3, 1])}),
    Loss("hinge_embedding_loss", {"input": _floats(3, 4), "target": np.sign(_floats(3, 4))}),
    Loss("cosine_embedding_loss", {"input1": _floats(3, 4), "input2": _floats(3, 4),
                                   "target": np.array([1.0, -1.0, 1.0])}),
    Loss("margin_ranking_loss", {"input1": _floats(5), "input2": _floats(5),
                                 "target": np.sign(_floats(5))}),
    Loss("triplet_margin_loss", {"anchor": _floats(3, 4), "positive": _floats(3, 4),
                                 "negative": _floats(3, 4)}),
]
_BY_NAME = {s.name: s for s in _TABLE}

_FLAGS = (None, True, False)
# (size_average, reduce, reduction): every flag pair, a reduction the flags override (even an
# invalid one: PyTorch never reads it then), and no flags at all
_COMBOS = [(sa, r, "mean") for sa in _FLAGS for r in _FLAGS if (sa, r) != (None, None)] + [
    (False, None, "none"), (True, None, "sum"), (None, False, "bogus"), (None, None, "sum"),
    (None, None, "none")]


def _expected(size_average: Any, reduce: Any, reduction: str) -> str:
    """PyTorch's truth table: no flags keep ``reduction``; else None counts as True."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        return "none"
    return "sum" if size_average is False else "mean"


def _positional(fn: Callable, values: dict[str, Any]) -> list[Any]:
    """``values`` as positional arguments in ``fn``'s parameter order, through ``reduction``,
    defaults filling the gaps (so a parameter in the wrong position gets a wrong value)."""
    args = []
    for p in inspect.signature(fn).parameters.values():
        args.append(values.get(p.name, p.default))
        if p.name == "reduction":
            return args
    raise AssertionError(f"{fn.__name__} has no reduction parameter")


def _run(lib: Any, fn: Callable, loss: Loss, flags: dict[str, Any], positional: bool
         ) -> tuple[Any, Any, list[str]]:
    """(value, gradient of the first input, warnings) of one call."""
    tensors = {k: lib.tensor(v, requires_grad=i == 0) for i, (k, v) in
               enumerate(loss.inputs.items())}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if positional:
            out = fn(*_positional(fn, {**tensors, **flags}))
        else:
            out = fn(*tensors.values(), **flags)
    if lib is acg:  # the warning points at the loss (torch's, via legacy_get_enum, not always)
        assert all(w.filename != _reduction.__file__ for w in caught)
    out.sum().backward()
    first = next(iter(tensors.values()))
    return out.detach().numpy(), first.grad.numpy(), [f"{w.category.__name__}: {w.message}"
                                                      for w in caught]


def _flags(size_average: Any, reduce: Any, reduction: str) -> dict[str, Any]:
    return {"size_average": size_average, "reduce": reduce, "reduction": reduction}


def test_table_covers_every_torch_loss_with_the_flags() -> None:
    torch = pytest.importorskip("torch")
    with_flags = {n for n in dir(torch.nn.functional) if callable(f := getattr(
        torch.nn.functional, n)) and not n.startswith("_") and inspect.isfunction(f)
        and "size_average" in inspect.signature(f).parameters}
    assert with_flags == set(_BY_NAME)
    for name in with_flags:  # the same parameters in the same order, defaults included
        theirs = inspect.signature(getattr(torch.nn.functional, name)).parameters
        ours = inspect.signature(getattr(F, name)).parameters
        assert [(p.name, p.default) for p in ours.values()] == \
            [(p.name, p.default) for p in theirs.values()], name


@pytest.mark.parametrize("positional", [False, True], ids=["keyword", "positional"])
@pytest.mark.parametrize("combo", _COMBOS, ids=str)
@pytest.mark.parametrize("name", list(_BY_NAME))
def test_flags_against_torch(name: str, combo: tuple, positional: bool) -> None:
    torch = pytest.importorskip("torch")
    loss, flags = _BY_NAME[name], _flags(*combo)
    if combo[2] == "bogus" and combo[:2] == (None, None):
        pytest.skip("an invalid reduction without flags is an error, tested elsewhere")
    t_val, t_grad, t_warn = _run(torch, getattr(torch.nn.functional, name), loss, flags,
                                 positional)
    a_val, a_grad, a_warn = _run(acg, getattr(F, name), loss, flags, positional)
    assert a_val.shape == t_val.shape
    assert_close(a_val, t_val, rtol=1e-10, atol=1e-12)
    assert_close(a_grad, t_grad, rtol=1e-10, atol=1e-12)
    assert a_warn == t_warn


@pytest.mark.parametrize("combo", [c for c in _COMBOS if c[:2] != (None, None)], ids=str)
@pytest.mark.parametrize("name", list(_BY_NAME))
def test_flags_stand_for_a_reduction(name: str, combo: tuple) -> None:
    """No torch needed: the flags give what ``reduction=`` of PyTorch's truth table gives,
    with PyTorch's warning."""
    loss, fn = _BY_NAME[name], getattr(F, name)
    want = _expected(*combo)
    val, grad, caught = _run(acg, fn, loss, _flags(*combo), positional=True)
    ref_val, ref_grad, _ = _run(acg, fn, loss, {"reduction": want}, positional=False)
    assert_close(val, ref_val, rtol=0, atol=0)
    assert_close(grad, ref_grad, rtol=0, atol=0)
    assert f"UserWarning: {_reduction.LEGACY_WARNING.format(want)}" in caught


def test_kl_div_batchmean_divides_what_the_flags_reduced_to() -> None:
    """PyTorch divides by the batch size after the flags' reduction when reduction is
    "batchmean" (its code reads ``reduction`` again after the legacy enum)."""
    loss = _BY_NAME["kl_div"]
    x, t = (acg.tensor(v) for v in loss.inputs.values())
    with pytest.warns(UserWarning, match="reduction='sum'"):
        got = F.kl_div(x, t, size_average=False, reduction="batchmean")
    assert_close(got.numpy(), F.kl_div(x, t, reduction="sum").numpy() / 3, rtol=1e-12)


@pytest.mark.parametrize("sa,r", [(sa, r) for sa in _FLAGS for r in _FLAGS])
def test_resolver_truth_table(sa: Any, r: Any) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _reduction.resolve(sa, r, "sum")
    assert got == _expected(sa, r, "sum")
    assert len(caught) == (0 if sa is None and r is None else 1)
    if caught:
        assert caught[0].category is UserWarning
        assert str(caught[0].message) == _reduction.LEGACY_WARNING.format(got)
        assert caught[0].filename == __file__  # the caller of resolve
    assert _reduction.legacy_get_enum(sa, r, emit_warning=False) == \
        {"none": 0, "mean": 1, "sum": 2}[_expected(sa, r, "mean")]



def _get_enum(module, reduction):
    """``module.get_enum(reduction)``'s result or error text, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = module.get_enum(reduction)
        except ValueError as e:
            got = str(e)
    return got, [str(w.message) for w in caught]

def test_legacy_module_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    from torch.nn import _reduction as theirs
    for sa in _FLAGS:
        for r in _FLAGS:
            assert _reduction.legacy_get_string(sa, r, emit_warning=False) == \
                theirs.legacy_get_string(sa, r, emit_warning=False)
    for bad in ("elementwise_mean", "bogus"):
        assert _get_enum(_reduction, bad) == _get_enum(theirs, bad)


def _module_names(torch: Any) -> list[str]:
    return [n for n in dir(torch.nn) if isinstance(c := getattr(torch.nn, n), type)
            and issubclass(c, torch.nn.Module)
            and "size_average" in inspect.signature(c.__init__).parameters]


def test_loss_modules_resolve_the_flags_as_torch() -> None:
    """Every loss module with the flags: the same ``reduction`` and warning, and the
    functional form gives the same value as the module."""
    torch = pytest.importorskip("torch")
    names = _module_names(torch)
    assert len(names) >= 17
    for name in names:
        for sa in _FLAGS:
            for r in _FLAGS:
                with warnings.catch_warnings(record=True) as t_w:
                    warnings.simplefilter("always")
                    theirs = getattr(torch.nn, name)(size_average=sa, reduce=r)
                with warnings.catch_warnings(record=True) as a_w:
                    warnings.simplefilter("always")
                    ours = getattr(nn, name)(size_average=sa, reduce=r)
                assert ours.reduction == theirs.reduction, (name, sa, r)
                assert [str(w.message) for w in a_w] == [str(w.message) for w in t_w], name


def test_weighted_l1_and_mse_mean_divides_by_the_weights() -> None:
    """PyTorch's weighted "mean" is sum(w * err) / sum(w), not the mean of w * err."""
    x, t, w = _floats(3, 4), _floats(3, 4), _RNG.uniform(0.5, 2, (3, 4))
    for name, err in (("l1_loss", np.abs(x - t)), ("mse_loss", (x - t) ** 2)):
        wants = {"none": w * err, "mean": (w * err).sum() / w.sum(), "sum": (w * err).sum()}
        for reduction, want in wants.items():
            got = getattr(F, name)(acg.tensor(x), acg.tensor(t), reduction=reduction,
                                   weight=acg.tensor(w))
            assert_close(got.numpy(), want, rtol=1e-12)
        with pytest.raises(ValueError, match="Weights and input must have the same size."):
            getattr(F, name)(acg.tensor(x), acg.tensor(t), weight=acg.tensor(w[0]))
        with pytest.raises(ValueError, match="Invalid reduction mode: bad. Expected one of"):
            getattr(F, name)(acg.tensor(x), acg.tensor(t), reduction="bad",
                             weight=acg.tensor(w))


def test_docstring_examples_run() -> None:
    import doctest
    from autograd_compile.nn import _cross_entropy, _loss_functional, functional
    for module in (_reduction, _cross_entropy, _loss_functional, functional):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
