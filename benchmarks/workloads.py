"""The benchmark workloads: a model written once against
:class:`~autograd_compile.benchmarks.frameworks.Ops`, its parameters and inputs as
float32 numpy arrays from a fixed seed.

>>> w = build("mlp_small", smoke=True)
>>> sorted(w.params)[:2], w.inputs["x"].shape
(['b0', 'b1'], (4, 8))
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np

from autograd_compile import demo

from .frameworks import Ops, inv_sqrt

SEED = 0
NAMES = ("mlp", "mlp_small", "chain", "attention", "train")

# Full sizes, then the tiny ones --smoke uses (same structure, so the same code paths;
# smoke widths differ from every sweep batch size, so duck sizing never merges them).
SIZES: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "mlp": ({"layers": 8, "width": 512, "batch": 64}, {"layers": 8, "width": 12, "batch": 4}),
    "mlp_small": ({"layers": 4, "width": 64, "batch": 16}, {"layers": 4, "width": 8, "batch": 4}),
    "chain": ({"ops": 200, "side": 256}, {"ops": 200, "side": 8}),
    "attention": ({"batch": 8, "seq": 128, "dim": 256, "hidden": 1024},
                  {"batch": 2, "seq": 8, "dim": 16, "hidden": 32}),
    "train": ({"batch": 64}, {"batch": 8}),
}


@dataclass
class Workload:
    """One model: ``forward(ops, params, inputs)`` returns the scalar loss."""

    name: str
    params: dict[str, np.ndarray]
    inputs: dict[str, np.ndarray]
    forward: Callable[[Ops, dict[str, Any], dict[str, Any]], Any]
    sizes: dict[str, int]
    tensor_hooks: bool = False  # a tensor hook in the graph: the pure-hook variant differs
    post_acc_log: bool = False  # a logging post-accumulate-grad hook on every parameter
    notes: list[str] = field(default_factory=list)


# -- models -------------------------------------------------------------------------------

def mlp_forward(ops: Ops, p: dict[str, Any], inp: dict[str, Any], layers: int) -> Any:
    """``layers`` x (Linear, tanh); loss = mean of squares of the output."""
    h = inp["x"]
    for i in range(layers):
        h = ops.tanh(ops.linear(h, p[f"w{i}"], p[f"b{i}"]))
    return ops.mean(h * h)


def chain_forward(ops: Ops, p: dict[str, Any], inp: dict[str, Any], n_ops: int) -> Any:
    """``n_ops`` elementwise steps cycling x*1.01, x+0.1, tanh(x), x*sigmoid(x)."""
    x = p["x"]
    steps = (lambda x: x * 1.01, lambda x: x + 0.1, ops.tanh, lambda x: x * ops.sigmoid(x))
    for i in range(n_ops):
        x = steps[i % len(steps)](x)
    return ops.mean(x * x)


def attention_forward(ops: Ops, p: dict[str, Any], inp: dict[str, Any]) -> Any:
    """Pre-norm single-head self-attention block, then a GELU MLP residual block."""
    x = inp["x"]
    h = ops.layer_norm(x, p["ln1.w"], p["ln1.b"])
    q, k, v = (ops.linear(h, p[f"{n}.w"], p[f"{n}.b"]) for n in ("q", "k", "v"))
    att = ops.softmax((q @ ops.swap_last(k)) * inv_sqrt(x.shape[-1]))
    x = x + ops.linear(att @ v, p["o.w"], p["o.b"])
    h = ops.layer_norm(x, p["ln2.w"], p["ln2.b"])
    x = x + ops.linear(ops.gelu(ops.linear(h, p["fc1.w"], p["fc1.b"])), p["fc2.w"], p["fc2.b"])
    return ops.mean(x * x)


def train_forward(ops: Ops, p: dict[str, Any], inp: dict[str, Any]) -> Any:
    """The demo's classifier (Linear, Tanh, Linear, Tanh, Linear) with its logits hook."""
    h = inp["x"]
    for i in (0, 2, 4):
        h = ops.linear(h, p[f"{i}.weight"], p[f"{i}.bias"])
        h = ops.tanh(h) if i < 4 else h
    return ops.cross_entropy(ops.clip_rows_grad(h), inp["y"])


# -- parameters ---------------------------------------------------------------------------

def _linear(rng: np.random.Generator, n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Weight [out, in] scaled 1/sqrt(in) (tanh stays out of saturation), small bias."""
    w = rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)
    return w.astype(np.float32), (0.1 * rng.standard_normal(n_out)).astype(np.float32)


def _build_mlp(name: str, s: dict[str, int]) -> Workload:
    rng = np.random.default_rng(SEED)
    params: dict[str, np.ndarray] = {}
    for i in range(s["layers"]):
        params[f"w{i}"], params[f"b{i}"] = _linear(rng, s["width"], s["width"])
    x = rng.standard_normal((s["batch"], s["width"])).astype(np.float32)
    return Workload(name, params, {"x": x}, partial(mlp_forward, layers=s["layers"]), s)


def _build_chain(name: str, s: dict[str, int]) -> Workload:
    rng = np.random.default_rng(SEED)
    x = (0.5 * rng.standard_normal((s["side"], s["side"]))).astype(np.float32)
    return Workload(name, {"x": x}, {}, partial(chain_forward, n_ops=s["ops"]), s)


def _build_attention(name: str, s: dict[str, int]) -> Workload:
    rng = np.random.default_rng(SEED)
    d, hid = s["dim"], s["hidden"]
    params: dict[str, np.ndarray] = {}
    for layer, n_in, n_out in (("q", d, d), ("k", d, d), ("v", d, d), ("o", d, d),
                               ("fc1", d, hid), ("fc2", hid, d)):
        params[f"{layer}.w"], params[f"{layer}.b"] = _linear(rng, n_in, n_out)
    for layer in ("ln1", "ln2"):
        params[f"{layer}.w"] = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
        params[f"{layer}.b"] = (0.1 * rng.standard_normal(d)).astype(np.float32)
    x = rng.standard_normal((s["batch"], s["seq"], d)).astype(np.float32)
    return Workload(name, params, {"x": x}, attention_forward, s)


def _build_train(name: str, s: dict[str, int]) -> Workload:
    """The demo's model, data and hooks (imported from autograd_compile.demo)."""
    model = demo.make_model(SEED)
    params = {n: p.detach().numpy().astype(np.float32) for n, p in model.named_parameters()}
    x, y = demo.make_data(s["batch"] * 16, SEED)
    w = Workload(name, params, {"x": x[:s["batch"]], "y": y[:s["batch"]]}, train_forward, s,
                 tensor_hooks=True, post_acc_log=True)
    w.notes.append("hooks: demo.clip_rows(1.0) on the logits, demo.GradNormLog on every "
                   "parameter; acg-compiled-pure marks only the clipping hook pure_hook "
                   "(the logger has side effects, so it stays a Python hook); jax-floor "
                   "clips in a custom_vjp and logs nothing")
    return w


_BUILDERS: dict[str, Callable[[str, dict[str, int]], Workload]] = {
    "mlp": _build_mlp, "mlp_small": _build_mlp, "chain": _build_chain,
    "attention": _build_attention, "train": _build_train,
}


def build(name: str, smoke: bool = False, batch: int | None = None) -> Workload:
    """Workload ``name`` at full or smoke size; ``batch`` overrides the batch size."""
    if name not in SIZES:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(NAMES)}")
    sizes = dict(SIZES[name][1 if smoke else 0])
    if batch is not None:
        if "batch" not in sizes:
            raise ValueError(f"workload {name!r} has no batch size to sweep")
        sizes["batch"] = batch
    return _BUILDERS[name](name, sizes)
