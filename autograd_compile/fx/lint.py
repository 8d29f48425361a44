"""``Graph.lint()``: the structural invariants every pass must preserve.

Checked: the linked list is consistent and acyclic; every node belongs to the
graph and is live; names are unique; ops and targets are well formed;
placeholders come first; every input is a live node of this graph defined
before its user; ``users`` agrees with ``args``/``kwargs`` both ways; there is
exactly one output node and it is last.

>>> from autograd_compile.fx import Graph
>>> g = Graph()
>>> _ = g.placeholder("x")
>>> g.lint()
Traceback (most recent call last):
    ...
autograd_compile.fx.lint.GraphLintError: graph has no output node
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .node import OPS, Node, collect_nodes

if TYPE_CHECKING:
    from .graph import Graph


class GraphLintError(RuntimeError):
    """A graph broke an invariant; the message names the node and the rule."""


def _fail(node: Node, rule: str) -> GraphLintError:
    return GraphLintError(f"node %{node.name}: {rule}\n    {_safe_format(node)}")


def _safe_format(node: Node) -> str:
    try:
        return node.format_node()
    except Exception as e:  # a corrupt node must not hide the lint message
        return f"<unprintable node: {e!r}>"


def lint_graph(graph: Graph) -> None:
    """Raise GraphLintError at the first broken invariant."""
    order = _walk(graph)
    position = {node: i for i, node in enumerate(order)}
    names: dict[str, Node] = {}
    for i, node in enumerate(order):
        _check_identity(graph, node, names)
        _check_kind(node, order[i - 1] if i else None)
        _check_inputs(graph, node, position, i)
        _check_users(node, position)
    _check_output(order)


def _walk(graph: Graph) -> list[Node]:
    """The nodes in list order, checking the links (no cycles, prev/next agree)."""
    order: list[Node] = []
    seen: set[Node] = set()
    node, prev = graph._head, None
    while node is not None:
        if node in seen:
            raise _fail(node, "the node list has a cycle (node reached twice)")
        if node.prev is not prev:
            raise _fail(node, f"prev link is {node.prev!r}, expected {prev!r}")
        seen.add(node)
        order.append(node)
        node, prev = node.next, node
    if graph._tail is not prev:
        raise GraphLintError(f"graph tail is {graph._tail!r} but the list ends at {prev!r}")
    if graph._len != len(order):
        raise GraphLintError(f"graph length is {graph._len} but the list has {len(order)} nodes")
    return order


def _check_identity(graph: Graph, node: Node, names: dict[str, Node]) -> None:
    if node.graph is not graph:
        raise _fail(node, "node is linked into this graph but belongs to another graph")
    if node._erased:
        raise _fail(node, "node was erased but is still linked into the graph")
    if not node.name.isidentifier():
        raise _fail(node, f"name {node.name!r} is not a Python identifier")
    if node.name in names:
        raise _fail(node, f"duplicate name {node.name!r} (also used by an earlier node)")
    names[node.name] = node


def _check_kind(node: Node, prev: Node | None) -> None:
    if node.op not in OPS:
        raise _fail(node, f"unknown op {node.op!r}")
    if node.op == "call_function" and not callable(node.target):
        raise _fail(node, "call_function target is not callable")
    if node.op != "call_function" and not isinstance(node.target, str):
        raise _fail(node, f"{node.op} target must be a str")
    if node.op == "placeholder" and prev is not None and prev.op != "placeholder":
        raise _fail(node, f"placeholder comes after non-placeholder node %{prev.name} "
                          "(placeholders must be first)")


def _check_inputs(graph: Graph, node: Node, position: dict[Node, int], here: int) -> None:
    actual = collect_nodes(node.args, node.kwargs)
    if list(actual) != list(node._inputs):
        raise _fail(node, "cached input nodes disagree with args/kwargs")
    for inp in actual:
        if inp.graph is not graph:
            raise _fail(node, f"input %{inp.name} belongs to another graph")
        if inp._erased or inp not in position:
            raise _fail(node, f"input %{inp.name} is not in the graph (erased?)")
        if position[inp] >= here:
            raise _fail(node, f"input %{inp.name} is used before it is defined")
        if node not in inp.users:
            raise _fail(node, f"reads %{inp.name} but is missing from %{inp.name}.users")


def _check_users(node: Node, position: dict[Node, int]) -> None:
    for user in node.users:
        if user not in position:
            raise _fail(node, f"users lists %{user.name}, which is not in the graph")
        if node not in collect_nodes(user.args, user.kwargs):
            raise _fail(node, f"users lists %{user.name}, which does not read this node")


def _check_output(order: list[Node]) -> None:
    outputs = [n for n in order if n.op == "output"]
    if not outputs:
        raise GraphLintError("graph has no output node")
    if len(outputs) > 1:
        raise _fail(outputs[1], f"second output node (first is %{outputs[0].name})")
    if order[-1] is not outputs[0]:
        raise _fail(outputs[0], f"output node is not last (followed by %{order[-1].name})")
    if outputs[0].users:
        raise _fail(outputs[0], "the output node has users")
