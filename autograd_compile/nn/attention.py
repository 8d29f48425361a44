"""``MultiheadAttention`` (PyTorch's layout: in_proj_weight [3E, E], out_proj Linear), and
``torch.nn.attention``'s kernel choice (``sdpa_kernel``, ``SDPBackend``).

>>> import autograd_compile as acg
>>> mha = acg.nn.MultiheadAttention(8, 2, batch_first=True)
>>> x = acg.randn(3, 5, 8)
>>> out, w = mha(x, x, x)
>>> out.shape, w.shape
(acg.Size([3, 5, 8]), acg.Size([3, 5, 5]))
"""
from __future__ import annotations

import contextlib
import enum
import math
from typing import Any, Iterator

from ..kernels import api as A
from ..kernels._dtypes import BOOL
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention", "SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The kernels PyTorch may pick for ``F.scaled_dot_product_attention``."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCH = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
           SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """Allow only ``backends`` (an ``SDPBackend`` or a list of them) inside the block, as
    PyTorch's ``torch.nn.attention.sdpa_kernel``. Our attention is one XLA program whichever
    is allowed (its results are the math kernel's), so the choice is recorded, not obeyed:
    ``acg.backends.cuda.flash_sdp_enabled()`` and friends read it.

    >>> import autograd_compile as acg
    >>> from autograd_compile.nn.attention import SDPBackend, sdpa_kernel
    >>> with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
    ...     acg.backends.cuda.flash_sdp_enabled(), acg.backends.cuda.math_sdp_enabled()
    (True, False)
    """
    from ..backends.cuda import sdp_switches
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    for b in chosen:
        if not isinstance(b, SDPBackend):
            raise AssertionError("Backend must be an instance of SDPBackend")
    allowed = {_SWITCH[b] for b in chosen if b in _SWITCH}
    with sdp_switches({name: name in allowed for name in _SWITCH.values()}):
        yield


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's output projection (a plain Linear)."""


def _float_mask(mask: Tensor | None, dtype: Any) -> Tensor | None:
    """A boolean mask (True = masked out) as an additive float mask; float masks pass."""
    if mask is None or mask.dtype != BOOL:
        return None if mask is None else mask.to(dtype)
    return A.zeros(*mask.shape, dtype=dtype).masked_fill(mask, float("-inf"))


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size ``embed_dim // num_heads``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights)``; weights
    is None when ``need_weights=False`` (then the heads run through
    ``F.scaled_dot_product_attention``). Inputs are [L, N, E] ([N, L, E] with
    ``batch_first=True``) or unbatched [L, E]. Boolean masks are True where attention is
    not allowed; float masks are added to the scores.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        kw = {"dtype": dtype, "device": device}
        self._make_projections(bias, add_bias_kv, kw)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        self._reset_parameters()

    def _make_projections(self, bias: bool, add_bias_kv: bool, kw: dict) -> None:
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            self.in_proj_weight = empty_param(3 * e, e, **kw)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = empty_param(e, e, **kw)
            self.k_proj_weight = empty_param(e, self.kdim, **kw)
            self.v_proj_weight = empty_param(e, self.vdim, **kw)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = empty_param(3 * e, **kw)
        else:
            self.register_parameter("in_proj_bias", None)
        if add_bias_kv:
            self.bias_k = empty_param(1, 1, e, **kw)
            self.bias_v = empty_param(1, 1, e, **kw)
        else:
            self.bias_k = self.bias_v = None

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, ...]:
        if self._qkv_same_embed_dim:
            wq, wk, wv = self.in_proj_weight.chunk(3)
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        bq = bk = bv = None
        if self.in_proj_bias is not None:
            bq, bk, bv = self.in_proj_bias.chunk(3)
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to "
                               "create this mask.")
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights,
                                    attn_mask, average_attn_weights)
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def _attend(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any,
                need_weights: bool, attn_mask: Any, average: bool
                ) -> tuple[Tensor, Tensor | None]:
        """[L, N, E] inputs -> ([L, N, E] output, weights or None)."""
        tgt_len, bsz, e = query.shape
        h, hd = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        attn_mask = _float_mask(attn_mask, q.dtype)
        key_padding_mask = _float_mask(key_padding_mask, q.dtype)
        k, v, attn_mask, key_padding_mask = self._extend_keys(k, v, attn_mask, key_padding_mask)
        q = q.reshape(tgt_len, bsz * h, hd).transpose(0, 1)  # [N*H, L, hd]
        k = k.reshape(k.shape[0], bsz * h, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * h, hd).transpose(0, 1)
        src_len = k.shape[1]
        mask = _merge_masks(attn_mask, key_padding_mask, bsz, h, tgt_len, src_len)
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(hd))) @ k.transpose(-2, -1)
            weights = F.softmax(scores if mask is None else scores + mask, dim=-1)
            out = (F.dropout(weights, p) if p > 0 else weights) @ v
        else:
            out = F.scaled_dot_product_attention(
                q.reshape(bsz, h, tgt_len, hd), k.reshape(bsz, h, src_len, hd),
                v.reshape(bsz, h, src_len, hd),
                _per_head(mask, bsz, h), p)
            weights = None
        out = out.reshape(bsz, h, tgt_len, hd).permute(2, 0, 1, 3).reshape(tgt_len * bsz, e)
        out = self.out_proj(out).reshape(tgt_len, bsz, e)
        if weights is not None:
            weights = weights.reshape(bsz, h, tgt_len, src_len)
            weights = weights.mean(dim=1) if average else weights
        return out, weights

    def _extend_keys(self, k: Tensor, v: Tensor, attn_mask: Any, kpm: Any) -> tuple:
        """Append the learned bias_k/bias_v row and the zero-attention row (if enabled),
        widening the masks with an unmasked column for each."""
        bsz = k.shape[1]
        if self.bias_k is not None:
            k = A.cat([k, self.bias_k.expand(1, bsz, self.embed_dim)])
            v = A.cat([v, self.bias_v.expand(1, bsz, self.embed_dim)])
            attn_mask, kpm = _pad_column(attn_mask), _pad_column(kpm)
        if self.add_zero_attn:
            k = A.cat([k, A.zeros(1, *k.shape[1:], dtype=k.dtype)])
            v = A.cat([v, A.zeros(1, *v.shape[1:], dtype=v.dtype)])
            attn_mask, kpm = _pad_column(attn_mask), _pad_column(kpm)
        return k, v, attn_mask, kpm



def _per_head(mask: Tensor | None, bsz: int, h: int) -> Tensor | None:
    """An [N*H, L, S] mask as [N, H, L, S]; an [L, S] mask broadcasts as it is."""
    if mask is None or mask.dim() == 2:
        return mask
    return mask.reshape(bsz, h, *mask.shape[1:])


def _pad_column(mask: Tensor | None) -> Tensor | None:
    if mask is None:
        return None
    return A.cat([mask, A.zeros(*mask.shape[:-1], 1, dtype=mask.dtype)], dim=-1)


def _merge_masks(attn_mask: Tensor | None, kpm: Tensor | None, bsz: int, h: int, tgt: int,
                 src: int) -> Tensor | None:
    """One additive mask [N*H, L, S] (or [L, S]) from attn_mask and key_padding_mask."""
    if attn_mask is not None and attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz * h, tgt, src):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but "
                               f"should be {(bsz * h, tgt, src)}.")
    elif attn_mask is not None and tuple(attn_mask.shape) != (tgt, src):
        raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but "
                           f"should be {(tgt, src)}.")
    if kpm is None:
        return attn_mask
    if tuple(kpm.shape) != (bsz, src):
        raise RuntimeError(f"expecting key_padding_mask shape of {(bsz, src)}, but got "
                           f"{tuple(kpm.shape)}")
    kpm = kpm.reshape(bsz, 1, 1, src).expand(bsz, h, 1, src).reshape(bsz * h, 1, src)
    return kpm if attn_mask is None else attn_mask + kpm
