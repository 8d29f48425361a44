"""One instruction of a :class:`~autograd_compile.fx.graph.Graph`.

A node is ``name = op[target](*args, **kwargs)``; ``args``/``kwargs`` may nest
other nodes inside tuples, lists, dicts and slices. Every node keeps ``users``,
the nodes that read it, exact at all times: setting ``args``/``kwargs`` updates
the users of both the old and the new inputs.

>>> from autograd_compile.fx import Graph
>>> import operator
>>> g = Graph()
>>> x = g.placeholder("x")
>>> y = g.call_function(operator.neg, (x,))
>>> list(x.users), y.all_input_nodes
([neg], [x])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .naming import display_target

if TYPE_CHECKING:
    from .graph import Graph

OPS: tuple[str, ...] = ("placeholder", "call_function", "call_method", "get_attr", "output")
# an argument: a Node, a constant, or tuples/lists/dicts/slices of arguments
Argument = Any
Target = Callable[..., Any] | str


def map_aggregate(value: Argument, fn: Callable[[Any], Any]) -> Argument:
    """Apply ``fn`` to every leaf of a nested tuple/list/dict/slice, rebuilding containers.

    >>> map_aggregate((1, [2, {"k": 3}]), lambda v: v * 10)
    (10, [20, {'k': 30}])
    """
    kind = type(value)
    if kind is tuple:
        return tuple(map_aggregate(v, fn) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple keeps its type
        return kind(*(map_aggregate(v, fn) for v in value))
    if kind is list:
        return [map_aggregate(v, fn) for v in value]
    if kind is dict:
        return {k: map_aggregate(v, fn) for k, v in value.items()}
    if kind is slice:
        return slice(map_aggregate(value.start, fn), map_aggregate(value.stop, fn),
                     map_aggregate(value.step, fn))
    return fn(value)


def map_arg(value: Argument, fn: Callable[[Node], Any]) -> Argument:
    """Like :func:`map_aggregate`, but ``fn`` sees only the Nodes (constants pass through)."""
    return map_aggregate(value, lambda v: fn(v) if isinstance(v, Node) else v)


def collect_nodes(*values: Argument) -> dict[Node, None]:
    """The Nodes inside ``values``, each once, in first-seen order."""
    found: dict[Node, None] = {}
    for value in values:
        map_arg(value, found.setdefault)
    return found


class Node:
    """One operation in a Graph; create nodes with the Graph's methods, not directly.

    >>> from autograd_compile.fx import Graph
    >>> g = Graph()
    >>> a, b = g.placeholder("a"), g.placeholder("b")
    >>> s = g.call_function(max, (a, b))
    >>> s.format_node()
    '%max_1 : call_function[target=max](args = (%a, %b), kwargs = {})'
    """

    __slots__ = ("graph", "_name", "op", "target", "_args", "_kwargs", "_inputs", "users",
                 "meta", "prev", "next", "_erased")

    def __init__(self, graph: Graph, name: str, op: str, target: Target,
                 args: tuple = (), kwargs: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self._name = name
        self.op = op
        self.target = target
        self._args: tuple = ()
        self._kwargs: dict[str, Any] = {}
        self._inputs: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self.prev: Node | None = None
        self.next: Node | None = None
        self._erased = False
        self._set_inputs(args, kwargs or {})

    # -- name -----------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, wanted: str) -> None:
        """Rename through the graph, so the name stays unique (may get a suffix)."""
        self.graph._names.release(self._name)
        self._name = self.graph._names.create(wanted)

    # -- args / kwargs (the setters keep ``users`` exact) -------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple | list) -> None:
        self._set_inputs(value, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Any]) -> None:
        self._set_inputs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The distinct Nodes this node reads, in order of first appearance."""
        return list(self._inputs)

    def _set_inputs(self, args: tuple | list, kwargs: dict[str, Any]) -> None:
        new_args, new_kwargs = map_arg(tuple(args), _identity), map_arg(dict(kwargs), _identity)
        inputs = collect_nodes(new_args, new_kwargs)
        for node in inputs:
            self._check_input(node)
        for old in self._inputs:
            old.users.pop(self, None)
        self._args, self._kwargs, self._inputs = new_args, new_kwargs, inputs
        for node in inputs:
            node.users[self] = None

    def _check_input(self, node: Node) -> None:
        # catching this here names the culprit; lint() would only see the aftermath
        if node.graph is not self.graph:
            raise ValueError(f"node %{self.name}: input %{node.name} belongs to another graph")
        if node._erased:
            raise ValueError(f"node %{self.name}: input %{node.name} was erased from the graph")

    # -- rewriting ------------------------------------------------------------------------
    def replace_input_with(self, old: Node, new: Node) -> None:
        """Read ``new`` wherever this node read ``old``."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._set_inputs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, new: Node) -> list[Node]:
        """Make every user read ``new`` instead; returns the users that changed.

        ``new`` itself is skipped, so ``n.replace_all_uses_with(f(n))`` is safe.
        """
        changed = [user for user in self.users if user is not new]
        for user in changed:
            user.replace_input_with(self, new)
        return changed

    # -- queries --------------------------------------------------------------------------
    def is_impure(self) -> bool:
        """True when the node must run even if nothing reads its result."""
        if self.op in ("placeholder", "output", "call_method"):
            return True
        return bool(self.meta.get("impure")) or getattr(self.target, "_acg_impure", False) is True

    def format_node(self) -> str:
        """One readable line, e.g. ``%mul : call_function[target=acg.mul](args = (%x,), ...)``."""
        if self.op == "output":
            return f"return {format_arg(self._args[0] if self._args else None)}"
        head = f"%{self.name} : {self.op}[target={self._display_target()}]"
        if self.op == "placeholder":
            return head + (f"(default={format_arg(self._args[0])})" if self._args else "")
        if self.op == "get_attr":
            return head
        kwargs = ", ".join(f"{k}: {format_arg(v)}" for k, v in self._kwargs.items())
        return f"{head}(args = {format_arg(self._args)}, kwargs = {{{kwargs}}})"

    def _display_target(self) -> str:
        claimed = self.graph.bound_targets.get(id(self.target))
        if claimed is not None and claimed[0] is self.target:  # same name as in the code
            return claimed[1]
        return display_target(self.target)

    def __repr__(self) -> str:
        return self.name


def _identity(node: Node) -> Node:
    return node


def format_arg(value: Argument) -> str:
    """Arguments as ``str(graph)`` shows them: Nodes as ``%name``, constants by repr."""
    if isinstance(value, Node):
        return f"%{value.name}"
    if type(value) is tuple or (isinstance(value, tuple) and hasattr(value, "_fields")):
        inner = ", ".join(format_arg(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if type(value) is list:
        return "[" + ", ".join(format_arg(v) for v in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{k!r}: {format_arg(v)}" for k, v in value.items()) + "}"
    if type(value) is slice:
        return f"slice({format_arg(value.start)}, {format_arg(value.stop)}, " \
               f"{format_arg(value.step)})"
    return repr(value)
