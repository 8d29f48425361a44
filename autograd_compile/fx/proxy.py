"""Symbolic tracing: run a Python function on ``Proxy`` values that record a Graph.

>>> def f(x, y):
...     return x * y + 1
>>> gm = symbolic_trace(f)
>>> print(gm.code, end="")
def forward(self, x, y):
    mul = operator.mul(x, y);  x = y = None
    add = operator.add(mul, 1);  mul = None
    return add
>>> gm(3, 4)
13
"""
from __future__ import annotations

import inspect
import operator
from typing import Any, Callable

from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate


class TraceError(RuntimeError):
    """Tracing hit something a graph cannot express (e.g. data-dependent control flow)."""


class Tracer:
    """Owns the graph being recorded and turns Proxy arguments into Nodes.

    >>> t = Tracer()
    >>> x = t.proxy(t.graph.placeholder("x"))
    >>> y = t.create_proxy("call_function", max, (x, 0))
    >>> y
    Proxy(%max_1)
    """

    def __init__(self, graph: Graph | None = None) -> None:
        self.graph = graph if graph is not None else Graph()

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_arg(self, value: Any) -> Argument:
        """``value`` with every Proxy replaced by its Node (Proxies of this tracer only);
        Nodes and constants pass through."""
        return map_aggregate(value, self._unwrap)

    def _unwrap(self, value: Any) -> Any:
        if isinstance(value, Proxy):
            if value.tracer is not self:
                raise TraceError(f"{value!r} belongs to a different trace")
            return value.node
        return value

    def create_node(self, op: str, target: Target, args: tuple, kwargs: dict[str, Any],
                    name: str | None = None) -> Node:
        """Hook: how a traced operation becomes a node (override to attach meta)."""
        return self.graph.create_node(op, target, args, kwargs, name)

    def create_proxy(self, op: str, target: Target, args: tuple | list,
                     kwargs: dict[str, Any] | None = None, name: str | None = None) -> Proxy:
        """Record ``op[target](*args, **kwargs)`` and return a Proxy for its result."""
        node = self.create_node(op, target, self.create_arg(tuple(args)),
                                self.create_arg(dict(kwargs or {})), name)
        return self.proxy(node)

    def trace(self, fn: Callable[..., Any]) -> Graph:
        """Call ``fn`` with one Proxy per parameter and record what it does."""
        proxies = [self.proxy(self._placeholder(p)) for p in _parameters(fn)]
        result = fn(*proxies)
        self.graph.output(self.create_arg(result))
        return self.graph

    def _placeholder(self, param: inspect.Parameter) -> Node:
        return self.graph.placeholder(param.name, param.default)


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TraceError(f"cannot trace parameter {p}: only plain positional "
                             "parameters become graph inputs")
    return params


def symbolic_trace(fn: Callable[..., Any], class_name: str = "GraphModule") -> GraphModule:
    """Trace ``fn`` into a GraphModule (its only attributes come from the graph)."""
    return GraphModule({}, Tracer().trace(fn), class_name)


_DATA_DEPENDENT = ("a traced value cannot be used for {what}: its value is unknown while "
                   "tracing, so data-dependent control flow (if/while/for on it, bool(), "
                   "len(), iteration) cannot be recorded in a graph. Compute on it with "
                   "graph operations instead.")


class Proxy:
    """A stand-in for a value during tracing; operations on it append graph nodes.

    Arithmetic and comparisons record ``operator.*`` calls, ``p[i]`` records
    ``operator.getitem``, ``p.method(...)`` records a ``call_method``.
    ``bool(p)``, ``len(p)`` and ``iter(p)`` raise :class:`TraceError`.

    >>> t = Tracer()
    >>> x = t.proxy(t.graph.placeholder("x"))
    >>> (-x[0] < 2).node.format_node()
    '%lt : call_function[target=operator.lt](args = (%neg, 2), kwargs = {})'
    """

    __slots__ = ("node", "tracer")

    def __init__(self, node: Node, tracer: Tracer) -> None:
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Proxy(%{self.node.name})"

    __hash__ = object.__hash__  # __eq__ is overloaded below; identity hashing keeps dicts usable

    def __getattr__(self, name: str) -> _MethodProxy:
        # only public names: dunder/underscore probes (copy, numpy, pickle) must fail fast
        if name.startswith("_") or name in Proxy.__slots__:  # an unset slot is not a method
            raise AttributeError(name)
        return _MethodProxy(self, name)

    def __getitem__(self, index: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.getitem, (self, index))

    def __bool__(self) -> bool:
        raise TraceError(_DATA_DEPENDENT.format(what="a truth test (if/while/and/or/not)"))

    def __len__(self) -> int:
        raise TraceError(_DATA_DEPENDENT.format(what="len()"))

    def __iter__(self) -> Any:
        raise TraceError(_DATA_DEPENDENT.format(what="iteration (for / unpacking)"))

    def __index__(self) -> int:
        raise TraceError(_DATA_DEPENDENT.format(what="a Python int (indexing, range)"))

    def __contains__(self, item: Any) -> bool:
        raise TraceError(_DATA_DEPENDENT.format(what="an 'in' test"))


class _MethodProxy:
    """``proxy.name``: calling it records ``call_method[name]`` on the receiver."""

    __slots__ = ("receiver", "name")

    def __init__(self, receiver: Proxy, name: str) -> None:
        self.receiver, self.name = receiver, name

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        tracer = self.receiver.tracer
        return tracer.create_proxy("call_method", self.name, (self.receiver, *args), kwargs)

    def __repr__(self) -> str:
        return f"<method {self.name} of {self.receiver!r}>"


def _binary(op: Callable[[Any, Any], Any]) -> Callable[[Proxy, Any], Proxy]:
    def method(self: Proxy, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self, other))
    return method


def _reflected(op: Callable[[Any, Any], Any]) -> Callable[[Proxy, Any], Proxy]:
    def method(self: Proxy, other: Any) -> Proxy:  # 2 * p -> operator.mul(2, p)
        return self.tracer.create_proxy("call_function", op, (other, self))
    return method


def _unary(op: Callable[[Any], Any]) -> Callable[[Proxy], Proxy]:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,))
    return method


_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
               "and", "or", "xor", "lshift", "rshift")
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_UNARY = ("neg", "pos", "invert", "abs")


def _install_operators() -> None:
    for name in _ARITHMETIC:
        op = getattr(operator, name + "_" if name in ("and", "or") else name)
        setattr(Proxy, f"__{name}__", _binary(op))
        setattr(Proxy, f"__r{name}__", _reflected(op))
    for name in _COMPARISONS:  # no reflection: Python swaps lt/gt itself
        setattr(Proxy, f"__{name}__", _binary(getattr(operator, name)))
    for name in _UNARY:
        setattr(Proxy, f"__{name}__", _unary(getattr(operator, name)))


_install_operators()
