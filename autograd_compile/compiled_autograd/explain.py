"""Cache misses in words: what changed since a graph was captured, where, and the fix.

A cache key is a flat tuple of items in the order the collect walk met them (see
``collect.py``); the first item where a new key parts from the nearest cached one says what
changed. Leaves are named by their parameter path when a module owns them.

>>> import autograd_compile as acg
>>> net = acg.nn.Sequential(acg.nn.Linear(2, 1))
>>> leaf_name(net[0].weight)
'0.weight'
"""
from __future__ import annotations

import gc
from typing import Any

from ..autograd.derivatives import OpNode
from ..autograd.node import AccumulateGrad


def leaf_name(t: Any) -> str:
    """``layers.0.weight`` for a module's parameter (its longest path, the one from the
    outermost module), else the tensor's dtype and shape. Scans the heap: for log lines only."""
    from ..nn import Module
    best = None
    # type(), not isinstance(): some objects (torch's deprecated aliases, when torch is
    # loaded) warn when their __class__ is read
    for root in (m for m in gc.get_objects() if issubclass(type(m), Module)):
        for name, p in root.named_parameters():
            if p is t and (best is None or name.count(".") > best.count(".")):
                best = name
    return best or f"the {t.dtype.name} leaf of shape {list(t.shape)}"


def why_new(new: tuple, cached: list[tuple], leaves: list) -> str:
    """The difference between ``new`` and the nearest key in ``cached``, in words."""
    best, at = None, -1
    for old in cached:
        n = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        if n > at:
            best, at = old, n
    if best is None:
        return "first graph"
    if at >= len(best) or at >= len(new):
        return (f"the graph has {'more' if len(new) > len(best) else 'fewer'} nodes than the one "
                "captured (a different forward)")
    return describe(best[at], new[at], new[at + 1] if at + 1 < len(new) else None, leaves)


def describe(old: Any, new: Any, after: Any, leaves: list) -> str:
    """One differing key item pair as a sentence."""
    if _kind(old) is AccumulateGrad and _kind(new) is AccumulateGrad and old[2] != new[2]:
        leaf = leaves[after[1]] if _kind(after) == "L" and after[1] < len(leaves) else None
        name = leaf_name(leaf) if leaf is not None else "a leaf"
        if new[2]:
            return (f".grad of {name} was None at capture and is a tensor now: call "
                    "opt.zero_grad() before backward (or keep .grad consistent from step to step)")
        return (f".grad of {name} was a tensor at capture and is None now (zero_grad() was "
                "called this time, not before): zero the gradients the same way every step")
    if _kind(old) is OpNode and _kind(new) is OpNode and old[1] != new[1]:
        return (f"the graph differs: an {old[1]} node at capture is {new[1]} now (the forward "
                "took another path)")
    if _kind(old) in ("T", "M", "H") and _kind(new) == _kind(old):
        if old[1] != new[1]:
            return f"a tensor's dtype changed: {old[1]} at capture, {new[1]} now"
        if old[2] != new[2]:
            return f"a tensor's number of dimensions changed: {old[2]} at capture, {new[2]} now"
        if len(old) > 3 and old[3] != new[3]:
            return f"a tensor's requires_grad changed: {old[3]} at capture, {new[3]} now"
    if _kind(old) is AccumulateGrad and _kind(new) is AccumulateGrad:
        return f"a leaf's dtype changed: {old[1]} at capture, {new[1]} now"
    return f"the graph differs: {_short(old)} at capture, {_short(new)} now"


def _kind(item: Any) -> Any:
    return item[0] if isinstance(item, tuple) and item else item


def _short(item: Any) -> str:
    text = repr(item)
    return text if len(text) < 120 else text[:117] + "..."


def sizes_differ(sizes: list[int], dups: list[int], reps: list[int]) -> str:
    """Which sizes that were equal at capture differ now."""
    pairs = [(d, r) for d, r in zip(dups, reps) if sizes[d] != sizes[r]]
    d, r = pairs[0]
    return (f"sizes that were equal at capture now differ: size #{r} is {sizes[r]} and size "
            f"#{d} is {sizes[d]} (one symbol served both; the new capture gives each its own)")
