"""makemore's six character-level models and a llama2.c-style Llama, written once against a
module object ``lib`` (``autograd_compile`` or ``torch``), so one source runs on both.

Written in the style of Karpathy's makemore (our own code): a :class:`ModelConfig`, models whose
``forward(idx, targets=None)`` returns ``(logits, loss)`` with ``ignore_index=-1`` masking the
padding, and the Llama in llama2.c's style (RMSNorm, rotary embeddings, SDPA, SwiGLU, tied
embedding; ``forward`` returns the logits and leaves the loss on ``self.last_loss``).

>>> import autograd_compile as acg
>>> cfg = ModelConfig(block_size=4, vocab_size=5, n_embd=8, n_embd2=8)
>>> m = classes(acg)["bigram"](cfg)
>>> logits, loss = m(acg.zeros(2, 4, dtype=acg.long), acg.zeros(2, 4, dtype=acg.long))
>>> tuple(logits.shape), round(float(loss), 4)
((2, 4, 5), 1.6094)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

MAKEMORE = ("bigram", "mlp", "rnn", "gru", "bow", "transformer")
_CACHE: dict[str, dict[str, Callable[..., Any]]] = {}


@dataclass
class ModelConfig:
    """makemore's configuration: its defaults are n_layer 4, n_embd 64, n_embd2 64, n_head 4."""

    block_size: int | None = None  # the longest word plus the start token
    vocab_size: int | None = None  # 26 letters plus the start/stop token 0
    n_layer: int = 4
    n_embd: int = 64
    n_embd2: int = 64
    n_head: int = 4


@dataclass
class LlamaArgs:
    """llama2.c's ModelArgs, small: dim 64, 4 layers, 4 heads, sequences of 64 tokens."""

    dim: int = 64
    n_layers: int = 4
    n_heads: int = 4
    vocab_size: int = 64
    max_seq_len: int = 64
    multiple_of: int = 32
    norm_eps: float = 1e-5


def classes(lib: Any) -> dict[str, Callable[..., Any]]:
    """The model classes built on ``lib``, by name (the six of makemore plus ``llama``)."""
    key = lib.__name__
    if key not in _CACHE:
        _CACHE[key] = _define(lib)
    return _CACHE[key]


def _loss(lib: Any, logits: Any, targets: Any) -> Any:
    F = lib.nn.functional
    return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def _define(lib: Any) -> dict[str, Callable[..., Any]]:  # noqa: C901 - one class per model, in one place
    nn, F = lib.nn, lib.nn.functional

    class NewGELU(nn.Module):
        """GPT-2's tanh approximation of GELU, written out."""

        def forward(self, x: Any) -> Any:
            return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi)
                                             * (x + 0.044715 * lib.pow(x, 3.0))))

    class CausalSelfAttention(nn.Module):
        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
            mask = lib.tril(lib.ones(cfg.block_size, cfg.block_size))
            self.register_buffer("bias", mask.view(1, 1, cfg.block_size, cfg.block_size))
            self.n_head, self.n_embd = cfg.n_head, cfg.n_embd

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.n_embd)
            self.attn = CausalSelfAttention(cfg)
            self.ln_2 = nn.LayerNorm(cfg.n_embd)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(cfg.n_embd, 4 * cfg.n_embd),
                                          c_proj=nn.Linear(4 * cfg.n_embd, cfg.n_embd),
                                          act=NewGELU()))

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln_1(x))
            m = self.mlp
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class Transformer(nn.Module):
        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.block_size = cfg.block_size
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg.vocab_size, cfg.n_embd),
                wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd)))
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long).unsqueeze(0)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return logits, None if targets is None else _loss(lib, logits, targets)

    class CausalBoW(nn.Module):
        """Each position averages the embeddings of every position up to it."""

        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            mask = lib.tril(lib.ones(cfg.block_size, cfg.block_size))
            self.register_buffer("bias", mask.view(1, cfg.block_size, cfg.block_size))

        def forward(self, x: Any) -> Any:
            B, T, C = x.size()
            att = lib.zeros((B, T, T))
            att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
            return F.softmax(att, dim=-1) @ x

    class BoWBlock(nn.Module):
        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.cbow = CausalBoW(cfg)
            self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(cfg.n_embd, cfg.n_embd2),
                                          c_proj=nn.Linear(cfg.n_embd2, cfg.n_embd)))

        def forward(self, x: Any) -> Any:
            x = x + self.cbow(x)
            return x + self.mlp.c_proj(F.tanh(self.mlp.c_fc(x)))

    class BoW(nn.Module):
        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.block_size = cfg.block_size
            self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
            self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
            self.context_block = BoWBlock(cfg)
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size)

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long).unsqueeze(0)
            x = self.context_block(self.wte(idx) + self.wpe(pos))
            logits = self.lm_head(x)
            return logits, None if targets is None else _loss(lib, logits, targets)

    class RNNCell(nn.Module):
        """h_t = tanh(W [x_t, h_{t-1}] + b)."""

        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.xh_to_h = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)

        def forward(self, xt: Any, hprev: Any) -> Any:
            return F.tanh(self.xh_to_h(lib.cat([xt, hprev], dim=1)))

    class GRUCell(nn.Module):
        """A gated cell: an update gate z blends h_{t-1} with a candidate read through a
        reset gate r."""

        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.xh_to_z = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)
            self.xh_to_r = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)
            self.xh_to_hbar = nn.Linear(cfg.n_embd + cfg.n_embd2, cfg.n_embd2)

        def forward(self, xt: Any, hprev: Any) -> Any:
            xh = lib.cat([xt, hprev], dim=1)
            r = F.sigmoid(self.xh_to_r(xh))
            z = F.sigmoid(self.xh_to_z(xh))
            hbar = F.tanh(self.xh_to_hbar(lib.cat([xt, r * hprev], dim=1)))
            return (1 - z) * hprev + z * hbar

    class RNN(nn.Module):
        def __init__(self, cfg: ModelConfig, cell_type: str) -> None:
            super().__init__()
            self.block_size = cfg.block_size
            self.start = nn.Parameter(lib.zeros(1, cfg.n_embd2))  # the state before token 0
            self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
            self.cell = RNNCell(cfg) if cell_type == "rnn" else GRUCell(cfg)
            self.lm_head = nn.Linear(cfg.n_embd2, cfg.vocab_size)

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            b, t = idx.size()
            emb = self.wte(idx)
            hprev = self.start.expand((b, -1))
            hiddens = []
            for i in range(t):  # unrolled over the block: one cell call per position
                hprev = self.cell(emb[:, i, :], hprev)
                hiddens.append(hprev)
            logits = self.lm_head(lib.stack(hiddens, 1))
            return logits, None if targets is None else _loss(lib, logits, targets)

    class MLP(nn.Module):
        """Bengio et al. 2003: the previous block_size tokens' embeddings, concatenated,
        through a tanh hidden layer. Token ``vocab_size`` stands for "before the word"."""

        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.block_size, self.vocab_size = cfg.block_size, cfg.vocab_size
            self.wte = nn.Embedding(cfg.vocab_size + 1, cfg.n_embd)
            self.mlp = nn.Sequential(nn.Linear(self.block_size * cfg.n_embd, cfg.n_embd2),
                                     nn.Tanh(), nn.Linear(cfg.n_embd2, self.vocab_size))

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            embs = []
            for _ in range(self.block_size):
                embs.append(self.wte(idx))
                idx = lib.roll(idx, 1, 1)
                idx[:, 0] = self.vocab_size  # a scalar written by index into the rolled copy
            logits = self.mlp(lib.cat(embs, -1))
            return logits, None if targets is None else _loss(lib, logits, targets)

    class Bigram(nn.Module):
        """A lookup table of next-token logits."""

        def __init__(self, cfg: ModelConfig) -> None:
            super().__init__()
            self.logits = nn.Parameter(lib.zeros((cfg.vocab_size, cfg.vocab_size)))

        def forward(self, idx: Any, targets: Any = None) -> tuple[Any, Any]:
            logits = self.logits[idx]
            return logits, None if targets is None else _loss(lib, logits, targets)

    # -- llama2.c style ------------------------------------------------------------------

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(lib.ones(dim))

        def forward(self, x: Any) -> Any:
            return x * lib.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def apply_rotary(xq: Any, xk: Any, cos: Any, sin: Any) -> tuple[Any, Any]:
        """Rotate each (even, odd) feature pair by its position's angle, in real arithmetic."""
        def rotate(x: Any) -> Any:
            xr, xi = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
            c, s = cos.view(1, cos.shape[0], 1, cos.shape[1]), sin.view(1, sin.shape[0], 1, -1)
            return lib.stack([xr * c - xi * s, xr * s + xi * c], dim=-1).flatten(3)
        return rotate(xq).type_as(xq), rotate(xk).type_as(xk)

    class Attention(nn.Module):
        def __init__(self, args: LlamaArgs) -> None:
            super().__init__()
            self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
            self.wq = nn.Linear(args.dim, args.dim, bias=False)
            self.wk = nn.Linear(args.dim, args.dim, bias=False)
            self.wv = nn.Linear(args.dim, args.dim, bias=False)
            self.wo = nn.Linear(args.dim, args.dim, bias=False)

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            b, t, _ = x.shape
            q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
            k = self.wk(x).view(b, t, self.n_heads, self.head_dim)
            v = self.wv(x).view(b, t, self.n_heads, self.head_dim)
            q, k = apply_rotary(q, k, cos, sin)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=True)
            return self.wo(y.transpose(1, 2).contiguous().view(b, t, -1))

    class FeedForward(nn.Module):
        """SwiGLU: w2(silu(w1 x) * w3 x), hidden 2/3 of 4*dim rounded up to multiple_of."""

        def __init__(self, args: LlamaArgs) -> None:
            super().__init__()
            hidden = int(2 * (4 * args.dim) / 3)
            hidden = args.multiple_of * ((hidden + args.multiple_of - 1) // args.multiple_of)
            self.w1 = nn.Linear(args.dim, hidden, bias=False)
            self.w2 = nn.Linear(hidden, args.dim, bias=False)
            self.w3 = nn.Linear(args.dim, hidden, bias=False)

        def forward(self, x: Any) -> Any:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class TransformerBlock(nn.Module):
        def __init__(self, args: LlamaArgs) -> None:
            super().__init__()
            self.attention = Attention(args)
            self.feed_forward = FeedForward(args)
            self.attention_norm = RMSNorm(args.dim, args.norm_eps)
            self.ffn_norm = RMSNorm(args.dim, args.norm_eps)

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            h = x + self.attention(self.attention_norm(x), cos, sin)
            return h + self.feed_forward(self.ffn_norm(h))

    class Llama(nn.Module):
        def __init__(self, args: LlamaArgs) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
            self.layers = nn.ModuleList([TransformerBlock(args) for _ in range(args.n_layers)])
            self.norm = RMSNorm(args.dim, args.norm_eps)
            self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
            self.tok_embeddings.weight = self.output.weight  # tied, as llama2.c
            hd = args.dim // args.n_heads
            freqs = 1.0 / (10000.0 ** (lib.arange(0, hd, 2)[: hd // 2].float() / hd))
            angles = lib.outer(lib.arange(args.max_seq_len).float(), freqs)
            self.register_buffer("freqs_cos", lib.cos(angles), persistent=False)
            self.register_buffer("freqs_sin", lib.sin(angles), persistent=False)
            self.last_loss = None

        def forward(self, tokens: Any, targets: Any = None) -> Any:
            t = tokens.shape[1]
            h = self.tok_embeddings(tokens)
            cos, sin = self.freqs_cos[:t], self.freqs_sin[:t]
            for layer in self.layers:
                h = layer(h, cos, sin)
            h = self.norm(h)
            if targets is None:
                self.last_loss = None
                return self.output(h[:, [-1], :])
            logits = self.output(h)
            self.last_loss = _loss(lib, logits, targets)
            return logits

    return {"bigram": Bigram, "mlp": MLP, "rnn": lambda c: RNN(c, "rnn"),
            "gru": lambda c: RNN(c, "gru"), "bow": BoW, "transformer": Transformer,
            "llama": Llama}
