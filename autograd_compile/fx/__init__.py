"""The graph IR: a small torch.fx-style representation of straight-line programs.

A :class:`Graph` is an ordered list of :class:`Node`. Each node is one of

- ``placeholder``   an input (``target`` is its name, ``args`` may hold a default),
- ``call_function`` ``target(*args, **kwargs)`` for a callable ``target``,
- ``call_method``   ``args[0].target(*args[1:], **kwargs)``,
- ``get_attr``      ``root.<target>`` for a dotted attribute path,
- ``output``        the single, last node; ``args[0]`` is the result.

Build a graph by hand, look at it, compile it, run it::

    >>> import operator
    >>> from autograd_compile.fx import Graph, GraphModule, Interpreter
    >>> g = Graph()
    >>> x, y = g.placeholder("x"), g.placeholder("y")
    >>> prod = g.call_function(operator.mul, (x, y))
    >>> total = g.call_function(sum, ([prod, x],))      # a builtin: named sum_1
    >>> _ = g.output(total)
    >>> print(g)
    graph():
        %x : placeholder[target=x]
        %y : placeholder[target=y]
        %mul : call_function[target=operator.mul](args = (%x, %y), kwargs = {})
        %sum_1 : call_function[target=sum](args = ([%mul, %x],), kwargs = {})
        return %sum_1
    >>> gm = GraphModule({}, g)
    >>> print(gm.code, end="")
    def forward(self, x, y):
        mul = operator.mul(x, y);  y = None
        sum_1 = sum([mul, x]);  mul = x = None
        return sum_1
    >>> gm(3, 4), Interpreter(gm).run(3, 4)
    (15, 15)

Edit it: ``users`` is always exact, so rewrites are local::

    >>> with g.inserting_after(prod):
    ...     double = g.call_function(operator.add, (prod, prod))
    >>> _ = prod.replace_all_uses_with(double)    # double itself keeps reading prod
    >>> list(prod.users), list(double.users)
    ([add], [sum_1])
    >>> _ = gm.recompile(); gm(3, 4)
    27
    >>> g.lint()                                   # invariants still hold

Or trace a function with :func:`symbolic_trace` (Python operators on
:class:`Proxy` values are recorded; ``if`` on a traced value raises
:class:`TraceError`). :meth:`Graph.eliminate_dead_code` removes unused pure
nodes. With ``ACG_CHECK=1``, ``Graph.lint()`` runs after every GraphModule
compile and every pass; passes call :meth:`Graph.lint_if_checking` when done.
"""
from .codegen import PythonCode
from .graph import Graph, NodeList
from .graph_module import GraphModule
from .interpreter import Interpreter
from .lint import GraphLintError
from .naming import Namespace
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy, TraceError, Tracer, symbolic_trace

__all__ = [
    "Argument", "Graph", "GraphLintError", "GraphModule", "Interpreter", "Namespace",
    "Node", "NodeList", "Proxy", "PythonCode", "Target", "TraceError", "Tracer",
    "map_aggregate", "map_arg", "symbolic_trace",
]
