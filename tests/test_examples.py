"""The example programs train in every execution mode: the loss falls, the gradient-norm
hook runs once per parameter per step, and compiled parameters equal eager ones."""
from __future__ import annotations

import numpy as np
import pytest

from autograd_compile.examples import cnn, gpt
from conftest import assert_close

STEPS = {"gpt": 6, "cnn": 8}
PROGRAMS = {"gpt": gpt, "cnn": cnn}
_EAGER: dict[str, dict] = {}


def _eager(name: str) -> dict:
    """The eager run, once per program (the oracle for the compiled runs)."""
    if name not in _EAGER:
        _EAGER[name] = PROGRAMS[name].main(steps=STEPS[name], mode="eager")
    return _EAGER[name]


@pytest.mark.parametrize("name", ["gpt", "cnn"])
def test_example_trains(name, mode):
    result = _eager(name) if mode.name == "eager" else PROGRAMS[name].main(
        steps=STEPS[name], mode=mode.name)
    losses = result["losses"]
    assert all(np.isfinite(losses))
    assert np.mean(losses[-2:]) < losses[0] - 0.1
    n_params = len(result["params"])
    assert result["hook_calls"] == STEPS[name] * n_params
    assert all(g > 0 for g in result["grad_norms"])
    eager = _eager(name)
    assert_close(losses, eager["losses"], rtol=1e-5, atol=1e-5)
    for key, value in eager["params"].items():
        assert_close(result["params"][key], value, rtol=1e-4, atol=2e-5)


def test_gpt_structure():
    model = _eager("gpt")["model"]
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names  # tied to the token embedding: listed once
    assert model.lm_head.weight is model.transformer.wte.weight
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.95))
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in
                                                            no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(names)


def test_cnn_batch_norm_statistics_and_accuracy():
    result = _eager("cnn")
    assert result["buffers"]["bn1.num_batches_tracked"] == STEPS["cnn"]
    assert np.abs(result["buffers"]["bn1.running_mean"]).sum() > 0
    assert result["accuracy"] > 0.5  # four classes: chance is 0.25


def test_gpt_sampling_top_k_one_is_greedy():
    import autograd_compile as acg
    result = _eager("gpt")
    model, data = result["model"].eval(), result["data"]
    acg.manual_seed(0)
    # every new sequence length compiles each eager kernel again: keep the generations short
    text = gpt.sample(model, data, "The ", n=5, top_k=1)
    idx = data.encode("The ")
    with acg.no_grad():  # greedy decoding by hand: argmax of the last position's logits
        for _ in range(5):
            logits, _ = model(acg.tensor([idx[-model.config.block_size:]]))
            idx.append(int(np.argmax(logits.detach().numpy()[0, -1])))
    assert text == data.decode(idx)
    acg.manual_seed(1)
    sampled = gpt.sample(model, data, "The ", n=8, temperature=1.5, top_k=5)
    assert sampled.startswith("The ") and len(sampled) == 12 and set(sampled) <= set(data.chars)
