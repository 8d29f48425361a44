"""Capture: replay the engine's walk on fakes and record one graph.

The :class:`AutogradCompilerInstance` makes the graph's five inputs
(``inputs, sizes, scalars, hooks, leaves``), turns collected sizes into
SymInts (duck-sized: equal sizes share a symbol, unless an earlier capture of
the graph saw them differ; 0 and 1 are specialised),
floats into lifted scalars, then runs the engine's own walk with a per-node
function that applies hooks as ``call_*_hook`` nodes and nodes through their
own formulas. The result is a GraphModule and the guards under which it is
valid (a :class:`CacheEntry`).
"""
from __future__ import annotations

import contextlib
import operator
from typing import TYPE_CHECKING, Any, Callable, Iterator

import sympy

from .. import config
from ..autograd import engine
from ..autograd.derivatives import OpNode
from ..autograd.engine import GraphTask, check_hook_result, validate_outputs
from ..autograd.function import BackwardCFunction
from ..autograd.node import AccumulateGrad, GraphRoot, Node, TensorMeta
from ..autograd.saved import UNPACK_OVERRIDE, SavedVariable
from . import explain
from .collect import Collector, NotCapturable, visit_node
from .runtime import (accumulate_grad, call_post_acc_hook, call_post_hook,
                               call_pre_hook, call_stolen_post_hook, call_tensor_pre_hook,
                               call_unpack_hook, picker, retain_grad)
from ..dispatch.keys import TLS
from ..tracing.fake import FakeTensor, FakeTensorMode
from ..fx import GraphModule, Proxy
from ..tracing.lifted import GUARDS, LiftedScalar
from ..tracing.proxy_tensor import ProxyTracer, fetch_tensor_proxy, track_tensor_tree, tracing
from ..tracing.symbolic_shapes import ShapeEnv, set_proxy
from ..tensor import Tensor

if TYPE_CHECKING:
    from .cache import Collected

log = config.get_logger("compiled_autograd")
_PLACEHOLDERS = ("inputs", "sizes", "scalars", "hooks", "leaves")


class CacheEntry:
    """A captured graph, its compiled callable, and when it may be reused."""

    def __init__(self, gm: GraphModule, compiled: Callable, sizes: "SizeGuards",
                 scalar_guards: list[tuple[int, float]], n_inputs: int) -> None:
        self.graph_module, self.compiled = gm, compiled
        self.sizes, self.scalar_guards = sizes, scalar_guards
        self.used_after_hook = _used_after_hook(gm, n_inputs)

    def guard_failure(self, sizes: list[int], scalars: list[float]) -> str | None:
        """None if this entry serves these sizes and scalars, else why not."""
        reason = self.sizes.failure(sizes)
        if reason is not None:
            return reason
        for i, value in self.scalar_guards:
            if scalars[i] != value:
                return f"scalars[{i}] was specialised to {value}, now {scalars[i]}"
        return None


def _used_after_hook(gm: GraphModule, n_inputs: int) -> list[bool]:
    """For each input: is its first use preceded by a host hook call in graph order? (Only
    those can see an in-place change a hook made; eager checks versions at first use.)"""
    from .runtime import HOST_CALLS
    nodes = list(gm.graph.nodes)
    calls_before, count = {}, 0
    for n in nodes:
        calls_before[n] = count
        count += n.op == "call_function" and n.target in HOST_CALLS
    flags = [False] * n_inputs
    for n in nodes:
        if n.target is operator.getitem and n.args and getattr(n.args[0], "target", None) == \
                "inputs" and n.users:
            flags[n.args[1]] = min(calls_before[u] for u in n.users) > 0
    return flags


class SizeGuards:
    """Duck sizing plus ShapeEnv guards, checked without sympy on the hot path (plain
    tuple comparisons: numpy's per-call overhead dominates on a hundred sizes)."""

    def __init__(self, hints: list[int], shape_env: ShapeEnv, reps: list[int],
                 symbols: list[sympy.Symbol], seen: tuple[tuple[int, ...], ...] = ()) -> None:
        self.n = len(hints)
        self.seen = seen or (tuple(hints),)  # the size lists that decided the duck groups
        consts = [i for i, r in enumerate(reps) if r < 0]  # sizes 0 and 1: specialised
        self.const_of, self.const_vals = picker(consts), tuple(hints[i] for i in consts)
        dups = [i for i, r in enumerate(reps) if r >= 0 and r != i]  # duck-sized duplicates
        self.dup_of, self.rep_of = picker(dups), picker([reps[i] for i in dups])
        self.dups, self.reps = dups, reps  # for the miss explanation
        self.sym_rep = sorted({r for r in reps if r >= 0})  # one slot per symbol, in order
        self.symbol_values = picker(self.sym_rep)
        self.shape_env, self.symbols = shape_env, symbols
        self._check: Callable | None = None

    def finalize(self) -> "SizeGuards":
        """Compile the ShapeEnv's guards: called when capture ends (all are recorded)."""
        self._check = self._compile(self.shape_env, self.symbols)
        return self

    def _compile(self, env: ShapeEnv, symbols: list[sympy.Symbol]) -> Callable | None:
        conds = [g.condition for g in env.guards]
        if not conds:
            return None
        return sympy.lambdify(symbols, sympy.And(*conds), modules="math")

    def failure(self, sizes: list[int]) -> str | None:
        if len(sizes) != self.n:
            return f"{len(sizes)} sizes, captured with {self.n}"
        if self.const_of(sizes) != self.const_vals:
            return "a size specialised to 0 or 1 changed"
        if self.dup_of(sizes) != self.rep_of(sizes):
            return explain.sizes_differ(sizes, self.dups, [self.reps[i] for i in self.dups])
        values = self.symbol_values(sizes)
        if values and min(values) < 2:
            return "a symbolic size became 0 or 1 (those sizes are specialised)"
        if self._check is not None and not self._check(*values):
            return self.shape_env.failing_guard(list(values)) or "a size guard failed"
        return None


class Replayer(Collector):
    """The collect walk again, handing out fakes, SymInts and lifted scalars."""

    def __init__(self, aci: "AutogradCompilerInstance", collected: Collector) -> None:
        super().__init__()
        self.aci, self.real = aci, collected
        self.n_inputs = self.n_sizes = self.n_scalars = 0

    def const(self, value: Any) -> Any:
        return value

    def _next_sizes(self, n: int) -> list:
        out = self.aci.sym_sizes[self.n_sizes:self.n_sizes + n]
        self.n_sizes += n
        return out

    def tensor(self, t: Tensor) -> FakeTensor:
        i = self.n_inputs
        self.n_inputs += 1
        real = self.real.inputs[i]
        fake = FakeTensor(tuple(self._next_sizes(len(real.shape))), real.dtype, self.aci.fake_mode)
        track_tensor_tree(fake, self.aci.input_proxy(i), self.aci.tracer)
        return fake

    def saved(self, sv: SavedVariable, node: Node) -> FakeTensor:
        if sv.unpack_hook is not None:  # unpacked by a graph call when its node runs
            shape, dtype = sv.meta
            fake = FakeTensor(tuple(self._next_sizes(len(shape))), dtype, self.aci.fake_mode)
            self.aci.unpack_later.setdefault(node, []).append((fake, self.real.unpack_at[id(sv)]))
        else:
            fake = self.tensor(None)
        UNPACK_OVERRIDE[id(sv)] = fake  # a custom Function's ctx.saved_tensors finds it
        return fake

    def meta(self, m: TensorMeta) -> TensorMeta:
        return TensorMeta(tuple(self._next_sizes(len(m.shape))), m.dtype)

    def size_arg(self, values: Any) -> Any:
        if isinstance(values, (list, tuple)):
            return type(values)(self._next_sizes(len(values)))
        return self._next_sizes(1)[0]

    def scalar(self, value: float) -> LiftedScalar:
        i = self.n_scalars
        self.n_scalars += 1
        return self.aci.lifted[i]

    def leaf(self, t: Tensor) -> int:
        return self.real._leaf_ids[id(t)]  # the collector's numbering (hook plans add leaves)


class AutogradCompilerInstance:
    """Builds one backward graph (see module docstring) and compiles it."""

    def __init__(self, compiler_fn: Callable) -> None:
        self.compiler_fn = compiler_fn
        self.shape_env = ShapeEnv()
        self.fake_mode = FakeTensorMode(self.shape_env)
        self.tracer = ProxyTracer()
        self.graph = self.tracer.graph
        self.sym_sizes: list = []
        self.lifted: list[LiftedScalar] = []
        self.scalar_guards: list[tuple[int, float]] = []
        self._getitems: dict[tuple[str, int], Proxy] = {}
        # per node: (fake, index in ``hooks``) of saved tensors whose unpack hook runs there
        self.unpack_later: dict[Node, list[tuple[FakeTensor, int]]] = {}

    # -- inputs --------------------------------------------------------------------------
    def begin_capture(self, inputs: list[Tensor], sizes: list[int], scalars: list[float],
                      seen: tuple[tuple[int, ...], ...] = ()) -> SizeGuards:
        """Placeholders, symbolic sizes and lifted scalars. Sizes are duck-sized: positions
        equal now and in every earlier size list ``seen`` for this graph share a symbol, so
        sizes equal by coincidence at a first capture (batch 16, width 16) are told apart
        by the next one (PyTorch's automatic dynamic)."""
        self.ph = {n: self.tracer.proxy(self.graph.placeholder(n)) for n in _PLACEHOLDERS}
        seen = (*seen, tuple(sizes))
        reps, first, symbols = [], {}, []
        for k, v in enumerate(sizes):
            group = tuple(s[k] for s in seen)
            if v < 2:  # 0, 1 (and negative positions) are specialised, as in PyTorch
                self.sym_sizes.append(v)
                reps.append(-1)
            elif group in first:
                self.sym_sizes.append(self.sym_sizes[first[group]])
                reps.append(first[group])
            else:
                first[group] = k
                sym = self.shape_env.create_symint(v, f"sizes[{k}]")
                set_proxy(self.tracer, sym, self._item("sizes", k))
                symbols.append(sym.node.expr)
                self.sym_sizes.append(sym)
                reps.append(k)
        for i, v in enumerate(scalars):
            s = LiftedScalar(v, index=i, is_int=type(v) is int)
            set_proxy(self.tracer, s, self._item("scalars", i))
            self.lifted.append(s)
        return SizeGuards(list(sizes), self.shape_env, reps, symbols, seen)

    def _item(self, placeholder: str, i: int) -> Proxy:
        key = (placeholder, i)
        if key not in self._getitems:
            self._getitems[key] = self.ph[placeholder][i]
        return self._getitems[key]

    def input_proxy(self, i: int) -> Proxy:
        return self._item("inputs", i)

    # -- hooks and writes as graph nodes -----------------------------------------------
    def _call(self, fn: Callable, *args: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, args, {})

    def _fresh(self, like: Tensor, proxy: Proxy) -> FakeTensor:
        new = FakeTensor(like.shape, like.dtype, self.fake_mode)
        track_tensor_tree(new, proxy, self.tracer)
        return new

    def _p(self, t: Tensor | None) -> Any:
        return None if t is None else fetch_tensor_proxy(self.tracer, t)

    def tensor_pre_hook(self, ref: tuple[str, Any], g: Tensor | None) -> Tensor | None:
        kind, hook = ref
        if kind == "pure":
            new = hook(g)
            if new is None:
                return g
            check_hook_result(hook, g, new)
            return new
        proxy = self._call(call_tensor_pre_hook, self._item("hooks", hook), self._p(g))
        return None if g is None else self._fresh(g, proxy)  # a None stays None (or raises)

    def pre_hook(self, ref: tuple[str, Any], grads: list) -> list:
        kind, hook = ref
        if kind == "pure":
            return engine.run_pre_hooks([hook], grads)
        proxy = self._call(call_pre_hook, self._item("hooks", hook),
                           tuple(self._p(g) for g in grads))
        return [None if g is None else self._fresh(g, proxy[i]) for i, g in enumerate(grads)]

    def post_hook(self, ref: tuple[str, Any], outs: list, grads: list) -> list:
        kind, hook = ref
        if kind == "pure":
            return engine.run_post_hooks([hook], outs, grads)
        proxy = self._call(call_post_hook, self._item("hooks", hook),
                           tuple(self._p(g) for g in outs), tuple(self._p(g) for g in grads))
        return [None if g is None else self._fresh(g, proxy[i]) for i, g in enumerate(outs)]

    def post_acc_grad_hook(self, ref: tuple[str, Any], leaf: int) -> None:
        self._call(call_post_acc_hook, self._item("hooks", ref[1]), self._item("leaves", leaf))

    def write(self, fn: Callable, leaf: int, g: Tensor) -> None:
        self._call(fn, self._item("leaves", leaf), self._p(g))

    def unpack_saved(self, node: Node) -> None:
        """The node's saved tensors with unpack hooks: the hook calls go here, just before
        the node's formula (after its hooks), once per saved tensor, as in eager."""
        for fake, i in self.unpack_later.pop(node, ()):
            track_tensor_tree(fake, self._call(call_unpack_hook, self._item("hooks", i)),
                              self.tracer)

    # -- the walk ------------------------------------------------------------------------
    def capture_node(self, task: GraphTask, node: Node, grads: list) -> list | None:
        """The engine's call_node, recording hooks and running formulas on fakes."""
        plan = self.collected.plan(node)
        for slot, ref in plan.tensor_pre:
            grads[slot] = self.tensor_pre_hook(ref, grads[slot] if slot < len(grads) else None)
        for slot, leaf in plan.retained:
            if grads[slot] is not None:
                self.write(retain_grad, leaf, grads[slot])
        if task.capture_at and engine._capture(task, node, grads, write=self._input_writer()):
            if task.accumulate:  # as eager: the input's node pre-hooks still run
                for ref in plan.pre:
                    grads = self.pre_hook(ref, grads)
            return None
        for ref in plan.pre:
            grads = self.pre_hook(ref, grads)
        if grads and all(g is None for g in grads):
            outs: list = [None] * len(node.next_edges)
        else:
            self.unpack_saved(node)
            outs = self.apply_node(node, self.replayed[node], grads, plan)
        stolen = self._stolen_leaf(task, node, grads)
        for ref in plan.post:
            if stolen is not None and ref[0] == "opaque":  # sees .grad itself, as eager
                self._call(call_stolen_post_hook, self._item("hooks", ref[1]),
                           self._item("leaves", stolen))
            else:
                outs = self.post_hook(ref, outs, grads)
        # gradients for nodes this backward does not run (backward(inputs=)) are dropped
        outs = [None if n is not None and n not in self.replayed else g
                for (n, _), g in zip(node.next_edges, outs)] \
            if len(outs) == len(node.next_edges) else outs
        return validate_outputs(node, outs, lambda n: self.replayed[n].metas)

    def _stolen_leaf(self, task: GraphTask, node: Node, grads: list) -> int | None:
        """The leaf whose ``.grad`` becomes this AccumulateGrad's incoming gradient (it had
        none, no graph is built): its post-hooks see ``.grad`` itself. Else None."""
        if not isinstance(node, AccumulateGrad) or task.create_graph or grads[0] is None or \
                node.variable._grad is not None:
            return None
        return self.replayed[node].extra

    def _input_writer(self) -> Callable[[Tensor, Tensor], None]:
        ids = self.collected.col._leaf_ids
        return lambda t, g: self.write(accumulate_grad, ids[id(t)], g)

    def apply_node(self, node: Node, state: Any, grads: list, plan: Any) -> list:
        if isinstance(node, AccumulateGrad):
            if grads[0] is not None:
                self.write(accumulate_grad, state.extra, grads[0])
            for ref in plan.post_acc:
                self.post_acc_grad_hook(ref, state.extra)
            return []
        if isinstance(node, OpNode):
            return node.apply_with(grads, state.args, state.outs, state.metas)
        if isinstance(node, GraphRoot):
            return list(state.args)
        if isinstance(node, BackwardCFunction):
            with _swapped_attrs(node, state.extra):
                return node.apply(grads)
        return node.apply(grads)

    def capture(self, task: GraphTask, collected: "Collected",
                seen: tuple[tuple[int, ...], ...] = ()) -> "CacheEntry":
        """Replay ``task`` into a graph, compile it, return the cache entry (``seen``: the
        size lists of this graph's earlier captures)."""
        self.collected = collected
        col = collected.col
        size_guards = self.begin_capture(col.inputs, col.sizes, col.scalars, seen)
        replay = Replayer(self, col)
        with _capturing(self, collected.nodes) as swap:
            self.replayed = {n: visit_node(n, replay) for n in collected.nodes}
            swap(self.replayed)
            outputs = _run_walk(task, self.capture_node)
        return self.end_capture(outputs, size_guards)

    def end_capture(self, outputs: list, size_guards: SizeGuards) -> CacheEntry:
        """Finish the graph, log it, hand it to the compiler."""
        if self.tracer.constants:  # a tensor from outside the graph: its value could change
            raise NotCapturable(f"backward reads {len(self.tracer.constants)} tensor(s) from "
                                "outside the autograd graph (a closure or global)")
        self.graph.output(tuple(None if o is None else self._p(o).node for o in outputs))
        self.graph.eliminate_dead_code()
        gm = GraphModule({}, self.graph, class_name="CompiledAutograd")
        if config.log_enabled("compiled_autograd"):
            log.debug("captured graph:\n%s", gm.code)
        compiled = self.compiler_fn(gm)
        if not callable(compiled):
            raise TypeError(f"compiler_fn {getattr(self.compiler_fn, '__name__', '?')} returned "
                            f"{type(compiled).__name__}, expected a callable")
        return CacheEntry(gm, compiled, size_guards.finalize(), list(self.scalar_guards),
                          len(self.collected.col.inputs))


def _run_walk(task: GraphTask, call: Callable) -> list:
    deps, captured = dict(task.dependencies), list(task.captured)
    try:
        task.captured = [None] * len(task.captured)
        engine._walk(task, call)
        return list(task.captured)
    finally:
        task.dependencies, task.captured = deps, captured


@contextlib.contextmanager
def _capturing(aci: AutogradCompilerInstance, nodes: list[Node]) -> Iterator[Callable]:
    """Modes on, grad off, scalar guards collected; node metadata swapped, then restored."""
    old_meta = {n: n.input_meta for n in nodes}

    def swap(states: dict) -> None:
        for n, s in states.items():
            n.input_meta = s.metas
    prev_grad, prev_sink = TLS.grad_enabled, GUARDS.sink
    TLS.grad_enabled, GUARDS.sink = False, aci.scalar_guards
    try:
        with tracing(aci.tracer, aci.fake_mode):
            yield swap
    finally:
        TLS.grad_enabled, GUARDS.sink = prev_grad, prev_sink
        for n, m in old_meta.items():
            n.input_meta = m
        UNPACK_OVERRIDE.clear()


@contextlib.contextmanager
def _swapped_attrs(node: Any, attrs: dict[str, Any]) -> Iterator[None]:
    old = {k: vars(node)[k] for k in attrs}
    vars(node).update(attrs)
    try:
        yield
    finally:
        vars(node).update(old)
