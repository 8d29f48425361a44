"""The JAX backend: the captured backward as XLA programs.

Every op node lowers to the very JAX kernel eager uses (the op's Backend
kernel; composite ops run their decomposition on traced arrays). The graph is
cut only where Python must run: opaque hooks (``call_*_hook`` nodes). Each
stretch between them is one ``jax.jit`` program with the sizes static; with no
opaque hook the whole backward is a single program. ``.grad`` writes are
deferred to the next cut (or the end): nothing observable runs in between, so
eager semantics hold while the programs stay whole. A stretch called at sizes it has
no program for runs its nodes op by op on the host tier until those sizes have cost a
compile (``ops.Tiered``): a loop over new sequence lengths does not compile at each one.

>>> import autograd_compile as acg
>>> w = acg.ones(3, requires_grad=True)
>>> with acg.compiled_autograd.enable("jax"):
...     (w * w).sum().backward()
>>> w.grad.tolist()
[2.0, 2.0, 2.0]
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from .. import journal
from ..kernels import _xp
from ..compiled_autograd import counters
from ..compiled_autograd.runtime import HOST_CALLS, WRITES, accumulate_grad, picker
from ..dispatch.dispatcher import OpOverload
from ..dispatch.keys import TLS
from ..fx import GraphModule, Node
from ..runtime_checks import CheckedProgram
from ..tensor import Tensor, _make, _unwrap, _wrap
from .ops import Tiered, call_op, call_op_host, load

try:  # a lifted Python float must stay weakly typed (x_f32 * s stays f32), as in eager
    from jax._src.lax.lax import _convert_element_type as _convert

    def weak_scalar(x: Any) -> Any:
        return _convert(x, x.dtype, weak_type=True)
except ImportError:  # pragma: no cover - older/newer jax without the private helper
    def weak_scalar(x: Any) -> Any:
        return x


_SIZE_MEMO_LIMIT = 64


def jax_backend(gm: GraphModule) -> Callable:
    """compiler_fn: partition ``gm`` at host calls and jit each device stretch."""
    return JaxProgram(gm)


def _is_size(node: Node, sizes: set[Node]) -> bool:
    """Size arithmetic: reads only the ``sizes`` input and other size nodes."""
    if node.op != "call_function" or isinstance(node.target, OpOverload):
        return False
    ins = node.all_input_nodes
    if node.target is operator.getitem and ins and ins[0].op == "placeholder":
        return ins[0].target == "sizes"
    return bool(ins) and all(n in sizes for n in ins)


def _host_kind(node: Node, sizes: set[Node] = frozenset()) -> str:
    """'placeholder', 'host' (Python object lookups), 'size' (static ints computed on the
    host, so they stay static in every program), 'call' (hooks), 'write', 'device'."""
    if node.op == "placeholder":
        return "placeholder"
    if node.op == "output":
        return "output"
    if node in sizes:
        return "size"
    if node.target is operator.getitem and isinstance(node.args[0], Node) and \
            node.args[0].op == "placeholder" and node.args[0].target in ("hooks", "leaves"):
        return "host"
    if node.target in HOST_CALLS:
        return "call"
    if node.target in WRITES:
        return "write"
    return "device"


class Segment:
    """A stretch of device nodes run as one jitted function."""

    def __init__(self, nodes: list[Node], needed_later: set[Node], size_nodes: set[Node]
                 ) -> None:
        self.nodes = nodes
        inside = set(nodes)
        ext: dict[Node, None] = {}
        static: dict[Node, None] = {}
        self.input_ids: list[int] = []
        for n in nodes:
            for a in n.all_input_nodes:
                if a in inside or a.op == "placeholder":
                    continue
                (static if a in size_nodes else ext)[a] = None
            if n.target is operator.getitem and isinstance(n.args[0], Node) and \
                    n.args[0].op == "placeholder" and n.args[0].target == "inputs":
                self.input_ids.append(n.args[1])
        self.ext, self.static = list(ext), list(static)
        # the call's arguments, picked at C speed (this runs on every backward)
        self.ext_of, self.static_of = picker(self.ext), picker(self.static)
        self.inputs_of = picker(self.input_ids)
        self.outs = [n for n in nodes if n in needed_later]
        # value checks (index bounds) run first as their own small program; shapes after
        # the first run op by op on the host tier until they have cost a compile
        self.program = CheckedProgram(self._counted, self._trace, static_argnums=(3,))
        self.fn = Tiered(self.program, self._host, len(nodes), counters)

    def _counted(self, ext: tuple, in_arrays: tuple, scalars: Any, static: tuple) -> tuple:
        counters["compiles"] += 1  # runs once per XLA compile (jit traces once per shape)
        return self._trace(ext, in_arrays, scalars, static)

    def _trace(self, ext: tuple, in_arrays: tuple, scalars: Any, static: tuple) -> tuple:
        env: dict[Node, Any] = dict(zip(self.ext, ext))
        env.update(zip(self.static, static))
        inputs = dict(zip(self.input_ids, in_arrays))
        for n in self.nodes:
            env[n] = _lower(n, env, inputs, scalars)
        return tuple(env[n] for n in self.outs)

    def _host(self, ext: tuple, in_arrays: tuple, scalars: Any, static: tuple) -> tuple:
        """``_trace`` op by op on the host tier, each jax input read as a numpy view once;
        an output that is such a view is given back as the input itself."""
        views = {}
        for a in (*ext, *in_arrays):
            if type(a) is _xp._ARRAY:
                views[id(a)] = (np.asarray(a), a)
        env: dict[Node, Any] = {n: views[id(a)][0] if id(a) in views else a
                                for n, a in zip(self.ext, ext)}
        env.update(zip(self.static, static))
        inputs = {i: views[id(a)][0] if id(a) in views else a
                  for i, a in zip(self.input_ids, in_arrays)}
        for n in self.nodes:
            env[n] = _run_host(n, env, inputs, scalars)
        back = {id(v): a for v, a in views.values()}
        return tuple(back.get(id(env[n]), env[n]) for n in self.outs)

    def run(self, env: dict, inputs: list, scalars: Any, key: tuple) -> None:
        """The segment on ``env``; ``key``: the call's size list, which decides its shapes."""
        out = self.fn.call(key, self.ext_of(env), self.inputs_of(inputs), scalars,
                           self.static_of(env))
        env.update(zip(self.outs, out))


def _lower(n: Node, env: dict, inputs: dict, scalars: Any) -> Any:
    """One node inside a jitted segment."""
    if n.target is operator.getitem and isinstance(n.args[0], Node) and \
            n.args[0].op == "placeholder":
        which, i = n.args[0].target, n.args[1]
        if which == "inputs":
            return inputs[i]
        return weak_scalar(scalars[i])
    args = load(n.args, env)
    kwargs = load(n.kwargs, env)
    if isinstance(n.target, OpOverload):
        return call_op(n.target, args, kwargs)
    return n.target(*args, **kwargs)


def _run_host(n: Node, env: dict, inputs: dict, scalars: Any) -> Any:
    """``_lower`` on the host tier: ops run eagerly (numpy where light enough), a lifted
    scalar is a Python float (weakly typed, as in eager)."""
    if n.target is operator.getitem and isinstance(n.args[0], Node) and \
            n.args[0].op == "placeholder":
        which, i = n.args[0].target, n.args[1]
        return inputs[i] if which == "inputs" else float(scalars[i])
    args, kwargs = load(n.args, env), load(n.kwargs, env)
    if isinstance(n.target, OpOverload):
        return call_op_host(n.target, args, kwargs)
    return n.target(*args, **kwargs)


def _write(fn: Callable, leaf: Tensor, grad: Any, plain: bool) -> None:
    """A ``write`` step, ``fn(leaf, grad)``; a first ``.grad`` outside any mode is set
    directly (what accumulate_into_grad does, without the op layer)."""
    if plain and fn is accumulate_grad and leaf._grad is None:
        journal.record(leaf, "_grad")  # so a failed backward can undo it
        leaf._grad = _make(grad)
    else:
        fn(leaf, _make(grad))


def _write_step(node: Node, kind_of: dict[Node, str]) -> tuple[str, Any]:
    """A ``.grad`` write: the fast form when it writes a device result into a leaf or
    retained tensor (always, for captured graphs), else a generic host call."""
    args = node.args
    if len(args) == 2 and not node.kwargs and all(isinstance(a, Node) for a in args) and \
            kind_of[args[0]] == "host" and kind_of[args[1]] == "device":
        return ("write", (node.target, args[0], args[1]))
    return ("call", node)


class JaxProgram:
    """Device segments, host calls and deferred writes, in graph order."""

    def __init__(self, gm: GraphModule) -> None:
        self.graph_module = gm
        nodes = list(gm.graph.nodes)
        self.output = nodes[-1]
        self.steps: list[tuple[str, Any]] = []
        self.sizes: set[Node] = set()
        for n in nodes:
            if _is_size(n, self.sizes):
                self.sizes.add(n)
        self.size_order = [n for n in nodes if n in self.sizes]
        self.host: list[Node] = [n for n in nodes if _host_kind(n, self.sizes) == "host"]
        self.host_slots = [(n, n.args[0].target, n.args[1]) for n in self.host]
        self.size_steps = [(n, n.args[1], None, (), {}) if n.target is operator.getitem and
                           n.args[0].op == "placeholder" else (n, -1, n.target, n.args, n.kwargs)
                           for n in self.size_order]
        self._size_memo: dict[tuple, dict[Node, int]] = {}
        self._plan(nodes)
        self.straight = self._straight_plan()

    def _straight_plan(self) -> tuple | None:
        """(segment, [(write fn, leaf index, output index)]) when the whole backward is
        one program followed by ``.grad`` writes of its results and returns nothing (a
        ``backward()`` without Python hooks): then a call needs no node environment."""
        if self.output.args[0] or not self.steps or self.steps[0][0] != "segment":
            return None
        seg = self.steps[0][1]
        if seg.ext:
            return None
        writes = []
        for kind, step in self.steps[1:]:
            if kind != "write":
                return None
            fn, target, grad = step
            if target.args[0].target != "leaves" or grad not in seg.outs:
                return None
            writes.append((fn, target.args[1], seg.outs.index(grad)))
        return seg, writes

    def _plan(self, nodes: list[Node]) -> None:
        """Order-preserving schedule: host calls and writes keep their graph order; each
        device node joins the program right after the last host call it depends on
        (pure computation can move earlier unobservably), so a hook whose result feeds
        nothing (e.g. a post-accumulate-grad hook) does not cut the program in two."""
        kind_of = {n: _host_kind(n, self.sizes) for n in nodes}
        calls = [n for n in nodes if kind_of[n] == "call"]
        call_no = {c: i + 1 for i, c in enumerate(calls)}
        stage: dict[Node, int] = {}
        for n in nodes:
            deps = [call_no[a] if a in call_no else stage.get(a, 0) for a in n.all_input_nodes]
            stage[n] = call_no.get(n, max(deps, default=0))
        groups: list[list[Node]] = [[] for _ in range(len(calls) + 1)]
        for n in nodes:
            if kind_of[n] == "device":
                groups[stage[n]].append(n)
        writes_before: list[list[Node]] = [[] for _ in range(len(calls) + 1)]
        seen_calls = 0
        for n in nodes:  # a write runs before the first host call that follows it
            if kind_of[n] == "call":
                seen_calls += 1
            elif kind_of[n] == "write":
                writes_before[seen_calls].append(n)
        self._emit(groups, calls, writes_before, kind_of, stage)

    def _emit(self, groups: list, calls: list, writes_before: list, kind_of: dict,
              stage: dict) -> None:
        for j, group in enumerate(groups):
            if group:
                later = {n for n in group if any(kind_of[u] != "device" or stage[u] != j
                                                 for u in n.users)}
                self.steps.append(("segment", Segment(group, later, self.sizes)))
            self.steps.extend(_write_step(w, kind_of) for w in writes_before[j])
            if j < len(calls):
                self.steps.append(("call", calls[j]))

    def __call__(self, inputs: list[Tensor], sizes: list[int], scalars: list[float],
                 hooks: list, leaves: list[Tensor]) -> tuple:
        if self.straight is not None:
            return self._run_straight(inputs, sizes, scalars, leaves)
        arrays = [t._data for t in inputs]
        # no scalars: None (an empty pytree) spares a host-to-device copy per call
        scalar_arr = np.asarray(scalars, dtype=np.float64) if scalars else None
        places = {"hooks": hooks, "leaves": leaves, "sizes": sizes}
        env: dict[Node, Any] = {n: places[where][i] for n, where, i in self.host_slots}
        key = tuple(sizes)  # (within one capture, the sizes decide every input's shape)
        env.update(self._static_sizes(key))
        plain = not TLS.mode_stack  # writes may skip the op layer (no mode to see them)
        for kind, step in self.steps:
            if kind == "segment":
                step.run(env, arrays, scalar_arr, key)
            elif kind == "write":  # fn(tensor, grad array): no generic arg loading
                fn, target, grad = step
                _write(fn, env[target], env[grad], plain)
            else:
                env[step] = _unwrap(step.target(*_wrap(load(step.args, env))))
        out = self.output.args[0]
        return _wrap(load(out, env)) if out else ()

    def _run_straight(self, inputs: list[Tensor], sizes: list[int], scalars: list[float],
                      leaves: list[Tensor]) -> tuple:
        """``__call__`` for a straight plan: the program, then the writes."""
        seg, writes = self.straight
        key = tuple(sizes)
        static = seg.static_of(self._static_sizes(key))
        if seg.program.unchecked:  # one program reads each input: a saved host value goes in as
            arrays = tuple([_program_value(inputs[i]) for i in seg.input_ids])  # it is
        else:
            arrays = tuple([inputs[i]._data for i in seg.input_ids])
        out = seg.fn.call(key, (), arrays,
                          np.asarray(scalars, dtype=np.float64) if scalars else None, static)
        if TLS.mode_stack:  # a mode sees every write through the op layer
            for fn, leaf_i, out_i in writes:
                _write(fn, leaves[leaf_i], out[out_i], False)
            return ()
        log = journal.entries()
        for fn, leaf_i, out_i in writes:  # _write(..., plain=True), inlined
            leaf = leaves[leaf_i]
            if fn is accumulate_grad and leaf._grad is None:
                if log is not None:
                    log.append((leaf, "_grad", None))  # journal.record: a failure undoes it
                leaf._grad = _make(out[out_i])
            else:
                fn(leaf, _make(out[out_i]))
        return ()

    def _static_sizes(self, key: tuple[int, ...]) -> dict[Node, int]:
        """The size nodes' values (plain ints: static in programs), computed once per
        distinct size list ``key`` (a training loop repeats the same few)."""
        env = self._size_memo.get(key)
        if env is None:
            env = {}
            for n, i, target, args, kwargs in self.size_steps:
                env[n] = key[i] if target is None else target(*load(args, env),
                                                              **load(kwargs, env))
            if len(self._size_memo) >= _SIZE_MEMO_LIMIT:
                self._size_memo.clear()
            self._size_memo[key] = env
        return env


def _program_value(t: Tensor) -> Any:
    """What one program call reads of ``t``: a host value (a saved activation the eager
    forward computed in numpy) as the numpy array itself, which jit moves in one copy,
    rather than ``_data``'s defensive copy plus transfer, kept for a reuse that a
    backward's saved values never get."""
    store = t._store
    return store if type(store) is np.ndarray else t._data
