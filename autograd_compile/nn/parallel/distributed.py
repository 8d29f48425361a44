"""``DistributedDataParallel``: PyTorch's DDP as placement on a JAX device mesh.

PyTorch DDP runs one replica per process and all-reduces gradients in buckets from
backward hooks. Here the batch is one global array split over the mesh and the
parameters are global arrays too (replicated, or sharded with ``shard_parameters``);
every op compiles to one SPMD program over the whole mesh, so the gradient of the
loss over the global batch comes out of the backward already reduced: XLA puts the
all-reduce (or, for sharded parameters, the reduce-scatter) inside the program. No
Python-side collective runs per step.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding

from ...compiled_autograd import pure_hook
from ...distributed._placement import device_mesh, is_placed_on, place_many, shard, sharding_for
from ...tensor import Tensor
from ..modules import Module
from ...distributed._ops import constrain, register_sharding
from ...distributed import _runtime


class DistributedDataParallel(Module):
    """Data-parallel training over ``mesh`` (default: every device of every process).

    Parameters and buffers take rank 0's values and are replicated on every device
    (``shard_parameters=True``: split along their first dimension that divides over
    the mesh, FSDP/ZeRO-3 style; XLA gathers them for compute and reduce-scatters
    their gradients, so parameters, gradients and optimizer state take 1/N of the
    memory per device). ``forward`` shards each tensor argument along ``dim`` (this
    process's part of the batch) and calls ``module``; shard the targets the same way
    (``acg.distributed.shard(y, ddp.mesh)``) so the loss is over the global batch.
    PyTorch's other arguments (``device_ids``, ``output_device``, ...) are accepted
    and ignored: the mesh says where everything lives. With ``acg.compile``, wrap
    either way: ``DDP(acg.compile(model))`` or ``acg.compile(DDP(model))``: DDP
    shards the inputs first, then one SPMD program runs. ``acg.compile(train_step)``
    on a step that reaches a DDP shards the step's tensor arguments the same way and
    keeps the whole step (forward, backward with the gradient reductions, optimizer
    update) one SPMD program; PyTorch-style DDP (joined by ``init_process_group``)
    runs such a step eagerly, with a one-line log.

    >>> import autograd_compile as acg
    >>> model = acg.nn.parallel.DistributedDataParallel(acg.nn.Linear(4, 2))
    >>> n = model.mesh.size
    >>> loss = model(acg.ones(2 * n, 4)).sum()
    >>> loss.backward()
    >>> model.module.bias.grad.tolist() == [2.0 * n, 2.0 * n]
    True
    """

    def __init__(self, module: Module, mesh: Mesh | None = None,
                 shard_parameters: bool = False, *, device_ids: Any = None,
                 output_device: Any = None, dim: int = 0, broadcast_buffers: bool = True,
                 process_group: Any = None, bucket_cap_mb: Any = None,
                 find_unused_parameters: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, spmd: bool | None = None) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an nn.Module, got "
                            f"{type(module).__name__}")
        if isinstance(mesh, (list, tuple)):  # PyTorch's positional device_ids
            mesh = None
        self.module = module
        if spmd is None:  # joined by PyTorch's init_process_group: PyTorch's DDP
            spmd = not (_runtime.is_initialized() and _runtime._state.get("torch_style"))
        object.__setattr__(self, "spmd", bool(spmd))
        object.__setattr__(self, "mesh", mesh if mesh is not None else device_mesh())
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "shard_parameters", bool(shard_parameters))
        object.__setattr__(self, "_hook_handles", [])
        params, buffers = list(module.named_parameters()), list(_named_buffers(module))
        _check_same_model(params + buffers)
        if not self.spmd:
            object.__setattr__(self, "_sync", _GradientSync([p for _, p in params]))
            self._sync.broadcast([t for _, t in params + buffers])
            return
        self._place(params, buffers)

    # -- placement -------------------------------------------------------------------
    def _place(self, params: list[tuple[str, Tensor]], buffers: list[tuple[str, Tensor]]
               ) -> None:
        """Rank 0's values at their shardings (one broadcast); sharded parameters get a
        hook that keeps their gradients sharded."""
        shardings = [self._param_sharding(p) for _, p in params]
        shardings += [sharding_for(self.mesh, 0, None) for _ in buffers]
        tensors = [t for _, t in params] + [t for _, t in buffers]
        for t, array in zip(tensors, place_many([t._data for t in tensors], shardings)):
            t._set_data(array, bump=False)
            if t.grad is not None:
                t.grad = Tensor(jax.device_put(t.grad._data, array.sharding))
        if self.shard_parameters:
            for (_, p), s in zip(params, shardings):
                if p.requires_grad and any(a is not None for a in s.spec):
                    self._hook_handles.append(p.register_hook(_keep_sharded(s)))

    def _param_sharding(self, p: Tensor) -> NamedSharding:
        """Replicated; with ``shard_parameters`` split along the first dim that divides."""
        if self.shard_parameters:
            for d, size in enumerate(p.shape):
                if size % self.mesh.size == 0:
                    return sharding_for(self.mesh, p.ndim, d)
        return sharding_for(self.mesh, p.ndim, None)

    # -- forward -----------------------------------------------------------------------
    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.spmd:  # PyTorch's DDP: this process's batch, gradients averaged after
            self._sync.start()
            return self.module(*inputs, **kwargs)
        inputs = tuple(self._to_mesh(x) for x in inputs)
        kwargs = {k: self._to_mesh(v) for k, v in kwargs.items()}
        return self.module(*inputs, **kwargs)

    def _place_inputs(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """``forward``'s batch split, for ``acg.compile(ddp)`` to apply before its trace
        (inside the trace the arguments are already tracers)."""
        if not self.spmd:
            return args, kwargs
        return (tuple(self._to_mesh(x) for x in args),
                {k: self._to_mesh(v) for k, v in kwargs.items()})

    def _to_mesh(self, x: Any) -> Any:
        if isinstance(x, (list, tuple)):
            return type(x)(self._to_mesh(v) for v in x)
        if not isinstance(x, Tensor) or not _concrete(x) or is_placed_on(x, self.mesh):
            return x  # inside a trace (acg.compile(ddp)) placement is the caller's
        if x.ndim == 0:  # a scalar argument: the same on every device
            return Tensor(jax.device_put(x._data, sharding_for(self.mesh, 0, None)))
        return shard(x, self.mesh, self.dim)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """PyTorch's gradient-accumulation context. SPMD: gradients are global values,
        so accumulating them without a sync needs nothing special; PyTorch-style: the
        backward passes inside leave gradients local, the next one outside averages all."""
        if self.spmd:
            yield
            return
        self._sync.enabled = False
        try:
            yield
        finally:
            self._sync.enabled = True

    def parameters_bytes_per_device(self) -> int:
        """Bytes the parameters take on the first device of the mesh."""
        device = self.mesh.devices.flat[0]
        return sum(s.data.nbytes for p in self.module.parameters()
                   for s in p._data.addressable_shards if s.device == device)


def _concrete(t: Tensor) -> bool:
    data = getattr(t, "_data", None)
    return isinstance(data, jax.Array) and not isinstance(data, jax.core.Tracer)


def _keep_sharded(sharding: NamedSharding) -> Any:
    """A pure tensor hook: the gradient takes the parameter's sharding, so XLA
    reduce-scatters it instead of all-reducing (traced into the compiled backward)."""
    key = register_sharding(sharding)

    @pure_hook
    def keep_sharded(grad: Tensor) -> Tensor:
        return constrain(grad, key)
    return keep_sharded


def _named_buffers(module: Module) -> Iterator[tuple[str, Tensor]]:
    named_buffers = getattr(module, "named_buffers", None)
    if named_buffers is None:
        return iter(())
    return ((n, b) for n, b in named_buffers() if isinstance(b, Tensor))


def _check_same_model(named: list[tuple[str, Tensor]]) -> None:
    """Every process must wrap the same model: compare counts and shapes with rank 0."""
    if jax.process_count() == 1:
        return
    from jax.experimental import multihost_utils
    ndims = [t.ndim for _, t in named]
    head = np.asarray([len(named), max(ndims, default=0)], np.int64)
    heads = np.asarray(multihost_utils.process_allgather(head, tiled=False))
    me = jax.process_index()
    if len(set(heads[:, 0].tolist())) > 1:
        raise RuntimeError(f"DistributedDataParallel expects the same model on every rank, but "
                           f"rank 0 has {heads[0, 0]} parameters and buffers while rank {me} "
                           f"has {len(named)}")
    width = 1 + int(heads[:, 1].max())
    rows = np.full((len(named), width), -1, np.int64)
    for i, (_, t) in enumerate(named):
        rows[i, 0] = t.ndim
        rows[i, 1:1 + t.ndim] = t.shape
    every = np.asarray(multihost_utils.process_allgather(rows, tiled=False))
    for i, (name, t) in enumerate(named):
        for rank in range(every.shape[0]):
            if not np.array_equal(every[rank, i], every[0, i]):
                theirs = tuple(int(s) for s in every[rank, i, 1:1 + every[rank, i, 0]])
                ours = tuple(int(s) for s in every[0, i, 1:1 + every[0, i, 0]])
                raise RuntimeError(f"DistributedDataParallel: parameter {name!r} has shape "
                                   f"{theirs} on rank {rank} but {ours} on rank 0; every rank "
                                   "must construct the same model")


class _GradientSync:
    """PyTorch's DDP for programs joined with ``init_process_group``: each process runs
    the model on its own batch; when a backward has accumulated the gradient of every
    parameter, they are averaged over the processes (one all-gather of all of them), so
    each process steps with the gradient of the mean loss over the global batch."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.enabled, self.seen = True, set()
        for p in self.params:
            p.register_post_accumulate_grad_hook(self._accumulated)

    def broadcast(self, tensors: list[Tensor]) -> None:
        """Rank 0's values of parameters and buffers on every process (local arrays)."""
        if jax.process_count() == 1 or not tensors:
            return
        from jax.experimental import multihost_utils
        values = multihost_utils.broadcast_one_to_all([np.asarray(t._data) for t in tensors])
        for t, v in zip(tensors, values):
            t._set_data(jax.device_put(np.asarray(v), next(iter(t._data.devices()))),
                        bump=False)

    def start(self) -> None:
        """A new forward: the previous backward must have reached every parameter."""
        if self.seen and len(self.seen) < len(self.params):
            missing = len(self.params) - len(self.seen)
            self.seen = set()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting "
                f"a new one: {missing} parameter(s) received no gradient, so the gradients "
                "were not averaged over the processes. Every parameter must take part in "
                "the loss (find_unused_parameters is not supported by this DDP)")
        self.seen = set()

    def _accumulated(self, p: Tensor) -> None:
        self.seen.add(id(p))
        if self.enabled and len(self.seen) == len(self.params):
            self.seen = set()
            self.average()

    def average(self) -> None:
        """Every parameter's gradient replaced by its mean over the processes."""
        if jax.process_count() == 1:
            return
        from jax.experimental import multihost_utils
        grads = [np.asarray(p.grad._data) for p in self.params]
        flat = np.concatenate([g.reshape(-1).astype(np.float64) for g in grads])
        mean = np.asarray(multihost_utils.process_allgather(flat, tiled=False)).mean(0)
        start = 0
        for p, g in zip(self.params, grads):
            part = mean[start:start + g.size].reshape(g.shape).astype(g.dtype)
            start += g.size
            p.grad._set_data(jax.device_put(part, next(iter(p.grad._data.devices()))))
