"""Graph -> Python source for ``def forward(self, ...)``, plus the globals it needs.

Every node becomes one line ``name = target(args)``; a value is set to None
right after its last use so the eager backend frees memory early. Operators
(objects with ``qualname = "ns::name.overload"``) are spelled
``ops.ns.name.overload``, ``operator`` functions ``operator.mul``, builtins by
name; any other callable or non-literal constant is bound as a global under a
readable unique name.

>>> import operator
>>> from autograd_compile.fx import Graph
>>> g = Graph()
>>> x = g.placeholder("x")
>>> _ = g.output(g.call_function(operator.neg, (x,)))
>>> print(generate(g).src, end="")
def forward(self, x):
    neg = operator.neg(x);  x = None
    return neg
"""
from __future__ import annotations

import keyword
import math
import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .naming import (RESERVED, Namespace, builtin_name, is_qualname_renderable, op_qualname,
                     operator_name, sanitize)
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

_LITERAL_TYPES = (bool, int, str, bytes, type(None))


@dataclass(frozen=True)
class PythonCode:
    """Generated source text and the globals to ``exec`` it with."""

    src: str
    globals: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.src


class OpTree:
    """The ``ops`` global of generated code: ``ops.<ns>.<name>[.<overload>]`` is exactly
    the operator object the graph holds (two plain attribute loads, no dispatcher
    lookups per call). Names the graph never used fall back, lazily, to
    ``autograd_compile.dispatch.ops``."""

    def __init__(self, path: tuple[str, ...] = ()) -> None:
        self._acg_path = path
        self._acg_default: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._acg_default is None:
            raise TypeError(f"ops.{'.'.join(self._acg_path)} is a namespace, not an operator")
        return self._acg_default(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        from ..dispatch import ops  # lazy: fx must not import the dispatcher at import time
        target: Any = ops
        for part in (*self._acg_path, name):
            target = getattr(target, part)
        return target


def build_ops_tree(ops: dict[str, Any]) -> OpTree:
    """Nest ``{"acg::sum.dim": op, ...}`` into attribute namespaces under one root."""
    root = OpTree()
    for qualname, op in ops.items():
        ns, rest = qualname.split("::", 1)
        *outer, last = (ns, *rest.split("."))
        parent = root
        for part in outer:
            parent = _child_tree(parent, part)
        existing = parent.__dict__.get(last)
        if isinstance(existing, OpTree):  # 'sum' after 'sum.dim': the packet gets a default
            existing._acg_default = op
        else:
            setattr(parent, last, op)
    return root


def _child_tree(parent: OpTree, part: str) -> OpTree:
    child = parent.__dict__.get(part)
    if isinstance(child, OpTree):
        return child
    tree = OpTree((*parent._acg_path, part))
    tree._acg_default = child  # an op used both bare and with overloads ('sum', 'sum.dim')
    setattr(parent, part, tree)
    return tree


def generate(graph: Graph, root_name: str = "self") -> PythonCode:
    """The source and globals of ``def forward(<root_name>, <placeholders>)``."""
    return _CodeGen(graph, root_name).run()


def free_after(nodes: list[Node]) -> dict[Node, list[Node]]:
    """For each node, the inputs whose last use it is (to free right after it runs)."""
    seen: set[Node] = set()
    free: dict[Node, list[Node]] = {}
    for node in reversed(nodes):
        for inp in node.all_input_nodes:
            if inp not in seen:
                seen.add(inp)
                free.setdefault(node, []).append(inp)
    return free


class _CodeGen:
    def __init__(self, graph: Graph, root_name: str) -> None:
        self.nodes = list(graph.nodes)
        self.root = root_name
        # globals must not collide with any local (node) name, or the local would shadow it
        self.claimed = graph.bound_targets
        taken = {n.name for n in self.nodes} | {name for _, name in self.claimed.values()}
        self.names = Namespace(RESERVED | taken | {root_name})
        self.globals: dict[str, Any] = {"operator": operator}
        self.ops: dict[str, Any] = {}
        self.bound: dict[int, str] = {}

    def run(self) -> PythonCode:
        params, body = [self.root], []
        free = free_after(self.nodes)
        for node in self.nodes:
            if node.op == "placeholder":
                params.append(self._param(node, params))
            else:
                body.append(self._statement(node, free.get(node, [])))
        if not self.nodes or self.nodes[-1].op != "output":
            body.append("return None")
        if self.ops:
            self.globals["ops"] = build_ops_tree(self.ops)
        lines = [f"def forward({', '.join(params)}):"] + [f"    {line}" for line in body]
        return PythonCode("\n".join(lines) + "\n", self.globals)

    # -- statements ---------------------------------------------------------------------
    def _param(self, node: Node, params: list[str]) -> str:
        if not node.args:
            if any("=" in p for p in params):
                raise ValueError(f"placeholder %{node.name} has no default but follows one "
                                 "that has a default")
            return node.name
        return f"{node.name}={self.arg(node.args[0])}"

    def _statement(self, node: Node, dead: list[Node]) -> str:
        expr = self._expression(node)
        if node.op == "output":
            return f"return {expr}"
        line = f"{node.name} = {expr}" if node.users else expr  # unread result: just call it
        if dead:
            line += ";  " + " = ".join(n.name for n in dead) + " = None"
        return line

    def _expression(self, node: Node) -> str:
        if node.op == "output":
            return self.arg(node.args[0] if node.args else None)
        if node.op == "get_attr":
            return f"{self.root}.{node.target}"
        if node.op == "call_method":
            receiver, *rest = node.args
            recv = self.arg(receiver)
            recv = recv if isinstance(receiver, Node) else f"({recv})"
            return f"{recv}.{node.target}({self._call_args(tuple(rest), node.kwargs)})"
        return f"{self.target(node.target)}({self._call_args(node.args, node.kwargs)})"

    def _call_args(self, args: tuple, kwargs: dict[str, Any]) -> str:
        parts = [self.arg(a) for a in args]
        odd = {k: v for k, v in kwargs.items() if not _is_plain_name(k)}
        parts += [f"{k}={self.arg(v)}" for k, v in kwargs.items() if _is_plain_name(k)]
        if odd:  # keys that cannot be written as k=v
            parts.append("**" + self.arg(odd))
        return ", ".join(parts)

    # -- targets and arguments ------------------------------------------------------------
    def target(self, target: Any) -> str:
        qualname = op_qualname(target)
        if qualname is not None and is_qualname_renderable(qualname):
            if self.ops.setdefault(qualname, target) is target:
                return "ops." + qualname.replace("::", ".")
        if (name := operator_name(target)) is not None:
            return f"operator.{name}"
        if (name := builtin_name(target)) is not None:
            return name
        return self.bind(target)

    def arg(self, value: Any) -> str:
        if isinstance(value, Node):
            return value.name
        kind = type(value)
        if kind is tuple:
            inner = ", ".join(self.arg(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if kind is list:
            return "[" + ", ".join(self.arg(v) for v in value) + "]"
        if kind is dict:
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in value.items()) + "}"
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
            return f"{self.bind(kind)}({', '.join(self.arg(v) for v in value)})"
        if kind is slice:
            return f"slice({self.arg(value.start)}, {self.arg(value.stop)}, " \
                   f"{self.arg(value.step)})"
        return self._constant(value)

    def _constant(self, value: Any) -> str:
        if value is Ellipsis:
            return "..."
        if type(value) in _LITERAL_TYPES:
            return repr(value)
        if type(value) is float:
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        literal = _evaluable_repr(value)
        return literal if literal is not None else self.bind(value)

    def bind(self, obj: Any) -> str:
        """Put ``obj`` in the generated module's globals under a readable unique name."""
        name = self.bound.get(id(obj))
        if name is None:
            claimed = self.claimed.get(id(obj))
            name = claimed[1] if claimed else self.names.create(_global_name(obj))
            self.bound[id(obj)] = name
            self.globals[name] = obj  # also keeps obj alive, so its id stays unique
        return name


def _is_plain_name(key: Any) -> bool:
    return isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)


def _global_name(obj: Any) -> str:
    for attr in ("__name__", "name"):
        name = getattr(obj, attr, None)
        if isinstance(name, str) and name:
            return sanitize(name)
    return sanitize(type(obj).__name__.lower())


def _evaluable_repr(value: Any) -> str | None:
    """``repr(value)`` when evaluating it (with no names in scope) gives back an equal
    value of the same type, e.g. complex numbers; None otherwise."""
    try:
        text = repr(value)
        if len(text) > 200 or "<" in text:
            return None
        result = eval(text, {"__builtins__": {}}, {})  # noqa: S307 - repr of a graph constant
        return text if type(result) is type(value) and result == value else None
    except Exception:
        return None
