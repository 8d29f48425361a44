"""``GraphModule``: a Graph compiled to a Python function you can call.

>>> import operator
>>> from autograd_compile.fx import Graph
>>> g = Graph()
>>> x = g.placeholder("x")
>>> _ = g.output(g.call_function(operator.add, (x, 1)))
>>> gm = GraphModule({}, g)
>>> gm(41)
42
"""
from __future__ import annotations

import itertools
import linecache
import types
import weakref
from typing import Any, Callable

from .codegen import PythonCode
from .graph import Graph
from .naming import sanitize

_FILE_IDS = itertools.count()


def compile_forward(code: PythonCode) -> Callable[..., Any]:
    """Exec ``code`` under a unique ``<acg_graph_N>`` filename registered with linecache,
    so tracebacks through generated code show the generated line."""
    filename = f"<acg_graph_{next(_FILE_IDS)}>"
    lines = code.src.splitlines(keepends=True)
    linecache.cache[filename] = (len(code.src), None, lines, filename)  # mtime None: kept
    namespace = dict(code.globals)
    exec(compile(code.src, filename, "exec"), namespace)  # noqa: S102 - our own codegen
    fn = namespace.pop("forward")  # pop: no fn <-> globals cycle, so it dies promptly
    weakref.finalize(fn, linecache.cache.pop, filename, None)
    return fn


class GraphModule:
    """A callable built from a Graph; ``get_attr`` nodes read attributes of ``root``.

    ``root`` is any object, or a dict of attribute paths (``{"w": w}`` or
    ``{"layer.weight": w}``). Each instance gets its own class (named
    ``class_name``) whose ``forward`` and ``__call__`` are the generated function.

    >>> import operator
    >>> g = Graph()
    >>> x = g.placeholder("x")
    >>> _ = g.output(g.call_function(operator.mul, (x, g.get_attr("scale"))))
    >>> gm = GraphModule({"scale": 3}, g, class_name="Scale")
    >>> gm(2), type(gm).__name__
    (6, 'Scale')
    >>> print(gm.code, end="")
    def forward(self, x):
        scale = self.scale
        mul = operator.mul(x, scale);  x = scale = None
        return mul
    """

    def __new__(cls, root: object | dict[str, Any], graph: Graph,
                class_name: str = "GraphModule") -> GraphModule:
        # a class per instance: recompile() can install forward without touching others
        per_instance = type(sanitize(class_name), (cls,), {"_acg_per_instance": True})
        return super().__new__(per_instance)

    def __init__(self, root: object | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        self._root = root
        self._graph = graph
        self._code: PythonCode | None = None
        self.recompile()

    # -- the graph and its code ---------------------------------------------------------
    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, graph: Graph) -> None:
        self._graph = graph
        self.recompile()

    @property
    def code(self) -> str:
        """Source of the generated ``forward``."""
        assert self._code is not None
        return self._code.src

    def recompile(self) -> PythonCode:
        """Regenerate and recompile ``forward`` from the (possibly edited) graph."""
        self._graph.lint_if_checking()
        for node in self._graph.find_nodes(op="get_attr"):
            self._install_attr(node.target)
        code = self._graph.python_code("self")
        fn = compile_forward(code)
        cls = type(self)
        cls.forward = fn  # type: ignore[method-assign]
        cls.__call__ = fn  # type: ignore[method-assign]  # gm(x) runs it with no extra frame
        self._code = code
        return code

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("replaced by the generated function in recompile()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def print_readable(self, print_output: bool = True) -> str:
        """The generated code inside its class; printed unless ``print_output=False``."""
        body = "".join(f"    {line}" if line.strip() else line
                       for line in self.code.splitlines(keepends=True))
        text = f"class {type(self).__name__}:\n{body}"
        if print_output:
            print(text, end="")
        return text

    def __repr__(self) -> str:
        return f"<{type(self).__name__} with {len(self._graph.nodes)} nodes>"

    # -- attributes read by get_attr nodes ------------------------------------------------
    def _install_attr(self, target: str) -> None:
        head = target.split(".", 1)[0]
        if head in self.__dict__:
            return
        if hasattr(type(self), head) or head in ("_root", "_graph", "_code"):
            raise ValueError(f"get_attr target {target!r} clashes with GraphModule's own "
                             f"attribute {head!r}")
        root = self._root
        if isinstance(root, dict):
            value = _from_dict(root, target, head)
        elif hasattr(root, head):
            value = getattr(root, head)
        else:
            raise AttributeError(f"get_attr target {target!r}: root has no attribute {head!r}")
        setattr(self, head, value)


def _from_dict(root: dict[str, Any], target: str, head: str) -> Any:
    """``root[head]``, or namespaces built from every ``'head.x.y'`` key."""
    if head in root:
        return root[head]
    prefix = head + "."
    nested = {k[len(prefix):]: v for k, v in root.items() if k.startswith(prefix)}
    if not nested:
        raise AttributeError(f"get_attr target {target!r}: root dict has no key {head!r} "
                             f"or {target!r}")
    ns = types.SimpleNamespace()
    for path, value in nested.items():
        *outer, last = path.split(".")
        obj = ns
        for part in outer:
            obj = obj.__dict__.setdefault(part, types.SimpleNamespace())
        setattr(obj, last, value)
    return ns
