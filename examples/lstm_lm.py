"""A word-level language model, written the way a PyTorch user writes one; only the import
differs (in the style of PyTorch's examples/word_language_model).

    python examples/lstm_lm.py --model LSTM --epochs 2 --mode compiled
    python examples/lstm_lm.py --model GRU --tied --data path/to/wikitext-2

An embedding, a multi-layer recurrent network (``LSTM``, ``GRU``, ``RNN_TANH``,
``RNN_RELU``; ``Transformer`` where ``nn.TransformerEncoder`` exists) and a linear decoder,
optionally tied to the embedding. Truncated backpropagation through time over ``bptt``
steps with the hidden state carried (detached) from one batch to the next, gradient
clipping, a plain SGD update with the learning rate divided by 4 when validation stops
improving, and perplexity reported on the validation and test splits. Without ``--data`` it
trains on a small synthetic corpus generated from a toy grammar, so it needs no download;
``--data DIR`` reads ``DIR/train.txt``, ``valid.txt`` and ``test.txt`` (wikitext format:
one sentence per line, ``<eos>`` appended to each).
"""
from __future__ import annotations

import argparse
import math
import pathlib
import time

import numpy as np

import autograd_compile as torch
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F

try:  # run as a script (python examples/lstm_lm.py) or imported as a package module
    from .gpt import backward_context
except ImportError:
    from gpt import backward_context

RNN_TYPES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")
MODELS = RNN_TYPES + (("Transformer",) if hasattr(nn, "TransformerEncoder") else ())


# -- data ----------------------------------------------------------------------------------------
class Dictionary:
    """Word <-> id, in order of first appearance."""

    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: list[str] = []

    def add_word(self, word: str) -> int:
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self) -> int:
        return len(self.idx2word)


def synthetic_text(sentences: int, seed: int) -> list[str]:
    """Sentences from a toy grammar with learnable structure: each subject prefers its own
    verbs, each verb its own objects, so a model beats the unigram baseline quickly."""
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "the dog", "a bird", "my friend", "the old man", "she", "he"]
    verbs = ["sees", "likes", "chases", "finds", "eats", "watches", "reads"]
    objects = ["the ball", "a fish", "the red book", "some bread", "the small mouse",
               "a letter", "the garden"]
    endings = ["today", "again", "in the morning", "at night", "with care", ""]
    lines = []
    for _ in range(sentences):
        s = int(rng.integers(len(subjects)))
        v = (s + int(rng.integers(2))) % len(verbs)  # two likely verbs per subject
        o = (v * 2 + int(rng.integers(2))) % len(objects)
        words = [subjects[s], verbs[v], objects[o], endings[int(rng.integers(len(endings)))]]
        lines.append(" ".join(w for w in words if w))
    return lines


class Corpus:
    """Train / valid / test token ids over one dictionary; ``<eos>`` ends each line."""

    def __init__(self, path: str | None = None, seed: int = 0) -> None:
        self.dictionary = Dictionary()
        if path is None:
            splits = [synthetic_text(n, seed + k) for k, n in enumerate((400, 60, 60))]
        else:
            root = pathlib.Path(path)
            splits = [(root / f"{name}.txt").read_text(encoding="utf8").splitlines()
                      for name in ("train", "valid", "test")]
        self.train, self.valid, self.test = (self.tokenize(lines) for lines in splits)

    def tokenize(self, lines: list[str]):
        ids = [self.dictionary.add_word(w) for line in lines for w in line.split() + ["<eos>"]]
        return torch.tensor(ids, dtype=torch.long)


def batchify(data, bsz: int):
    """[N] ids -> [N // bsz, bsz]: each column a contiguous stretch of the text."""
    nbatch = data.size(0) // bsz
    return data[:nbatch * bsz].view(bsz, -1).t().contiguous()


def get_batch(source, i: int, bptt: int):
    """Input rows i..i+seq_len and the next-word targets, flattened."""
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


# -- models --------------------------------------------------------------------------------------
class RNNModel(nn.Module):
    """Embedding -> dropout -> recurrent layers -> dropout -> linear decoder (log-probs)."""

    def __init__(self, rnn_type: str, ntoken: int, ninp: int, nhid: int, nlayers: int,
                 dropout: float = 0.5, tie_weights: bool = False) -> None:
        super().__init__()
        self.ntoken, self.rnn_type, self.nhid, self.nlayers = ntoken, rnn_type, nhid, nlayers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        elif rnn_type in ("RNN_TANH", "RNN_RELU"):
            nonlinearity = rnn_type.split("_")[1].lower()
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        else:
            raise ValueError(f"--model must be one of {', '.join(MODELS)}, got {rnn_type!r}")
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:  # Press & Wolf 2016: the decoder reuses the embedding matrix
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int):
        weight = next(self.parameters())
        zeros = weight.new_zeros(self.nlayers, bsz, self.nhid)
        return (zeros, weight.new_zeros(self.nlayers, bsz, self.nhid)) \
            if self.rnn_type == "LSTM" else zeros


class PositionalEncoding(nn.Module):
    """Sinusoidal position signal added to [T, B, D] embeddings, then dropout."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = np.arange(max_len)[:, None]
        div_term = np.exp(np.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = np.zeros((max_len, 1, d_model), np.float32)
        pe[:, 0, 0::2] = np.sin(position * div_term)
        pe[:, 0, 1::2] = np.cos(position * div_term)
        self.register_buffer("pe", torch.tensor(pe))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0)])


class TransformerModel(nn.Module):
    """Causal TransformerEncoder over embeddings plus positions, linear decoder."""

    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int,
                 dropout: float = 0.5, tie_weights: bool = False) -> None:
        super().__init__()
        self.ntoken, self.ninp = ntoken, ninp
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.decoder = nn.Linear(ninp, ntoken)
        if tie_weights:
            self.decoder.weight = self.input_emb.weight
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    @staticmethod
    def causal_mask(sz: int):
        """[sz, sz] additive mask: position i sees positions <= i."""
        return torch.triu(torch.full((sz, sz), float("-inf")), diagonal=1)

    def forward(self, src, hidden=None):
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.decoder(self.encoder(src, mask=self.causal_mask(src.size(0))))
        return F.log_softmax(output.view(-1, self.ntoken), dim=-1), None

    def init_hidden(self, bsz: int) -> None:
        return None


def repackage_hidden(h):
    """Detach the carried state from the previous batch's graph (truncated BPTT)."""
    if h is None:
        return None
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


def build_model(name: str, ntokens: int, emsize: int, nhid: int, nlayers: int,
                dropout: float, tied: bool, nhead: int = 2) -> nn.Module:
    if name == "Transformer":
        if "Transformer" not in MODELS:
            raise ValueError("--model Transformer needs nn.TransformerEncoder")
        return TransformerModel(ntokens, emsize, nhead, nhid, nlayers, dropout, tied)
    return RNNModel(name, ntokens, emsize, nhid, nlayers, dropout, tied)


# -- training ------------------------------------------------------------------------------------
def evaluate(model: nn.Module, source, bsz: int, bptt: int) -> float:
    """Mean negative log-likelihood per word over ``source`` (eval mode, no graph)."""
    model.eval()
    total, count = 0.0, 0
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, bptt):
            data, targets = get_batch(source, i, bptt)
            output, hidden = model(data, hidden)
            total += len(targets) * F.nll_loss(output, targets).item()
            count += len(targets)
    return total / count


def train_step(net: nn.Module, criterion: nn.Module, inputs, targets, hidden, lr: float,
               clip: float, mode: str) -> tuple[float, object]:
    """One truncated-BPTT step: forward from the carried state, backward, clip, SGD."""
    hidden = repackage_hidden(hidden)
    net.zero_grad()
    output, hidden = net(inputs, hidden)
    loss = criterion(output, targets)
    with backward_context(mode):
        loss.backward()
    nn.utils.clip_grad_norm_(net.parameters(), clip)  # tames exploding recurrent gradients
    with torch.no_grad():
        for p in net.parameters():
            p.add_(p.grad, alpha=-lr)
    return loss.item(), hidden


def main(model: str = "LSTM", steps: int = 0, epochs: int = 1, mode: str = "eager",
         emsize: int = 32, nhid: int = 32, nlayers: int = 2, lr: float = 5.0,
         clip: float = 1.0, bptt: int = 12, batch_size: int = 8, dropout: float = 0.2,
         tied: bool = False, data: str | None = None, seed: int = 0, log_every: int = 0
         ) -> dict:
    """Train ``epochs`` passes (or exactly ``steps`` batches when ``steps > 0``); returns
    losses, step times, validation and test perplexities, final parameters."""
    torch.manual_seed(seed)
    corpus = Corpus(data, seed)
    train_data = batchify(corpus.train, batch_size)
    val_data, test_data = batchify(corpus.valid, 4), batchify(corpus.test, 4)
    net = build_model(model, len(corpus.dictionary), emsize, nhid, nlayers, dropout, tied)
    criterion = nn.NLLLoss()
    losses, step_times, val_ppl, best_val = [], [], [], math.inf
    while len(val_ppl) < (epochs if steps <= 0 else 10 ** 9) and not 0 < steps <= len(losses):
        net.train()
        hidden = net.init_hidden(batch_size)
        for i in range(0, train_data.size(0) - 1, bptt):
            start = time.perf_counter()
            loss, hidden = train_step(net, criterion, *get_batch(train_data, i, bptt), hidden,
                                      lr, clip, mode)
            losses.append(loss)
            step_times.append(time.perf_counter() - start)
            if log_every and len(losses) % log_every == 0:
                print(f"step {len(losses):5d}  lr {lr:6.2f}  {step_times[-1] * 1e3:6.1f} ms  "
                      f"loss {loss:5.2f}  ppl {math.exp(loss):8.2f}")
            if 0 < steps <= len(losses):
                break
        val_loss = evaluate(net, val_data, 4, bptt)
        val_ppl.append(math.exp(val_loss))
        if log_every:
            print(f"end of epoch  valid loss {val_loss:5.2f}  valid ppl {val_ppl[-1]:8.2f}")
        lr = lr if val_loss < best_val else lr / 4.0  # no improvement: anneal
        best_val = min(best_val, val_loss)
    return {"losses": losses, "step_times": step_times, "val_ppl": val_ppl,
            "test_ppl": math.exp(evaluate(net, test_data, 4, bptt)), "model": net,
            "corpus": corpus, "params": {n: p.detach().numpy() for n, p in net.named_parameters()}}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="LSTM", choices=MODELS)
    ap.add_argument("--data", default=None, help="folder with train/valid/test.txt")
    ap.add_argument("--emsize", type=int, default=32)
    ap.add_argument("--nhid", type=int, default=32)
    ap.add_argument("--nlayers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=5.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch_size", type=int, default=8)
    ap.add_argument("--bptt", type=int, default=12)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--tied", action="store_true", help="tie decoder and embedding weights")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", default="compiled",
                    choices=["eager", "compiled", "compiled-jax", "compiled-eager"])
    args = ap.parse_args()
    result = main(args.model, 0, args.epochs, args.mode, args.emsize, args.nhid, args.nlayers,
                  args.lr, args.clip, args.bptt, args.batch_size, args.dropout, args.tied,
                  args.data, args.seed, log_every=20)
    print(f"test ppl {result['test_ppl']:8.2f}")
