"""Lifted scalars: Python floats that are graph inputs instead of constants.

During compiled-autograd capture, a float a node saved (the ``2.5`` of
``x * 2.5``, a float attribute on a custom Function's ctx) is replaced by a
:class:`LiftedScalar`: it behaves as that float, but arithmetic on it is
recorded into the graph (through the active SymDispatchMode, like SymInt
arithmetic), so a later backward with ``x * 3.5`` reuses the same graph.
Deciding on its value (a comparison, ``bool``, ``int``) specialises it: a guard
records the value and the cache recaptures when it changes.

>>> s = LiftedScalar(2.5, index=0)
>>> float(s * 2), s.index, (s * 2).index
(5.0, 0, None)
"""
from __future__ import annotations

import operator
import threading
from typing import Any, Callable

from .symbolic_shapes import _mode_popped, current_sym_dispatch_mode


class _GuardState(threading.local):
    def __init__(self) -> None:
        self.sink: list[tuple[int, float]] | None = None  # where specialisations go


GUARDS = _GuardState()


class LiftedScalar(float):
    """A float input of a captured graph (``index`` into the scalars input)."""

    def __new__(cls, value: float, index: int | None = None) -> "LiftedScalar":
        obj = float.__new__(cls, value)
        obj.index = index
        return obj

    __hash__ = object.__hash__  # identity: proxies are kept per object

    def __repr__(self) -> str:
        return f"LiftedScalar({float.__repr__(self)})"

    def specialize(self) -> float:
        """Use the value itself; guard that later runs have the same value."""
        if self.index is not None and GUARDS.sink is not None:
            GUARDS.sink.append((self.index, float.__float__(self)))
        return float.__float__(self)


def _arith(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable:
    def method(self: LiftedScalar, other: Any) -> Any:
        if not isinstance(other, (int, float)) or isinstance(other, bool):
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        mode = current_sym_dispatch_mode()
        if mode is not None:
            with _mode_popped():
                return mode.__sym_dispatch__(op, (LiftedScalar,), args, {})
        plain = [float.__float__(a) if isinstance(a, float) else a for a in args]
        return LiftedScalar(op(*plain))
    return method


def _unary(op: Callable[[Any], Any]) -> Callable:
    def method(self: LiftedScalar) -> Any:
        mode = current_sym_dispatch_mode()
        if mode is not None:
            with _mode_popped():
                return mode.__sym_dispatch__(op, (LiftedScalar,), (self,), {})
        return LiftedScalar(op(float.__float__(self)))
    return method


def _compare(op: Callable[[Any, Any], bool]) -> Callable:
    def method(self: LiftedScalar, other: Any) -> bool:
        other = other.specialize() if isinstance(other, LiftedScalar) else other
        return op(self.specialize(), other)
    return method


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("pow", operator.pow)]:
    setattr(LiftedScalar, f"__{_name}__", _arith(_op))
    setattr(LiftedScalar, f"__r{_name}__", _arith(_op, reflected=True))
for _name, _op in [("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)]:
    setattr(LiftedScalar, f"__{_name}__", _compare(_op))
LiftedScalar.__neg__ = _unary(operator.neg)
LiftedScalar.__bool__ = lambda self: bool(self.specialize())
LiftedScalar.__int__ = lambda self: int(self.specialize())


def plain(value: Any) -> Any:
    """The value as a plain float (for shape rules, which only need weak typing)."""
    return float.__float__(value) if isinstance(value, LiftedScalar) else value
