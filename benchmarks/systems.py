"""The systems compared: ways of running one workload's backward pass.

Every system follows the same three steps, so the timing loop treats them alike:

- ``prepare()`` (untimed): set every ``.grad`` to None, run a fresh forward, wait for it;
- ``backward()`` (timed): the backward pass, then wait until every gradient is computed;
- ``grads()``: the gradients as numpy arrays, keyed like the workload's parameters.

``reset_caches()`` forgets compiled programs, so that the next ``backward()`` is a
first backward (capture + compile).
"""
from __future__ import annotations

import importlib.util
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
from autograd_compile import demo

from .frameworks import ACG_OPS, ACG_PURE_OPS, JAX_OPS, torch_ops
from .workloads import Workload

ACG_SYSTEMS = ("acg-eager", "acg-compiled", "acg-compiled-pure")
TORCH_SYSTEMS = ("torch-eager", "torch-compiled-autograd")
ALL_SYSTEMS = ACG_SYSTEMS + ("jax-floor",) + TORCH_SYSTEMS
REFERENCE = "acg-eager"  # every other system's gradients are checked against it


class System:
    """Base class: a named way of running a workload's backward."""

    name: str = ""
    compiled: bool = False  # its first backward captures and compiles

    def prepare(self) -> None:
        """Untimed: fresh forward graph, gradients set to None."""

    def backward(self) -> None:
        """Timed: run the backward pass and wait for its results."""
        raise NotImplementedError

    def grads(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def reset_caches(self) -> None:
        """Forget compiled programs (the next backward is a first backward)."""

    def hook_calls(self) -> int | None:
        """Post-accumulate-grad hook calls so far (None when the workload has none)."""
        return None

    def info(self) -> dict[str, Any]:
        """Extra facts for the JSON report."""
        return {}


class AcgSystem(System):
    """autograd_compile: eager, compiled with the JAX backend, or compiled with pure hooks."""

    def __init__(self, name: str, workload: Workload, device: jax.Device) -> None:
        self.name, self.workload = name, workload
        self.compiled = name != "acg-eager"
        self.ops = ACG_PURE_OPS if name == "acg-compiled-pure" else ACG_OPS
        self.ctx: AbstractContextManager = (acg.compiled_autograd.enable("jax") if self.compiled
                                            else nullcontext())
        params, inputs = jax.device_put((workload.params, workload.inputs), device)
        self.params = {k: acg.tensor(v, requires_grad=True) for k, v in params.items()}
        self.inputs = {k: acg.tensor(v) for k, v in inputs.items()}
        self.log = demo.GradNormLog() if workload.post_acc_log else None
        for p in self.params.values() if self.log is not None else ():
            p.register_post_accumulate_grad_hook(self.log)
        self.loss: acg.Tensor | None = None

    def prepare(self) -> None:
        for p in self.params.values():
            p.grad = None
        self.loss = self.workload.forward(self.ops, self.params, self.inputs)
        self.loss.__jax_array__().block_until_ready()

    def backward(self) -> None:
        with self.ctx:
            self.loss.backward()
        for p in self.params.values():
            p.grad.__jax_array__().block_until_ready()

    def grads(self) -> dict[str, np.ndarray]:
        return {k: p.grad.numpy() for k, p in self.params.items()}

    def reset_caches(self) -> None:
        if self.compiled:
            acg.compiled_autograd.reset()

    def hook_calls(self) -> int | None:
        return None if self.log is None else self.log.calls


def _apply_vjp(vjp_fn: Callable, ct: jax.Array) -> Any:
    return vjp_fn(ct)


class JaxFloor(System):
    """The model written directly in JAX: ``jax.jit`` of applying the VJP function.

    ``jax.vjp`` runs the forward once, outside the timed region, and keeps its
    residuals inside ``vjp_fn`` (a pytree whose leaves are the residuals). The
    timed call is ``jit(lambda vjp_fn, ct: vjp_fn(ct))``, which runs the backward
    only (see ``info()["backward_primitives"]``). The residuals never change, so
    one forward serves every rep; a fresh ``vjp_fn`` would retrace the jit.
    """

    name = "jax-floor"
    compiled = True

    def __init__(self, workload: Workload, device: jax.Device) -> None:
        params = jax.device_put(workload.params, device)
        inputs = jax.device_put(workload.inputs, device)
        out, self.vjp_fn = jax.vjp(lambda p: workload.forward(JAX_OPS, p, inputs), params)
        self.ct = jnp.ones_like(out)
        self.reset_caches()
        self.result: dict[str, jax.Array] = {}

    def reset_caches(self) -> None:
        self.apply = jax.jit(_apply_vjp)

    def backward(self) -> None:
        self.result = jax.block_until_ready(self.apply(self.vjp_fn, self.ct)[0])

    def grads(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v) for k, v in self.result.items()}

    def info(self) -> dict[str, Any]:
        jaxpr = jax.make_jaxpr(_apply_vjp)(self.vjp_fn, self.ct)
        return {"backward_primitives": dict(Counter(e.primitive.name for e in jaxpr.jaxpr.eqns))}


class TorchSystem(System):
    """PyTorch on CPU, or on CUDA when the group runs on a GPU: eager ``loss.backward()``
    or compiled autograd."""

    def __init__(self, name: str, workload: Workload, backend: str,
                 torch_dev: str = "cpu") -> None:
        import torch
        self.torch, self.name, self.workload = torch, name, workload
        self.compiled = name == "torch-compiled-autograd"
        self.backend = backend
        self.ops = torch_ops()
        self.cuda = torch_dev != "cpu"
        self.params = {k: torch.tensor(v, requires_grad=True, device=torch_dev)
                       for k, v in workload.params.items()}
        self.inputs = {k: torch.from_numpy(v.copy()).to(torch_dev)
                       for k, v in workload.inputs.items()}
        self.log = demo.GradNormLog() if workload.post_acc_log else None
        for p in self.params.values() if self.log is not None else ():
            p.register_post_accumulate_grad_hook(self.log)
        self.compiler = torch.compile(backend=backend) if self.compiled else None
        self.counters_at_start = self._counters()
        self.loss: Any = None

    def _counters(self) -> dict[str, int]:
        """torch's process-wide compiled-autograd counters (captures, ...)."""
        if not self.compiled:
            return {}
        from torch._dynamo.utils import counters
        return dict(counters["compiled_autograd"])

    def _ctx(self) -> AbstractContextManager:
        if not self.compiled:
            return nullcontext()
        from torch._dynamo import compiled_autograd as ca
        enable = getattr(ca, "_enable", None) or ca.enable
        return enable(self.compiler)

    def prepare(self) -> None:
        for p in self.params.values():
            p.grad = None
        self.loss = self.workload.forward(self.ops, self.params, self.inputs)
        self._wait()  # the forward's kernels are not the backward's time

    def _wait(self) -> None:
        if self.cuda:  # CPU tensors: nothing to wait for
            self.torch.cuda.synchronize()

    def backward(self) -> None:
        with self._ctx():
            self.loss.backward()
        self._wait()

    def grads(self) -> dict[str, np.ndarray]:
        return {k: p.grad.detach().cpu().numpy().copy() for k, p in self.params.items()}

    def reset_caches(self) -> None:
        if self.compiled:
            self.torch._dynamo.reset()

    def hook_calls(self) -> int | None:
        return None if self.log is None else self.log.calls

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"torch": self.torch.__version__,
                                "threads": self.torch.get_num_threads()}
        if self.compiled:
            now, start = self._counters(), self.counters_at_start
            info |= {"backend": self.backend,
                     "counters": {k: v - start.get(k, 0) for k, v in now.items()}}
        return info


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def torch_device(device: jax.Device) -> str | None:
    """Where torch runs beside JAX's ``device``: ``"cpu"``, ``"cuda"`` on a GPU when torch
    sees CUDA, None when it cannot (see :func:`torch_skip_reason`)."""
    if device.platform == "cpu":
        return "cpu"
    if device.platform == "gpu" and torch_available():
        import torch
        if torch.cuda.is_available():
            return "cuda"
    return None


def torch_skip_reason(device: jax.Device) -> str | None:
    """Why torch systems cannot run beside ``device`` (None: they can)."""
    if not torch_available():
        return "torch is not installed (pip install torch)"
    if torch_device(device) is None:
        return (f"torch runs on CPU, or on CUDA beside a JAX GPU; this torch has no CUDA "
                f"and the data is on {device.platform}")
    return None


def plan(workload: Workload, names: list[str], device: jax.Device
         ) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Which of ``names`` run on ``workload``: (measured, skipped -> why, aliases -> system)."""
    run, skipped, aliases = [], {}, {}
    for name in names:
        if name == "acg-compiled-pure" and not workload.tensor_hooks:
            aliases[name] = "acg-compiled"  # no hooks: the same graph, the same program
        elif name in TORCH_SYSTEMS and torch_skip_reason(device):
            skipped[name] = torch_skip_reason(device)
        else:
            run.append(name)
    return run, skipped, aliases


def make(name: str, workload: Workload, device: jax.Device, torch_backend: str) -> System:
    """Build system ``name`` for ``workload`` with its data on ``device``."""
    if name in ACG_SYSTEMS:
        return AcgSystem(name, workload, device)
    if name == "jax-floor":
        return JaxFloor(workload, device)
    if name in TORCH_SYSTEMS:
        return TorchSystem(name, workload, torch_backend, torch_device(device) or "cpu")
    raise ValueError(f"unknown system {name!r}; choose from {', '.join(ALL_SYSTEMS)}")
