"""Tensors that leave a traced region other than by its return value.

A forward may store what it computed: ``self.last_loss = loss`` (llama2.c),
``self.src_mask = mask`` (a word-language Transformer), a ``global cache``
assignment or a ``nonlocal`` write to a closure. While tracing, those values are
fake tensors; left in place they would be what the user reads afterwards and what
the next trace reads. Instead each such place (a *sink*) is found by comparing
the module attributes, globals and closure cells the region can reach (and the
dicts and lists held there, two levels down: ``stats["n"] += 1``) before and after
the trace; its tensors become extra outputs of the program, and after every call the
real results are written to the sink, as the eager forward would leave them. The trace
itself leaves every sink as it was. A traced tensor appended to a list has no one
place (eagerly, each call appends): the region runs eagerly.

>>> import autograd_compile as acg
>>> class M(acg.nn.Module):
...     def forward(self, x):
...         self.last = x * 2
...         return x + 1
>>> m = M()
>>> _ = acg.compile(m)(acg.ones(2))
>>> type(m.last).__name__, m.last.tolist()
('Tensor', [2.0, 2.0])
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..nn.module import plain_value as plain
from ..nn.module import same_value
from ..tensor import Tensor
from ..tracing.fake import FakeTensor
from .tree import flatten, unflatten
from .values import cell_value

_REGISTRIES = frozenset({"_parameters", "_buffers", "_modules"})


class Sink:
    """One place a value was stored: a key of a dict (module ``__dict__``, globals) or a
    closure cell; ``spec`` rebuilds the value from the program's outputs."""

    __slots__ = ("where", "key", "spec", "label")

    def __init__(self, where: Any, key: Any, spec: tuple, label: str) -> None:
        self.where, self.key, self.spec, self.label = where, key, spec, label

    def write(self, value: Any) -> None:
        if self.key is _CELL:
            self.where.cell_contents = value
        else:
            self.where[self.key] = value


_CELL = object()
_MAX_WATCHED = 4096  # a bigger dict or list (a dataset held in a global) is not watched
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks")


def _hooks(m: Any) -> list[Any]:
    return [h for k in _HOOK_DICTS for h in (getattr(m, k, None) or {}).values()]


class Sinks:
    """A snapshot of what a region can reach; after the trace, what it stored there."""

    def __init__(self, modules: list[Any], fn: Callable) -> None:
        self.places: list[tuple[Any, Any, Any, str]] = []  # (where, key, old value, label)
        self.dicts: list[tuple[dict, dict, str]] = []
        self.lists: list[tuple[list, list, str]] = []
        self._seen: set[int] = set()
        for m in modules:
            self._watch(m.__dict__, f"{type(m).__name__}.")
        seen: set[int] = set()
        for f in [fn] + [getattr(type(m), "forward", None) for m in modules]:
            self._globals(f, seen)
        self._closure(fn, "closure variable")
        for m in modules:  # a forward hook keeps features: feats[name] = output
            for hook in _hooks(m):
                self._hook(hook, seen)

    def _globals(self, f: Any, seen: set[int]) -> None:
        g = getattr(getattr(f, "__func__", f), "__globals__", None)
        if isinstance(g, dict) and id(g) not in seen:
            seen.add(id(g))
            self._watch(g, "global ")

    def _closure(self, fn: Any, label: str) -> None:
        for cell in getattr(getattr(fn, "__func__", fn), "__closure__", None) or ():
            value = cell_value(cell, _EMPTY)  # (an empty cell may be filled by the region)
            self.places.append((cell, _CELL, value, label))
            if value is not _EMPTY:
                self._containers(value, label, 2)

    def _hook(self, hook: Any, seen: set[int]) -> None:
        """What a module hook can store into: its closure, its globals, the object of a
        bound method (``self.features = output``), a partial's arguments."""
        if isinstance(hook, functools.partial):
            for v in list(hook.args) + list(hook.keywords.values()):
                self._containers(v, "a hook's argument", 2)
            hook = hook.func
        owner = getattr(hook, "__self__", None)
        if owner is not None and isinstance(getattr(owner, "__dict__", None), dict) and \
                id(owner.__dict__) not in self._seen:
            self._seen.add(id(owner.__dict__))
            self._watch(owner.__dict__, f"{type(owner).__name__}.")
        self._closure(hook, "a hook's closure variable")
        self._globals(hook, seen)

    def _watch(self, d: dict, label: str) -> None:
        self.dicts.append((d, dict(d), label))
        for k, v in list(d.items()):
            if k not in _REGISTRIES:
                self._containers(v, f"{label}{k}", 2)

    def _containers(self, value: Any, label: str, depth: int) -> None:
        """Dicts and lists held there, ``depth`` levels down (``stats["n"] += 1`` stores
        into one): watched too; a list by a dict of its indices."""
        if depth <= 0 or id(value) in self._seen or type(value) not in (dict, list) or \
                len(value) > _MAX_WATCHED:
            return
        if type(value) is dict:
            self._seen.add(id(value))
            self.dicts.append((value, dict(value), f"{label}: "))
            for k, v in list(value.items()):
                self._containers(v, f"{label}[{k!r}]", depth - 1)
        elif type(value) is list:
            self._seen.add(id(value))
            self.lists.append((value, list(value), label))
            for k, v in enumerate(value):
                self._containers(v, f"{label}[{k}]", depth - 1)

    def stored(self) -> list[tuple[Sink, list[Tensor]]]:
        """Each place whose value changed and now holds a traced (fake) tensor, with the
        tensors to output (real tensors stored there stay themselves, by reference). A
        Python value stored (``global step; step += 1``, ``self.calls += 1``) has no
        tensor to output: a compiled call would not store it again, so the region cannot
        be traced."""
        stores = self._plain_stores()
        if stores:
            raise SideEffect(f"the region stores a Python value in {stores[0]}, which a "
                             f"compiled call would not repeat")
        found = []
        for d, before, label in self.dicts:
            for k, v in list(d.items()):
                if k in _REGISTRIES or (k in before and before[k] is v):
                    continue
                hit = _split(v)
                if hit is not None:
                    found.append((Sink(d, k, hit[0], f"{label}{k}"), hit[1]))
        for items, before, label in self.lists:
            if len(items) != len(before):
                if _split(items) is not None:  # appended each call eagerly: no one place
                    raise SideEffect(f"the region adds a traced tensor to the list {label}")
                continue
            for k, v in enumerate(items):
                hit = None if v is before[k] else _split(v)
                if hit is not None:
                    found.append((Sink(items, k, hit[0], f"{label}[{k}]"), hit[1]))
        for cell, key, old, label in self.places:
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            hit = None if v is old else _split(v)
            if hit is not None:
                found.append((Sink(cell, key, hit[0], label), hit[1]))
        return found

    def _plain_stores(self) -> list[str]:
        """Where the trace stored a Python value: a dict's key, a closure cell."""
        return [f"{label}{k}" for d, before, label in self.dicts
                for k in _plain_changed(d, before)] + \
            [label for _, _, label in self._plain_cells()]

    def _plain_cells(self) -> list[tuple[Any, Any, str]]:
        """(cell, its value before the trace, label) of each cell given a Python value."""
        return [(cell, old, label) for cell, _, old, label in self.places
                if _plain_store(old, cell_value(cell, _EMPTY))]

    def restore(self) -> None:
        """Put back every value that now holds a fake (the program writes the real ones),
        and every Python value the trace stored (the eager run stores it again)."""
        for d, before, _ in self.dicts:
            for k in _plain_changed(d, before):
                if k in before:
                    d[k] = before[k]
                else:
                    del d[k]
        for cell, old, _ in self._plain_cells():
            if old is _EMPTY:
                del cell.cell_contents
            else:
                cell.cell_contents = old
        for d, before, _ in self.dicts:
            for k, v in list(d.items()):
                if k not in _REGISTRIES and not (k in before and before[k] is v) and \
                        _split(v) is not None:
                    if k in before:
                        d[k] = before[k]
                    else:
                        del d[k]
        for items, before, _ in self.lists:
            if any(v is not b and _split(v) is not None for v, b in zip(items, before)) or \
                    (len(items) != len(before) and _split(items) is not None):
                items[:] = before
        for cell, _, old, _ in self.places:
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if v is not old and _split(v) is not None:
                if old is _EMPTY:
                    del cell.cell_contents
                else:
                    cell.cell_contents = old


_EMPTY = object()
_TOKEN_KEYS = frozenset({"_acg_plain"})  # nn.Module's own record of its plain attributes


def _plain_changed(d: dict, before: dict) -> list[Any]:
    """Keys of ``d`` whose plain (Python scalar) value differs from ``before``'s."""
    out = []
    for k, v in list(d.items()):
        if k not in _TOKEN_KEYS and _plain_store(before.get(k, _EMPTY), v):
            out.append(k)
    return out


def _plain_store(old: Any, new: Any) -> bool:
    """A Python value stored over another value. Storing None (``self.cache = None``)
    is the same at every call, so a trace may leave it done once; a tensor's store is a
    sink (the program outputs it)."""
    return new is not old and new is not None and plain(new) and not same_value(old, new)


class SideEffect(Exception):
    """A side effect a compiled call would not repeat: a traced tensor appended to a list,
    a Python value stored (raised as the trace's NotTraceable)."""


def _split(value: Any) -> tuple[tuple, list[Tensor]] | None:
    """``(spec, fakes)`` of a value holding fake tensors (real ones pinned in the spec as
    constants), or None when it holds none."""
    leaves, spec = flatten(value, keyed=False)
    fakes = [t for t in leaves if isinstance(t, FakeTensor)]
    if not fakes:
        return None
    it = iter(leaves)
    return _pin(spec, it), fakes


def _pin(spec: tuple, leaves: Any) -> tuple:
    kind = spec[0]
    if kind == "T":
        t = next(leaves)
        return spec if isinstance(t, FakeTensor) else ("C", t)
    if kind == "C":
        return spec
    if kind == "dict":
        return ("dict", spec[1], tuple(_pin(s, leaves) for s in spec[2]))
    return (kind, tuple(_pin(s, leaves) for s in spec[1]))


def write_back(sinks: list[Sink], values: Any) -> None:
    """After a call: each sink gets its value rebuilt from the program's outputs."""
    it = iter(values)
    for s in sinks:
        s.write(unflatten(s.spec, it))
