"""The eager autograd engine: walk the graph, run hooks and nodes, write ``.grad``.

One backward call is a :class:`GraphTask`: count each node's incoming edges,
then run ready nodes from a heap, later-created first (accumulators first of
all, as PyTorch does). For every node, in PyTorch's order:

    tensor pre-hooks -> retain_grad -> node pre-hooks -> node.apply
    (AccumulateGrad: write .grad -> post-accumulate-grad hooks) -> node post-hooks

The whole walk runs inside a journal transaction, so a backward that raises
leaves every ``.grad`` and every tensor a hook changed in place as before.
Saved tensors are freed only after a successful walk (without retain_graph),
which lets the same backward be retried after a failure.
"""
from __future__ import annotations

import heapq
import warnings
from typing import Any, Callable, Sequence

import jax.numpy as jnp

from ..dispatch.keys import TLS
from ..dispatch.library import ops
from ..errors import shape_list
from ..kernels._shapes import shapes_equal
from ..tensor import ENGINE_BACKWARD, Tensor, _make
from .. import journal
from .node import AccumulateGrad, GraphRoot, Node, gradient_edge
from .accumulate import (POST_ACC_RETURNED, STATE, _add, _hook_name, _plain,  # noqa: F401
                         accumulate_into_grad, accumulate_retained, run_post_acc_hooks)

# compiled autograd installs itself here: fn(task) -> bool (True when it ran the task)
COMPILED_RUNNER: list[Callable[["GraphTask"], bool]] = []
# and its cache-hit fast path, tried before a GraphTask is built (see backward())
COMPILED_FAST: list[Callable[[list, list, bool], Any]] = []


class GraphTask:
    """Everything one backward call needs: roots, what to run, what to capture."""

    def __init__(self, roots: Sequence[Tensor], grads: Sequence[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: Sequence[Tensor] | None, accumulate: bool) -> None:
        self.root = GraphRoot([gradient_edge(t) for t in roots], grads)
        self.keep_graph, self.create_graph, self.accumulate = keep_graph, create_graph, accumulate
        self.inputs = list(inputs) if inputs is not None else None
        self.dependencies, self.hooks, self.order = _dependencies(self.root)
        self.capture_at: dict[tuple[Node, int], list[int]] = {}
        self.captured: list[Tensor | None] = []
        self.needed: set[Node] | None = None
        if self.inputs is not None:
            self._plan_inputs()
        self.executed: list[Node] = []
        self.fast: Any = None  # what compiled autograd's fast path handed over

    def _plan_inputs(self) -> None:
        """backward(inputs=)/grad(): run only nodes that lead to an input."""
        self.captured = [None] * len(self.inputs)
        targets: set[Node] = set()
        for i, t in enumerate(self.inputs):
            node, slot = gradient_edge(t)
            if node is None:
                continue
            self.capture_at.setdefault((node, slot), []).append(i)
            targets.add(node)
        self.needed = _nodes_leading_to(self.root, targets)

    def is_needed(self, node: Node) -> bool:
        return self.needed is None or node in self.needed


class NodeHooks:
    """The hooks of one node as they were when the backward started: hooks added or
    removed while it runs take effect next time (and compiled mode sees the same)."""

    __slots__ = ("tensor_pre", "retained", "pre", "post", "post_acc")

    def __init__(self, node: Node) -> None:
        self.tensor_pre = node.tensor_pre_hooks()
        self.retained = node.retained_tensors()
        self.pre = node.pre_hooks()
        self.post = node.post_hooks()
        self.post_acc = node.post_acc_hooks() if isinstance(node, AccumulateGrad) else []

    def __bool__(self) -> bool:
        return bool(self.tensor_pre or self.retained or self.pre or self.post or self.post_acc)


NO_HOOKS = NodeHooks.__new__(NodeHooks)
for _slot in NodeHooks.__slots__:
    setattr(NO_HOOKS, _slot, [])


def _has_hooks(node: Node) -> bool:
    if isinstance(node, AccumulateGrad):
        v = node.variable
        return bool(v._backward_hooks or v._post_acc_hooks or node._pre_hooks or node._post_hooks)
    return bool(node._tensor_hooks or node._retained or node._pre_hooks or node._post_hooks)


def _dependencies(root: Node) -> tuple[dict[Node, int], dict[Node, NodeHooks], list[Node]]:
    """Incoming-edge counts of every reachable node, a snapshot of their hooks, and the
    nodes in discovery order (deterministic: compiled autograd numbers nodes by it)."""
    deps: dict[Node, int] = {}
    hooks: dict[Node, NodeHooks] = {}
    order, seen, stack = [root], {root}, [root]
    while stack:
        for nxt, _ in stack.pop().next_edges:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
                order.append(nxt)
                if _has_hooks(nxt):
                    hooks[nxt] = NodeHooks(nxt)
    return deps, hooks, order


def _nodes_leading_to(root: Node, targets: set[Node]) -> set[Node]:
    """Nodes from which some target is reachable (targets included)."""
    needed: set[Node] = set()
    done: set[Node] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            if node in targets or any(n in needed for n, _ in node.next_edges if n is not None):
                needed.add(node)
            continue
        if node in done:
            continue
        done.add(node)
        stack.append((node, True))
        stack.extend((n, False) for n, _ in node.next_edges if n is not None and n not in done)
    return needed


# -- running a task ---------------------------------------------------------------------

def execute(task: GraphTask) -> list[Tensor | None]:
    """Run the task eagerly (or through compiled autograd when enabled)."""
    prev = STATE.create_graph
    STATE.depth += 1
    try:
        with journal.transaction():
            if not (COMPILED_RUNNER and COMPILED_RUNNER[0](task)):
                _run_eager(task)
    finally:
        STATE.depth -= 1
        STATE.create_graph = prev
    if not task.keep_graph:
        for node in task.executed:
            node.release_variables()
    return task.captured


def run_hit(call: Callable[..., Any], args: tuple, executed: list[Node], keep_graph: bool
            ) -> None:
    """``execute`` for compiled autograd's fast path: ``call(*args)`` runs a whole
    backward (no create_graph) in a journal transaction; saved tensors are freed after."""
    prev = STATE.create_graph
    STATE.depth += 1
    try:
        with journal.transaction():
            STATE.create_graph = False
            prev_grad, TLS.grad_enabled = TLS.grad_enabled, False
            try:
                call(*args)
            finally:
                TLS.grad_enabled = prev_grad
    finally:
        STATE.depth -= 1
        STATE.create_graph = prev
    if not keep_graph:
        for node in executed:
            node.release_variables()


class running:
    """The modes one task runs in (eagerly or compiled): grad mode on only under
    create_graph, so hooks and formulas record a graph only then."""

    __slots__ = ("create_graph", "prev")

    def __init__(self, task: GraphTask) -> None:
        self.create_graph = task.create_graph

    def __enter__(self) -> None:
        STATE.create_graph = self.create_graph
        self.prev, TLS.grad_enabled = TLS.grad_enabled, self.create_graph

    def __exit__(self, *exc: object) -> None:
        TLS.grad_enabled = self.prev


def _run_eager(task: GraphTask) -> None:
    with running(task):
        _walk(task)


def _walk(task: GraphTask, call: Callable[[GraphTask, Node, list], list | None] | None = None
          ) -> None:
    """Run ready nodes, later-created first; ``call`` runs one node (eager by default,
    compiled autograd passes its capturing version: one walk for both)."""
    call = call or call_node
    deps, counter = task.dependencies, 0
    heap: list[tuple[int, int, Node]] = [(-task.root.seq, 0, task.root)]
    buffers: dict[Node, list[Tensor | None]] = {task.root: []}
    while heap:
        node = heapq.heappop(heap)[2]
        grads = buffers.pop(node)
        outs = call(task, node, grads)
        if outs is None:
            continue
        for (nxt, slot), g in zip(node.next_edges, outs):
            if nxt is None or not task.is_needed(nxt):
                continue
            buf = buffers.get(nxt)
            if buf is None:
                buf = buffers[nxt] = [None] * max(len(nxt.input_meta), slot + 1)
            if g is not None:
                buf[slot] = g if buf[slot] is None else _add(buf[slot], g)
            deps[nxt] -= 1
            if deps[nxt] == 0:
                counter += 1
                heapq.heappush(heap, (-nxt.seq, counter, nxt))


def call_node(task: GraphTask, node: Node, grads: list[Tensor | None]) -> list | None:
    """Hooks and the node itself, in PyTorch's order; None when the node is skipped.
    A node reached with no gradient at all still runs its hooks (they see None)."""
    hooks = task.hooks.get(node, NO_HOOKS)
    run_tensor_pre_hooks(hooks.tensor_pre, grads)
    for slot, t in hooks.retained:
        if slot < len(grads) and grads[slot] is not None:
            accumulate_retained(t, grads[slot])
    if task.capture_at and _capture(task, node, grads):
        if task.accumulate:  # backward(inputs=): the input's node pre-hooks still run
            run_pre_hooks(hooks.pre, grads)
        return None
    grads = run_pre_hooks(hooks.pre, grads)
    if grads and all(g is None for g in grads):  # nothing to differentiate: hooks only
        outs: list = [None] * len(node.next_edges)
    elif isinstance(node, AccumulateGrad):
        stolen = node.apply_with_hooks(grads, hooks.post_acc)
        outs = []
        if stolen is not None:  # .grad is now the incoming gradient itself (PyTorch steals it)
            grads = [stolen]
    else:
        outs = node.apply(grads)
    task.executed.append(node)
    outs = run_post_hooks(hooks.post, outs, grads)
    outs = validate_outputs(node, outs)
    if STATE.anomaly:
        check_nan(node, outs)
    return outs


def _capture(task: GraphTask, node: Node, grads: list,
             write: Callable[[Tensor, Tensor], None] | None = None) -> bool:
    """Record grads for autograd.grad/backward(inputs=); True if the node stops here.
    ``write`` puts a non-leaf input's gradient into its ``.grad``."""
    write = write or accumulate_into_grad
    hit = False
    for slot, g in enumerate(grads):
        for i in task.capture_at.get((node, slot), ()):
            hit = True
            task.captured[i] = g if task.captured[i] is None or g is None else \
                _add(task.captured[i], g)
    if not hit:
        return False
    if task.accumulate:  # backward(inputs=...): non-leaf inputs get .grad here
        if isinstance(node, AccumulateGrad):
            return False
        for slot, g in enumerate(grads):
            for i in task.capture_at.get((node, slot), ()):
                if g is not None:
                    write(task.inputs[i], g)
    return not any(n is not None and task.is_needed(n) for n, _ in node.next_edges)


# -- hooks ------------------------------------------------------------------------------

def run_tensor_pre_hooks(hooks: list[tuple[int, Callable]], grads: list[Tensor | None]) -> None:
    """Tensor hooks in order; a gradient that is None is passed as None (PyTorch does)."""
    for slot, hook in hooks:
        g = grads[slot] if slot < len(grads) else None
        new = hook(g)
        if new is not None:
            check_hook_result(hook, g, new)
            grads[slot] = new


def check_hook_result(hook: Callable, old: Tensor | None, new: Any) -> None:
    """A hook may return a gradient of the same shape and dtype, or None (PyTorch's
    ``check_single_result``; our context follows PyTorch's words)."""
    name = _hook_name(hook)
    if old is None:
        raise RuntimeError(f"can't replace a None gradient with a non-None value (hook "
                           f"'{name}' returned {type(new).__name__} for a gradient that is None)")
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}' (hook "
                        f"'{name}' must return a Tensor or None)")
    if not shapes_equal(new.shape, old.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value: was "
                           f"{shape_list(old.shape)}, got {shape_list(new.shape)}")
    if jnp.dtype(new.dtype) != jnp.dtype(old.dtype):
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {old.dtype.name} got "
                           f"{new.dtype.name})")


def run_pre_hooks(hooks: list[Callable], grads: list) -> list:
    for hook in hooks:
        new = hook(tuple(grads))
        if new is not None:
            grads = _check_tuple(hook, new, grads, "pre-hook")
    return grads


def run_post_hooks(hooks: list[Callable], outs: list, grads: list) -> list:
    for hook in hooks:
        new = hook(tuple(outs), tuple(grads))
        if new is not None:
            outs = _check_tuple(hook, new, outs, "post-hook")
    return outs


def _check_tuple(hook: Callable, value: Any, old: list, kind: str) -> list:
    """PyTorch's ``check_result``: a tuple of the same length, each item checked."""
    name = _hook_name(hook)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"expected tuple, but hook returned '{type(value).__name__}' ({kind} "
                        f"'{name}')")
    if len(value) != len(old):
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(value)}, but expected {len(old)}) ({kind})")
    for o, v in zip(old, value):
        if v is not None:
            check_hook_result(hook, o, v)
    return [v if v is not None else o for o, v in zip(old, value)]


def validate_outputs(node: Node, outs: list,
                     meta_of: Callable[[Node], list] = lambda n: n.input_meta) -> list:
    """Check each gradient against the tensor it is for: sum broadcast dims, cast dtype."""
    if len(outs) != len(node.next_edges):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(node.next_edges)}, got {len(outs)})")
    for i, ((nxt, slot), g) in enumerate(zip(node.next_edges, outs)):
        if g is None or nxt is None:
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"function {node.name()} returned an invalid gradient at index {i} - "
                            f"expected Tensor or None (got {type(g).__name__})")
        metas = meta_of(nxt)
        if slot >= len(metas):
            continue
        meta = metas[slot]
        if not shapes_equal(g._sizes, meta.shape):
            outs[i] = g = _reduce_to(node, i, g, tuple(meta.shape))
        if g.dtype != meta.dtype:
            outs[i] = g.to(meta.dtype)
    return outs


def _expandable(shape: tuple, target: tuple) -> bool:
    """Can ``shape`` broadcast to ``target`` (works on ints and SymInts)?"""
    if len(shape) > len(target):
        return False
    tail = target[len(target) - len(shape):]
    return all(s is t or s == 1 or s == t for s, t in zip(shape, tail))


def _reduce_to(node: Node, i: int, g: Tensor, shape: tuple) -> Tensor:
    if not _expandable(shape, tuple(g.shape)):
        raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                           f"got {shape_list(g.shape)} but expected shape compatible with "
                           f"{shape_list(shape)}")
    return g.sum_to_size(shape)


def check_nan(node: Node, outs: list) -> None:
    for i, g in enumerate(outs):
        if g is not None and bool(jnp.isnan(g._data).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


# -- entry points -----------------------------------------------------------------------

def _as_list(x: Any) -> list:
    """One tensor, or any iterable of them (``m.parameters()``, ``d.values()``), as PyTorch."""
    if isinstance(x, Tensor) or x is None or not hasattr(x, "__iter__"):
        return [x]
    return list(x)


_ONES: dict[tuple, Any] = {}


def _ones(shape: tuple, dtype: Any) -> Any:
    """The implicit root gradient; jax arrays are immutable, so one per shape/dtype."""
    key = (shape, dtype)
    arr = _ONES.get(key)
    if arr is None:
        arr = _ONES[key] = jnp.ones(shape, dtype)
    return arr


def _root_grads(outputs: list[Tensor], grads: list[Tensor | None]) -> list[Tensor]:
    result = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs "
                                   f"(output {i} has shape {list(t.shape)})")
            g = _make(_ones(tuple(t.shape), t.dtype)) if _plain(t) else \
                ops.acg.ones(list(t.shape), dtype=t.dtype)
        elif not isinstance(g, Tensor):
            g = Tensor(jnp.asarray(g, dtype=t.dtype))
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{list(g.shape)} and output[{i}] has a shape of {list(t.shape)}.")
        result.append(g)
    return result


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``).

    >>> import autograd_compile as acg
    >>> x = acg.tensor([1.0, 2.0], requires_grad=True)
    >>> acg.autograd.backward((x ** 2).sum()); x.grad.tolist()
    [2.0, 4.0]
    """
    outputs = _as_list(tensors)
    grads = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(outputs)
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    keep = create_graph if retain_graph is None else retain_graph
    root_grads = _root_grads(outputs, grads)
    fast = None
    if COMPILED_FAST and inputs is None and not create_graph:
        fast = COMPILED_FAST[0](outputs, root_grads, keep)
        if fast is True:
            return
    task = GraphTask(outputs, root_grads, keep, create_graph, inputs, True)
    task.fast = fast
    execute(task)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False
         ) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` untouched).
    With ``is_grads_batched``, each grad output has a leading batch dimension and the
    result is one gradient per batch entry, stacked (PyTorch vmaps; this loops).

    >>> import autograd_compile as acg
    >>> x = acg.tensor([3.0], requires_grad=True)
    >>> acg.autograd.grad((x ** 2).sum(), x)[0].tolist()
    [6.0]
    >>> y = x * acg.tensor([1.0, 2.0])  # the Jacobian, one row per batched grad output
    >>> acg.autograd.grad(y, x, acg.eye(2), is_grads_batched=True)[0].tolist()
    [[1.0], [2.0]]
    """
    if not only_inputs:  # PyTorch's deprecation: the argument does nothing
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outs, ins = _as_list(outputs), _as_list(inputs)
    grads = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require "
                               "grad")
    keep = create_graph if retain_graph is None else retain_graph
    task = GraphTask(outs, _root_grads(outs, grads), keep, create_graph, ins, False)
    result = execute(task)
    for i, g in enumerate(result):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to not "
                               "have been used in the graph. Set allow_unused=True if this is "
                               "the desired behavior.")
    if materialize_grads:
        result = [g if g is not None else _make(jnp.zeros(t.shape, t.dtype))
                  for g, t in zip(result, ins)]
    return tuple(result)


def _batched_grad(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: bool | None,
                  create_graph: bool, allow_unused: bool | None, materialize_grads: bool
                  ) -> tuple[Tensor | None, ...]:
    """``grad`` once per entry of the grad outputs' leading dimension, results stacked."""
    from ..dispatch.library import ops  # (the op itself: kernels.api imports amp, which imports us)
    gos = _as_list(grad_outputs)
    if grad_outputs is None or not gos or any(not isinstance(g, Tensor) or not g.shape
                                              for g in gos):
        raise RuntimeError("grad: is_grads_batched=True needs grad_outputs, each with a "
                           "leading batch dimension")
    n = gos[0].shape[0]
    rows = [grad(outputs, inputs, [g[b] for g in gos], True if b < n - 1 else retain_graph,
                 create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
            for b in range(n)]
    return tuple(None if col[0] is None else ops.acg.stack(list(col)) for col in zip(*rows))


ENGINE_BACKWARD.append(backward)  # Tensor.backward calls it
