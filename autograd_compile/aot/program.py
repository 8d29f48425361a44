"""A traced region at run time: one XLA program forward, one backward, one node.

:class:`Region` runs the forward graph as one ``jax.jit`` program (each op
lowered to the JAX kernel eager uses, through the JAX backend's own lowering),
writes mutated inputs back, and wires the differentiable outputs to one
:class:`CompiledFunctionBackward` node holding what the backward needs.

The node's ``apply`` runs the backward graph as one program. When ops are
being traced (compiled autograd's capture runs ``apply`` on fake tensors under
proxy tracing) or recorded (``create_graph=True``), it instead calls the
backward graph's generated code, whose ops then go through the dispatcher like
any node's formula: under ``compiled_autograd.enable`` the region's backward is
inlined into the captured backward, so one backward is still one program.
"""
from __future__ import annotations

from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from ..kernels import _xp
from ..autograd.node import AccumulateGrad, Node, TensorMeta, gradient_edge
from ..autograd.saved import _FREED, UNPACK_OVERRIDE, SavedVariable
from ..backends.ops import Tiered, arg_loader, call_op, call_op_host, load
from ..compiled_autograd import plan
from ..compiled_autograd.collect import VISITORS, Collector, NodeState
from ..dispatch.dispatcher import OpOverload
from ..dispatch.keys import TLS
from ..tracing.fake import FakeTensor
from ..fx import Graph, GraphModule
from ..fx import Node as FxNode
from ..tracing.proxy_tensor import sym_size
from ..runtime_checks import CheckedProgram
from ..tensor import Tensor, _make
from .escape import write_back
from .partition import Parts
from .trace import Joint
from .tree import unflatten


class Counters(dict):
    """traces (joint traces), compiles (XLA programs built, forward and backward),
    cache_hits, retraces (guard misses that traced again), eager_runs (calls that ran
    the function eagerly: not traceable, or past the cache size limit), eager_shapes
    (program calls run op by op at a shape not worth compiling yet, see :class:`Tiered`),
    split_runs (training-step calls split at the backward by a Python hook, see
    :mod:`.split`), eager_sizes (training-step calls at input sizes seen for the first time
    where other sizes have a program: run eagerly, compiled when they repeat; float
    arguments of new values too), eager_floats (calls of a compiled module or function whose
    guard is new only in float argument values: run eagerly, traced when they repeat),
    donation_copies (arrays a training step would donate that something else also held,
    copied first: see :func:`.wholestep._owned`)."""

    def __init__(self) -> None:
        super().__init__(traces=0, compiles=0, cache_hits=0, retraces=0, eager_runs=0,
                         eager_shapes=0, split_runs=0, eager_sizes=0, eager_floats=0,
                         donation_copies=0)

    def clear(self) -> None:
        for k in self:
            self[k] = 0


counters = Counters()


def lower(graph: Graph) -> Callable[..., Any]:
    """The graph as one jitted function on arrays (sizes are static: jit traces each new
    shape once, and ``sym_size`` reads the concrete shape then); the value checks its ops
    record (index bounds) run first, as their own small program. Shapes after the first
    follow :class:`Tiered`'s rule."""
    nodes = [n for n in graph.nodes if n.op != "placeholder"]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]

    def run(*arrays: Any) -> Any:
        counters["compiles"] += 1  # runs once per XLA compile (jit traces once per shape)
        return body(*arrays)

    def interpret(call_op: Callable) -> Callable[..., Any]:
        def body(*arrays: Any) -> Any:
            env: dict = dict(zip(placeholders, arrays))
            for n in nodes:
                if n.op == "output":
                    return load(n.args[0], env)
                args, kwargs = load(n.args, env), load(n.kwargs, env)
                if isinstance(n.target, OpOverload):
                    env[n] = call_op(n.target, args, kwargs)
                elif n.target is sym_size:
                    env[n] = args[0].shape[args[1]]
                else:  # size arithmetic on plain ints
                    env[n] = n.target(*args, **kwargs)
            raise AssertionError("graph without output")
        return body
    body = interpret(call_op)
    return Tiered(CheckedProgram(run, body), _op_by_op(placeholders, nodes), len(nodes),
                  counters)


def _op_by_op(placeholders: list[FxNode], nodes: list[FxNode]) -> Callable[..., Any]:
    """The graph run op by op on the host tier, each node's argument loading planned once
    (a graph at a shape not compiled yet runs here once per call: its Python is the cost)."""
    steps = [(n, arg_loader(n.args), arg_loader(n.kwargs) if n.kwargs else None)
             for n in nodes[:-1]]
    out = nodes[-1]
    assert out.op == "output", "graph without output"

    def body(*arrays: Any) -> Any:
        # jax arrays read as numpy views once, not once per op that reads them
        env: dict = {p: np.asarray(a) if type(a) is _xp._ARRAY else a
                     for p, a in zip(placeholders, arrays)}
        for n, load_args, load_kwargs in steps:
            args = load_args(env)
            kwargs = load_kwargs(env) if load_kwargs is not None else {}
            target = n.target
            if type(target) is OpOverload:
                env[n] = call_op_host(target, args, kwargs)
            elif target is sym_size:
                env[n] = args[0].shape[args[1]]
            else:  # size arithmetic on plain ints
                env[n] = target(*args, **kwargs)
        results = load(out.args[0], env)
        inputs = {id(v): a for v, a in zip(env.values(), arrays) if v is not a}
        # an output that is an input's numpy view: the input itself (a jax buffer's view
        # must not outlive a donation of that buffer)
        return type(results)(inputs.get(id(r), r) for r in results) \
            if type(results) in (list, tuple) else inputs.get(id(results), results)
    return body


def _tangent_masks(joint: Joint) -> list[int]:
    """For each primal gradient of the joint graph, the bit mask of the tangents (the
    outputs' gradients) it is computed from, by one walk in the graph's topological order."""
    mask: dict[FxNode, int] = {t: 1 << k for k, t in enumerate(joint.tangents)}
    for node in joint.graph.nodes:
        if node not in mask:
            m = 0
            for a in node.all_input_nodes:
                m |= mask.get(a, 0)
            mask[node] = m
    return [0 if g is None else mask[g] for g in joint.grads]


class Region:
    """The compiled forward and backward of one cache entry."""

    def __init__(self, joint: Joint, parts: Parts) -> None:
        self.forward_graph = GraphModule({}, parts.forward, class_name="CompiledForward")
        self.backward_graph = None if parts.backward is None else \
            GraphModule({}, parts.backward, class_name="CompiledBackward")
        self.fw = lower(parts.forward)
        self.bw = None if parts.backward is None else lower(parts.backward)
        self.n_inputs = sum(p.kind in ("arg", "state") for p in joint.primals)
        self.extras = [(p.kind, p.source) for p in joint.primals[self.n_inputs:]]
        self.out_spec, self.diff = joint.out_spec, joint.differentiable
        self.sinks = joint.sinks
        self.n_out = len(joint.outputs)
        self.mutated = [i for i, _ in joint.mutations]
        self.snapshot = set(self.mutated) | {i for i, p in enumerate(joint.primals)
                                             if p.kind == "key"}
        self.grad_primals = joint.grad_primals
        self.grad_tangents = _tangent_masks(joint)
        # the accumulators of the last call's leaf inputs (parameters, mostly: the same
        # tensors every call) stay alive until the next call, which then finds them instead
        # of building new ones (a leaf's accumulator is otherwise freed with its graph)
        self._accumulators: list[Node] = []
        self.saved = parts.saved
        self.n_saved_fw = parts.n_saved_fw

    def tensors(self, inputs: list[Tensor]) -> list[Tensor | None]:
        """Every primal's tensor (None for PRNG keys)."""
        return list(inputs) + [src if kind == "lifted" else None for kind, src in self.extras]

    def __call__(self, inputs: list[Tensor]) -> Any:
        arrays = [s if type(s := t._store) is _xp._ARRAY else t._data for t in inputs]
        for kind, src in self.extras:  # keys drawn in the order the region drew them
            arrays.append(src._data if kind == "lifted" else src.next_key()._data)
        outs = self.fw(*arrays)  # a failed value check raises before anything is written
        n_out, n_mut = self.n_out, len(self.mutated)
        results = [_make(a) for a in outs[:n_out]]
        if n_mut:
            prim = self.tensors(inputs)
            for i, new in zip(self.mutated, outs[n_out:n_out + n_mut]):
                prim[i]._set_data(new)  # functionalised in-place writes, written back
        if self.bw is not None and TLS.grad_enabled:
            self._wire(inputs, arrays, results, outs[n_out + n_mut:])
        it = iter(results)
        value = unflatten(self.out_spec, it)
        if self.sinks:  # tensors the region stored (``self.last_loss = loss``): the real ones
            write_back(self.sinks, it)
        return value

    def _wire(self, inputs: list[Tensor], arrays: list, results: list[Tensor],
              saved_fw: tuple) -> None:
        prim = self.tensors(inputs) if self.extras else inputs
        edges = [gradient_edge(prim[i]) for i in self.grad_primals]
        self._accumulators = [n for n, _ in edges if type(n) is AccumulateGrad]
        node = CompiledFunctionBackward(self, edges)
        metas = []
        for t, d in zip(results, self.diff):
            if d:
                t.grad_fn, t._output_nr, t._requires_grad = node, len(metas), True
                a = t._store  # a result: a plain tensor of the program's jax array (or of a
                a = a.aval if type(a) is _xp._ARRAY else a  # host array, run op by op)
                metas.append(TensorMeta(tuple(a.shape), a.dtype))
        node.input_meta = metas
        saved: list[Any] = []
        for kind, i in self.saved:
            if kind == "fw":
                saved.append(saved_fw[i])
            elif kind == "out":
                saved.append(SavedVariable(results[i], is_output=True))
            elif kind == "guard":  # only its requires_grad matters (double backward)
                saved.append(prim[i])
            elif i in self.snapshot:  # written back by this call, or a key: the value then
                saved.append(arrays[i])
            else:  # version-checked, as eager checks what a formula saved
                saved.append(SavedVariable(prim[i]))
        node.saved = saved


class CompiledFunctionBackward(Node):
    """The one backward node of a compiled region's outputs."""

    __slots__ = ("region", "saved")

    def __init__(self, region: Region, edges: list) -> None:
        super().__init__(edges)
        self.region = region
        self.saved: list[Any] | None = None

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        if self.saved is None:
            raise RuntimeError(_FREED)
        traced = bool(TLS.mode_stack) or TLS.grad_enabled or \
            any(isinstance(g, FakeTensor) for g in grad_outputs)
        if traced:
            grads = [g if g is not None else _zeros_op(m) for g, m in
                     zip(grad_outputs, self.input_meta)]
            outs = list(self.region.backward_graph(*self._unpack_tensors(), *grads))
        else:
            grads = [g._data if g is not None else jnp.zeros(m.shape, m.dtype) for g, m in
                     zip(grad_outputs, self.input_meta)]
            outs = [None if o is None else _make(o)
                    for o in self.region.bw(*self._unpack_arrays(), *grads)]
        if any(g is None for g in grad_outputs):  # an output the loss never used: as eager,
            # a primal that only it reaches gets no gradient (not 0)
            present = sum(1 << k for k, g in enumerate(grad_outputs) if g is not None)
            outs = [o if m & present else None for o, m in zip(outs, self.region.grad_tangents)]
        return outs

    def _unpack_arrays(self) -> list:
        return [s.unpack(self)._data if type(s) is SavedVariable else
                s._data if isinstance(s, Tensor) else s for s in self.saved]

    def _unpack_tensors(self) -> list[Tensor]:
        override, me = UNPACK_OVERRIDE, id(self)
        return [s.unpack(self) if type(s) is SavedVariable else
                override[(me, k)] if override and (me, k) in override else
                s if isinstance(s, Tensor) else _make(s) for k, s in enumerate(self.saved)]

    def release_variables(self) -> None:
        self.saved = None


def _zeros_op(meta: TensorMeta) -> Tensor:
    from ..dispatch.library import ops
    return ops.acg.zeros(list(meta.shape), dtype=meta.dtype)


def _visit(node: CompiledFunctionBackward, v: Any) -> NodeState:
    """Compiled autograd's view of the node: the region's backward graph is specialised
    (in the key), every saved value is a runtime input. During capture the fakes the
    replay hands out are what ``apply`` unpacks (so the inlined backward reads inputs)."""
    if node.saved is None:
        raise RuntimeError(_FREED)
    if type(v) is Collector:  # every backward: the same items, fewer property reads
        return _collect(node, v)
    v.const((CompiledFunctionBackward, node.region))
    state = []
    for k, s in enumerate(node.saved):
        if type(s) is SavedVariable:
            state.append(v.saved(s, node))
        else:
            t = v.tensor(s if isinstance(s, Tensor) else _make(s))
            if isinstance(t, FakeTensor):  # keyed by slot: two nodes may hold one array
                UNPACK_OVERRIDE[(id(node), k)] = t
            state.append(t)
    return NodeState(state)


def _collect(node: CompiledFunctionBackward, col: Collector) -> NodeState:
    """``_visit`` for a plain collect (no capture, so no fakes): a saved array adds what
    ``col.tensor(_make(array))`` adds, read from the array itself."""
    key, sizes, inputs = col.key, col.sizes, col.inputs
    key.append((CompiledFunctionBackward, node.region))
    state = []
    for s in node.saved:
        kind = type(s)
        if kind is SavedVariable:
            state.append(col.saved(s, node))
        elif kind is not _xp._ARRAY:  # a Tensor (or a host array): as ``_visit``
            state.append(col.tensor(s if isinstance(s, Tensor) else _make(s)))
        else:  # a device array (a forward residual or a snapshot): a fresh plain tensor
            shape = s.shape
            key.append(("T", s.dtype, len(shape), False))
            sizes.extend(shape)
            t = _make(s)
            inputs.append(t)
            state.append(t)
    return NodeState(state)


def _plan(c: plan.Writer, node: CompiledFunctionBackward) -> bool:
    """A backward plan's checks of the node: what ``_collect`` keys and reads (freed
    saved values hand over to the generic walk, which raises the error)."""
    c.fail_if(f"type(n) is not {c.const(CompiledFunctionBackward)} or n.region is not "
              f"{c.const(node.region)} or {plan.HOOKED}")
    c.emit("if n._ca_memo is None: n._ca_memo = 0")  # as the generic walk marks it
    c.emit("held.append(n)")
    c.emit("v = n.saved")
    c.fail_if(f"v is None or len(v) != {len(node.saved)}")
    for k, s in enumerate(node.saved):
        if type(s) is SavedVariable:
            plan.write_saved(c, s, f"v[{k}]")
        elif type(s) is _xp._ARRAY:  # as ``_collect``: a fresh plain tensor of the array
            c.emit(f"x = v[{k}]")
            c.fail_if(f"type(x) is not {c.const(_xp._ARRAY)}")
            c.emit("a = x.aval")  # shape and dtype without two property calls
            c.fail_if(f"a.shape != {c.const(tuple(s.shape))} or a.dtype != {c.const(s.dtype)}")
            c.emit(f"inputs.append({c.const(_make)}(x))")
        elif isinstance(s, Tensor):
            c.emit(f"t = v[{k}]")
            plan.write_tensor(c, s, "t")
        else:
            raise plan.Unsupported(f"a compiled region saved a {type(s).__name__}")
    plan.write_metas(c, node.input_meta)
    return True


VISITORS[CompiledFunctionBackward] = _visit
plan.PLANNERS[CompiledFunctionBackward] = _plan
