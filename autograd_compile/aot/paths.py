"""Where a tensor a compiled step reads lives: a path from the objects the step reaches.

A training step often reads tensors that are neither parameters nor arguments: a
metric kept in a dict (``box["correct"] += ...``), a mask held in a list, a tensor a
helper object keeps as an attribute. Baked into the program as constants, such a tensor
would go stale the moment the user puts another tensor in its place (a new epoch's
``box["correct"] = zeros(())``), and an in-place write to it would leak a tracer. So the
whole-step compile finds, for each, a path from what the step reads (its closure,
globals and arguments) through dict keys, list and tuple indices and attributes, and at
every call resolves that path again: the tensor found there is a program input (and an
output, written back, when the step writes it).

>>> box = {"stats": [None, 3]}
>>> target = box["stats"]
>>> where = paths_to([target], [object(), box])[id(target)]
>>> where
(1, (('item', 'stats'),))
>>> resolve([object(), box], where) is target
True
"""
from __future__ import annotations

import types
from collections import deque
from typing import Any

MAX_DEPTH = 4  # steps from a root: box["a"]["b"][0].c
MAX_VISITS = 20_000  # objects looked at per search (a search runs only at a trace)

Path = tuple[tuple[str, Any], ...]
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, str, bytes, int, float, bool, type(None))


def paths_to(targets: list[Any], roots: list[Any], skip: tuple[type, ...] = ()
             ) -> dict[int, tuple[int, Path]]:
    """For each of ``targets`` reachable from ``roots`` (by identity), keyed by its id:
    (index of the root, path from it), the shortest (one breadth-first walk for all).
    ``skip``: types not looked into (a target of such a type is still found)."""
    wanted = {id(t) for t in targets}
    found: dict[int, tuple[int, Path]] = {}
    queue: deque[tuple[int, Any, Path]] = deque((i, r, ()) for i, r in enumerate(roots))
    seen: set[int] = set()
    visits = 0
    while queue and visits < MAX_VISITS and len(found) < len(wanted):
        i, obj, path = queue.popleft()
        visits += 1
        if id(obj) in wanted and id(obj) not in found:
            found[id(obj)] = (i, path)
        if id(obj) in seen or len(path) >= MAX_DEPTH or isinstance(obj, _OPAQUE + skip):
            continue
        seen.add(id(obj))
        queue.extend((i, child, path + (step,)) for step, child in _children(obj))
    return found


def resolve(roots: list[Any], where: tuple[int, Path]) -> Any:
    """What ``where`` (from :func:`paths_to`) leads to now; None where it no longer leads
    anywhere (a key removed, a list shortened)."""
    index, path = where
    if index >= len(roots):
        return None
    obj = roots[index]
    try:
        for kind, key in path:
            obj = obj[key] if kind == "item" else obj.__dict__[key]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return obj


def _children(obj: Any) -> list[tuple[tuple[str, Any], Any]]:
    if type(obj) is dict:
        return [(("item", k), v) for k, v in obj.items()]
    if type(obj) in (list, tuple):
        return [(("item", k), v) for k, v in enumerate(obj)]
    attrs = getattr(obj, "__dict__", None)
    if type(attrs) is dict:  # a plain object or a Module (its registries are dicts too)
        return [(("attr", k), v) for k, v in attrs.items()]
    return []
