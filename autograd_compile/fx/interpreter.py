"""``Interpreter``: run a graph one node at a time, with one hook per op kind.

>>> import operator
>>> from autograd_compile.fx import Graph, GraphModule
>>> g = Graph()
>>> x = g.placeholder("x")
>>> _ = g.output(g.call_function(operator.mul, (x, 3)))
>>> class Tracing(Interpreter):
...     def call_function(self, node, args, kwargs):
...         out = super().call_function(node, args, kwargs)
...         print(node.name, args, "->", out)
...         return out
>>> Tracing(GraphModule({}, g)).run(5)
mul (5, 3) -> 15
15
"""
from __future__ import annotations

import functools
from typing import Any, Iterator

from .codegen import free_after
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg

_MISSING: Any = object()
_NOTE = "while running node"


class Interpreter:
    """Runs ``module.graph`` (or a bare Graph) node by node.

    ``run_node`` loads the node's inputs and calls the method named after its
    op: ``placeholder``, ``get_attr``, ``call_function``, ``call_method`` or
    ``output``, each as ``handler(node, args, kwargs)``. Override one to change
    how that kind of node runs. A value is dropped after its last use.

    >>> import operator
    >>> g = Graph()
    >>> a, b = g.placeholder("a"), g.placeholder("b", default=10)
    >>> _ = g.output((g.call_function(operator.sub, (a, b)),))
    >>> Interpreter(g).run(15)
    (5,)
    """

    def __init__(self, module: GraphModule | Graph, garbage_collect_values: bool = True) -> None:
        self.module = module
        self.graph: Graph = module if isinstance(module, Graph) else module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env: dict[Node, Any] = {}
        self._args: Iterator[Any] = iter(())

    def run(self, *args: Any) -> Any:
        """Run the graph on positional ``args``; returns what the output node returns."""
        nodes = list(self.graph.nodes)
        _check_arity(nodes, len(args))
        free = free_after(nodes) if self.garbage_collect_values else {}
        self.env, self._args = {}, iter(args)
        try:
            for node in nodes:
                value = self._run_noted(node)
                if node.op == "output":
                    return value
                self.env[node] = value
                for dead in free.get(node, ()):
                    del self.env[dead]
            return None
        finally:
            self.env = {}

    def _run_noted(self, node: Node) -> Any:
        try:
            return self.run_node(node)
        except Exception as e:
            if not any(n.startswith(_NOTE) for n in getattr(e, "__notes__", ())):
                e.add_note(f"{_NOTE} {node.format_node()}")  # which node failed, once
            raise

    def run_node(self, node: Node) -> Any:
        """The single hook: load inputs, dispatch on ``node.op``."""
        args, kwargs = self.fetch_args_kwargs(node)
        return getattr(self, node.op)(node, args, kwargs)

    def fetch_args_kwargs(self, node: Node) -> tuple[tuple, dict[str, Any]]:
        """``node.args``/``node.kwargs`` with every Node replaced by its value."""
        return map_arg(node.args, self.load), map_arg(node.kwargs, self.load)

    def load(self, node: Node) -> Any:
        try:
            return self.env[node]
        except KeyError:
            raise RuntimeError(f"value of %{node.name} is not available (freed before a later "
                               "use, or never computed: is the graph linted?)") from None

    # -- one handler per op ---------------------------------------------------------------
    def placeholder(self, node: Node, args: tuple, kwargs: dict[str, Any]) -> Any:
        value = next(self._args, _MISSING)
        if value is not _MISSING:
            return value
        if args:
            return args[0]  # the placeholder's default
        raise TypeError(f"missing a value for input %{node.name}")

    def get_attr(self, node: Node, args: tuple, kwargs: dict[str, Any]) -> Any:
        return functools.reduce(getattr, node.target.split("."), self.module)

    def call_function(self, node: Node, args: tuple, kwargs: dict[str, Any]) -> Any:
        return node.target(*args, **kwargs)

    def call_method(self, node: Node, args: tuple, kwargs: dict[str, Any]) -> Any:
        receiver, *rest = args
        return getattr(receiver, node.target)(*rest, **kwargs)

    def output(self, node: Node, args: tuple, kwargs: dict[str, Any]) -> Any:
        return args[0] if args else None


def _check_arity(nodes: list[Node], given: int) -> None:
    inputs = sum(1 for n in nodes if n.op == "placeholder")
    if given > inputs:
        raise TypeError(f"graph takes {inputs} inputs but {given} were given")
