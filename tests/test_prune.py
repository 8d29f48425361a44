"""nn.utils.prune: masks against a numpy oracle (no torch needed) and against PyTorch (masks,
ties, iterative and global pruning, state_dict keys and values, remove, checkpoints, errors),
and training a pruned model in every execution mode and under ``acg.compile``."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from autograd_compile.nn.utils import prune
from autograd_compile.nn.utils.prune import _topk_set
from conftest import assert_close


def _linear(w: np.ndarray, b: np.ndarray | None = None) -> nn.Linear:
    m = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    m.weight.data = acg.tensor(w.astype(np.float32))
    if b is not None:
        m.bias.data = acg.tensor(b.astype(np.float32))
    return m


def _distinct(shape: tuple, seed: int = 0) -> np.ndarray:
    """Weights of distinct magnitudes: every oracle choice is unique."""
    n = math.prod(shape)
    mags = np.random.default_rng(seed).permutation(n) + 1.0
    signs = np.where(np.random.default_rng(seed + 1).random(n) < 0.5, -1.0, 1.0)
    return (mags * signs / n).reshape(shape).astype(np.float32)


def _np_l1_mask(w: np.ndarray, k: int, keep: np.ndarray | None = None) -> np.ndarray:
    """Zero the k entries of least |w| among those ``keep`` marks (default: all)."""
    keep = np.ones(w.shape, bool) if keep is None else keep
    mask = keep.astype(np.float32)
    cand = np.flatnonzero(keep)
    mask.reshape(-1)[cand[np.argsort(np.abs(w.reshape(-1)[cand]))[:k]]] = 0
    return mask


# -- numpy oracle ------------------------------------------------------------------------------
@pytest.mark.parametrize("amount,k", [(5, 5), (0.4, 5), (0, 0), (1.0, 12), (0.5, 6)])
def test_l1_unstructured_reparametrises_like_torch(amount, k) -> None:
    w, b = _distinct((3, 4)), np.arange(3.0)
    m = _linear(w, b)
    orig = m.weight
    assert prune.l1_unstructured(m, "weight", amount) is m
    sd = m.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_mask"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert m.weight_orig is orig and "weight" not in m._parameters
    np.testing.assert_array_equal(sd["weight_orig"].numpy(), w)
    np.testing.assert_array_equal(sd["weight_mask"].numpy(), _np_l1_mask(w, k))
    assert sd["weight_mask"].dtype == acg.float32
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * _np_l1_mask(w, k))
    assert prune.is_pruned(m) and prune.is_pruned(nn.Sequential(m))


def test_ties_are_broken_as_torchs_cpu_topk() -> None:
    """Pinned from torch 2.x on CPU (libstdc++ nth_element / partial_sort)."""
    v = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1], np.float32)
    assert _topk_set(v, 3, largest=False).tolist() == [1, 5, 9]
    assert _topk_set(np.ones(10, np.float32), 4, largest=False).tolist() == [5, 6, 7, 8]
    assert _topk_set(np.ones(200, np.float32), 2, largest=False).tolist() == [0, 1]
    assert _topk_set(np.ones(7, np.float32), 5, largest=True).tolist() == [0, 3, 4, 5, 6]
    m = _linear(np.ones((2, 5), np.float32))
    prune.l1_unstructured(m, "weight", 4)
    assert np.flatnonzero(m.weight_mask.numpy() == 0).tolist() == [5, 6, 7, 8]


def test_topk_set_without_ties_is_the_k_smallest() -> None:
    v = np.random.default_rng(3).standard_normal(1000)
    for k in (1, 10, 500, 999, 1000):
        assert _topk_set(v, k, largest=False).tolist() == sorted(np.argsort(v)[:k].tolist())
        assert _topk_set(v, k, largest=True).tolist() == sorted(np.argsort(-v)[:k].tolist())


@pytest.mark.parametrize("n,dim", [(2, 0), (1, 1), (float("inf"), -1), (3, 0)])
def test_ln_structured_zeroes_the_channels_of_least_norm(n, dim) -> None:
    w = _distinct((4, 3, 2, 2), seed=5)
    m = nn.Conv2d(3, 4, 2)
    m.weight.data = acg.tensor(w)
    prune.ln_structured(m, "weight", amount=0.5, n=n, dim=dim)
    other = tuple(d for d in range(4) if d != dim % 4)
    norms = np.linalg.norm(np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1), ord=n, axis=1)
    drop = np.argsort(norms)[:round(0.5 * w.shape[dim])]
    expect = np.ones(w.shape, np.float32)
    np.moveaxis(expect, dim, 0)[drop] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), expect)
    assert m.weight_mask.numpy().sum(axis=other).tolist().count(0) == len(drop)


def test_iterative_pruning_prunes_only_what_is_left() -> None:
    """l1 (30%), then ln_structured (1 of the 3 surviving rows), then l1 (4 of the rest):
    each amount is taken of what the earlier methods left, scored on the original weight."""
    w = _distinct((4, 5), seed=7)
    m = _linear(w)
    prune.l1_unstructured(m, "weight", 0.3)
    m1 = _np_l1_mask(w, 6)
    prune.random_structured(m, "weight", amount=1, dim=0)  # 4 rows alive -> 3
    m2 = m.weight_mask.numpy()
    assert m2.sum(axis=1).tolist().count(0) == 1 and np.all(m2 <= m1)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    rows = np.flatnonzero(m2.sum(axis=1) != 0)
    gone = rows[np.argmin(np.linalg.norm(w[rows], axis=1))]
    m3 = m2.copy()
    m3[gone] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), m3)
    prune.l1_unstructured(m, "weight", 4)
    np.testing.assert_array_equal(m.weight_mask.numpy(), _np_l1_mask(w, 4, keep=m3 == 1))
    hooks = list(m._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    assert [type(h).__name__ for h in hooks[0]] == ["L1Unstructured", "RandomStructured",
                                                    "LnStructured", "L1Unstructured"]
    assert list(m.state_dict()) == ["weight_orig", "weight_mask"]


def test_global_unstructured_ranks_across_layers() -> None:
    a, b = _linear(_distinct((3, 4), 1), np.zeros(3)), _linear(_distinct((2, 3), 2))
    b.weight.data = b.weight.data * 3
    params = [(a, "weight"), (b, "weight"), (a, "bias")]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=10)
    flat = np.concatenate([a.weight_orig.detach().numpy().ravel(),
                           b.weight_orig.detach().numpy().ravel(), np.zeros(3)])
    mask = _np_l1_mask(flat, 10)
    got = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel(),
                          a.bias_mask.numpy().ravel()])
    np.testing.assert_array_equal(got, mask)
    assert list(a.state_dict()) == ["weight_orig", "bias_orig", "weight_mask", "bias_mask"]


def test_global_unstructured_with_importance_scores_and_earlier_pruning() -> None:
    a, b = _linear(_distinct((2, 3), 3)), _linear(_distinct((2, 2), 4))
    prune.l1_unstructured(a, "weight", 2)
    scores = {(b, "weight"): acg.tensor([[10.0, 0.01], [10.0, 10.0]])}
    prune.global_unstructured([(a, "weight"), (b, "weight")], prune.L1Unstructured,
                              importance_scores=scores, amount=2)
    wa = a.weight_orig.detach().numpy().ravel()
    flat = np.concatenate([wa, [10.0, 0.01, 10.0, 10.0]])
    first = np.concatenate([_np_l1_mask(wa.reshape(2, 3), 2).ravel(), np.ones(4)])
    expect = _np_l1_mask(flat, 2, keep=first == 1)
    got = np.concatenate([a.weight_mask.numpy().ravel(), b.weight_mask.numpy().ravel()])
    np.testing.assert_array_equal(got, expect)
    assert b.weight_mask.numpy()[0, 1] == 0


def test_remove_makes_the_pruning_permanent() -> None:
    w = _distinct((3, 3), 8)
    m = _linear(w, np.ones(3))
    prune.l1_unstructured(m, "weight", 4)
    orig, mask = m.weight_orig, m.weight_mask.numpy()
    assert prune.remove(m, "weight") is m
    assert list(m.state_dict()) == ["bias", "weight"] and m.weight is orig
    assert m.weight.grad_fn is None and m.weight.requires_grad
    np.testing.assert_array_equal(m.weight.detach().numpy(), w * mask)
    assert not prune.is_pruned(m) and not m._forward_pre_hooks
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned "
                                         "before pruning can be removed"):
        prune.remove(m, "weight")


def test_forward_recomputes_the_weight_after_the_original_changes() -> None:
    m = _linear(_distinct((2, 3), 9))
    prune.custom_from_mask(m, "weight", mask=acg.tensor([[True, False, True], [False] * 3]))
    with acg.no_grad():
        m.weight_orig.copy_(acg.ones(2, 3))
    assert_close(m(acg.ones(1, 3)).detach().numpy(), [[2.0, 0.0]])
    assert m.weight.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]


def test_gradients_reach_the_original_masked(mode) -> None:
    w = _distinct((3, 4), 10)
    m = _linear(w, np.zeros(3))
    prune.l1_unstructured(m, "weight", 0.5)
    prune.random_unstructured(m, "bias", 1)
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    loss = (m(acg.tensor(x)) ** 2).sum()
    with mode():
        loss.backward()
    mask, bmask = m.weight_mask.numpy(), m.bias_mask.numpy()
    gy = 2 * (x @ (w * mask).T)
    assert_close(m.weight_orig.grad.numpy(), (gy.T @ x) * mask, rtol=1e-5, atol=1e-5)
    assert_close(m.bias_orig.grad.numpy(), gy.sum(0) * bmask, rtol=1e-5, atol=1e-5)
    assert m.weight_mask.grad is None and bmask.sum() == 2


def test_compiled_pruned_model_matches_eager(mode) -> None:
    acg.manual_seed(0)
    eager = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    prune.l1_unstructured(eager[0], "weight", 0.5)
    prune.ln_structured(eager[2], "weight", 2, n=2, dim=1)
    ours = copy.deepcopy(eager)
    compiled = acg.compile(ours, fullgraph=True)
    x = acg.randn(3, 4)
    for _ in range(2):
        for model, run in ((eager, eager), (ours, compiled)):
            model.zero_grad()
            out = run(x)
            with mode():
                out.square().sum().backward()
        assert_close(compiled(x).detach().numpy(), eager(x).detach().numpy())
        for (n, p), (_, q) in zip(ours.named_parameters(), eager.named_parameters()):
            assert_close(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    prune.l1_unstructured(ours[0], "weight", 3)  # a changed mask reaches the compiled model
    prune.l1_unstructured(eager[0], "weight", 3)
    assert_close(compiled(x).detach().numpy(), eager(x).detach().numpy())


def test_state_dict_round_trip_into_an_identity_pruned_model() -> None:
    src = _linear(_distinct((3, 2), 11), np.ones(3))
    prune.l1_unstructured(src, "weight", 2)
    dst = prune.identity(_linear(np.zeros((3, 2)), np.zeros(3)), "weight")
    dst.load_state_dict(src.state_dict())
    x = acg.randn(4, 2)
    assert_close(dst(x).detach().numpy(), src(x).detach().numpy())
    assert dst.weight_mask.numpy().sum() == 4


def test_random_methods_draw_from_our_generator() -> None:
    masks = []
    for _ in range(2):
        acg.manual_seed(3)
        m = nn.Conv2d(2, 6, 3)
        prune.random_unstructured(m, "weight", 0.25)
        prune.random_structured(m, "weight", 2, dim=0)
        masks.append(m.weight_mask.numpy())
    np.testing.assert_array_equal(masks[0], masks[1])
    assert (masks[0].sum(axis=(1, 2, 3)) == 0).sum() == 2
    assert (masks[0] == 0).sum() >= round(0.25 * 108)


def test_pruning_method_objects() -> None:
    t = acg.tensor([[1.0, -3.0], [0.5, 2.0]])
    assert prune.L1Unstructured(2).prune(t).tolist() == [[0.0, -3.0], [0.0, 2.0]]
    assert prune.LnStructured(1, n=1, dim=0).compute_mask(t, acg.ones(2, 2)).tolist() == \
        [[1.0, 1.0], [0.0, 0.0]]
    assert prune.Identity().compute_mask(t, acg.ones(2, 2)).tolist() == [[1.0] * 2] * 2
    scores = acg.tensor([[9.0, 9.0], [0.0, 9.0]])
    assert prune.L1Unstructured(1).prune(t, importance_scores=scores).tolist() == \
        [[1.0, -3.0], [0.0, 2.0]]
    method = prune.L1Unstructured(1)
    method._tensor_name = "weight"  # set by apply(); PyTorch's container reads it
    c = prune.PruningContainer(method)
    assert len(c) == 1 and c._tensor_name == "weight" and isinstance(c[0], prune.L1Unstructured)


# -- errors ---------------------------------------------------------------------------------------
_ERRORS = [  # (call on a fresh Linear(3, 2), exception type, message)
    (lambda m: prune.l1_unstructured(m, "weight", 7), ValueError,
     "amount=7 should be smaller than the number of parameters to prune=6"),
    (lambda m: prune.l1_unstructured(m, "weight", -1), ValueError,
     "amount=-1 should either be a float in the range [0, 1] or a non-negative integer"),
    (lambda m: prune.random_unstructured(m, "weight", 1.5), ValueError,
     "amount=1.5 should either be a float in the range [0, 1] or a non-negative integer"),
    (lambda m: prune.l1_unstructured(m, "weight", "3"), TypeError,
     "Invalid type for amount: 3. Must be int or float."),
    (lambda m: prune.ln_structured(m, "bias", 1, n=2, dim=0), ValueError,
     "Structured pruning can only be applied to multidimensional tensors. Found tensor of "
     "shape torch.Size([2]) with 1 dims"),
    (lambda m: prune.random_structured(m, "weight", 1, dim=2), IndexError,
     "Invalid index 2 for tensor of size torch.Size([2, 3])"),
    (lambda m: prune.ln_structured(m, "weight", 3, n=1, dim=0), ValueError,
     "amount=3 should be smaller than the number of parameters to prune=2"),
    (lambda m: prune.l1_unstructured(m, "weight", 1, importance_scores=acg.ones(3)),
     AssertionError, "importance_scores should have the same shape as parameter weight of"),
    (lambda m: prune.custom_from_mask(m, "weight", acg.ones(3, 2)), AssertionError,
     "default_mask shape torch.Size([2, 3]) must match self.mask shape torch.Size([3, 2])"),
    (lambda m: prune.global_unstructured(m, prune.L1Unstructured, amount=1), TypeError,
     "global_unstructured(): parameters is not an Iterable"),
    (lambda m: prune.global_unstructured([(m, "weight")], prune.L1Unstructured,
                                         importance_scores=[], amount=1), TypeError,
     "global_unstructured(): importance_scores must be of type dict"),
    (lambda m: prune.global_unstructured([(m, "weight")], prune.RandomStructured, amount=1),
     TypeError, 'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`.'),
    (lambda m: prune.PruningContainer(prune.Identity.apply(m, "weight")).add_pruning_method(3),
     TypeError, "<class 'int'> is not a BasePruningMethod subclass"),
    (lambda m: prune.PruningContainer(prune.Identity.apply(m, "weight")).add_pruning_method(
        prune.Identity.apply(m, "bias")), ValueError,
     "Can only add pruning methods acting on the parameter named 'weight'"),
]


@pytest.mark.parametrize("call,exc,msg", _ERRORS)
def test_errors_have_torchs_types_and_messages(call, exc, msg) -> None:
    m = nn.Linear(3, 2)
    with pytest.raises(exc) as info:
        call(m)
    assert msg in str(info.value)


def test_a_failed_pruning_leaves_the_parameter_in_place() -> None:
    m = nn.Linear(3, 2)
    w = m.weight
    with pytest.raises(ValueError):
        prune.l1_unstructured(m, "weight", 10)
    assert m.weight is w and list(m.state_dict()) == ["bias", "weight"]  # as PyTorch: re-added
    assert not prune.is_pruned(m)


# -- against PyTorch ------------------------------------------------------------------------------
def _torch_prune():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune
    return torch, tprune


def _twins(build):
    """The same model twice, ours and torch's, from torch's initialisation."""
    torch, _ = _torch_prune()
    torch.manual_seed(0)
    theirs = build(torch.nn)
    ours = build(nn)
    ours.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    return ours, theirs


def _same_state(ours, theirs) -> None:
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k, v in tsd.items():
        np.testing.assert_allclose(sd[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-7, err_msg=k)


_CONV = lambda mod: mod.Conv2d(4, 6, 3)  # noqa: E731
_STEPS = [  # (name, kwargs): applied in turn to the same tensor
    [("l1_unstructured", dict(amount=0.3))],
    [("l1_unstructured", dict(amount=17))],
    [("ln_structured", dict(amount=2, n=2, dim=0))],
    [("ln_structured", dict(amount=0.5, n=1, dim=1))],
    [("ln_structured", dict(amount=0.34, n=float("inf"), dim=-1))],
    [("ln_structured", dict(amount=1, n=float("-inf"), dim=2))],
    [("l1_unstructured", dict(amount=0.3)), ("ln_structured", dict(amount=2, n=2, dim=0)),
     ("l1_unstructured", dict(amount=0.25)), ("ln_structured", dict(amount=0.5, n=1, dim=1))],
    [("ln_structured", dict(amount=3, n=2, dim=0)), ("l1_unstructured", dict(amount=40))],
]


@pytest.mark.parametrize("steps", _STEPS, ids=lambda s: "+".join(n for n, _ in s))
@pytest.mark.parametrize("rounded", [False, True], ids=["float", "ties"])
def test_masks_and_state_match_torch(steps, rounded) -> None:
    """Same weights, same masks; ``ties``: weights rounded to a few values, so most choices
    are among equal magnitudes (norms) and follow torch's topk tie order."""
    torch, tprune = _torch_prune()
    ours, theirs = _twins(_CONV)
    if rounded:
        with torch.no_grad():
            theirs.weight.copy_((theirs.weight * 8).round() / 8)
        ours.weight.data = acg.tensor(theirs.weight.detach().numpy())
    for name, kw in steps:
        getattr(prune, name)(ours, "weight", **kw)
        getattr(tprune, name)(theirs, "weight", **kw)
        _same_state(ours, theirs)
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 5)).astype(np.float32)
    assert_close(ours(acg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                 rtol=1e-5, atol=1e-5)
    prune.remove(ours, "weight")
    tprune.remove(theirs, "weight")
    _same_state(ours, theirs)


def test_topk_ties_match_torch() -> None:
    torch, _ = _torch_prune()
    rng = np.random.default_rng(0)
    for trial in range(400):
        n = int(rng.integers(1, 3000 if trial % 10 == 0 else 200))
        v = rng.integers(0, int(rng.integers(1, 6)), n).astype(np.float32)
        if trial % 9 == 0:
            v[rng.integers(0, n, 2)] = np.nan
        k = int(rng.integers(1, n + 1)) if trial % 3 else int(rng.integers(1, n // 64 + 2))
        largest = bool(trial % 2)
        expect = torch.topk(torch.tensor(v), k, largest=largest).indices.numpy()
        assert _topk_set(v, k, largest).tolist() == sorted(expect.tolist()), (n, k, largest)


def test_global_unstructured_matches_torch() -> None:
    torch, tprune = _torch_prune()
    build = lambda mod: mod.Sequential(mod.Conv2d(2, 3, 3), mod.Flatten(),  # noqa: E731
                                       mod.Linear(12, 5), mod.Linear(5, 2))
    ours, theirs = _twins(build)
    prune.l1_unstructured(ours[3], "weight", 3)
    tprune.l1_unstructured(theirs[3], "weight", 3)
    scores = np.random.default_rng(1).standard_normal((5, 12)).astype(np.float32)
    for mod, model, scored in ((prune, ours, acg.tensor), (tprune, theirs, torch.tensor)):
        params = [(model[0], "weight"), (model[2], "weight"), (model[3], "weight"),
                  (model[2], "bias")]
        mod.global_unstructured(params, mod.L1Unstructured, amount=0.4,
                                importance_scores={(model[2], "weight"): scored(scores)})
    _same_state(ours, theirs)
    for i in (0, 2, 3):
        hooks = [type(h).__name__ for h in ours[i]._forward_pre_hooks.values()]
        thooks = [type(h).__name__ for h in theirs[i]._forward_pre_hooks.values()]
        assert hooks == thooks


def test_identity_and_custom_from_mask_match_torch() -> None:
    torch, tprune = _torch_prune()
    ours, theirs = _twins(lambda mod: mod.Linear(4, 3))
    mask = np.random.default_rng(2).random((3, 4)) < 0.5
    prune.identity(ours, "bias")
    tprune.identity(theirs, "bias")
    prune.custom_from_mask(ours, "weight", acg.tensor(mask))
    tprune.custom_from_mask(theirs, "weight", torch.tensor(mask))
    prune.l1_unstructured(ours, "bias", 1)
    tprune.l1_unstructured(theirs, "bias", 1)
    _same_state(ours, theirs)
    assert prune.is_pruned(ours) == tprune.is_pruned(theirs)


def _train(model, run, x, y, backward, steps: int = 5) -> list[float]:
    opt_mod = acg.optim if isinstance(model, nn.Module) else __import__("torch").optim
    opt = opt_mod.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((run(x) - y) ** 2).mean()
        backward(loss)
        opt.step()
        losses.append(float(loss.detach()))
    return losses


_MODELS = {
    "mlp": (lambda mod: mod.Sequential(mod.Linear(6, 8), mod.Tanh(), mod.Linear(8, 3)),
            (7, 6), (7, 3)),
    "cnn": (lambda mod: mod.Sequential(mod.Conv2d(2, 4, 3), mod.ReLU(), mod.Flatten(),
                                       mod.Linear(4 * 4 * 4, 3)), (5, 2, 6, 6), (5, 3)),
}


def _prune_both(model, mod) -> None:
    mod.l1_unstructured(model[0], "weight", 0.4)
    mod.ln_structured(model[0], "weight", 1, n=2, dim=0)
    mod.global_unstructured([(model[0], "bias"), (model[-1], "weight")], mod.L1Unstructured,
                            amount=0.3)


@pytest.mark.parametrize("compiled", [False, True], ids=["module", "acg.compile"])
@pytest.mark.parametrize("kind", list(_MODELS))
def test_training_a_pruned_model_matches_torch(mode, kind, compiled) -> None:
    torch, tprune = _torch_prune()
    build, xs, ys = _MODELS[kind]
    ours, theirs = _twins(build)
    _prune_both(ours, prune)
    _prune_both(theirs, tprune)
    _same_state(ours, theirs)
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ys).astype(np.float32)

    def backward(loss):
        with mode():
            loss.backward()
    run = acg.compile(ours, fullgraph=True) if compiled else ours
    got = _train(ours, run, acg.tensor(x), acg.tensor(y), backward)
    expect = _train(theirs, theirs, torch.tensor(x), torch.tensor(y), lambda loss: loss.backward())
    assert_close(got, expect, rtol=1e-5, atol=1e-6)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k, v in tsd.items():
        assert_close(sd[k].numpy(), v.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert_close(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5)
        if name.endswith("_orig"):  # pruned entries never move
            mask = tsd[name[:-5] + "_mask"].numpy()
            assert not np.any(p.grad.numpy()[mask == 0])


def test_a_torch_checkpoint_of_a_pruned_model_loads(tmp_path) -> None:
    torch, tprune = _torch_prune()
    build = _MODELS["cnn"][0]
    torch.manual_seed(1)
    theirs = build(torch.nn)
    _prune_both(theirs, tprune)
    torch.save(theirs.state_dict(), tmp_path / "pruned.pt")
    ours = build(nn)
    prune.identity(ours[0], "weight")
    prune.identity(ours[0], "bias")
    prune.identity(ours[-1], "weight")
    missing, unexpected = ours.load_state_dict(acg.load(tmp_path / "pruned.pt"))
    assert not missing and not unexpected
    _same_state(ours, theirs)
    x = np.random.default_rng(5).standard_normal((2, 2, 6, 6)).astype(np.float32)
    assert_close(ours(acg.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                 rtol=1e-5, atol=1e-6)
    for m, name in ((ours[0], "weight"), (ours[0], "bias"), (ours[-1], "weight")):
        prune.remove(m, name)
    for m, name in ((theirs[0], "weight"), (theirs[0], "bias"), (theirs[-1], "weight")):
        tprune.remove(m, name)
    _same_state(ours, theirs)


def _outcome(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the type and message are what is compared)
        return type(e).__name__, str(e).replace("torch.nn.utils.prune",
                                                "autograd_compile.nn.utils.prune")
    return None


_ERROR_CALLS = [  # (prune-module -> call) on fresh Linear(3, 2) / Conv1d(2, 4, 3), by name
    lambda P, m, c: P.l1_unstructured(m, "weight", 7),
    lambda P, m, c: P.l1_unstructured(m, "weight", -2),
    lambda P, m, c: P.l1_unstructured(m, "weight", -0.1),
    lambda P, m, c: P.random_unstructured(m, "weight", 1.01),
    lambda P, m, c: P.l1_unstructured(m, "weight", "0.5"),
    lambda P, m, c: P.l1_unstructured(m, "weight", None),
    lambda P, m, c: P.ln_structured(m, "bias", 1, n=2, dim=0),
    lambda P, m, c: P.ln_structured(c, "weight", 5, n=2, dim=0),
    lambda P, m, c: P.ln_structured(c, "weight", 1, n=2, dim=3),
    lambda P, m, c: P.random_structured(c, "weight", 3, dim=1),
    lambda P, m, c: P.random_structured(c, "weight", 1.5, dim=1),
    lambda P, m, c: P.ln_structured(c, "weight", 1, n=2, dim=0,
                                    importance_scores=c.weight[0]),
    lambda P, m, c: P.global_unstructured(5, P.L1Unstructured, amount=1),
    lambda P, m, c: P.global_unstructured([(m, "weight")], P.L1Unstructured,
                                          importance_scores=(), amount=1),
    lambda P, m, c: P.global_unstructured([(m, "weight"), (c, "weight")], P.L1Unstructured,
                                          amount=31),
    lambda P, m, c: P.L1Unstructured(2).prune(m.weight, importance_scores=m.bias),
]


@pytest.mark.parametrize("i", range(len(_ERROR_CALLS)))
def test_error_types_and_messages_equal_torchs(i) -> None:
    torch, tprune = _torch_prune()
    call = _ERROR_CALLS[i]
    ours = _outcome(lambda: call(prune, nn.Linear(3, 2), nn.Conv1d(2, 4, 3)))
    theirs = _outcome(lambda: call(tprune, torch.nn.Linear(3, 2), torch.nn.Conv1d(2, 4, 3)))
    assert ours is not None and ours == theirs


def test_failed_pruning_restores_as_torch() -> None:
    torch, tprune = _torch_prune()
    ours, theirs = _twins(lambda mod: mod.Linear(3, 2))
    for mod, model in ((prune, ours), (tprune, theirs)):
        with pytest.raises(ValueError):
            mod.l1_unstructured(model, "weight", 9)
        mod.l1_unstructured(model, "weight", 2)
        with pytest.raises(ValueError):
            mod.l1_unstructured(model, "weight", 9)  # a container: the old pruning stays
    _same_state(ours, theirs)
    assert len(ours._forward_pre_hooks) == len(theirs._forward_pre_hooks)
