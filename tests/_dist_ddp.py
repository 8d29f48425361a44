"""DDP on 8 host devices, one process, every execution mode, replicated and sharded.

Oracle: the same model trained on one device over the global batch (plain eager), and
``jax.grad`` of a hand-written forward for the first step's gradients. Run with
``XLA_FLAGS=--xla_dump_to=DIR`` to let the test read the compiled backward's HLO.
"""
from __future__ import annotations

import itertools
import sys

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.distributed as dist
from autograd_compile.nn import functional as F
from autograd_compile.nn.parallel import DistributedDataParallel as DDP
from _dist_run import emit, mode_ctx

STEPS, BATCH = 3, 32


def make_model() -> acg.nn.Module:
    acg.manual_seed(0)
    return acg.nn.Sequential(acg.nn.Linear(4, 16), acg.nn.Tanh(), acg.nn.Linear(16, 8))


def data(step: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    return (rng.standard_normal((BATCH, 4)).astype(np.float32),
            rng.standard_normal((BATCH, 8)).astype(np.float32))




def jax_grads(params: dict, x: np.ndarray, y: np.ndarray) -> dict:
    """The first step's gradients by jax.grad of the forward written in jnp."""
    def loss(p: dict) -> jax.Array:
        h = jnp.tanh(x @ p["0.weight"].T + p["0.bias"])
        return jnp.mean((h @ p["2.weight"].T + p["2.bias"] - y) ** 2)
    return jax.grad(loss)(params)


def train(mode: str, ddp: bool, shard_params: bool = False, hooks: bool = False,
          compiled_forward: str = "") -> dict:
    model = make_model()
    inner = acg.compile(model) if compiled_forward == "inner" else model
    net = DDP(inner, shard_parameters=shard_params) if ddp else model
    if compiled_forward == "outer":  # acg.compile over DDP: inputs arrive placed
        net = acg.compile(net)
    opt = acg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    seen: list = []
    if hooks:  # a tensor hook doubles a gradient; a post-accumulate hook records it
        model[0].weight.register_hook(lambda g: g * 2)
        model[2].weight.register_post_accumulate_grad_hook(
            lambda p: seen.append((p.grad.numpy().copy(), len(p.grad._data.sharding.device_set))))
    acg.compiled_autograd.reset()
    first = None
    for step in range(STEPS):
        x, y = data(step)
        xt, yt = acg.tensor(x), acg.tensor(y)
        if ddp:
            mesh = dist.device_mesh()
            yt = dist.shard(yt, mesh)
            xt = dist.shard(xt, mesh) if compiled_forward == "outer" else xt
        opt.zero_grad()
        out = net(xt)
        out_spec = _spec(out._data)
        loss = F.mse_loss(out, yt)
        with mode_ctx(mode):
            loss.backward()
        if first is None:
            first = {n: p.grad.numpy().copy() for n, p in model.named_parameters()}
        opt.step()
    return dict(params={n: p.detach().numpy() for n, p in model.named_parameters()}, first=first,
                specs={n: _spec(p._data) for n, p in model.named_parameters()},
                devices={n: len(p._data.sharding.device_set) for n, p in
                         model.named_parameters()},
                state=_state_specs(opt, model), seen=seen,
                captures=acg.compiled_autograd.counters.get("captures", 0), out_spec=out_spec,
                bytes=net.parameters_bytes_per_device() if ddp and not compiled_forward
                else None)


def _state_specs(opt: acg.optim.Optimizer, model: acg.nn.Module) -> list:
    """Placement of every optimizer-state array shaped like a parameter."""
    shapes = {tuple(p.shape): _spec(p._data) for p in model.parameters()}
    state = list(opt.state.values()) if isinstance(opt.state, dict) else opt.state
    leaves = jax.tree_util.tree_leaves(state, is_leaf=lambda v: isinstance(v, acg.Tensor))
    arrays = [v._data if isinstance(v, acg.Tensor) else v for v in leaves]
    return [(_spec(a), shapes[tuple(a.shape)]) for a in arrays
            if isinstance(a, jax.Array) and tuple(a.shape) in shapes and a.ndim > 0]


def _spec(a: jax.Array) -> str:
    return str(getattr(a.sharding, "spec", "single-device"))


def diff(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(np.asarray(a[k]) - np.asarray(b[k])))) for k in a)


def main(modes: list[str]) -> None:
    dist.init()
    ref = train("eager", ddp=False)
    init = {n: p.detach().numpy() for n, p in make_model().named_parameters()}
    jg = jax_grads(init, *data(0))
    out = {"jax_vs_ref": diff({k: np.asarray(v) for k, v in jg.items()}, ref["first"])}
    for mode in modes:
        for shard_params in (False, True):
            r = train(mode, ddp=True, shard_params=shard_params)
            out[f"{mode}/{shard_params}"] = dict(
                params=diff(r["params"], ref["params"]), grads=diff(r["first"], ref["first"]),
                specs=r["specs"], devices=r["devices"], state=r["state"],
                captures=r["captures"], bytes=r["bytes"])
        if mode == "compiled-jax":
            for shard_params, where in itertools.product((False, True), ("outer", "inner")):
                acg.aot.counters.clear()
                r = train(mode, ddp=True, shard_params=shard_params, compiled_forward=where)
                out[f"compile/{where}/{shard_params}"] = dict(
                    params=diff(r["params"], ref["params"]), grads=diff(r["first"], ref["first"]),
                    specs=r["specs"], out=r["out_spec"], aot=dict(acg.aot.counters))
        hooked, plain = train(mode, ddp=True, hooks=True), ref["first"]
        grads = [g for g, _ in hooked["seen"]]
        out[f"{mode}/hooks"] = dict(
            calls=len(hooked["seen"]), devices=[d for _, d in hooked["seen"]],
            post_acc_first=diff({"w": grads[0]}, {"w": plain["2.weight"]}),
            doubled=diff({"w": hooked["first"]["0.weight"]}, {"w": 2 * plain["0.weight"]}))
    emit(**out)


if __name__ == "__main__":
    main(sys.argv[1:] or ["eager", "compiled-eager", "compiled-jax"])
