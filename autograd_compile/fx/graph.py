"""The graph: an ordered, doubly linked list of :class:`Node` with unique names.

>>> import operator
>>> g = Graph()
>>> x = g.placeholder("x")
>>> y = g.call_function(operator.mul, (x, 2))
>>> _ = g.output(y)
>>> print(g)
graph():
    %x : placeholder[target=x]
    %mul : call_function[target=operator.mul](args = (%x, 2), kwargs = {})
    return %mul
"""
from __future__ import annotations

import inspect
import keyword
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .. import config
from .codegen import PythonCode, generate
from .lint import lint_graph
from .naming import Namespace, needs_global, target_name
from .node import OPS, Argument, Node, Target

NO_DEFAULT: Any = inspect.Parameter.empty


class NodeList:
    """A live view of a graph's nodes in order; erasing the current node while
    iterating is safe (iteration goes on from where it was)."""

    __slots__ = ("_graph", "_reverse")

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph, self._reverse = graph, reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        step = "prev" if self._reverse else "next"
        node = self._graph._tail if self._reverse else self._graph._head
        while node is not None:
            if not node._erased:  # an erased node keeps its links, so we can step past it
                yield node
            node = getattr(node, step)

    def __reversed__(self) -> Iterator[Node]:
        return iter(NodeList(self._graph, not self._reverse))

    def __repr__(self) -> str:
        return f"NodeList({list(self)!r})"


class Graph:
    """A function as a list of nodes: placeholders, calls, then one output.

    >>> g = Graph()
    >>> a = g.placeholder("a")
    >>> b = g.call_method("sum", (a,))
    >>> _ = g.output(b)
    >>> [n.op for n in g.nodes]
    ['placeholder', 'call_method', 'output']
    """

    def __init__(self) -> None:
        self._head: Node | None = None
        self._tail: Node | None = None
        self._len = 0
        self._names = Namespace()
        # where create_node puts the next node: ("after", n) / ("before", n); None = at the end
        self._insert: tuple[str, Node] | None = None
        # id(callable) -> (callable, global name in generated code), claimed before node names
        self.bound_targets: dict[int, tuple[Any, str]] = {}

    # -- building -----------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple | list = (),
                    kwargs: dict[str, Any] | None = None, name: str | None = None) -> Node:
        """Make a node at the current insertion point (the end unless inside inserting_*)."""
        _check_target(op, target)
        if op == "call_method" and not args:
            raise ValueError(f"call_method {target!r} needs its receiver as args[0]")
        if op == "output" and self._tail is not None and self._tail.op == "output":
            raise RuntimeError("graph already has an output node; erase it first")
        if self._insert is not None and self._insert[1]._erased:  # an outer block's anchor
            raise RuntimeError(f"insertion point %{self._insert[1].name} was erased")
        if op == "call_function":
            self._claim_global(target)
        node = Node(self, self._names.create(name or target_name(target)), op, target,
                    args, kwargs)
        if op == "placeholder":
            self._link_after(self._last_placeholder(), node)
        elif op == "output":
            self._link_after(self._tail, node)
        else:
            self._link_at_insert_point(node)
        return node

    def placeholder(self, name: str, default: Any = NO_DEFAULT) -> Node:
        """An input of the graph; always placed after the existing placeholders."""
        args = () if default is NO_DEFAULT else (default,)
        return self.create_node("placeholder", name, args, name=name)

    def call_function(self, target: Callable[..., Any], args: tuple | list = (),
                      kwargs: dict[str, Any] | None = None, name: str | None = None) -> Node:
        return self.create_node("call_function", target, args, kwargs, name)

    def call_method(self, method: str, args: tuple | list = (),
                    kwargs: dict[str, Any] | None = None, name: str | None = None) -> Node:
        """``args[0].method(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method, args, kwargs, name)

    def get_attr(self, qualified_name: str, name: str | None = None) -> Node:
        """Reads ``root.<qualified_name>`` (a dotted path) of the owning GraphModule."""
        return self.create_node("get_attr", qualified_name, name=name)

    def output(self, value: Argument) -> Node:
        """The graph's result; always the last node, and there is only one."""
        return self.create_node("output", "output", (value,), name="output")

    @contextmanager
    def inserting_before(self, node: Node | None = None) -> Iterator[None]:
        """New nodes go before ``node`` (before the first node when None), in order."""
        if node is None:
            with self._inserting(None if self._head is None else ("before", self._head)):
                yield
            return
        self._check_owned(node)
        with self._inserting(("before", node)):
            yield

    @contextmanager
    def inserting_after(self, node: Node | None = None) -> Iterator[None]:
        """New nodes go after ``node`` (at the end when None), in program order:
        each one after the previous, so a block of inserts reads top to bottom."""
        if node is not None:
            self._check_owned(node)
            if node.op == "output":
                raise ValueError("cannot insert after the output node; it must stay last")
        with self._inserting(None if node is None else ("after", node)):
            yield

    def erase_node(self, node: Node) -> None:
        """Remove a node nobody reads; raises if it still has users."""
        self._check_owned(node)
        if node.users:
            users = ", ".join(f"%{u.name}" for u in node.users)
            raise RuntimeError(f"cannot erase node %{node.name}: still used by {users}")
        if self._insert is not None and self._insert[1] is node:
            self._move_insert_point_off(node)
        node._set_inputs((), {})  # drops it from its inputs' users
        self._unlink(node)
        node._erased = True

    # -- reading -----------------------------------------------------------------------
    @property
    def nodes(self) -> NodeList:
        return NodeList(self)

    def find_nodes(self, *, op: str | None = None, target: Any = None) -> list[Node]:
        """Nodes with this op and/or target (``target`` compared by identity or ==)."""
        return [n for n in self.nodes
                if (op is None or n.op == op)
                and (target is None or n.target is target or _same_target(n.target, target))]

    def __str__(self) -> str:
        lines = ["graph():"] + [f"    {n.format_node()}" for n in self.nodes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Graph with {self._len} nodes>"

    # -- checking and passes ------------------------------------------------------------
    def lint(self) -> None:
        """Raise :class:`GraphLintError` if any structural invariant is broken."""
        lint_graph(self)

    def lint_if_checking(self) -> None:
        """``lint()`` when ``ACG_CHECK=1``; passes call this when they finish."""
        if config.CHECK:
            self.lint()

    def eliminate_dead_code(self) -> bool:
        """Erase unread pure nodes (call_function, get_attr); True if any went.

        A node stays when ``node.meta["impure"]`` is set or its target has
        ``_acg_impure = True``; call_method nodes are always kept (methods may mutate).
        """
        changed = False
        for node in reversed(self.nodes):  # users before inputs: one pass frees whole chains
            if not node.users and _removable(node):
                self.erase_node(node)
                changed = True
        self.lint_if_checking()
        return changed

    def python_code(self, root_name: str = "self") -> PythonCode:
        """Source of ``def forward(self, ...)`` plus the globals it needs."""
        return generate(self, root_name)

    # -- internals ------------------------------------------------------------------------
    def _claim_global(self, target: Any) -> None:
        # the function keeps its own name in generated code ('my_hook'), results get the
        # suffix ('my_hook_1 = my_hook(x)'), instead of the other way round
        if id(target) not in self.bound_targets and needs_global(target):
            self.bound_targets[id(target)] = (target, self._names.create(target_name(target)))

    @contextmanager
    def _inserting(self, point: tuple[str, Node] | None) -> Iterator[None]:
        saved, self._insert = self._insert, point
        try:
            yield
        finally:
            self._insert = saved

    def _link_at_insert_point(self, node: Node) -> None:
        if self._insert is None:
            tail = self._tail
            if tail is not None and tail.op == "output":  # keep the output last
                self._link_before(tail, node)
            else:
                self._link_after(tail, node)
        elif self._insert[0] == "before":
            self._link_before(self._insert[1], node)
        else:
            self._link_after(self._insert[1], node)
            self._insert = ("after", node)  # the next insert follows this one

    def _last_placeholder(self) -> Node | None:
        if self._tail is None or self._tail.op == "placeholder":  # the usual build order
            return self._tail
        last = None
        for n in self.nodes:
            if n.op != "placeholder":
                break
            last = n
        return last

    def _link_after(self, anchor: Node | None, node: Node) -> None:
        """Link ``node`` after ``anchor`` (at the front when anchor is None)."""
        nxt = self._head if anchor is None else anchor.next
        node.prev, node.next = anchor, nxt
        if anchor is None:
            self._head = node
        else:
            anchor.next = node
        if nxt is None:
            self._tail = node
        else:
            nxt.prev = node
        self._len += 1

    def _link_before(self, anchor: Node, node: Node) -> None:
        self._link_after(anchor.prev, node)

    def _unlink(self, node: Node) -> None:
        # the erased node keeps its own prev/next so a live iterator can step past it
        if node.prev is None:
            self._head = node.next
        else:
            node.prev.next = node.next
        if node.next is None:
            self._tail = node.prev
        else:
            node.next.prev = node.prev
        self._len -= 1

    def _move_insert_point_off(self, node: Node) -> None:
        # same position, new anchor: the neighbour on the side we were inserting from
        if self._insert[0] == "after" and node.prev is not None:  # type: ignore[index]
            self._insert = ("after", node.prev)
        elif node.next is not None:
            self._insert = ("before", node.next)
        else:
            self._insert = None if node.prev is None else ("after", node.prev)

    def _check_owned(self, node: Node) -> None:
        if node.graph is not self or node._erased:
            raise ValueError(f"node %{node.name} is not in this graph")


def _check_target(op: str, target: Target) -> None:
    if op not in OPS:
        raise ValueError(f"unknown node op {op!r}; expected one of {', '.join(OPS)}")
    if op == "call_function" and not callable(target):
        raise TypeError(f"call_function target must be callable, got {target!r}")
    if op != "call_function" and not isinstance(target, str):
        raise TypeError(f"{op} target must be a str, got {type(target).__name__}")
    if op == "call_method" and not _is_name(target):
        raise ValueError(f"call_method target must be a method name, got {target!r}")
    if op == "get_attr" and not all(_is_name(p) for p in target.split(".")):
        raise ValueError(f"get_attr target must be a dotted attribute path, got {target!r}")


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text)


def _same_target(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a target whose __eq__ misbehaves simply does not match
        return False


def _removable(node: Node) -> bool:
    return node.op in ("call_function", "get_attr") and not node.is_impure()
