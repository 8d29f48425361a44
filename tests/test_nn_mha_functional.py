"""F.multi_head_attention_forward and the deprecated nn.Container against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F

from conftest import assert_close

torch = pytest.importorskip("torch")

CASES = {
    "packed": dict(),
    "separate_bias_kv_zero_attn_masks": dict(separate=True, bias_kv=True, zero_attn=True,
                                             masks=True),
    "static_kv_zero_attn": dict(static=True, zero_attn=True),
    "no_bias_per_head_weights_unbatched": dict(no_bias=True, average=False, unbatched=True),
}


def _arrays(case: dict) -> dict:
    rng = np.random.default_rng(0)
    e, lq, s, n = 8, 3, 5, 2
    r = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.5  # noqa: E731
    qshape, kshape = ((lq, e), (s, e)) if case.get("unbatched") else ((lq, n, e), (s, n, e))
    a = dict(query=r(*qshape), key=r(*kshape), value=r(*kshape), out_proj_weight=r(e, e))
    if case.get("separate"):
        a.update(q_proj_weight=r(e, e), k_proj_weight=r(e, e), v_proj_weight=r(e, e))
    else:
        a["in_proj_weight"] = r(3 * e, e)
    if not case.get("no_bias"):
        a.update(in_proj_bias=r(3 * e), out_proj_bias=r(e))
    if case.get("bias_kv"):
        a.update(bias_k=r(1, 1, e), bias_v=r(1, 1, e))
    if case.get("static"):  # per-head keys/values: [N*H, S', head_dim]
        a.update(static_k=r(n * 2, 4, e // 2), static_v=r(n * 2, 4, e // 2))
    return a


def _call(lib, arrays: dict, case: dict, need_weights: bool):
    t = {k: lib.tensor(v, requires_grad=True) for k, v in arrays.items()}
    kw = {}
    if case.get("masks"):
        kw["attn_mask"] = lib.tensor(np.triu(np.ones((3, 5), bool), k=1))
        kpm = np.zeros((2, 5), bool)
        kpm[1, -1] = True
        kw["key_padding_mask"] = lib.tensor(kpm)
    out, w = lib.nn.functional.multi_head_attention_forward(
        t["query"], t["key"], t["value"], 8, 2, t.get("in_proj_weight"), t.get("in_proj_bias"),
        t.get("bias_k"), t.get("bias_v"), bool(case.get("zero_attn")), 0.0,
        t["out_proj_weight"], t.get("out_proj_bias"), training=True, need_weights=need_weights,
        use_separate_proj_weight=bool(case.get("separate")),
        q_proj_weight=t.get("q_proj_weight"), k_proj_weight=t.get("k_proj_weight"),
        v_proj_weight=t.get("v_proj_weight"), static_k=t.get("static_k"),
        static_v=t.get("static_v"), average_attn_weights=case.get("average", True),
        **kw)
    return t, out, w


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_forward_matches_torch(mode, name: str, need_weights: bool) -> None:
    case = CASES[name]
    arrays = _arrays(case)
    tt, tout, tw = _call(torch, arrays, case, need_weights)
    loss = tout.square().sum() + (tw.sum() * 0.3 if tw is not None else 0)
    loss.backward()
    at, out, w = _call(acg, arrays, case, need_weights)
    assert_close(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert (w is None) == (tw is None)
    if w is not None:
        assert_close(w.detach().numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    aloss = out.square().sum() + (w.sum() * 0.3 if w is not None else 0)
    with mode():
        aloss.backward()
    for k, tv in tt.items():
        if tv.grad is None:  # static_k/v: key and value do not reach the output
            assert at[k].grad is None, k
            continue
        assert_close(at[k].grad.numpy(), tv.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_multi_head_attention_forward_errors() -> None:
    x = acg.ones(3, 2, 8)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6"):
        F.multi_head_attention_forward(x, x, x, 6, 2, acg.ones(24, 8), None, None, None,
                                       False, 0.0, acg.eye(8), None)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        F.multi_head_attention_forward(x, x, x, 8, 2, acg.ones(24, 8), None, None, None,
                                       False, 0.0, acg.eye(8), None, is_causal=True)


def test_static_kv_shape_and_bias_errors() -> None:
    x = acg.ones(3, 2, 8)
    with pytest.raises(AssertionError, match="expecting static_k.size\\(0\\) of 4, but got 3"):
        F.multi_head_attention_forward(x, x, x, 8, 2, acg.ones(24, 8), None, None, None,
                                       False, 0.0, acg.eye(8), None, static_k=acg.ones(3, 5, 4))
    with pytest.raises(AssertionError, match="bias cannot be added to static key."):
        F.multi_head_attention_forward(x, x, x, 8, 2, acg.ones(24, 8), None, acg.ones(1, 1, 8),
                                       acg.ones(1, 1, 8), False, 0.0, acg.eye(8), None,
                                       static_k=acg.ones(4, 5, 4))


def test_container_is_deprecated_module() -> None:
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = acg.nn.Container(fc=acg.nn.Linear(2, 3), act=acg.nn.ReLU())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tc = torch.nn.Container(fc=torch.nn.Linear(2, 3), act=torch.nn.ReLU())
    assert list(c._modules) == list(tc._modules) == ["fc", "act"]
    assert list(c.state_dict()) == list(tc.state_dict())
    assert isinstance(c, acg.nn.Module)
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        class Sub(acg.nn.Container):
            pass
    with pytest.warns(FutureWarning):
        s = Sub(a=acg.nn.Linear(1, 1))
    assert [n for n, _ in s.named_parameters()] == ["a.weight", "a.bias"]


def test_sdpa_grouped_query_attention(mode):
    """enable_gqa: 8 query heads over 2 key/value heads, each serving 4 consecutive query
    heads; values against numpy, gradients against torch where installed."""
    import numpy as np
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in [(2, 8, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)])
    kr, vr = np.repeat(k, 4, axis=1), np.repeat(v, 4, axis=1)
    scores = q @ kr.transpose(0, 1, 3, 2) / 2.0 + np.triu(np.full((5, 5), -np.inf), 1)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ vr
    qt, kt, vt = (acg.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=True)
    np.testing.assert_allclose(out.detach().numpy(), want, atol=1e-5)
    with mode():
        out.pow(2).sum().backward()
    with pytest.raises(RuntimeError, match="must divide the number of heads in query"):
        F.scaled_dot_product_attention(qt, kt[:, :1].expand(2, 3, 5, 4), vt, enable_gqa=True)
    torch = pytest.importorskip("torch")
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True,
                                                     enable_gqa=True).pow(2).sum().backward()
    for ours, theirs in ((qt, tq), (kt, tk), (vt, tv)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-4)
