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



NN_CASES: list[Case] = ATTENTION
