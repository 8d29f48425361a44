"""The ``step`` group: whole training steps (forward + backward + ``SGD.step()``).

Every rep runs one step per system, interleaved in a rotated order as in the backward
group. A step is: gradients set to None, the forward (the loss is waited for: its time
is the *forward* column), ``loss.backward()``, ``opt.step()``, then a wait for every
updated parameter (the *step* column is the whole of it). Systems (:data:`SYSTEMS`,
one entry each; an entry whose ``needs`` says why is reported as skipped):

- ``acg-eager``: op-by-op forward, eager backward, ``acg.optim.SGD``;
- ``acg-compiled``: the same with the backward under ``compiled_autograd.enable("jax")``;
- ``acg-compile``: the forward through ``acg.compile`` (one program), compiled backward;
- ``jax-floor``: ``jax.jit`` of ``value_and_grad`` plus the SGD update: its step is that
  one program alone; its forward column is the jitted loss alone, timed in a separate
  call after each step, outside the step's time. For models written only in
  autograd_compile (gpt) the floor's loss runs our kernels on jax tracers;
- ``torch-eager`` and ``torch-compile`` (``torch.compile`` on the loss function plus
  compiled autograd on the backward), when torch is importable: on CPU, or on CUDA
  beside a JAX GPU (each step synchronised); on CPU torch eager is also measured in its
  own process (:mod:`.step_alone`, ``torch-eager-alone``) with
  the thread count it had here, so XLA's thread pool does not share its cores.

Before timing, each system's first step runs from empty caches (its time is the
*first step* column: traces, captures and XLA compiles) and its gradients are checked
against ``acg-eager``'s. Counters of compiled autograd and ``acg.compile`` over the
timed reps show whether caches hold; the batch sweep records them per batch size.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import numpy as np

import autograd_compile as acg

from .measure import compare_grads, rep_order, summarize
from .step_models import LR, StepModel, available, build_step, jax_loss
from .systems import torch_device, torch_skip_reason

REFERENCE = "acg-eager"
SWEEP_BATCHES = (16, 32, 48, 64)
SWEEP_SYSTEMS = ("acg-compiled", "acg-compile")
SWEEP_WORKLOADS = ("mlp_small", "mlp", "gpt")
ALONE = ("torch-eager",)  # also timed in a process of its own (step_alone.py)
ALONE_SUFFIX = "-alone"
OWN_PROCESS = "own process"  # the note of such a run: its gradients are not compared here


def acg_counters() -> dict[str, int]:
    """Compiled autograd's counters plus ``acg.compile``'s (prefixed ``compile_``)."""
    out = dict(acg.compiled_autograd.counters)
    aot = getattr(getattr(acg, "aot", None), "counters", None)
    out |= {f"compile_{k}": v for k, v in (aot or {}).items()}
    return out


def reset_acg() -> None:
    acg.compiled_autograd.reset()
    aot = getattr(acg, "aot", None)
    if hasattr(aot, "reset"):
        aot.reset()


class StepSystem:
    """A named way of running a whole training step."""

    name = ""

    def step(self) -> float:
        """Run one step and wait for it; return the forward's microseconds."""
        raise NotImplementedError

    def grads(self) -> dict[str, np.ndarray]:
        """The last step's gradients, by parameter name."""
        raise NotImplementedError

    def reset_caches(self) -> None:
        """Forget compiled programs: the next step is a first step."""

    def separate_forward(self) -> float | None:
        """The forward's microseconds from a call of its own, outside the step's time;
        None when :meth:`step` times its forward itself."""
        return None


class AcgStep(StepSystem):
    """autograd_compile with ``acg.optim.SGD``; eager or compiled backward, eager or
    ``acg.compile``'d forward."""

    def __init__(self, name: str, model: StepModel, device: jax.Device) -> None:
        self.name = name
        params, eager_loss, make_compiled = model.acg_build()
        self.params = params
        self.loss_fn = make_compiled(acg.compile) if name == "acg-compile" else eager_loss
        # uncommitted, like the parameters (on the default device the group runs under): a
        # committed input would make the updated parameters committed, and every jitted
        # program would compile a second time on the second step
        self.inputs = [acg.tensor(v) for v in model.inputs.values()]
        self.opt = acg.optim.SGD(list(params.values()), lr=LR)
        self.backward_ctx: Callable[[], AbstractContextManager] = (
            nullcontext if name == "acg-eager" else lambda: acg.compiled_autograd.enable("jax"))

    def set_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        """Another batch (the sweep: the same model, parameters and compiled function)."""
        self.inputs = [acg.tensor(v) for v in inputs.values()]

    def step(self) -> float:
        self.opt.zero_grad()
        start = time.perf_counter()
        loss = self.loss_fn(*self.inputs)
        loss.__jax_array__().block_until_ready()
        forward = time.perf_counter() - start
        with self.backward_ctx():
            loss.backward()
        self.opt.step()
        jax.block_until_ready([p.__jax_array__() for p in self.params.values()])
        return forward * 1e6

    def grads(self) -> dict[str, np.ndarray]:
        return {k: p.grad.numpy() for k, p in self.params.items()}

    def reset_caches(self) -> None:
        if self.name != "acg-eager":
            reset_acg()


class JaxStep(StepSystem):
    """``jax.jit`` of value_and_grad plus the SGD update: the floor."""

    name = "jax-floor"

    def __init__(self, model: StepModel, device: jax.Device) -> None:
        self.loss = jax_loss(model)
        self.params = jax.device_put(model.params, device)
        self.inputs = jax.device_put(model.inputs, device)
        self.last_grads: Any = None
        self.reset_caches()

    def _step(self, params: Any, inputs: Any) -> tuple[Any, Any, Any]:
        loss, grads = jax.value_and_grad(self.loss)(params, inputs)
        return loss, jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads), grads

    def reset_caches(self) -> None:
        self.fn, self.forward = jax.jit(self._step), jax.jit(self.loss)

    def step(self) -> float:
        # the one step program and nothing else: the floor every system is divided by
        _, self.params, self.last_grads = jax.block_until_ready(self.fn(self.params, self.inputs))
        return float("nan")  # see separate_forward

    def separate_forward(self) -> float:
        start = time.perf_counter()
        self.forward(self.params, self.inputs).block_until_ready()
        return (time.perf_counter() - start) * 1e6

    def grads(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(v) for k, v in self.last_grads.items()}


class TorchStep(StepSystem):
    """PyTorch on CPU, or on CUDA beside a JAX GPU: eager, or ``torch.compile`` on the
    loss plus compiled autograd."""

    def __init__(self, name: str, model: StepModel, backend: str,
                 torch_dev: str = "cpu") -> None:
        import torch
        self.torch, self.name, self.dev = torch, name, torch_dev
        # built under the device context: the parameters (and a module's) land on it
        with torch.device(torch_dev):
            self.params, self.eager_loss = model.torch_build()
        self.inputs = [torch.from_numpy(v.copy()).to(torch_dev) for v in model.inputs.values()]
        # a forward that makes tensors with no device (gpt's position arange) runs under the
        # device context on CUDA; on CPU nothing is wrapped (the context costs per op)
        self.forward_ctx: Callable[[], AbstractContextManager] = (
            nullcontext if torch_dev == "cpu" else lambda: torch.device(torch_dev))
        self.opt = torch.optim.SGD(list(self.params.values()), lr=LR)
        self.backend = backend
        self.reset_caches()

    def reset_caches(self) -> None:
        if self.name == "torch-compile":
            self.torch._dynamo.reset()
            self.loss_fn = self.torch.compile(self.eager_loss, backend=self.backend)
        else:
            self.loss_fn = self.eager_loss

    def _backward_ctx(self) -> AbstractContextManager:
        if self.name != "torch-compile":
            return nullcontext()
        from torch._dynamo import compiled_autograd as ca
        enable = getattr(ca, "_enable", None) or ca.enable
        return enable(self.torch.compile(backend=self.backend))

    def set_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        """Another batch (the sweep: the same model, parameters and compiled function)."""
        self.inputs = [acg.tensor(v) for v in inputs.values()]

    def _wait(self) -> None:
        if self.dev != "cpu":  # CPU tensors: nothing to wait for
            self.torch.cuda.synchronize()

    def step(self) -> float:
        self.opt.zero_grad()
        start = time.perf_counter()
        with self.forward_ctx():
            loss = self.loss_fn(*self.inputs)
        self._wait()
        forward = time.perf_counter() - start
        with self._backward_ctx():
            loss.backward()
        self.opt.step()
        self._wait()
        return forward * 1e6

    def grads(self) -> dict[str, np.ndarray]:
        return {k: p.grad.detach().cpu().numpy().copy() for k, p in self.params.items()}


@dataclass(frozen=True)
class SystemSpec:
    """How to build a system, and why it cannot run here (None: it can)."""

    make: Callable[[StepModel, jax.Device, str], StepSystem]
    needs: Callable[[StepModel, jax.Device], str | None] = lambda m, d: None


def _torch_needs(model: StepModel, device: jax.Device) -> str | None:
    why = torch_skip_reason(device)
    if why:
        return why
    return None if model.torch_build is not None else f"no PyTorch model for {model.name}"


def _compile_needs(model: StepModel, device: jax.Device) -> str | None:
    return None if hasattr(acg, "compile") else "acg.compile is not in this build"


SYSTEMS: dict[str, SystemSpec] = {
    "acg-eager": SystemSpec(lambda m, d, b: AcgStep("acg-eager", m, d)),
    "acg-compiled": SystemSpec(lambda m, d, b: AcgStep("acg-compiled", m, d)),
    "acg-compile": SystemSpec(lambda m, d, b: AcgStep("acg-compile", m, d), _compile_needs),
    "jax-floor": SystemSpec(lambda m, d, b: JaxStep(m, d)),
    "torch-eager": SystemSpec(lambda m, d, b: TorchStep("torch-eager", m, b, torch_device(d)),
                              _torch_needs),
    "torch-compile": SystemSpec(lambda m, d, b: TorchStep("torch-compile", m, b,
                                                          torch_device(d)), _torch_needs),
}


@dataclass
class StepResult:
    """One system on one step workload."""

    name: str
    step_us: list[float] = field(default_factory=list)
    forward_us: list[float] = field(default_factory=list)
    first_us: float | None = None
    grad_check: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"first_step_us": self.first_us, "grad_check": self.grad_check,
                               "error": self.error, "step_samples_us": self.step_us,
                               "forward_samples_us": self.forward_us}
        if self.step_us:
            out |= {"step": summarize(self.step_us), "forward": summarize(self.forward_us)}
        return out


@dataclass
class StepWorkloadResult:
    name: str
    sizes: dict[str, int]
    results: dict[str, StepResult] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    acg_counters_timed: dict[str, int] = field(default_factory=dict)

    def failures(self) -> list[str]:
        out = [f"step/{self.name}/{r.name}: {r.error}" for r in self.results.values() if r.error]
        return out + [f"step/{self.name}/{r.name}: gradients differ from {REFERENCE}: "
                      f"{r.grad_check}" for r in self.results.values()
                      if r.grad_check not in (None, "ok", "reference", OWN_PROCESS)]


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:]
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}{where}"


def timed_step(system: StepSystem) -> tuple[float, float]:
    """(whole step, forward) in microseconds; a forward timed apart runs after the step,
    outside its time."""
    start = time.perf_counter()
    forward = system.step()
    step = (time.perf_counter() - start) * 1e6
    apart = system.separate_forward()
    return step, forward if apart is None else apart


def _first_steps(systems: list[StepSystem], out: StepWorkloadResult) -> list[StepSystem]:
    """Each system's first step from empty caches, then the gradient check."""
    alive, grads = [], {}
    for s in systems:
        try:
            s.reset_caches()
            out.results[s.name].first_us = timed_step(s)[0]
            grads[s.name] = s.grads()
            alive.append(s)
        except Exception as exc:  # noqa: BLE001 - a broken system is reported, not fatal
            out.results[s.name].error = f"first step: {_error(exc)}"
    for name, g in grads.items():
        ref = grads.get(REFERENCE)
        out.results[name].grad_check = ("reference" if name == REFERENCE else
                                        compare_grads(g, ref) if ref is not None else None)
    return alive


def _interleaved(alive: list[StepSystem], out: StepWorkloadResult, reps: int,
                 record: bool) -> None:
    for rep in range(reps):
        for s in rep_order(alive, rep):
            try:
                step, forward = timed_step(s)
            except Exception as exc:  # noqa: BLE001
                out.results[s.name].error = f"rep {rep}: {_error(exc)}"
                alive.remove(s)
                continue
            if record:
                out.results[s.name].step_us.append(step)
                out.results[s.name].forward_us.append(forward)


def torch_threads() -> int | None:
    """torch's intra-op thread count in this process (None without torch)."""
    if "torch" not in sys.modules:
        try:
            import torch  # noqa: F401
        except ImportError:
            return None
    return sys.modules["torch"].get_num_threads()


def run_alone(workload: str, system: str, reps: int, warmup: int, smoke: bool,
              threads: int | None) -> dict[str, Any]:
    """``system`` on ``workload`` in a fresh process (:mod:`.step_alone`): the system's
    JSON (``step``, ``forward``, ``first_step_us`` ...) plus ``threads``; ``error`` when
    it failed."""
    cmd = [sys.executable, "-m", "autograd_compile.benchmarks.step_alone", "--workload",
           workload, "--system", system, "--reps", str(reps), "--warmup", str(warmup)]
    cmd += (["--smoke"] if smoke else []) + (["--threads", str(threads)] if threads else [])
    env = os.environ | ({"OMP_NUM_THREADS": str(threads)} if threads else {})
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        return {"error": f"own process failed ({proc.returncode}): {proc.stderr[-500:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run_alone(out: StepWorkloadResult, systems: tuple[str, ...], reps: int, warmup: int,
               smoke: bool) -> None:
    """Each of ``systems`` that ran here, again in its own process (``NAME-alone``), with
    this process's torch thread count."""
    for sys_name in systems:
        here = out.results.get(sys_name)
        if here is None or here.error or not here.step_us:
            continue
        doc = run_alone(out.name, sys_name, reps, warmup, smoke, torch_threads())
        r = out.results[sys_name + ALONE_SUFFIX] = StepResult(sys_name + ALONE_SUFFIX)
        r.error = doc.get("error")
        r.step_us, r.forward_us = doc.get("step_samples_us", []), doc.get("forward_samples_us", [])
        r.first_us, r.grad_check = doc.get("first_step_us"), OWN_PROCESS


def measure_step(name: str, systems: list[str], device: jax.Device, reps: int, warmup: int,
                 smoke: bool, torch_backend: str,
                 alone: tuple[str, ...] | None = None) -> StepWorkloadResult:
    """Build, first-step, check, warm up and time every runnable system on ``name``; then
    the ``alone`` systems again in their own processes (default: torch-eager, except
    with ``smoke``)."""
    model = build_step(name, smoke)
    out = StepWorkloadResult(name, model.sizes)
    built = []
    for sys_name in systems:
        why = SYSTEMS[sys_name].needs(model, device)
        if why:
            out.skipped[sys_name] = why
            continue
        out.results[sys_name] = StepResult(sys_name)
        try:
            built.append(SYSTEMS[sys_name].make(model, device, torch_backend))
        except Exception as exc:  # noqa: BLE001
            out.results[sys_name].error = _error(exc)
    alive = _first_steps(built, out)
    _interleaved(alive, out, warmup, False)
    before = acg_counters()
    _interleaved(alive, out, reps, True)
    after = acg_counters()
    out.acg_counters_timed = {k: v - before.get(k, 0) for k, v in after.items()}
    if device.platform == "cpu":  # the threads that fight are CPU threads
        _run_alone(out, ALONE if alone is None and not smoke else alone or (), reps, warmup,
                   smoke)
    return out


def run_steps(workloads: list[str], systems: list[str], device: jax.Device, reps: int,
              warmup: int, smoke: bool, torch_backend: str) -> tuple[
                  list[StepWorkloadResult], dict[str, str]]:
    """Every available step workload; (results, skipped workload -> why)."""
    results, skipped = [], {}
    with jax.default_device(device):
        for name in workloads:
            why = available(name)
            if why:
                skipped[name] = why
                continue
            results.append(measure_step(name, systems, device, reps, warmup, smoke,
                                        torch_backend))
    return results, skipped


def step_sweep(name: str, system: str, smoke: bool, device: jax.Device) -> list[dict[str, Any]]:
    """One model and one cache from reset; two steps per batch size, each batch size fed
    to the same model (and compiled function); cumulative counters after each."""
    reset_acg()
    rows = []
    with jax.default_device(device):
        s = SYSTEMS[system].make(build_step(name, smoke, SWEEP_BATCHES[0]), device, "inductor")
        for batch in SWEEP_BATCHES:
            s.set_inputs(build_step(name, smoke, batch).inputs)
            first, second = timed_step(s)[0], timed_step(s)[0]
            rows.append({"batch": batch, "first_step_us": first, "second_step_us": second,
                         **acg_counters()})
    return rows


# -- acg.compile(train_step): the whole step as one program (issue 22 item 1, wholestep) --

class AcgWholeStep(AcgStep):
    """``acg.compile`` of the whole step function (zero_grad, forward, ``loss.backward()``,
    ``opt.step()``): one program per step. Its forward cannot be timed apart (0)."""

    def __init__(self, model: StepModel, device: jax.Device) -> None:
        super().__init__("acg-compile-step", model, device)
        loss_fn, opt = self.loss_fn, self.opt

        def train_step(*inputs: acg.Tensor) -> acg.Tensor:
            opt.zero_grad()
            loss = loss_fn(*inputs)
            loss.backward()
            opt.step()
            return loss
        self.train_step = train_step
        self.reset_caches()

    def reset_caches(self) -> None:
        reset_acg()
        if hasattr(self, "train_step"):
            self.compiled = acg.compile(self.train_step, fullgraph=True)

    def step(self) -> float:
        self.compiled(*self.inputs)
        jax.block_until_ready([p.__jax_array__() for p in self.params.values()])
        return 0.0


SYSTEMS["acg-compile-step"] = SystemSpec(lambda m, d, b: AcgWholeStep(m, d), _compile_needs)
