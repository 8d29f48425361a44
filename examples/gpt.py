"""A character-level GPT, written the way a PyTorch user writes one; only the import differs.

    python examples/gpt.py --steps 200 --mode compiled
    python -m autograd_compile demo --model gpt

Token + position embeddings, pre-LayerNorm transformer blocks (causal multi-head
self-attention, GELU MLP), a tied output head, AdamW with decay / no-decay parameter
groups, a cosine learning-rate schedule, gradient clipping, a post-accumulate-grad hook
that logs gradient norms, and sampling with temperature and top-k. The training text
ships in ``examples/data/``.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import pathlib
import time
from dataclasses import dataclass

import numpy as np

import autograd_compile as torch
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F

DATA = pathlib.Path(__file__).parent / "data" / "lighthouse.txt"


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True


class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training
                                           else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # scaled init of the residual projections
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of length {t} > {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay: float, learning_rate: float,
                             betas: tuple[float, float]) -> torch.optim.Optimizer:
        """AdamW; matrices (embeddings, linear weights) decay, biases and norms do not."""
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None):
        """Append ``max_new_tokens`` sampled tokens to each row of ``idx`` [B, T]."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size \
                else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class CharData:
    """The text as integer ids, with random (input, next-character target) windows."""

    def __init__(self, text: str, seed: int = 0) -> None:
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.data = np.array([self.stoi[c] for c in text], dtype=np.int64)
        self.rng = np.random.default_rng(seed)

    def encode(self, s: str) -> list[int]:
        return [self.stoi[c] for c in s]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def batch(self, batch_size: int, block_size: int):
        ix = self.rng.integers(0, len(self.data) - block_size - 1, size=batch_size)
        x = np.stack([self.data[i:i + block_size] for i in ix])
        y = np.stack([self.data[i + 1:i + 1 + block_size] for i in ix])
        return torch.tensor(x, dtype=torch.long), torch.tensor(y, dtype=torch.long)


class GradNormLogger:
    """Post-accumulate-grad hook: keeps each parameter's latest squared gradient norm."""

    def __init__(self, model: nn.Module) -> None:
        self.sq: dict[str, torch.Tensor] = {}
        self.calls = 0
        self.handles = [p.register_post_accumulate_grad_hook(self._hook(name))
                        for name, p in model.named_parameters()]

    def _hook(self, name: str):
        def hook(param) -> None:
            self.calls += 1
            self.sq[name] = (param.grad * param.grad).sum()
        return hook

    def total_norm(self) -> float:
        return math.sqrt(sum(float(v) for v in self.sq.values()))


def backward_context(mode: str):
    """``eager``: plain backward; ``compiled`` / ``compiled-jax`` / ``compiled-eager``:
    compiled autograd with that backend."""
    if mode == "eager":
        return contextlib.nullcontext()
    backend = "eager" if mode == "compiled-eager" else "jax"
    return torch.compiled_autograd.enable(backend)


def main(steps: int = 100, mode: str = "eager", batch_size: int = 16, seed: int = 0,
         config: GPTConfig | None = None, lr: float = 3e-3, log_every: int = 0) -> dict:
    """Train for ``steps`` steps; returns losses, step times, final parameters, grad norms."""
    torch.manual_seed(seed)
    data = CharData(DATA.read_text(), seed)
    config = config or GPTConfig(vocab_size=len(data.chars))
    model = GPT(config)
    optimizer = model.configure_optimizers(0.1, lr, (0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(steps, 1),
                                                           eta_min=lr / 10)
    grads = GradNormLogger(model)
    losses, step_times, grad_norms = [], [], []
    for step in range(steps):
        start = time.perf_counter()
        x, y = data.batch(batch_size, config.block_size)
        _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        with backward_context(mode):
            loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        step_times.append(time.perf_counter() - start)
        grad_norms.append(grads.total_norm())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}  grad norm {grad_norms[-1]:.3f}  "
                  f"lr {scheduler.get_last_lr()[0]:.2e}  {step_times[-1] * 1e3:.1f} ms")
    return {"losses": losses, "step_times": step_times, "grad_norms": grad_norms,
            "hook_calls": grads.calls, "model": model, "data": data,
            "params": {n: p.detach().numpy() for n, p in model.named_parameters()}}


def sample(model: GPT, data: CharData, prompt: str = "The ", n: int = 80,
           temperature: float = 0.8, top_k: int = 10) -> str:
    model.eval()
    idx = torch.tensor([data.encode(prompt)], dtype=torch.long)
    return data.decode(model.generate(idx, n, temperature, top_k)[0].tolist())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--mode", default="compiled",
                    choices=["eager", "compiled", "compiled-jax", "compiled-eager"])
    args = ap.parse_args()
    result = main(args.steps, args.mode, log_every=max(args.steps // 10, 1))
    print(sample(result["model"], result["data"]))
