"""``F.multi_head_attention_forward``: PyTorch's functional multi-head attention, over the
same code as ``nn.MultiheadAttention`` (the weights come as arguments instead of attributes).

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> x = acg.ones(3, 2, 4)  # [L, N, E]
>>> w, b = acg.ones(12, 4) * 0.1, acg.zeros(12)
>>> out, attn = F.multi_head_attention_forward(x, x, x, 4, 2, w, b, None, None, False, 0.0,
...                                            acg.eye(4), None, training=False)
>>> tuple(out.shape), tuple(attn.shape)
((3, 2, 4), (2, 3, 3))
"""
from __future__ import annotations

from typing import Any

from autograd_compile.tensor import Tensor

from . import functional as F
from .attention import MultiheadAttention


class _Weights:
    """The attributes ``MultiheadAttention``'s attention code reads, from the arguments."""

    _attend = MultiheadAttention._attend
    _extend_keys = MultiheadAttention._extend_keys

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, ...]:
        if self.separate:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        else:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        bq = bk = bv = None
        if self.in_proj_bias is not None:
            bq, bk, bv = self.in_proj_bias.chunk(3)
        q = F.linear(query, wq, bq)
        k = F.linear(key, wk, bk) if self.static_k is None else _unheads(self.static_k, self)
        v = F.linear(value, wv, bv) if self.static_v is None else _unheads(self.static_v, self)
        return q, k, v

    def out_proj(self, x: Tensor) -> Tensor:
        return F.linear(x, self.out_proj_weight, self.out_proj_bias)


def _unheads(static: Tensor, spec: _Weights) -> Tensor:
    """A per-head [N*H, S, hd] static key/value as the [S, N, E] a projection gives."""
    if static.shape[0] != spec.bsz * spec.num_heads:
        raise AssertionError(f"expecting static_k.size(0) of {spec.bsz * spec.num_heads}, but "
                             f"got {static.shape[0]}")
    if static.shape[2] != spec.head_dim:
        raise AssertionError(f"expecting static_k.size(2) of {spec.head_dim}, but got "
                             f"{static.shape[2]}")
    return static.transpose(0, 1).reshape(static.shape[1], spec.bsz, spec.embed_dim)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of [L, N, E] (or unbatched [L, E]) inputs with explicit weights;
    returns ``(output, weights)`` as ``nn.MultiheadAttention`` does."""
    if bias_k is not None and bias_v is not None:
        for name, static in (("key", static_k), ("value", static_v)):
            if static is not None:
                raise AssertionError(f"bias cannot be added to static {name}.")
    batched = query.dim() == 3
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, "
                             f"but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if use_separate_proj_weight and None in (q_proj_weight, k_proj_weight, v_proj_weight):
        raise AssertionError("use_separate_proj_weight is True but q_proj_weight, "
                             "k_proj_weight or v_proj_weight is None")
    if not use_separate_proj_weight and in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    if not batched:
        query, key, value = (t.unsqueeze(1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    spec = _Weights(
        num_heads=num_heads, head_dim=head_dim, embed_dim=embed_dim, dropout=dropout_p,
        training=training, separate=use_separate_proj_weight, in_proj_weight=in_proj_weight,
        q_proj_weight=q_proj_weight, k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight,
        in_proj_bias=in_proj_bias, bias_k=bias_k, bias_v=bias_v, add_zero_attn=add_zero_attn,
        out_proj_weight=out_proj_weight, out_proj_bias=out_proj_bias, static_k=static_k,
        static_v=static_v, bsz=query.shape[1])
    out, weights = spec._attend(query, key, value, key_padding_mask, need_weights, attn_mask,
                                average_attn_weights)
    if not batched:
        out = out.squeeze(1)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights
