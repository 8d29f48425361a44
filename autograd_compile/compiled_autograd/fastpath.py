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
:class:`Walk` the general path finishes, and remembers under its key. Once a key
has hit, its walk is also written out as a plan (:mod:`.plan`): the plans of the last
few keys served are tried before the walk, and one that accepts the graph reads it
in a third of the walk's time (a :class:`Found`).

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

from .. import config
from ..autograd.derivatives import OpNode
from ..autograd.node import AccumulateGrad, GraphRoot, Node, gradient_edge
from . import plan as plans
from .collect import CacheKey, Collector, UsesUnpackHook, memo_of, visit_node
from ..tensor import Tensor

EXACT_LIMIT = 64  # exact keys kept (several per cached graph: one per size combination)
_EXACT: "OrderedDict[CacheKey, list[Any]]" = OrderedDict()
_LAST: list = [None, None]  # the exact key of the last backward that hit, its entries
# each exact key's plan (plan.py), made at its first hit; False: its graph has none
_PLANS: "dict[CacheKey, plans.Plan | bool]" = {}
# (exact key, its entries, its plan) of the last backwards served, newest first: each is
# tried before the generic walk (a GAN's loop alternates two backwards; a plan refuses
# another structure within its first few checks)
RECENT_LIMIT = 4
_RECENT: "list[tuple[CacheKey, list[Any], plans.Plan]]" = []
log = config.get_logger("compiled_autograd")


class Walk:
    """One backward's collect, done by the fast walk: the exact key, what the program
    reads (``col``), the nodes in discovery order (root first), and the cache entry
    found for the key (None: the general path looks it up or captures)."""

    __slots__ = ("key", "col", "nodes", "held", "entry")

    def __init__(self, key: CacheKey, col: Collector, nodes: list[Node], held: list[Node]
                 ) -> None:
        self.key, self.col, self.nodes, self.held, self.entry = key, col, nodes, held, None


class Found:
    """A plan's answer: what :func:`.cache.run_fast` reads of a :class:`Walk` (``col`` is
    the record itself: its inputs, sizes, scalars and leaves)."""

    __slots__ = ("inputs", "sizes", "scalars", "leaves", "held", "entry", "col")

    def __init__(self, got: tuple, sizes: list[int], entry: Any) -> None:
        self.inputs, self.scalars, self.leaves, self.held = got
        self.sizes, self.entry, self.col = sizes, entry, self


def collect(roots: list[Tensor], grads: list[Tensor], header: tuple) -> Walk | Found | None:
    """Walk the graph under ``roots`` as the engine discovers it; None if some node
    has hooks (the general path snapshots and plans them) or a saved tensor has an
    unpack hook (the general path calls it, once). The key's items without the sizes
    are the general cache's key for this graph (see ``Collected.from_walk``).
    A graph of a recent hit's structure is read by that key's plan (a :class:`Found`)."""
    for k, item in enumerate(_RECENT):
        key, entries, plan = item
        try:
            got = plan.fn(roots, grads, header)
        except Exception:  # noqa: BLE001 - state a plan never saw (an array without an
            got = None  # aval ...): the generic walk reads it and raises what it raises
        if got is None:
            continue
        entry = _pick(entries, got[1])
        if entry is None:
            break  # this structure, but no entry's scalar guards hold: the general path
        if k:  # to the front, in one slice assignment (atomic if threads share the list)
            _RECENT[:] = [item] + [x for x in _RECENT if x is not item]
        if config.CHECK:
            _verify(roots, grads, header, key, got)
        return Found(got, plan.sizes, entry)
    last, entries = _LAST
    col = Collector()
    col.no_unpack_hooks = True
    held: list[Node] = []  # nodes that may hold saved tensors (not accumulators)
    try:
        nodes = _walk(roots, grads, header, col, held)
    except UsesUnpackHook:
        return None
    if nodes is None:
        return None
    items = (tuple(col.key), tuple(col.sizes))
    if last is not None and last.items == items:  # a loop repeats its backward: no hash
        walk = Walk(last, col, nodes, held)
    else:
        walk = Walk(CacheKey(list(items)), col, nodes, held)  # hashed once
        entries = _EXACT.get(walk.key)
        if entries is not None:
            _LAST[:] = walk.key, entries
    walk.entry = _pick(entries, col.scalars) if entries else None
    if walk.entry is not None:
        _serve(walk.key, entries, _plan(walk.key, roots, grads, header, walk))
    return walk


def _serve(key: CacheKey, entries: list, plan: Any) -> None:
    """Put ``key``'s plan first among those tried before the walk."""
    if not plan:
        return
    rest = [x for x in _RECENT if x[0] is not key]
    _RECENT[:] = ([(key, entries, plan)] + rest)[:RECENT_LIMIT]  # atomic, as above


def _plan(key: CacheKey, roots: list[Tensor], grads: list[Tensor], header: tuple,
          walk: Walk) -> Any:
    """``key``'s plan, written at its first hit from the graph just walked, and checked
    at once against that walk (False: this graph keeps the generic walk)."""
    found = _PLANS.get(key)
    if found is None:
        try:
            found = plans.build(roots, grads, header, walk.col.sizes)
            got = found.fn(roots, grads, header)
            if got is None or not _same(got, walk.col, walk.held):
                raise plans.Unsupported("the plan disagrees with the walk it was written from")
        except plans.Unsupported as e:
            log.debug("no plan for this backward's walk: %s", e)
            found = False
        _PLANS[key] = found
    return found


def _same(got: tuple, col: Collector, held: list[Node]) -> bool:
    """A plan's reading equals the generic walk's: the same objects (or fresh tensors of
    the same array, which both make for an array a node saved), the same numbers."""
    inputs, scalars, leaves, nodes = got
    return (len(inputs) == len(col.inputs) and
            all(a is b or a._store is b._store for a, b in zip(inputs, col.inputs))
            and scalars == col.scalars and len(leaves) == len(col.leaves)
            and all(a is b for a, b in zip(leaves, col.leaves))
            and len(nodes) == len(held) and all(a is b for a, b in zip(nodes, held)))


def _verify(roots: list[Tensor], grads: list[Tensor], header: tuple, key: CacheKey,
            got: tuple) -> None:
    """ACG_CHECK=1: a graph a plan served gives the generic walk the same exact key and
    the same runtime values."""
    col = Collector()
    col.no_unpack_hooks = True
    held: list[Node] = []
    nodes = _walk(roots, grads, header, col, held)
    if nodes is None or CacheKey([tuple(col.key), tuple(col.sizes)]) != key or \
            not _same(got, col, held):
        raise AssertionError("compiled autograd: a backward plan served a graph whose walk "
                             "differs from the one it was written for")


def _walk(roots: list[Tensor], grads: list[Tensor], header: tuple, col: Collector,
          held: list[Node]) -> list[Node] | None:
    """The engine's discovery walk (``engine._dependencies``) visiting each node as it
    is discovered, exactly as ``Collected`` visits them (so the order of runtime inputs,
    sizes, scalars and leaves is the one the cached program expects). The hook checks
    are ``engine._has_hooks``; accumulators (no edges) are visited without a push."""
    key, sizes, leaves = col.key, col.sizes, col.leaves
    key.append(header)
    key.append((GraphRoot, len(grads)))  # visit_root's items: the root gradients first
    for g in grads:
        col.tensor(g)
    nodes: list[Node] = [None]  # type: ignore[list-item]  # the root, made only if needed
    ids: dict[Node, int] = {}
    stack = [(0, [gradient_edge(t) for t in roots])]
    op_node = col.op_node
    while stack:
        pid, edges = stack.pop()
        item: list = [pid]  # which node's edges: the walk can be replayed from the key
        for nxt, slot in edges:
            if nxt is None:
                item.append(-2)
                continue
            i = ids.get(nxt)
            if i is None:
                i = ids[nxt] = len(nodes)
                nodes.append(nxt)
                kind = type(nxt)
                if kind is AccumulateGrad:
                    v = nxt.variable
                    if v._backward_hooks or v._post_acc_hooks or nxt._pre_hooks or \
                            nxt._post_hooks:
                        return None
                    # accumulate_node, inlined (one accumulator per leaf: no dedup)
                    key.append((AccumulateGrad, v.dtype, v._grad is not None))
                    key.append(("L", len(leaves)))
                    leaves.append(v)
                    for m in nxt.input_meta:
                        key.append(("M", m.dtype, len(m.shape)))
                        sizes.extend(m.shape)
                else:
                    if nxt._tensor_hooks or nxt._retained or nxt._pre_hooks or \
                            nxt._post_hooks:
                        return None
                    held.append(nxt)
                    if kind is OpNode and nxt._ca_memo is None:  # first collect: live
                        nxt._ca_memo = 0
                        op_node(nxt)
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


def leaf_ids(col: Collector) -> None:
    """Fill ``col``'s leaf numbering, which the inlined accumulator visit skips (the
    capture's replay looks leaves up by it)."""
    col._leaf_ids = {id(t): i for i, t in enumerate(col.leaves)}


def _pick(entries: list, scalars: list) -> Any:
    """The first entry whose scalar guards hold (the exact key has sizes, not scalars)."""
    for entry in entries:
        guards = entry.scalar_guards
        if not guards or all(scalars[i] == v for i, v in guards):
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
        gone = _EXACT.popitem(last=False)[0]
        _PLANS.pop(gone, None)
        _RECENT[:] = [item for item in _RECENT if item[0] is not gone]


def forget() -> None:
    """Drop every exact key (the general cache was reset or evicted an entry)."""
    _EXACT.clear()
    _PLANS.clear()
    _RECENT.clear()
    _LAST[:] = None, None
