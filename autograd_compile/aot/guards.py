"""When a traced region may be reused: its signature and its size guards.

A call's **signature** is everything specialised: grad mode, the ``training``
flag of every submodule, the structure and constant values of the arguments,
each argument tensor's dtype / requires_grad / rank, and each parameter's and
buffer's identity, dtype, requires_grad and shape. Equal signatures are a
dictionary-speed comparison.

The argument tensors' **sizes** that are symbolic (by default the leading,
batch dimension of each; ``dynamic=True``: every dimension, parameters' too;
``dynamic=False``: none) are duck-sized (sizes equal at trace time share one
symbol), 0 and 1 specialised, and every decision the trace took on them is
recorded by the ShapeEnv as a guard; the other sizes must match exactly.
:class:`SizeGuards` checks a new call's sizes against them.

>>> from autograd_compile.tracing.symbolic_shapes import ShapeEnv
>>> g = SizeGuards([16, 64, 64, 1], ShapeEnv(), dynamic=True)
>>> g.symbolic
[s0, s1, s1, 1]
>>> _ = g.finalize()
>>> g.failure([32, 64, 64, 1]), g.failure([32, 64, 48, 1]), g.failure([32, 64, 64, 2])
(None, 'sizes[1] and sizes[2] were equal when traced (64), now 64 and 48', 'sizes[3] was 1 when traced (0 and 1 are specialised), now 2')
"""
from __future__ import annotations

from typing import Any, Callable

import sympy

from ..tracing.symbolic_shapes import ShapeEnv


class SizeGuards:
    """The symbols of a trace's argument sizes and the guards recorded on them."""

    def __init__(self, hints: list[int], shape_env: ShapeEnv, dynamic: bool | list[bool],
                 names: list[str] | None = None) -> None:
        self.hints, self.shape_env = list(hints), shape_env
        self.names = names or [f"sizes[{i}]" for i in range(len(hints))]
        self.symbolic: list[Any] = []
        self.const_at: list[int] = []  # positions specialised to their traced value
        self.dup_at: list[tuple[int, int]] = []  # (position, first position of its symbol)
        self.sym_at: list[int] = []  # first position of each symbol, in creation order
        first: dict[int, int] = {}
        flags = dynamic if isinstance(dynamic, list) else [dynamic] * len(hints)
        for i, (v, dyn) in enumerate(zip(hints, flags)):
            if not dyn or v < 2:
                self.symbolic.append(v)
                self.const_at.append(i)
            elif v in first:
                self.symbolic.append(self.symbolic[first[v]])
                self.dup_at.append((i, first[v]))
            else:
                first[v] = i
                self.symbolic.append(shape_env.create_symint(v, self.names[i]))
                self.sym_at.append(i)
        self._check: Callable[..., bool] | None = None

    def finalize(self) -> "SizeGuards":
        """Compile the ShapeEnv's guards (call once the trace has recorded them all)."""
        conds = [g.condition for g in self.shape_env.guards]
        if conds:
            symbols = self.shape_env.symbols
            self._check = sympy.lambdify(symbols, sympy.And(*conds), modules="math")
        return self

    def failure(self, sizes: list[int]) -> str | None:
        """None when ``sizes`` satisfy every guard, else why not (readable)."""
        if len(sizes) != len(self.hints):
            return f"{len(sizes)} argument sizes, traced with {len(self.hints)}"
        hints, names = self.hints, self.names
        for i in self.const_at:
            if sizes[i] != hints[i]:
                why = " (0 and 1 are specialised)" if hints[i] < 2 else ""
                return f"{names[i]} was {hints[i]} when traced{why}, now {sizes[i]}"
        for i, j in self.dup_at:
            if sizes[i] != sizes[j]:
                return (f"{names[j]} and {names[i]} were equal when traced ({hints[i]}), now "
                        f"{sizes[j]} and {sizes[i]}")
        values = [sizes[i] for i in self.sym_at]
        for i, v in zip(self.sym_at, values):
            if v < 2:
                return f"{names[i]} became {v} (sizes 0 and 1 are specialised)"
        if self._check is not None and not self._check(*values):
            return self.shape_env.failing_guard(values) or "a size guard failed"
        return None


def signature_diff(old: tuple, new: tuple, labels: list[str]) -> str:
    """Which part of a signature changed, in words (only computed on a cache miss)."""
    for label, a, b in zip(labels, old, new):
        if a != b:
            return f"{label} changed: {_brief(a, b)}"
    return "signature changed"


def _brief(a: Any, b: Any) -> str:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"[{i}] was {_show(x)}, now {_show(y)}"
    return f"was {_show(a)}, now {_show(b)}"


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
