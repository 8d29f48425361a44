"""The ``rnn`` step workload: a 2-layer LSTM, forward + backward (+ the SGD update).

autograd_compile runs ``nn.LSTM`` (both layers one ``rnn_stack`` op: one ``jax.lax.scan``
with layer l at step t - l, its backward one reverse scan); the floor is an LSTM written by hand in JAX with
``jax.lax.scan`` over the time steps, under ``jax.jit(value_and_grad)``; PyTorch runs
``torch.nn.LSTM`` eagerly. All three start from the same parameters (PyTorch's names and
layout) and one input batch; the loss is the mean square of the top layer's output.

>>> m = build_rnn(smoke=True)
>>> m.inputs["x"].shape, sorted(m.params)[:2]
((6, 2, 8), ['bias_hh_l0', 'bias_hh_l1'])
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg

from .step_types import AcgLoss, StepModel

# (full, smoke): the workload, and a tiny one with the same structure for CI
RNN_SIZES = ({"layers": 2, "hidden": 256, "input": 256, "seq": 128, "batch": 32},
             {"layers": 2, "hidden": 8, "input": 8, "seq": 6, "batch": 2})


def _acg_lstm(sizes: dict[str, int]) -> acg.nn.LSTM:
    acg.manual_seed(0)  # PyTorch's initialisation, from one seed: the same for every system
    return acg.nn.LSTM(sizes["input"], sizes["hidden"], sizes["layers"])


def _loss_of(out: Any) -> Any:
    return (out * out).mean()


def jax_lstm_loss(params: dict[str, Any], inputs: dict[str, Any], layers: int) -> Any:
    """The floor: each layer projects every step's input at once, then ``lax.scan`` runs
    the recurrence (gates i, f, g, o as PyTorch orders them)."""
    x = inputs["x"]
    for layer in range(layers):
        w_ih, w_hh = params[f"weight_ih_l{layer}"], params[f"weight_hh_l{layer}"]
        xp = x @ w_ih.T + params[f"bias_ih_l{layer}"] + params[f"bias_hh_l{layer}"]
        hidden = w_hh.shape[1]
        zeros = jnp.zeros((x.shape[1], hidden), x.dtype)

        def step(carry: tuple[Any, Any], xp_t: Any, w_hh: Any = w_hh) -> tuple[tuple, Any]:
            h, c = carry
            i, f, g, o = jnp.split(xp_t + h @ w_hh.T, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        _, x = jax.lax.scan(step, (zeros, zeros), xp)
    return _loss_of(x)


def build_rnn(smoke: bool = False, batch: int | None = None) -> StepModel:
    """The ``rnn`` step workload at full or smoke size; ``batch`` overrides the batch."""
    sizes = dict(RNN_SIZES[1 if smoke else 0])
    sizes["batch"] = batch or sizes["batch"]
    params = {k: p.detach().numpy().copy() for k, p in _acg_lstm(sizes).named_parameters()}
    rng = np.random.default_rng(0)
    x = rng.standard_normal((sizes["seq"], sizes["batch"], sizes["input"])).astype(np.float32)

    def acg_build() -> tuple[dict[str, acg.Tensor], AcgLoss, Callable[[Callable], AcgLoss]]:
        lstm = _acg_lstm(sizes)

        def make_compiled(compile: Callable) -> AcgLoss:
            compiled = compile(lstm)
            return lambda x: _loss_of(compiled(x)[0])
        return dict(lstm.named_parameters()), lambda x: _loss_of(lstm(x)[0]), make_compiled

    def torch_build() -> tuple[dict[str, Any], Callable[..., Any]]:
        import torch
        lstm = torch.nn.LSTM(sizes["input"], sizes["hidden"], sizes["layers"])
        named = dict(lstm.named_parameters())
        with torch.no_grad():
            for k, p in named.items():
                p.copy_(torch.from_numpy(params[k]))
        return named, lambda x: _loss_of(lstm(x)[0])

    def jax_loss(p: dict[str, Any], inputs: dict[str, Any]) -> Any:
        return jax_lstm_loss(p, inputs, sizes["layers"])

    return StepModel("rnn", sizes, params, {"x": x}, acg_build, jax_loss, torch_build)
