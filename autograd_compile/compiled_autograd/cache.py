"""The cache and the runner the engine calls: collect, look up, capture on a miss, run.

:func:`run_fast` is the engine's first try for a plain ``backward()`` (the cache-hit fast
path of :mod:`.fastpath`); :func:`run_compiled` is the general path. Both live here
because both read and fill the one cache, keyed by :class:`.collect.CacheKey`.
"""
from __future__ import annotations

import logging
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable

from .. import config
from ..autograd import engine
from ..autograd.engine import GraphTask, NodeHooks
from ..autograd.derivatives import OpNode
from ..autograd.node import AccumulateGrad, Node
from . import explain, fastpath
from .capture import AutogradCompilerInstance, CacheEntry
from .collect import CacheKey, Collector, NotCapturable, memo_of, visit_node
from ..dispatch.keys import TLS
from .api import counters, current_compiler

log = config.get_logger("compiled_autograd")
_SEEN_LIMIT = 8  # size lists that decide duck groups: enough to tell coincidences apart
_CACHE: "OrderedDict[CacheKey, list[CacheEntry]]" = OrderedDict()
_LOCK = threading.RLock()


def reset() -> None:
    """Forget every cached graph and zero the counters."""
    with _LOCK:
        _CACHE.clear()
        fastpath.forget()
        counters.clear()


# -- the runner the engine calls -------------------------------------------------------

def _ordered_nodes(task: GraphTask) -> list[Node]:
    """Every node the backward may run, in the engine's discovery order (deterministic)."""
    if task.needed is None:
        return task.order
    return [task.root] + [n for n in task.order[1:] if n in task.needed]


class HookPlan:
    """A node's hooks as the graph sees them: ('pure', fn) or ('opaque', index)."""

    __slots__ = ("tensor_pre", "retained", "pre", "post", "post_acc")

    def __init__(self, hooks: NodeHooks | None, col: Collector, hook_list: list) -> None:
        def ref(kind: str, h: Callable) -> tuple[str, Any]:
            # post-accumulate hooks observe parameters: always called, never traced
            if getattr(h, "_acg_pure", False) and kind != "post_acc":
                col.const((kind, "pure", h.__code__, _closure_key(h)))
                return ("pure", h)
            col.const(kind)  # the kind matters: one pre-hook is not one post-hook
            hook_list.append(h)
            return ("opaque", len(hook_list) - 1)
        h = hooks or engine.NO_HOOKS
        self.tensor_pre = [(col.const(slot), ref("tensor_pre", fn)) for slot, fn in h.tensor_pre]
        self.retained = []
        for slot, t in h.retained:
            col.const(("retain", slot))
            self.retained.append((slot, col.leaf(t)))
        self.pre = [ref("pre", fn) for fn in h.pre]
        self.post = [ref("post", fn) for fn in h.post]
        self.post_acc = [ref("post_acc", fn) for fn in h.post_acc]


NO_PLAN = HookPlan(None, Collector(), [])


def _closure_key(fn: Callable) -> tuple:
    cells = getattr(fn, "__closure__", None) or ()
    values = []
    for c in cells:
        v = c.cell_contents
        values.append(v if isinstance(v, (int, float, str, bool, type(None))) else id(v))
    return tuple(values)


class Collected:
    """One backward's collect pass: key, runtime inputs and per-node plans."""

    def __init__(self, task: GraphTask, compiler_fn: Callable | None = None,
                 fast: bool = True) -> None:
        self.nodes = _ordered_nodes(task)
        ids = {n: i for i, n in enumerate(self.nodes)}
        col = self.col = Collector()
        self.hooks: list = col.opaque  # hooks, and saved tensors unpacked where nodes run
        # each compiler compiles its own graphs
        col.const((compiler_fn, task.create_graph, task.accumulate, TLS.grad_enabled))
        self.plans: dict[Node, HookPlan] = {}  # nodes with hooks only
        hooks = task.hooks
        key = col.key
        for node in self.nodes:
            memo = memo_of(node)
            if memo is not None:
                col.replay_memo(memo, node)
            elif type(node) is OpNode and fast:
                col.op_node(node)
            elif type(node) is AccumulateGrad and fast:
                col.accumulate_node(node)
            else:
                visit_node(node, col)
            # which node and which of its output slots each edge feeds (slot 0: id alone)
            key.append(tuple([-2 if n is None else ids.get(n, -1) if s == 0 else
                              (ids.get(n, -1), s) for n, s in node.next_edges]))
            h = hooks.get(node)
            if h:
                self.plans[node] = HookPlan(h, col, self.hooks)
        for (n, slot), idxs in sorted(task.capture_at.items(), key=lambda kv: kv[1]):
            col.const((ids.get(n, -1), slot, tuple(idxs)))
        if task.accumulate and task.inputs:
            for t in task.inputs:
                col.leaf(t)
        self.key = CacheKey(col.key)

    @classmethod
    def from_walk(cls, task: GraphTask, walk: fastpath.Walk) -> "Collected":
        """The fast path's walk (a graph with no hooks), finished for the general path:
        the same visits in the same order, so nothing is unpacked twice."""
        c = cls.__new__(cls)
        c.nodes = [task.root] + walk.nodes[1:]
        c.col, c.hooks, c.plans = walk.col, walk.col.opaque, {}
        fastpath.leaf_ids(walk.col)
        c.key = CacheKey(list(walk.key.items[0]))
        return c

    def plan(self, node: Node) -> HookPlan:
        return self.plans.get(node, NO_PLAN)


class _EagerOnly:
    """A cache entry for graphs that cannot be compiled faithfully (they run eagerly)."""

    def guard_failure(self, sizes: list[int], scalars: list[float]) -> None:
        return None


EAGER_ONLY = _EagerOnly()


def _lookup(c: Collected) -> CacheEntry | None:
    entries = _CACHE.get(c.key)
    if entries is None:
        if config.log_enabled("compiled_autograd_verbose"):
            log.debug("cache miss: %s", explain.why_new(
                c.key.items, [k.items for k in _CACHE], c.col.leaves))
        return None
    _CACHE.move_to_end(c.key)
    for entry in entries:
        reason = entry.guard_failure(c.col.sizes, c.col.scalars)
        if reason is None:
            return entry
        if config.log_enabled("compiled_autograd_verbose"):
            log.debug("cache miss: guard failed: %s", reason)
    return None


def _seen(c: Collected) -> tuple[tuple[int, ...], ...]:
    """The size lists this graph was captured with before (the newest few, no repeats)."""
    n, seen = len(c.col.sizes), {}
    for e in _CACHE.get(c.key, ()):
        if isinstance(e, CacheEntry):
            seen.update(dict.fromkeys(s for s in e.sizes.seen if len(s) == n))
    return tuple(seen)[:_SEEN_LIMIT]


def _limits() -> tuple[int, int]:
    """RECOMPILE_LIMIT and CACHE_SIZE_LIMIT, read where users set them: the package."""
    package = sys.modules[__package__]
    return package.RECOMPILE_LIMIT, package.CACHE_SIZE_LIMIT


def _insert(c: Collected, entry: CacheEntry) -> None:
    entries = _CACHE.setdefault(c.key, [])
    entries.insert(0, entry)
    recompile_limit, cache_limit = _limits()
    if len(entries) > recompile_limit:
        entries.pop()
        fastpath.forget()
        logging.getLogger("autograd_compile").warning(
            "compiled autograd: more than %d recaptures of one graph (guards keep failing: "
            "sizes or scalars that were specialised keep changing)", recompile_limit)
    if len(_CACHE) > cache_limit:
        _CACHE.popitem(last=False)
        fastpath.forget()
        counters["evictions"] += 1
        logging.getLogger("autograd_compile").warning(
            "compiled autograd: cache_size_limit (%d graphs) exceeded; evicting the least "
            "recently used graph", cache_limit)


def run_compiled(task: GraphTask) -> bool:
    """The engine's hook: run ``task`` compiled; False means "run it eagerly"."""
    compiler_fn = current_compiler()
    if compiler_fn is None or engine.STATE.depth > 1 or engine.STATE.anomaly:
        if compiler_fn is not None:
            counters["eager_runs"] += 1  # reentrant or anomaly-checked backward: eager
        return False
    walk = task.fast
    if walk is NOT_CAPTURABLE:  # the fast walk already found out (and unpacked)
        counters["eager_runs"] += 1
        return False
    try:
        c = Collected(task, compiler_fn) if walk is None else Collected.from_walk(task, walk)
    except NotCapturable as e:  # e.g. an arbitrary object on a custom Function's ctx
        counters["eager_runs"] += 1
        if config.log_enabled("compiled_autograd_verbose"):
            log.debug("running this backward eagerly: %s", e)
        return False
    with _LOCK:
        entry = _lookup(c)
        if entry is None:
            try:
                entry = AutogradCompilerInstance(compiler_fn).capture(task, c, _seen(c))
            except NotCapturable as e:
                entry = EAGER_ONLY  # remembered: this graph always runs eagerly
                log.debug("running this graph eagerly: %s", e)
            counters["captures"] += 1
            _insert(c, entry)
        else:
            counters["cache_hits"] += 1
    if entry is EAGER_ONLY:
        counters["eager_runs"] += 1
        return False
    if walk is not None:
        fastpath.remember(walk, entry)
    col = c.col
    with engine.running(task):
        fn = entry.graph_module if task.create_graph else entry.compiled
        outs = fn(col.inputs, col.sizes, col.scalars, c.hooks, col.leaves)
    if c.hooks:  # a hook may have modified a saved tensor in place before it was used
        for sv, node, i in col.saved_vars:
            if entry.used_after_hook[i]:
                sv.check_version(node)  # PyTorch's error; the journal undoes every write
    if task.inputs is not None:
        task.captured = list(outs)
    task.executed = c.nodes
    return True


NOT_CAPTURABLE = object()  # run_fast's answer when a node cannot be captured


def run_fast(roots: list, grads: list, keep_graph: bool) -> Any:
    """The engine's first try for ``backward()`` without ``inputs=``/``create_graph``:
    True when a cached program ran the whole backward; else what the general path
    should start from (a fastpath.Walk, NOT_CAPTURABLE, or None: collect afresh)."""
    compiler_fn = current_compiler()
    if compiler_fn is None or engine.STATE.depth or engine.STATE.anomaly:
        return None
    try:
        walk = fastpath.collect(roots, grads, (compiler_fn, False, True, TLS.grad_enabled))
    except NotCapturable:
        return NOT_CAPTURABLE
    if walk is None or walk.entry is None:
        return walk
    counters["cache_hits"] += 1
    col = walk.col
    engine.run_hit(walk.entry.compiled, (col.inputs, col.sizes, col.scalars, [], col.leaves),
                   walk.held, keep_graph)
    return True


engine.COMPILED_RUNNER.append(run_compiled)
engine.COMPILED_FAST.append(run_fast)
