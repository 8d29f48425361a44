"""Compiled autograd's cache-hit fast path: one walk, an exact key, one program call.

A training loop runs the same backward every step, on a new autograd graph of
the same shape. The general path (:mod:`.compiled_autograd`) walks that graph
twice (the engine's dependency count, then the collect), builds a key without
sizes and checks size guards. Here, for ``backward()`` with no hooks in the
graph and no ``inputs=``/``create_graph``, one walk in the engine's discovery
order runs the *same* per-node visitors (so runtime inputs, sizes, scalars and
leaves come out in the very order the cached program expects) and the key
includes every size exactly. A key seen before maps straight to the cache
entry the general path chose for it; only its scalar guards are re-checked.
Anything else (a new key, hooks, a node that cannot be captured) returns a
:class:`Walk` the general path finishes, and remembers under its key.

>>> import autograd_compile as acg
>>> w = acg.ones(3, requires_grad=True)
>>> with acg.compiled_autograd.enable("jax"):
...     for _ in range(3):
...         w.grad = None
...         (w * w).sum().backward()
>>> w.grad.tolist(), acg.compiled_autograd.counters["captures"]
([2.0, 2.0, 2.0], 1)
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .autograd.derivatives import OpNode
from .autograd.node import AccumulateGrad, GraphRoot, Node, gradient_edge
from .compiled_nodes import Collector, UsesUnpackHook, memo_of, visit_node
from .tensor import Tensor

EXACT_LIMIT = 64  # exact keys kept (several per cached graph: one per size combination)
_EXACT: "OrderedDict[tuple, list[Any]]" = OrderedDict()


class Walk:
    """One backward's collect, done by the fast walk: the exact key, what the program
    reads (``col``), the nodes in discovery order (root first), and the cache entry
    found for the key (None: the general path looks it up or captures)."""

    __slots__ = ("key", "col", "nodes", "entry")

    def __init__(self, key: tuple, col: Collector, nodes: list[Node]) -> None:
        self.key, self.col, self.nodes, self.entry = key, col, nodes, None


def _hooked(node: Node) -> bool:
    """``engine._has_hooks`` for the two node types of nearly every graph, inlined."""
    if type(node) is AccumulateGrad:
        v = node.variable
        return bool(v._backward_hooks or v._post_acc_hooks or node._pre_hooks or
                    node._post_hooks)
    return bool(node._tensor_hooks or node._retained or node._pre_hooks or node._post_hooks)


def collect(roots: list[Tensor], grads: list[Tensor], header: tuple) -> Walk | None:
    """Walk the graph under ``roots`` as the engine discovers it; None if some node
    has hooks (the general path snapshots and plans them) or a saved tensor has an
    unpack hook (the general path calls it, once). The key's items without the sizes
    are the general cache's key for this graph (see ``Collected.from_walk``)."""
    col = Collector()
    col.no_unpack_hooks = True
    try:
        nodes = _walk(roots, grads, header, col)
    except UsesUnpackHook:
        return None
    if nodes is None:
        return None
    try:
        exact = (tuple(col.key), tuple(col.sizes))
        hash(exact)
    except TypeError:  # an unhashable constant: the general path handles it
        return None
    walk = Walk(exact, col, nodes)
    walk.entry = _find(exact, col.scalars)
    return walk


def _walk(roots: list[Tensor], grads: list[Tensor], header: tuple, col: Collector
          ) -> list[Node] | None:
    """The engine's discovery walk (``engine._dependencies``) visiting each node as it
    is discovered, exactly as ``Collected`` visits them (so the order of runtime inputs,
    sizes, scalars and leaves is the one the cached program expects)."""
    key = col.key
    key.append(header)
    key.append((GraphRoot, len(grads)))  # visit_root's items: the root gradients first
    for g in grads:
        col.tensor(g)
    nodes: list[Node] = [None]  # type: ignore[list-item]  # the root, made only if needed
    ids: dict[Node, int] = {}
    stack = [(0, [gradient_edge(t) for t in roots])]
    op_node, accumulate_node = col.op_node, col.accumulate_node
    while stack:
        pid, edges = stack.pop()
        item: list = [pid]  # which node's edges: the walk can be replayed from the key
        for nxt, slot in edges:
            if nxt is None:
                item.append(-2)
                continue
            i = ids.get(nxt)
            if i is None:
                if _hooked(nxt):
                    return None
                i = ids[nxt] = len(nodes)
                nodes.append(nxt)
                memo = nxt._ca_memo
                kind = type(nxt)
                if memo is None and kind is OpNode:  # first collect: visit live
                    nxt._ca_memo = 0
                    op_node(nxt)
                elif kind is AccumulateGrad:
                    accumulate_node(nxt)
                else:
                    _visit(nxt, col)
                stack.append((i, nxt.next_edges))
            item.append(i if slot == 0 else (i, slot))
        key.append(tuple(item))
    return nodes


def _visit(node: Node, col: Collector) -> None:
    """``Collected``'s per-node visit (memo replay, inlined or generic visit)."""
    memo = memo_of(node)
    if memo is not None:
        col.replay_memo(memo, node)
    elif type(node) is OpNode:
        col.op_node(node)
    elif type(node) is AccumulateGrad:
        col.accumulate_node(node)
    else:
        visit_node(node, col)


def _find(exact: tuple, scalars: list) -> Any:
    entries = _EXACT.get(exact)
    if entries is None:
        return None
    for entry in entries:
        if all(scalars[i] == v for i, v in entry.scalar_guards):
            return entry
    return None


def remember(walk: Walk, entry: Any) -> None:
    """The general path found (or captured) ``entry`` for this walk: map its exact key
    to it, if the entry's guards accept these sizes and scalars."""
    col = walk.col
    if entry.guard_failure(col.sizes, col.scalars) is not None:
        return
    entries = _EXACT.setdefault(walk.key, [])
    if entry not in entries:
        entries.insert(0, entry)
    if len(_EXACT) > EXACT_LIMIT:
        _EXACT.popitem(last=False)


def forget() -> None:
    """Drop every exact key (the general cache was reset or evicted an entry)."""
    _EXACT.clear()
