"""What the op table cannot express: gradients that are not derivatives (padding_idx,
scale_grad_by_freq), random masks (attention dropout), running statistics, pooling indices,
errors with PyTorch's exception types; every backward in all three execution modes."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from conftest import assert_close, numeric_grad


def _leaf(a: np.ndarray) -> acg.Tensor:
    return acg.tensor(np.asarray(a, np.float64), requires_grad=True)


def _softmax_attn(q, k, v, keep=None, p=0.0):
    probs = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -1)
    if keep is not None:
        probs = jnp.where(keep, probs / (1 - p), 0.0)
    return probs @ v


# -- embedding ------------------------------------------------------------------------------
def test_embedding_padding_idx_gets_no_gradient(mode) -> None:
    rng = np.random.default_rng(0)
    w0, g0 = rng.standard_normal((6, 3)), rng.standard_normal((2, 3, 3))
    idx = np.array([[1, 5, 5], [0, 1, 2]])
    w = _leaf(w0)
    out = F.embedding(acg.tensor(idx), w, padding_idx=-1)  # -1 wraps to row 5
    with mode():
        (out * acg.tensor(g0)).sum().backward()
    want = np.zeros((6, 3))
    np.add.at(want, idx.reshape(-1), g0.reshape(-1, 3))
    want[5] = 0
    assert_close(w.grad, want, rtol=1e-12)
    assert_close(out, w0[idx], rtol=0)  # the padding row is still looked up


def test_embedding_scale_grad_by_freq(mode) -> None:
    w = _leaf(np.ones((4, 2)))
    idx = np.array([3, 3, 1, 3])
    with mode():
        F.embedding(acg.tensor(idx), w, scale_grad_by_freq=True).sum().backward()
    assert_close(w.grad, [[0, 0], [1, 1], [0, 0], [1, 1]], rtol=1e-12)  # 3 hits / count 3


@pytest.mark.parametrize("rows", [28, 1000], ids=["one-hot", "sorted"])
@pytest.mark.parametrize("tier", ["host", "xla"])
def test_embedding_backward_is_one_op_on_either_tier(rows: int, tier: str) -> None:
    """EmbeddingBackward0 runs PyTorch's embedding_dense_backward: numpy's (a one-hot matmul
    for a few rows, a sort and a segment sum for many) and XLA's scatter-add both equal
    np.add.at, with padding_idx and scale_grad_by_freq; the double backward reads rows back."""
    from autograd_compile.kernels import _xp
    rng = np.random.default_rng(2)
    idx = rng.integers(0, rows, (16, 32))
    g0 = rng.standard_normal((16, 32, 8)).astype(np.float32)
    hits = np.bincount(idx.ravel(), minlength=rows).astype(np.float32)
    for pad, scale in ((-1, False), (int(idx[0, 0]), False), (-1, True)):
        w = acg.tensor(rng.standard_normal((rows, 8)).astype(np.float32), requires_grad=True)
        with _xp.forced(tier):
            out = F.embedding(acg.tensor(idx), w, padding_idx=None if pad < 0 else pad,
                              scale_grad_by_freq=scale)
            assert out.grad_fn.name() == "EmbeddingBackward0"
            (out * acg.tensor(g0)).sum().backward()
        want = np.zeros((rows, 8), np.float32)
        terms = g0.reshape(-1, 8) / (hits[idx.ravel()][:, None] if scale else 1)
        np.add.at(want, idx.ravel(), terms)
        if pad >= 0:
            want[pad] = 0
        np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-5)
    g = acg.tensor(g0[:2, :3], requires_grad=True)
    with _xp.forced(tier):
        dw = acg.ops.acg.embedding_dense_backward(g, acg.tensor(idx[:2, :3]), rows, -1, True)
        (dw * acg.tensor(np.arange(rows * 8.0, dtype=np.float32).reshape(rows, 8))).sum().backward()
    count = np.bincount(idx[:2, :3].ravel(), minlength=rows)[idx[:2, :3]][..., None]
    want = np.arange(rows * 8.0).reshape(rows, 8)[idx[:2, :3]] / count
    np.testing.assert_allclose(g.grad.numpy(), want, rtol=1e-6)


def test_embedding_max_norm_renormalises_rows_in_place() -> None:
    w = acg.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = F.embedding(acg.tensor([0, 1]), w, max_norm=1.0)
    assert_close(w, [[0.6, 0.8], [0.3, 0.4], [6.0, 8.0]], rtol=1e-5)  # row 2 not looked up
    assert_close(out, [[0.6, 0.8], [0.3, 0.4]], rtol=1e-5)


def test_embedding_errors() -> None:
    w = acg.randn(4, 2)
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(acg.tensor([1, 4]), w)
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding(acg.tensor([1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx"):
        F.embedding(acg.tensor([1]), w, padding_idx=4)


# -- attention ------------------------------------------------------------------------------
def test_sdpa_fully_masked_row_is_zero_with_finite_gradients(mode) -> None:
    rng = np.random.default_rng(1)
    q, k, v = (_leaf(rng.standard_normal(s)) for s in ((3, 4), (5, 4), (5, 2)))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=acg.tensor(mask))
    with mode():
        out.sum().backward()
    assert_close(out[1], np.zeros(2), rtol=0, atol=0)
    want = jax.grad(lambda *a: _softmax_attn(*a)[np.array([0, 2])].sum(), (0, 1, 2))(
        *(jnp.asarray(t.detach().numpy()) for t in (q, k, v)))
    for t, g in zip((q, k, v), want):
        assert_close(t.grad, g, rtol=1e-10, atol=1e-12)


def _dropout_step(mode, q0, k0, p: float) -> tuple:
    """Attention with v = I: the output is the dropped-out probability matrix itself, so the
    mask each call drew can be read back and the reference gradient built from it."""
    q, k, v = _leaf(q0), _leaf(k0), _leaf(np.eye(k0.shape[-2]))
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
    w = np.linspace(-1, 1, out.numel()).reshape(out.shape)
    with mode():
        (out * acg.tensor(w)).sum().backward()
    keep = out.detach().numpy() != 0
    f = lambda q, k: (_softmax_attn(q, k, jnp.eye(k0.shape[-2]), keep, p) * w).sum()  # noqa
    want = jax.grad(f, (0, 1))(jnp.asarray(q0), jnp.asarray(k0))
    assert_close(out, _softmax_attn(q0, k0, np.eye(k0.shape[-2]), keep, p), rtol=1e-10)
    assert_close(q.grad, want[0], rtol=1e-9, atol=1e-12)
    assert_close(k.grad, want[1], rtol=1e-9, atol=1e-12)
    return keep


def test_sdpa_dropout_mask_is_a_graph_input(mode) -> None:
    rng = np.random.default_rng(2)
    q0, k0 = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 7, 3))
    acg.manual_seed(5)
    first = _dropout_step(mode, q0, k0, 0.4)
    second = _dropout_step(mode, q0, k0, 0.4)  # fresh mask, same captured graph
    assert 0.3 < 1 - first.mean() < 0.7 and (first != second).any()
    acg.manual_seed(5)
    assert (_dropout_step(mode, q0, k0, 0.4) == first).all()  # the seed fixes the stream
    if mode.compiled:
        assert acg.compiled_autograd.counters["captures"] == 1


def test_sdpa_double_backward_raises_naming_the_op() -> None:
    q = acg.randn(3, 4, dtype=acg.float64, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    (g,) = acg.autograd.grad(out.sum(), [q], create_graph=True)
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention_backward"):
        g.sum().backward()


def test_sdpa_errors() -> None:
    q = acg.randn(2, 3, 4)
    with pytest.raises(RuntimeError, match="should not be set when is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=acg.ones(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match="same floating dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(RuntimeError, match="must match the size"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=acg.ones(2, 4, dtype=acg.bool))
    with pytest.raises(RuntimeError, match=r"\[2, 3, 4\]"):
        F.scaled_dot_product_attention(q, acg.randn(2, 3, 5), q)
    with pytest.raises(ValueError, match="dropout probability"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=-0.1)


def test_sdpa_bfloat16_softmax_in_float32() -> None:
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(s) * 4 for s in ((2, 8, 16), (2, 9, 16), (2, 9, 16)))
    out = F.scaled_dot_product_attention(*(acg.tensor(a).to(acg.bfloat16) for a in (q, k, v)))
    assert out.dtype == acg.bfloat16
    ref = _softmax_attn(*(jnp.asarray(a, jnp.bfloat16).astype(jnp.float32) for a in (q, k, v)))
    assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


# -- convolution / pooling / batch norm -------------------------------------------------------
def test_conv2d_gradients_match_across_modes(mode) -> None:
    rng = np.random.default_rng(4)
    x0, w0, b0 = (rng.standard_normal(s) for s in ((2, 4, 7, 6), (6, 2, 3, 3), (6,)))
    x, w, b = _leaf(x0), _leaf(w0), _leaf(b0)
    out = F.conv2d(x, w, b, stride=2, padding=1, groups=2)
    with mode():
        (out * out).sum().backward()
    ref = lambda x, w, b: (jax.lax.conv_general_dilated(  # noqa: E731
        x, w, (2, 2), [(1, 1)] * 2, feature_group_count=2) + b[:, None, None]) ** 2
    want = jax.grad(lambda *a: ref(*a).sum(), (0, 1, 2))(x0, w0, b0)
    for t, g in zip((x, w, b), want):
        assert_close(t.grad, g, rtol=1e-10, atol=1e-10)


def test_max_pool2d_indices_and_gradient_routing(mode) -> None:
    x0 = np.array([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 9.0, 9.0], [0.0, 8.0, 1.0, 1.0]]]])
    x = _leaf(x0)
    out, idx = F.max_pool2d(x, 2, stride=1, return_indices=True)
    assert idx.dtype == acg.int64
    # first maximum in row-major window order, as a flat index into the 3x4 plane
    assert idx.tolist() == [[[[1, 6, 6], [9, 6, 6]]]]
    assert_close(out, [[[[5, 9, 9], [8, 9, 9]]]], rtol=0)
    with mode():
        out.sum().backward()
    want = np.zeros((3, 4))
    np.add.at(want.reshape(-1), np.array([1, 6, 6, 9, 6, 6]), 1.0)
    assert_close(x.grad[0, 0], want, rtol=0)


def test_batch_norm_updates_running_stats_in_place(mode) -> None:
    rng = np.random.default_rng(5)
    x0 = rng.standard_normal((4, 3, 5)) * 2 + 1
    rm0, rv0 = rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    rm, rv = acg.tensor(rm0), acg.tensor(rv0)
    w = _leaf(np.ones(3))
    x = _leaf(x0)
    out = F.batch_norm(x, rm, rv, w, None, training=True, momentum=0.3)
    mean, var = x0.mean((0, 2)), x0.var((0, 2))
    assert_close(rm, 0.7 * rm0 + 0.3 * mean, rtol=1e-12)
    assert_close(rv, 0.7 * rv0 + 0.3 * x0.var((0, 2), ddof=1), rtol=1e-12)  # unbiased
    assert rm.grad_fn is None and not rm.requires_grad
    assert_close(out, (x0 - mean[:, None]) / np.sqrt(var[:, None] + 1e-5), rtol=1e-10)
    with mode():  # the in-place update does not invalidate what backward saved
        (out * acg.tensor(x0)).sum().backward()
    f = lambda x, w: ((x - x.mean((0, 2), keepdims=True)) / jnp.sqrt(  # noqa: E731
        x.var((0, 2), keepdims=True) + 1e-5) * w[:, None] * x0).sum()
    want = jax.grad(f, (0, 1))(x0, np.ones(3))
    assert_close(x.grad, want[0], rtol=1e-9, atol=1e-10)
    assert_close(w.grad, want[1], rtol=1e-9, atol=1e-10)
    before = rm.detach().numpy().copy()
    F.batch_norm(x, rm, rv, training=False)
    assert_close(rm, before, rtol=0)  # eval leaves the buffers alone


def test_conv_and_pool_errors() -> None:
    x = acg.randn(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3 channels instead"):
        F.conv2d(x, acg.randn(2, 4, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater"):
        F.conv2d(x, acg.randn(2, 3, 7, 7))
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(x, acg.randn(2, 3, 3, 3, dtype=acg.float64))
    with pytest.raises(ValueError, match="strided convolutions"):
        F.conv2d(x, acg.randn(2, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string"):
        F.conv2d(x, acg.randn(2, 3, 3, 3), padding="full")
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(acg.randn(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean"):
        F.batch_norm(x, None, None, training=False)


# -- losses ---------------------------------------------------------------------------------------
def _np_log_softmax(x: np.ndarray, c: int) -> np.ndarray:
    z = x - x.max(c, keepdims=True)
    return z - np.log(np.exp(z).sum(c, keepdims=True))


def _np_cross_entropy(x, t, w, reduction, ignore, ls, probs):
    """PyTorch's documented formulas, written with numpy loops over the samples."""
    c = 1 if x.ndim > 1 else 0
    n_cls = x.shape[c]
    logp = np.moveaxis(_np_log_softmax(x, c), c, -1).reshape(-1, n_cls)  # one row per sample
    wv = np.ones(n_cls) if w is None else w
    if probs:
        tp = np.moveaxis(t, c, -1).reshape(-1, n_cls) * (1 - ls) + ls / n_cls
        losses = np.array([-(lp * tt * wv).sum() for lp, tt in zip(logp, tp)])
        denom = len(losses)
    else:
        losses, denom = [], 0.0
        for lp, k in zip(logp, t.reshape(-1)):
            if k == ignore:
                losses.append(0.0)
                continue
            losses.append((1 - ls) * -lp[k] * wv[k] + ls / n_cls * -(lp * wv).sum())
            denom += wv[k]
        losses = np.array(losses)
    shape = t.shape if not probs else np.moveaxis(t, c, -1).shape[:-1]
    return {"none": losses.reshape(shape), "sum": losses.sum(),
            "mean": losses.sum() / denom}[reduction]


@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3, 2)], ids=["1d", "2d", "4d"])
@pytest.mark.parametrize("probs", [False, True], ids=["index", "probs"])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weight"])
@pytest.mark.parametrize("ls", [0.0, 0.25], ids=["", "ls"])
def test_cross_entropy_every_combination_matches_numpy(shape, probs, weighted, ls) -> None:
    rng = np.random.default_rng(len(shape) * 8 + probs * 4 + weighted * 2 + int(ls > 0))
    x = rng.standard_normal(shape)
    c = 1 if len(shape) > 1 else 0
    tshape = shape[:c] + shape[c + 1:]
    if probs:
        t = rng.dirichlet(np.ones(5), tshape)
        t = np.moveaxis(t, -1, c) if len(shape) > 1 else t
    else:
        t = rng.integers(0, 5, tshape)
        if t.ndim:
            t.reshape(-1)[:: 3] = 3  # ignore_index=3 hits some samples (not all)
        else:
            t = np.array(1)
    w = rng.uniform(0.5, 2, 5) if weighted else None
    for reduction in ("none", "sum", "mean"):
        got = F.cross_entropy(acg.tensor(x), acg.tensor(t), None if w is None else acg.tensor(w),
                              ignore_index=3, reduction=reduction, label_smoothing=ls)
        want = _np_cross_entropy(x, t, w, reduction, 3, ls, probs)
        assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3)], ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("tier", ["host", "xla"])
def test_cross_entropy_gradient_is_one_op_and_matches_numeric(shape, tier) -> None:
    """The backward of cross_entropy (class indices) is one op, cross_entropy_backward, on
    numpy or XLA; its gradients equal central differences of the numpy-loop formula for every
    reduction, weight, label smoothing and ignore_index; all targets ignored: zeros (PyTorch)."""
    from autograd_compile.kernels import _xp
    rng = np.random.default_rng(len(shape))
    c = 1 if len(shape) > 1 else 0
    tshape = shape[:c] + shape[c + 1:]
    x0 = rng.standard_normal(shape)
    t = rng.integers(0, 5, tshape)
    if t.ndim:
        t.reshape(-1)[::3] = 3
    for reduction, w, ls in (("mean", None, 0.0), ("sum", rng.uniform(0.5, 2, 5), 0.25),
                             ("none", None, 0.1), ("mean", rng.uniform(0.5, 2, 5), 0.0)):
        g0 = rng.standard_normal(tshape) if reduction == "none" else np.array(1.5)
        x = _leaf(x0)
        with _xp.forced(tier):
            loss = F.cross_entropy(x, acg.tensor(t), None if w is None else acg.tensor(w),
                                   ignore_index=3, reduction=reduction, label_smoothing=ls)
            loss.backward(acg.tensor(g0))
        want = numeric_grad(lambda v: (g0 * _np_cross_entropy(v, t, w, reduction, 3, ls,
                                                               False)).sum(), x0)
        assert_close(x.grad, want, rtol=1e-6, atol=1e-8)
    x = _leaf(x0)
    with _xp.forced(tier):
        before = _xp.STATS["cross_entropy_backward"]
        F.cross_entropy(x, acg.full(tshape, 3), ignore_index=3).backward()
    assert _xp.STATS["cross_entropy_backward"] == before + (tier == "host")  # one op, once
    assert_close(x.grad, np.zeros(shape), rtol=0, atol=0)


def test_cross_entropy_gradient_in_every_mode(mode) -> None:
    rng = np.random.default_rng(9)
    x0, t, w = rng.standard_normal((6, 4)), np.array([0, 3, 1, 1, 2, 3]), rng.uniform(0.5, 2, 4)
    x = _leaf(x0)
    loss = F.cross_entropy(x, acg.tensor(t), acg.tensor(w), ignore_index=2, label_smoothing=0.2)
    with mode():
        loss.backward()
    want = numeric_grad(lambda v: _np_cross_entropy(v, t, w, "mean", 2, 0.2, False), x0)
    assert_close(x.grad, want, rtol=1e-6, atol=1e-8)


def _np_layer_norm(x, ns, w, b, eps=1e-5):
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)],
                         ids=["wb", "w", "b", "plain"])
@pytest.mark.parametrize("tier", ["host", "xla"])
def test_layer_norm_gradient_is_one_op_and_matches_numeric(affine, tier) -> None:
    """layer_norm's backward is one op, layer_norm_backward (PyTorch's
    native_layer_norm_backward), on numpy or XLA: input, weight and bias gradients equal
    central differences of the numpy formula."""
    from autograd_compile.kernels import _xp
    rng = np.random.default_rng(4)
    x0, g0 = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    w0, b0 = rng.standard_normal(4), rng.standard_normal(4)
    x = _leaf(x0)
    w, b = (_leaf(w0) if affine[0] else None), (_leaf(b0) if affine[1] else None)
    with _xp.forced(tier):
        before = _xp.STATS["layer_norm_backward"]
        F.layer_norm(x, (4,), w, b).backward(acg.tensor(g0))
    assert _xp.STATS["layer_norm_backward"] == before + (tier == "host")
    wv, bv = (w0 if affine[0] else None), (b0 if affine[1] else None)
    assert_close(x.grad, numeric_grad(lambda v: (g0 * _np_layer_norm(v, (4,), wv, bv)).sum(),
                                       x0), rtol=1e-6, atol=1e-8)
    if affine[0]:
        assert_close(w.grad, numeric_grad(lambda v: (g0 * _np_layer_norm(x0, (4,), v, bv)).sum(),
                                           w0), rtol=1e-6, atol=1e-8)
    if affine[1]:
        assert_close(b.grad, g0.sum((0, 1)), rtol=1e-12)


def test_layer_norm_gradient_in_every_mode_and_twice(mode) -> None:
    """Every mode; a create_graph backward records the fused layer_norm_backward op, whose
    own derivative is jax.vjp of its kernel: second order against jax.grad of jax.grad."""
    rng = np.random.default_rng(5)
    x0, w0 = rng.standard_normal((3, 5)), rng.standard_normal(5)
    x, w = _leaf(x0), _leaf(w0)
    with mode():
        F.layer_norm(x, (5,), w).pow(3).sum().backward()

    def ln(v, wv):
        return (v - v.mean(-1, keepdims=True)) * jax.lax.rsqrt(v.var(-1, keepdims=True) + 1e-5) * wv

    def loss(v, wv):
        return (ln(v, wv) ** 3).sum()
    want = jax.grad(loss, (0, 1))(x0, w0)
    assert_close(x.grad, want[0], rtol=1e-9, atol=1e-12)
    assert_close(w.grad, want[1], rtol=1e-9, atol=1e-12)
    x2, w2 = _leaf(x0), _leaf(w0)
    gx, gw = acg.autograd.grad(F.layer_norm(x2, (5,), w2).pow(3).sum(), (x2, w2),
                               create_graph=True)
    (gx.sum() + (gw * gw).sum()).backward()
    second = jax.grad(lambda v, wv: jax.grad(loss, 0)(v, wv).sum()
                      + (jax.grad(loss, 1)(v, wv) ** 2).sum(), (0, 1))(x0, w0)
    assert_close(x2.grad, second[0], rtol=1e-8, atol=1e-10)
    assert_close(w2.grad, second[1], rtol=1e-8, atol=1e-10)



@pytest.mark.parametrize("compiled_fn", [False, True], ids=["plain", "acg.compile"])
def test_gradient_penalty_through_fused_backwards(mode, compiled_fn: bool) -> None:
    """A gradient penalty (create_graph) through layer_norm and cross_entropy, whose fused
    backward ops are differentiated by jax.vjp of their kernels: the loss and both leaves'
    gradients against jax.grad of jax.grad, in every mode and under acg.compile."""
    rng = np.random.default_rng(11)
    x0, w0 = rng.standard_normal((4, 6)), rng.standard_normal(6)
    t0 = np.array([1, 0, 5, 2])
    target = acg.tensor(t0)

    def step(x, w):
        loss = F.cross_entropy(F.layer_norm(x, (6,), w), target, label_smoothing=0.1)
        (gx,) = acg.autograd.grad(loss, (x,), create_graph=True)
        return loss + (gx * gx).sum()

    def ref_loss(v, wv):
        y = (v - v.mean(-1, keepdims=True)) * jax.lax.rsqrt(v.var(-1, keepdims=True) + 1e-5) * wv
        logp = jax.nn.log_softmax(y, -1)
        return -(0.9 * logp[jnp.arange(4), t0] + 0.1 * logp.mean(-1)).mean()

    def ref(v, wv):
        return ref_loss(v, wv) + (jax.grad(ref_loss)(v, wv) ** 2).sum()
    x, w = _leaf(x0), _leaf(w0)
    fn = acg.compile(step, fullgraph=True) if compiled_fn else step
    with mode():
        out = fn(x, w)
        out.backward()
    assert_close(out.item(), ref(x0, w0), rtol=1e-10, atol=1e-12)
    want = jax.grad(ref, (0, 1))(x0, w0)
    assert_close(x.grad, want[0], rtol=1e-8, atol=1e-10)
    assert_close(w.grad, want[1], rtol=1e-8, atol=1e-10)

def test_losses_gradients_agree_across_modes(mode) -> None:
    rng = np.random.default_rng(6)
    x0, t0 = rng.standard_normal((4, 3)) * 30, rng.uniform(0, 1, (4, 3))
    x, pw = _leaf(x0), _leaf(np.array([0.5, 2.0, 1.0]))
    loss = (F.binary_cross_entropy_with_logits(x, acg.tensor(t0), pos_weight=pw)
            + F.smooth_l1_loss(x, acg.tensor(t0), beta=0.5) + F.l1_loss(x, acg.tensor(t0))
            + F.softplus(x).mean() + F.silu(x).mean() + F.normalize(x).sum())
    with mode():
        loss.backward()

    def ref(x, pw):
        p = jax.nn.log_sigmoid(x)
        bce = -(pw * t0 * p + (1 - t0) * jax.nn.log_sigmoid(-x)).mean()
        d = jnp.abs(x - t0)
        huber = jnp.where(d < 0.5, d ** 2, d - 0.25).mean()
        norm = (x / jnp.linalg.norm(x, axis=1, keepdims=True)).sum()
        return bce + huber + d.mean() + jax.nn.softplus(x).mean() + jax.nn.silu(x).mean() + norm
    assert np.isfinite(loss.item())  # |x| up to ~90: stable logits
    want = jax.grad(ref, (0, 1))(x0, np.array([0.5, 2.0, 1.0]))
    assert_close(x.grad, want[0], rtol=1e-9, atol=1e-12)
    assert_close(pw.grad, want[1], rtol=1e-9, atol=1e-12)


def test_normalize_zero_vector_has_finite_gradient(mode) -> None:
    x = _leaf(np.array([[0.0, 0.0], [3.0, 4.0]]))
    out = F.normalize(x)
    with mode():
        out.sum().backward()
    assert_close(out, [[0, 0], [0.6, 0.8]], rtol=1e-12)
    assert np.isfinite(x.grad.detach().numpy()).all()
    assert_close(x.grad[0], [1e12, 1e12], rtol=1e-9)  # 1 / eps, as PyTorch's clamp_min


def test_pad_reflect_gradient_folds_back(mode) -> None:
    x = _leaf(np.arange(4.0).reshape(1, 4))
    out = F.pad(x, (2, 1), mode="reflect")  # [2 1 | 0 1 2 3 | 2]
    assert out.tolist() == [[2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0]]
    with mode():
        out.sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0, 1.0]]


def test_loss_and_pad_errors() -> None:
    x = acg.rand(3, 4)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x + 1, x)
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(x, x[0])
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, x[:, :2])
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.l1_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="out of bounds"):
        F.nll_loss(x, acg.tensor([0, 4, 1]))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Unrecognised padding mode"):
        F.pad(x, (1, 1), mode="mirror")


# -- compiled forward (acg.compile) ----------------------------------------------------------------
def test_compiled_forward_sdpa_dropout_draws_fresh_masks() -> None:
    rng = np.random.default_rng(7)
    q0, k0 = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 7, 3))
    attend = acg.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.4),
                         fullgraph=True)
    masks = []
    for _ in range(2):
        q, k, v = _leaf(q0), _leaf(k0), acg.tensor(np.eye(7))
        out = attend(q, k, v)  # v = I: the output is the dropped-out probabilities
        out.sum().backward()
        keep = out.detach().numpy() != 0
        f = lambda q, k: _softmax_attn(q, k, jnp.eye(7), keep, 0.4).sum()  # noqa: E731
        assert_close(q.grad, jax.grad(f)(q0, k0), rtol=1e-9, atol=1e-12)
        masks.append(keep)
    assert (masks[0] != masks[1]).any()  # the key is an input of the program, not a constant


def test_compiled_forward_cnn_block_matches_eager() -> None:
    rng = np.random.default_rng(8)
    x0, w0 = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((4, 3, 3, 3))

    def block(x, w):
        h = F.batch_norm(F.conv2d(x, w, padding="same"), None, None, training=True)
        h = F.avg_pool2d(F.max_pool2d(F.silu(h), 2), 2, ceil_mode=True)
        return F.adaptive_avg_pool2d(F.pad(h, (1, 1, 1, 1), mode="reflect"), 1).sum()
    grads = []
    for fn in (block, acg.compile(block, fullgraph=True)):
        x, w = _leaf(x0), _leaf(w0)
        fn(x, w).backward()
        grads.append((x.grad.detach().numpy(), w.grad.detach().numpy()))
    for got, want in zip(grads[1], grads[0]):
        assert_close(got, want, rtol=1e-9, atol=1e-12)
