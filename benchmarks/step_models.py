"""The ``step`` group's workloads: a model, its data, and how each framework builds it.

A :class:`StepModel` holds the initial parameters and one batch as numpy arrays and
knows how to build the model in autograd_compile (a loss function of the input
tensors whose parameters it closes over), in plain JAX (a pure loss of a parameter
dict) and in PyTorch. ``mlp`` and ``mlp_small`` reuse the backward group's
:mod:`.workloads`; ``gpt`` imports the model of ``examples/gpt.py`` (installed as
``autograd_compile.examples.gpt``).

>>> m = build_step("mlp_small", smoke=True)
>>> m.inputs["x"].shape
(4, 8)
"""
from __future__ import annotations

import importlib
import sys
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import jax
import numpy as np

import autograd_compile as acg

from .frameworks import ACG_OPS, JAX_OPS, torch_ops
from .workloads import build

STEP_NAMES = ("mlp_small", "mlp", "gpt")
STEP_NAMES += ("rnn",)  # recurrent (rnn): a 2-layer LSTM, see step_rnn.py
LR = 0.01  # plain SGD everywhere: the update is the same rule in every framework
# (full, smoke) sizes of the gpt workload; batch is the number of sequences
GPT_SIZES = ({"batch": 16, "seq": 64, "vocab": 256, "dim": 128, "layers": 2, "heads": 4},
             {"batch": 2, "seq": 8, "vocab": 32, "dim": 16, "layers": 1, "heads": 2})

from .step_types import AcgBuild, AcgLoss, StepModel  # noqa: E402,F401  (re-exported)
from .step_rnn import build_rnn  # noqa: E402


def gpt_module() -> ModuleType | None:
    """The GPT example (``examples/gpt.py``, installed as ``autograd_compile.examples``),
    or None when this build does not have it."""
    try:
        return importlib.import_module("autograd_compile.examples.gpt")
    except ModuleNotFoundError:
        return None


_AS_TORCH = (("import autograd_compile.nn.functional as", "import torch.nn.functional as"),
             ("import autograd_compile.nn as", "import torch.nn as"),
             ("import autograd_compile as", "import torch as"))


def gpt_torch_module() -> ModuleType:
    """``examples/gpt.py`` with its imports pointed back at PyTorch: the example is a
    PyTorch program whose only change is the import, so undoing it gives torch's model."""
    name = "_acg_bench_examples_gpt_torch"
    if name not in sys.modules:
        path = Path(gpt_module().__file__)
        source = path.read_text()
        for ours, theirs in _AS_TORCH:
            source = source.replace(ours, theirs)
        module = ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module
        exec(compile(source, str(path), "exec"), module.__dict__)
    return sys.modules[name]


def available(name: str) -> str | None:
    """None when workload ``name`` can run here, else why not."""
    if name == "gpt" and gpt_module() is None:
        return "the GPT example (autograd_compile.examples.gpt) is not in this build"
    return None


# -- mlp, mlp_small ------------------------------------------------------------------------

def _mlp(name: str, smoke: bool, batch: int | None) -> StepModel:
    w = build(name, smoke, batch)

    def acg_build() -> tuple[dict[str, acg.Tensor], AcgLoss, Callable[[Callable], AcgLoss]]:
        params = {k: acg.tensor(v, requires_grad=True) for k, v in w.params.items()}
        keys = list(params)

        def explicit(*ts: acg.Tensor) -> acg.Tensor:  # parameters as arguments
            return w.forward(ACG_OPS, dict(zip(keys, ts)), {"x": ts[-1]})

        def make_compiled(compile: Callable) -> AcgLoss:
            fn = compile(explicit)
            return lambda x: fn(*params.values(), x)
        return params, lambda x: w.forward(ACG_OPS, params, {"x": x}), make_compiled

    def torch_build() -> tuple[dict[str, Any], Callable[..., Any]]:
        import torch
        params = {k: torch.tensor(v, requires_grad=True) for k, v in w.params.items()}
        ops = torch_ops()
        return params, lambda x: w.forward(ops, params, {"x": x})

    return StepModel(name, w.sizes, w.params, w.inputs, acg_build,
                     partial(w.forward, JAX_OPS), torch_build)


# -- gpt (examples/gpt.py) -----------------------------------------------------------------

def _gpt(smoke: bool, batch: int | None) -> StepModel:
    gpt = gpt_module()
    sizes = dict(GPT_SIZES[1 if smoke else 0])
    sizes["batch"] = batch or sizes["batch"]
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, sizes["vocab"], (sizes["batch"], sizes["seq"] + 1))
    inputs = {"x": tokens[:, :-1].astype(np.int64), "y": tokens[:, 1:].astype(np.int64)}
    config = gpt.GPTConfig(vocab_size=sizes["vocab"], block_size=sizes["seq"],
                           n_layer=sizes["layers"], n_head=sizes["heads"], n_embd=sizes["dim"],
                           dropout=0.0)

    def make_model() -> Any:
        acg.manual_seed(0)  # the same initial parameters for every system
        return gpt.GPT(config)
    params = {k: p.detach().numpy().copy() for k, p in make_model().named_parameters()}

    def acg_build() -> tuple[dict[str, acg.Tensor], AcgLoss, Callable[[Callable], AcgLoss]]:
        model = make_model()

        def make_compiled(compile: Callable) -> AcgLoss:
            compiled = compile(model)
            return lambda x, y: _gpt_loss(compiled(x), y)
        return dict(model.named_parameters()), lambda x, y: _gpt_loss(model(x), y), make_compiled

    def torch_build() -> tuple[dict[str, Any], Callable[..., Any]]:
        import torch
        tgpt = gpt_torch_module()
        model = tgpt.GPT(tgpt.GPTConfig(**vars(config)))
        named = dict(model.named_parameters())
        if set(named) != set(params):
            raise RuntimeError(f"torch GPT parameters {sorted(named)} != {sorted(params)}")
        with torch.no_grad():
            for k, p in named.items():
                p.copy_(torch.from_numpy(params[k]))
        return named, lambda x, y: _gpt_loss(model(x), y, torch.nn.functional.cross_entropy)

    return StepModel("gpt", sizes, params, inputs, acg_build, None, torch_build)


def _gpt_loss(out: Any, y: Any, cross_entropy: Callable | None = None) -> Any:
    """The example's model returns logits, or (logits, loss) when given targets."""
    logits = out[0] if isinstance(out, tuple) else out
    ce = cross_entropy or acg.nn.functional.cross_entropy
    return ce(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def build_step(name: str, smoke: bool = False, batch: int | None = None) -> StepModel:
    """Step workload ``name`` at full or smoke size; ``batch`` overrides the batch size."""
    if name not in STEP_NAMES:
        raise ValueError(f"unknown step workload {name!r}; choose from {', '.join(STEP_NAMES)}")
    if name == "rnn":  # recurrent (rnn)
        return build_rnn(smoke, batch)
    return _gpt(smoke, batch) if name == "gpt" else _mlp(name, smoke, batch)


def traced_jax_loss(model: StepModel) -> Callable[[dict[str, Any], dict[str, Any]], Any]:
    """A pure JAX loss for models written only in autograd_compile: our ops run on jax
    tracers (no autograd recording), so ``jax.jit(value_and_grad(...))`` sees the same
    kernels as one program. Used as the floor where no hand-written JAX model exists."""
    params, loss_fn, _ = model.acg_build()
    names = list(params)

    def loss(p: dict[str, Any], inputs: dict[str, Any]) -> Any:
        saved = [params[k]._data for k in names]
        try:
            for k in names:
                params[k]._data = p[k]
            with acg.no_grad():
                out = loss_fn(*(acg.Tensor(v) for v in inputs.values()))
            return out.__jax_array__()
        finally:
            for k, v in zip(names, saved):
                params[k]._data = v
    return loss


def jax_loss(model: StepModel) -> Callable[[dict[str, Any], dict[str, Any]], Any]:
    return model.jax_loss or traced_jax_loss(model)


def device_inputs(model: StepModel, device: jax.Device) -> dict[str, Any]:
    return jax.device_put(model.inputs, device)
