"""Op-table cases for the neural-network ops (attention, embedding, convolution, pooling,
normalisation, losses, activations); test_ops.py runs them through every check.

References are written independently of our kernels: attention as plain softmax(q k^T) v,
convolution and pooling as explicit sums over shifted slices, losses from their formulas.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile.nn.functional as F
from _op_spec import Arg, B, C, Case, I, P, T, U, V  # noqa: F401


# -- attention / embedding -------------------------------------------------------------------
def _attn_ref(q, k, v, mask=None, causal=False, scale=None):
    s = q @ jnp.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        s = jnp.where(mask, s, -jnp.inf) if mask.dtype == bool else s + mask
    if causal:
        s = jnp.where(np.tril(np.ones(s.shape[-2:], bool)), s, -jnp.inf)
    return jax.nn.softmax(s, -1) @ v


_CAUSAL_ROWS = V(np.tril(np.ones((4, 5), bool)) | np.eye(4, 5, 1, dtype=bool), "bool")

ATTENTION = [
    Case("sdpa", F.scaled_dot_product_attention, _attn_ref, (T(2, 3, 4, 8), T(2, 3, 5, 8),
                                                            T(2, 3, 5, 6))),
    Case("sdpa_3d_scale", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
         lambda q, k, v: _attn_ref(q, k, v, scale=0.3), (T(2, 4, 3), T(2, 5, 3), T(2, 5, 2))),
    Case("sdpa_causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         lambda q, k, v: _attn_ref(q, k, v, causal=True), (T(2, 5, 4), T(2, 5, 4), T(2, 5, 4))),
    Case("sdpa_bool_mask_broadcast", lambda q, k, v, m: F.scaled_dot_product_attention(
        q, k, v, attn_mask=m), lambda q, k, v, m: _attn_ref(q, k, v, m),
        (T(2, 2, 4, 3), T(2, 2, 5, 3), T(2, 2, 5, 3), _CAUSAL_ROWS)),
    Case("sdpa_additive_mask_grad", lambda q, k, v, m: F.scaled_dot_product_attention(
        q, k, v, attn_mask=m), lambda q, k, v, m: _attn_ref(q, k, v, m),
        (T(2, 4, 3), T(2, 5, 3), T(2, 5, 3), T(1, 4, 5))),
    Case("sdpa_batch_broadcast", F.scaled_dot_product_attention, _attn_ref,
         (T(2, 1, 4, 3), T(1, 3, 5, 3), T(3, 5, 2))),
    Case("embedding", F.embedding, lambda i, w: w[i], (V([[1, 3], [3, 0], [4, 4]], "int"),
                                                        T(5, 3)), double=True),
    # padding_idx / scale_grad_by_freq change the gradient on purpose (not the derivative):
    # forward here, gradients in test_functional_nn.py
    Case("embedding_padding_idx", lambda i, w: F.embedding(i, w, padding_idx=3),
         lambda i, w: w[i], (V([1, 3, 3, 0], "int"), T(5, 2)), grad=False),
]




# -- convolution / pooling / batch norm ----------------------------------------------------------
def _taps(xp, k, s, d, out):
    """Each kernel tap's strided slice of a padded [N, C, *spatial] array, keyed by tap index."""
    for tap in np.ndindex(*k):
        idx = tuple(slice(t * dd, t * dd + (o - 1) * ss + 1, ss)
                    for t, dd, ss, o in zip(tap, d, s, out))
        yield tap, xp[(Ellipsis,) + idx]


def _conv_ref(x, w, b=None, stride=1, pad=0, dil=1, groups=1):
    """Sum over taps and input channels of shifted slices times weights, group by group."""
    n = w.ndim - 2
    s, d = ((v,) * n if isinstance(v, int) else v for v in (stride, dil))
    pairs = [(pad, pad)] * n if isinstance(pad, int) else pad
    xp = jnp.pad(x, [(0, 0), (0, 0)] + list(pairs))
    out = [(xp.shape[2 + i] - d[i] * (w.shape[2 + i] - 1) - 1) // s[i] + 1 for i in range(n)]
    cin, cout = w.shape[1], w.shape[0] // groups
    parts = []
    for g in range(groups):
        acc = 0
        for tap, sl in _taps(xp[:, g * cin:(g + 1) * cin], w.shape[2:], s, d, out):
            wt = w[g * cout:(g + 1) * cout][(slice(None), slice(None)) + tap]
            acc = acc + jnp.einsum("nc...,oc->no...", sl, wt)
        parts.append(acc)
    y = jnp.concatenate(parts, 1)
    return y if b is None else y + b.reshape((-1,) + (1,) * n)


def _max_pool_ref(x, k, s, p):
    lead = (1,) * (x.ndim - 2)
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, lead + k, lead + s,
                                 [(0, 0)] * len(lead) + [(p, p)] * 2)


def _avg_pool_ref(x, k, s, p, extra=0, include_pad=True):
    """Zero-padded window sums over a divisor counted by pooling ones (padding counted if
    include_pad; ``extra`` ceil_mode cells on the right never counted)."""
    pads = [(0, 0)] * (x.ndim - 2) + [(p, p + extra)] * 2
    xp = jnp.pad(x, pads)
    ones = np.pad(np.ones(x.shape[-2:]), [(p, p)] * 2, constant_values=float(include_pad))
    ones = np.pad(ones, [(0, extra)] * 2)
    out = [(xp.shape[-2 + i] - k[i]) // s[i] + 1 for i in range(2)]
    total = sum(sl for _, sl in _taps(xp, k, s, (1, 1), out))
    count = sum(sl for _, sl in _taps(ones, k, s, (1, 1), out))
    return total / count


def _adaptive_ref(x, oh, ow):
    h, w = x.shape[-2:]
    rows = [x[..., (i * h) // oh: -((-(i + 1) * h) // oh), :].mean(-2) for i in range(oh)]
    cols = lambda r: jnp.stack([r[..., (j * w) // ow: -((-(j + 1) * w) // ow)].mean(-1)  # noqa
                                for j in range(ow)], -1)
    return jnp.stack([cols(r) for r in rows], -2)


def _bn_ref(x, w=None, b=None, rm=None, rv=None, training=True, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    c = (1, -1) + (1,) * (x.ndim - 2)
    mean = x.mean(dims) if training else rm
    var = ((x - x.mean(dims, keepdims=True)) ** 2).mean(dims) if training else rv
    y = (x - mean.reshape(c)) / jnp.sqrt(var.reshape(c) + eps)
    return y * (1 if w is None else w.reshape(c)) + (0 if b is None else b.reshape(c))


CONV = [
    Case("conv2d", F.conv2d, _conv_ref, (T(2, 3, 6, 5), T(4, 3, 3, 2), T(4)), double=True),
    Case("conv2d_stride_pad_dil_groups", lambda x, w: F.conv2d(
        x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
        lambda x, w: _conv_ref(x, w, stride=(2, 1), pad=[(1, 1), (2, 2)], dil=(1, 2), groups=2),
        (T(2, 4, 7, 6), T(6, 2, 3, 2))),
    Case("conv2d_same_even_kernel", lambda x, w, b: F.conv2d(x, w, b, padding="same"),
         lambda x, w, b: _conv_ref(x, w, b, pad=[(1, 2), (0, 1)]), (T(1, 2, 5, 4), T(3, 2, 4, 2),
                                                                     T(3))),
    Case("conv2d_valid_unbatched", lambda x, w: F.conv2d(x, w, padding="valid"),
         lambda x, w: _conv_ref(x[None], w)[0], (T(2, 5, 5), T(3, 2, 2, 3))),
    Case("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
         lambda x, w, b: _conv_ref(x, w, b, stride=2, pad=1), (T(2, 3, 9), T(4, 3, 3), T(4)),
         double=True),
    Case("conv1d_same_dilated_depthwise", lambda x, w: F.conv1d(
        x, w, padding="same", dilation=2, groups=3),
        lambda x, w: _conv_ref(x, w, pad=2, dil=2, groups=3),
        (T(2, 3, 8), T(3, 1, 3))),
    Case("max_pool2d", lambda x: F.max_pool2d(x, 2),
         lambda x: _max_pool_ref(x, (2, 2), (2, 2), 0), (T(2, 3, 6, 4),), double=True),
    Case("max_pool2d_pad_stride_3d", lambda x: F.max_pool2d(x, 3, stride=(2, 1), padding=1),
         lambda x: _max_pool_ref(x, (3, 3), (2, 1), 1), (T(3, 7, 5),)),
    Case("max_pool2d_ceil_dilation", lambda x: F.max_pool2d(x, 2, 2, dilation=2, ceil_mode=True),
         lambda x: _max_pool_ceil_dil_ref(x), (T(1, 2, 7, 6),)),
    Case("avg_pool2d", lambda x: F.avg_pool2d(x, 2),
         lambda x: _avg_pool_ref(x, (2, 2), (2, 2), 0), (T(2, 3, 4, 6),), double=True),
    Case("avg_pool2d_pad_ceil", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
         lambda x: _avg_pool_ref(x, (3, 3), (2, 2), 1, extra=1), (T(1, 2, 6, 6),)),
    Case("avg_pool2d_exclude_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         lambda x: _avg_pool_ref(x, (3, 3), (2, 2), 1, include_pad=False), (T(2, 5, 5),)),
    Case("avg_pool2d_divisor", lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3),
         lambda x: _avg_pool_ref(x, (2, 2), (1, 1), 0) * 4 / 3, (T(1, 1, 3, 4),)),
    Case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
         lambda x: _adaptive_ref(x, 3, 2), (T(2, 3, 7, 5),), double=True),
    Case("adaptive_avg_pool2d_1x1_none", lambda x: F.adaptive_avg_pool2d(x, (1, None)),
         lambda x: _adaptive_ref(x, 1, 4), (T(3, 5, 4),)),
    Case("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
         lambda x, w, b: _bn_ref(x, w, b), (T(4, 3, 2, 2), T(3), T(3)), double=True),
    Case("batch_norm_train_1d_plain", lambda x: F.batch_norm(x, None, None, training=True,
                                                             eps=1e-3),
         lambda x: _bn_ref(x, eps=1e-3), (T(5, 3),)),
    Case("batch_norm_eval", lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b),
         lambda x, m, v, w, b: _bn_ref(x, w, b, m, v, training=False),
         (T(2, 3, 4), C(3), C(3), T(3), T(3)), double=True),
]


def _max_pool_ceil_dil_ref(x):
    """ceil_mode: 7 rows, window span 3, stride 2 -> 3 outputs (the last needs 1 pad row)."""
    xp = jnp.pad(x, [(0, 0), (0, 0), (0, 1), (0, 1)], constant_values=-jnp.inf)
    return jnp.max(jnp.stack([sl for _, sl in _taps(xp, (2, 2), (2, 2), (2, 2), (3, 3))]), 0)


# -- losses, activations, padding -----------------------------------------------------------------
def _reduced(loss, reduction="mean"):
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def _smooth_l1_ref(x, t, beta=1.0, reduction="mean"):
    d = jnp.abs(x - t)
    return _reduced(jnp.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta), reduction)


def _bce_ref(x, t, w=None, reduction="mean"):
    loss = -(t * jnp.log(x) + (1 - t) * jnp.log(1 - x)) * (1 if w is None else w)
    return _reduced(loss, reduction)


def _bce_logits_ref(x, t, w=None, pw=None, reduction="mean"):
    p = jax.nn.sigmoid(x)
    loss = -((1 if pw is None else pw) * t * jnp.log(p) + (1 - t) * jnp.log(1 - p))
    return _reduced(loss * (1 if w is None else w), reduction)


def _ce_index_ref(x, t, w=None, reduction="mean", ignore=-100, ls=0.0):
    """PyTorch's formula via one-hot targets: (1-ls) nll + ls/C * sum over classes."""
    c = 1 if x.ndim > 1 else 0
    n = x.shape[c]
    logp = jax.nn.log_softmax(x, c)
    valid = t != ignore
    onehot = jax.nn.one_hot(jnp.where(valid, t, 0), n, axis=c)
    wv = jnp.ones(n) if w is None else w
    wb = wv.reshape((-1,) + (1,) * (x.ndim - c - 1))
    wt = (onehot * wb).sum(c) * valid
    nll, smooth = -(logp * onehot).sum(c) * wt, -(logp * wb).sum(c) * valid
    loss = (1 - ls) * nll + ls / n * smooth
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / wt.sum()}[reduction]


def _ce_prob_ref(x, p, w=None, reduction="mean", ls=0.0):
    c = 1 if x.ndim > 1 else 0
    n = x.shape[c]
    wb = 1 if w is None else w.reshape((-1,) + (1,) * (x.ndim - c - 1))
    loss = -(jax.nn.log_softmax(x, c) * (p * (1 - ls) + ls / n) * wb).sum(c)
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / (x.size // n)}[reduction]


def _nll_ref(x, t, w):
    """Weighted mean of -x at the target class, ignored positions excluded."""
    valid = t != -100
    onehot = jax.nn.one_hot(jnp.where(valid, t, 0), x.shape[1], axis=1)
    wt = (onehot * w.reshape(-1, 1, 1)).sum(1) * valid
    return (-(x * onehot).sum(1) * wt).sum() / wt.sum()


def _quiet(fn, *args, **kwargs):
    """``fn`` with PyTorch's broadcasting-target UserWarning silenced (the case means it)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


SPATIAL_T = V([[[0, 2], [-100, 1]], [[2, 2], [1, 0]]], "int")
LOSSES = [
    Case("l1_loss", F.l1_loss, lambda x, t: jnp.abs(x - t).mean(), (T(3, 4), T(3, 4))),
    Case("l1_loss_sum_broadcast", lambda x, t: _quiet(F.l1_loss, x, t, reduction="sum"),
         lambda x, t: jnp.abs(x - t).sum(), (T(3, 4), T(4))),
    Case("smooth_l1_loss", F.smooth_l1_loss, _smooth_l1_ref, (T(3, 4), T(3, 4)), double=True),
    Case("smooth_l1_loss_beta_none", lambda x, t: F.smooth_l1_loss(x, t, reduction="none",
                                                                   beta=0.5),
         lambda x, t: _smooth_l1_ref(x, t, 0.5, "none"), (T(3, 4), T(3, 4))),
    Case("binary_cross_entropy", F.binary_cross_entropy, _bce_ref,
         (T(3, 4, lo=0.05, hi=0.95), T(3, 4, lo=0, hi=1)), double=True),
    Case("binary_cross_entropy_weight_sum", lambda x, t, w: F.binary_cross_entropy(
        x, t, w, reduction="sum"), lambda x, t, w: _bce_ref(x, t, w, "sum"),
        (T(3, 4, lo=0.05, hi=0.95), T(3, 4, lo=0, hi=1), T(4, lo=0.5, hi=2))),
    Case("bce_with_logits", F.binary_cross_entropy_with_logits, _bce_logits_ref,
         (T(3, 4), T(3, 4, lo=0, hi=1)), double=True),
    Case("bce_with_logits_weight_pos_weight", lambda x, t, w, pw: (
        F.binary_cross_entropy_with_logits(x, t, w, reduction="none", pos_weight=pw)),
        lambda x, t, w, pw: _bce_logits_ref(x, t, w, pw, "none"),
        (T(2, 3, 4), T(2, 3, 4, lo=0, hi=1), T(3, 1), P(4)), double=True),
    Case("nll_loss_spatial_weight_ignore", lambda x, t, w: F.nll_loss(x, t, w),
         _nll_ref,
         (T(2, 3, 2, 2), SPATIAL_T, C(3))),
    Case("nll_loss_none_unbatched", lambda x, t: F.nll_loss(x, t, reduction="none"),
         lambda x, t: -x[t], (T(4), V(1, "int"))),
    Case("cross_entropy_spatial_weight_ignore_ls", lambda x, t, w: F.cross_entropy(
        x, t, w, label_smoothing=0.3), lambda x, t, w: _ce_index_ref(x, t, w, ls=0.3),
        (T(2, 3, 2, 2), SPATIAL_T, C(3)), double=True),
    Case("cross_entropy_spatial_ignore2_sum", lambda x, t: F.cross_entropy(
        x, t, ignore_index=2, reduction="sum", label_smoothing=0.1),
        lambda x, t: _ce_index_ref(x, t, reduction="sum", ignore=2, ls=0.1),
        (T(2, 3, 2, 2), V([[[0, 2], [0, 1]], [[2, 2], [1, 0]]], "int")), double=True),
    Case("cross_entropy_probs_spatial_weight_ls", lambda x, p, w: F.cross_entropy(
        x, p, w, label_smoothing=0.2), lambda x, p, w: _ce_prob_ref(x, p, w, ls=0.2),
        (T(2, 3, 2, 2), P(2, 3, 2, 2), C(3))),
    Case("cross_entropy_probs_none_unbatched", lambda x, p: F.cross_entropy(
        x, p, reduction="none"), lambda x, p: _ce_prob_ref(x, p, reduction="none"),
        (T(5), P(5))),
    Case("cross_entropy_probs_sum", lambda x, p: F.cross_entropy(x, p, reduction="sum"),
         lambda x, p: _ce_prob_ref(x, p, reduction="sum"), (T(3, 4), P(3, 4))),
    Case("silu_op", F.silu, jax.nn.silu, (T(3, 4),), double=True),
    Case("softplus", F.softplus, jax.nn.softplus, (T(3, 4),), double=True),
    Case("softplus_beta_threshold", lambda x: F.softplus(x * 4, beta=2.0, threshold=3.0),
         lambda x: jnp.where(8 * x > 3, 4 * x, jnp.log1p(jnp.exp(8 * x)) / 2),
         (T(3, 4, lo=-1, hi=1),)),
    Case("normalize", F.normalize, lambda x: x / jnp.linalg.norm(x, axis=1, keepdims=True),
         (T(3, 4),), double=True),
    Case("normalize_p1_dim0", lambda x: F.normalize(x, p=1, dim=0),
         lambda x: x / jnp.abs(x).sum(0, keepdims=True), (T(3, 4),)),
    Case("pad_constant", lambda x: F.pad(x, (1, 2, 0, 1), value=1.5),
         lambda x: jnp.pad(x, [(0, 0), (0, 1), (1, 2)], constant_values=1.5), (T(2, 3, 4),),
         double=True),
    Case("pad_constant_crop", lambda x: F.pad(x, (-1, 2)),
         lambda x: jnp.pad(x[:, 1:], [(0, 0), (0, 2)]), (T(3, 4),)),
    Case("pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"),
         lambda x: jnp.pad(x, [(0, 0), (1, 2), (2, 1)], mode="reflect"), (T(2, 4, 5),),
         double=True),
    Case("pad_replicate", lambda x: F.pad(x, (3, 1), mode="replicate"),
         lambda x: jnp.pad(x, [(0, 0), (0, 0), (3, 1)], mode="edge"), (T(2, 2, 3),)),
    Case("pad_circular", lambda x: F.pad(x, (1, 2, 2, 0), mode="circular"),
         lambda x: jnp.pad(x, [(0, 0), (2, 0), (1, 2)], mode="wrap"), (T(1, 3, 4),)),
]


NN_CASES: list[Case] = ATTENTION + CONV + LOSSES
