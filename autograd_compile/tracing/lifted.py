"""Lifted scalars: Python numbers that are graph inputs instead of constants.

During compiled-autograd capture, a number a node saved (the ``2.5`` of
``x * 2.5``, the ``3`` of ``x * 3``, an int or float attribute on a custom
Function's ctx) is replaced by a :class:`LiftedScalar`: it behaves as that
number, but arithmetic on it is recorded into the graph (through the active
SymDispatchMode, like SymInt arithmetic), so a later backward with ``x * 4``
reuses the same graph, and the XLA program takes it as a runtime scalar.
Deciding on its value (a comparison, ``bool``, ``int``, using an int as an
index or a dim) specialises it: a guard records the value of every lifted input
it came from, and the cache recaptures when one changes.

>>> s = LiftedScalar(2.5, index=0)
>>> float(s * 2), s.index, (s * 2).index, (s * 2).sources
(5.0, 0, None, ((0, 2.5),))
>>> k = LiftedScalar(3, index=1, is_int=True)
>>> list(range(k)), plain(k + 1), (k / 2).is_int
([0, 1, 2], 4, False)
"""
from __future__ import annotations

import operator
import threading
from typing import Any, Callable

from .sym_mode import _mode_popped, current_sym_dispatch_mode


class _GuardState(threading.local):
    def __init__(self) -> None:
        self.sink: list[tuple[int, float]] | None = None  # where specialisations go


GUARDS = _GuardState()


class LiftedScalar(float):
    """A number input of a captured graph (``index`` into the scalars input). An int
    stays an int (``is_int``): ``__index__`` works, and specialises."""

    def __new__(cls, value: float, index: int | None = None, is_int: bool = False,
                sources: tuple = ()) -> "LiftedScalar":
        obj = float.__new__(cls, value)
        obj.index, obj.is_int = index, is_int
        # the lifted inputs this value was computed from: deciding on it guards them all
        obj.sources = ((index, value),) if index is not None else sources
        return obj

    __hash__ = object.__hash__  # identity: proxies are kept per object

    def __repr__(self) -> str:
        return f"LiftedScalar({self.value()!r})"

    def value(self) -> float | int:
        v = float.__float__(self)
        return int(v) if self.is_int else v

    def specialize(self) -> float | int:
        """Use the value itself; guard that later runs have the same inputs."""
        if GUARDS.sink is not None:
            GUARDS.sink.extend(self.sources)
        return self.value()

    def __index__(self) -> int:
        if not self.is_int:
            raise TypeError("'float' object cannot be interpreted as an integer")
        return self.specialize()


def _is_int(x: Any) -> bool:
    return x.is_int if isinstance(x, LiftedScalar) else isinstance(x, int)


def _arith(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable:
    def method(self: LiftedScalar, other: Any) -> Any:
        if not isinstance(other, (int, float)) or isinstance(other, bool):
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        mode = current_sym_dispatch_mode()
        if mode is not None:
            with _mode_popped():
                return mode.__sym_dispatch__(op, (LiftedScalar,), args, {})
        plain_args = [plain(a) for a in args]
        out = op(*plain_args)
        sources = tuple(s for a in args if isinstance(a, LiftedScalar) for s in a.sources)
        return LiftedScalar(out, is_int=isinstance(out, int), sources=sources)
    return method


def _unary(op: Callable[[Any], Any]) -> Callable:
    def method(self: LiftedScalar) -> Any:
        mode = current_sym_dispatch_mode()
        if mode is not None:
            with _mode_popped():
                return mode.__sym_dispatch__(op, (LiftedScalar,), (self,), {})
        return LiftedScalar(op(self.value()), is_int=self.is_int, sources=self.sources)
    return method


def _compare(op: Callable[[Any, Any], bool]) -> Callable:
    def method(self: LiftedScalar, other: Any) -> bool:
        other = other.specialize() if isinstance(other, LiftedScalar) else other
        return op(self.specialize(), other)
    return method


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("pow", operator.pow),
                   ("floordiv", operator.floordiv), ("mod", operator.mod)]:
    setattr(LiftedScalar, f"__{_name}__", _arith(_op))
    setattr(LiftedScalar, f"__r{_name}__", _arith(_op, reflected=True))
for _name, _op in [("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)]:
    setattr(LiftedScalar, f"__{_name}__", _compare(_op))
LiftedScalar.__neg__ = _unary(operator.neg)
LiftedScalar.__bool__ = lambda self: bool(self.specialize())
LiftedScalar.__int__ = lambda self: int(self.specialize())
LiftedScalar.__float__ = lambda self: float(self.specialize())


def plain(value: Any) -> Any:
    """The value as a plain number (for shape rules, which only need weak typing)."""
    return value.value() if isinstance(value, LiftedScalar) else value
