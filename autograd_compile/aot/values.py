"""Python values a traced region bakes in, and the guard that sees them change.

A trace runs the user's Python once: every plain value it reads (a global ``SCALE``, a
closure's ``beta``, ``args.temperature`` of an argparse namespace, ``Config.lr`` of a
config class) becomes a constant of the program. torch.compile guards each such read; so
do we, from the code instead of from bytecode execution: :func:`value_places` walks the
region's code (the function, its modules' ``forward`` and the methods it calls by name,
the user's own helpers it calls, a few levels deep) and keeps each place a name in that
code can read a plain value from: a globals dict and a name, a closure cell, or an
object's attribute dict and an attribute name the code uses. Reading them all is one
small tuple per call, kept in the region's signature (``aot/api.py``, ``wholestep.py``).
The walk over-approximates (an attribute name that is also a global's name is read too):
a change there retraces needlessly, never wrongly. Modules' own plain attributes have
their token (``nn.module.plain_token``); tensors reached are handled by the signature.

A region that *stores* a Python value (``global step; step += 1``) is found by the
trace's snapshot of what it can reach (``aot/escape.py``), not here.

>>> import autograd_compile as acg
>>> SCALE = 2.0
>>> def f(x):
...     return x * SCALE
>>> places = value_places(f, [])
>>> places.labels, places.read()
(['global SCALE'], ((<class 'float'>, 2.0),))
"""
from __future__ import annotations

import types
from typing import Any, Callable

from ..nn.module import Module
from ..nn.module import plain_value as plain
from ..tensor import Tensor

_MISSING = object()
_MAX_FUNCTIONS = 64  # a region calling more of the user's functions is walked this far
_LIBRARIES = ("autograd_compile", "jax", "numpy", "torch", "builtins")


def user_code(obj: Any) -> bool:
    """Not ours nor a library's (a function or class): only the user's own are looked into."""
    module = getattr(obj, "__module__", "") or ""
    return not module.startswith(_LIBRARIES)


def cell_value(cell: Any, missing: Any = None) -> Any:
    """A closure cell's value, ``missing`` for an empty cell."""
    try:
        return cell.cell_contents
    except ValueError:
        return missing


def code_names(code: Any) -> set[str]:
    """The global and attribute names a code object and its nested code use."""
    if not isinstance(code, types.CodeType):
        return set()
    out = set(code.co_names)
    for c in code.co_consts:
        out |= code_names(c)
    return out


class ValuePlaces:
    """Where the region's code reads plain values; :meth:`read` gives them, typed (so
    ``1`` and ``1.0`` and ``True`` stay different constants)."""

    def __init__(self) -> None:
        self.dicts: list[tuple[Any, str]] = []  # (a dict or mappingproxy, key)
        self.cells: list[Any] = []
        self.labels: list[str] = []
        self._seen: set[tuple[int, str]] = set()

    def read(self) -> tuple:
        if not self.labels:
            return ()
        vals = [d.get(k, _MISSING) for d, k in self.dicts]
        vals += [cell_value(c, _MISSING) for c in self.cells]
        return tuple([(type(v), v) for v in vals])

    def add_key(self, d: Any, key: str, label: str) -> None:
        if (id(d), key) not in self._seen:
            self._seen.add((id(d), key))
            self.dicts.append((d, key))
            self.labels.append(label)

    def add_cell(self, cell: Any, label: str) -> None:
        if (id(cell), "") not in self._seen:
            self._seen.add((id(cell), ""))
            self.cells.append(cell)
            self.labels.append(label)


def value_places(fn: Callable | None, modules: list[Any]) -> ValuePlaces:
    """The places ``fn`` (or the modules' ``forward``) can read plain values from."""
    places = ValuePlaces()
    walked: set[int] = set()

    def attrs(obj: Any, names: set[str], label: str) -> None:
        """``obj.name`` for the names the code uses: a config object's or class's fields."""
        if isinstance(obj, (Module, Tensor, types.ModuleType)) or \
                (not user_code(obj) if isinstance(obj, type) else callable(obj)):
            return
        d = getattr(obj, "__dict__", None)
        if d is None:
            return
        for n in names:
            if plain(d.get(n, _MISSING)):
                places.add_key(d, n, f"{label}.{n}")

    def walk(f: Any, depth: int) -> None:
        f = getattr(f, "__func__", f)
        code = getattr(f, "__code__", None)
        if code is None or id(f) in walked or len(walked) >= _MAX_FUNCTIONS:
            return
        walked.add(id(f))
        names = code_names(code)
        glb = getattr(f, "__globals__", {})
        for n in names:
            v = glb.get(n, _MISSING)
            if v is _MISSING:
                continue
            see(v, names, depth, lambda: places.add_key(glb, n, f"global {n}"), f"global {n}")
        for n, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            v = cell_value(cell, _MISSING)
            if v is _MISSING:
                continue
            see(v, names, depth, lambda: places.add_cell(cell, f"closure variable {n}"),
                f"closure variable {n}")

    def see(v: Any, names: set[str], depth: int, keep: Callable[[], None], label: str) -> None:
        if plain(v):
            keep()
        elif isinstance(v, types.FunctionType):
            if depth > 1 and user_code(v):
                walk(v, depth - 1)
        else:
            attrs(v, names, label)

    if fn is not None:
        walk(fn, 3)
    for m in modules:
        forward = getattr(type(m), "forward", None)
        if isinstance(forward, types.FunctionType) and user_code(forward):
            names = code_names(forward.__code__)
            walk(forward, 3)
            for n in names:  # self.helper(...) and self.cfg.alpha
                meth = getattr(type(m), n, None)
                if isinstance(meth, types.FunctionType) and user_code(meth):
                    walk(meth, 2)
                v = m.__dict__.get(n, _MISSING)
                if v is not _MISSING and not plain(v):
                    attrs(v, names, f"{type(m).__name__}.{n}")
    return places
