"""examples/lstm_lm.py, the word-level language model: it trains (the loss falls) eagerly
and under compiled autograd with the same losses and parameters, for LSTM, GRU and
RNN_TANH (and Transformer where ``nn.TransformerEncoder`` exists), with tied weights,
gradient clipping and perplexity; its batching matches PyTorch's example."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.examples import lstm_lm
from conftest import assert_close

STEPS = 10
SMALL = {"emsize": 16, "nhid": 16, "bptt": 8, "dropout": 0.0}
_EAGER: dict[str, dict] = {}


def _eager() -> dict:
    """The eager LSTM run, once (the oracle of the compiled runs)."""
    if "LSTM" not in _EAGER:
        _EAGER["LSTM"] = lstm_lm.main("LSTM", steps=STEPS, mode="eager", **SMALL)
    return _EAGER["LSTM"]


def _falls(losses: list[float], by: float = 0.15) -> bool:
    return bool(np.mean(losses[-3:]) < losses[0] - by)


def test_lstm_lm_trains_in_every_mode(mode):
    result = _eager() if mode.name == "eager" else lstm_lm.main(
        "LSTM", steps=STEPS, mode=mode.name, **SMALL)
    losses = result["losses"]
    assert len(losses) == STEPS and all(np.isfinite(losses))
    vocab = len(result["corpus"].dictionary)
    assert losses[0] == pytest.approx(math.log(vocab), abs=0.1)  # uniform at the start
    assert _falls(losses)
    assert result["val_ppl"][0] < vocab and result["test_ppl"] < vocab
    eager = _eager()
    assert_close(losses, eager["losses"], rtol=1e-5, atol=1e-5)
    for key, value in eager["params"].items():
        assert_close(result["params"][key], value, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("name,tied,lr", [("GRU", True, 5.0), ("RNN_TANH", False, 1.0)])
def test_other_recurrent_models_train(name, tied, lr):
    result = lstm_lm.main(name, steps=STEPS, mode="compiled-jax", tied=tied, lr=lr, **SMALL)
    assert _falls(result["losses"])
    model = result["model"]
    assert isinstance(model.rnn, acg.nn.GRU if name == "GRU" else acg.nn.RNN)
    if tied:  # one matrix, listed once
        assert model.decoder.weight is model.encoder.weight
        assert "decoder.weight" not in result["params"]


def test_transformer_model_trains():
    if "Transformer" not in lstm_lm.MODELS:
        pytest.skip("nn.TransformerEncoder is not in this build")
    result = lstm_lm.main("Transformer", steps=STEPS, mode="compiled-jax", lr=1.0,
                          **SMALL)
    assert _falls(result["losses"])


def test_tied_weights_need_equal_sizes():
    with pytest.raises(ValueError, match="nhid must be equal to emsize"):
        lstm_lm.RNNModel("LSTM", 10, 8, 6, 1, dropout=0.0, tie_weights=True)
    with pytest.raises(ValueError, match="--model must be one of"):
        lstm_lm.RNNModel("LSTMX", 10, 8, 8, 1, dropout=0.0)


def test_clipping_bounds_the_update():
    """With a tiny clip, one step moves the parameters by at most lr * clip in norm."""
    before = lstm_lm.main("LSTM", steps=1, mode="eager", lr=0.0, **SMALL)["params"]
    after = lstm_lm.main("LSTM", steps=1, mode="eager", lr=1.0, clip=1e-3, **SMALL)["params"]
    moved = math.sqrt(sum(((after[k] - before[k]) ** 2).sum() for k in before))
    assert 0 < moved <= 1e-3 * (1 + 1e-4)


def test_batchify_and_get_batch_cut_the_text_as_pytorch_does():
    ids = np.arange(26)
    data = lstm_lm.batchify(acg.tensor(ids), 4)  # 6 rows, each column a stretch of text
    assert_close(data.detach().numpy(), ids[:24].reshape(4, 6).T)
    inputs, targets = lstm_lm.get_batch(data, 4, bptt=3)  # the last, shorter batch
    assert_close(inputs.detach().numpy(), ids[:24].reshape(4, 6).T[4:5])
    assert_close(targets.detach().numpy(), ids[:24].reshape(4, 6).T[5:6].reshape(-1))
    corpus = lstm_lm.Corpus(seed=3)
    text = lstm_lm.synthetic_text(400, 3)
    assert len(corpus.train) == sum(len(line.split()) + 1 for line in text)
    assert corpus.dictionary.idx2word[int(corpus.train[len(text[0].split())])] == "<eos>"


def test_hidden_state_is_carried_detached():
    model = lstm_lm.RNNModel("LSTM", 12, 8, 8, 2, dropout=0.0)
    hidden = model.init_hidden(3)
    assert [tuple(h.shape) for h in hidden] == [(2, 3, 8), (2, 3, 8)]
    _, hidden = model(acg.tensor(np.zeros((4, 3), np.int64)), hidden)
    assert hidden[0].requires_grad
    carried = lstm_lm.repackage_hidden(hidden)
    assert not carried[0].requires_grad and not carried[1].requires_grad
    assert_close(carried[1].detach().numpy(), hidden[1].detach().numpy())


def test_train_step_under_acg_compile_is_one_program_per_step(monkeypatch):
    """The example's ``train_step`` (detach the carried state, zero_grad, forward, backward,
    clip, a hand-written SGD update with ``p.add_``, ``return loss.item(), hidden``) under
    ``acg.compile``: one program per step after the first traces, losses and parameters as
    eager's."""
    eager = _eager()
    monkeypatch.setattr(lstm_lm, "train_step", acg.compile(lstm_lm.train_step))
    acg.aot.reset()
    got = lstm_lm.main("LSTM", steps=STEPS, mode="eager", **SMALL)
    counts = dict(acg.aot.counters)
    assert counts["eager_runs"] == 0 and counts["traces"] <= 3, counts
    assert counts["cache_hits"] >= STEPS - 3, counts
    assert all(type(v) is float for v in got["losses"])
    assert_close(got["losses"], eager["losses"], atol=1e-5)
    for name, value in eager["params"].items():
        assert_close(got["params"][name], value, atol=1e-5)
