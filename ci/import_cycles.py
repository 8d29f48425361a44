"""Import circles of the package: strongly connected components of its import graph.

Run from the repository root: ``python ci/import_cycles.py`` prints every circle twice
over, once counting only module-level imports and once counting the imports inside
functions too (the lazy ``from .x import y`` that hides a circle rather than breaking it).
Imports under ``if TYPE_CHECKING:`` never run and are not counted, nor a package's
``__init__`` importing its own children.

>>> circles(Path(__file__).resolve().parent.parent, lazy=True)
[]
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

# the source folders and the names they install under (pyproject's package-dir)
PACKAGES = {"autograd_compile": "autograd_compile", "kernels": "autograd_compile.kernels",
            "benchmarks": "autograd_compile.benchmarks"}


def modules(root: Path) -> dict[str, Path]:
    """Installed module name -> source file."""
    out = {}
    for folder, name in PACKAGES.items():
        for f in (root / folder).rglob("*.py"):
            parts = [p for p in f.relative_to(root / folder).with_suffix("").parts
                     if p != "__init__"]
            out[".".join([name, *parts])] = f
    return out


def _targets(mod: str, f: Path, node: ast.ImportFrom | ast.Import, known: dict) -> list[str]:
    """The known modules an import statement loads (the longest known prefix of each)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = mod.split(".")[:None if f.name == "__init__.py" else -1]
        base = base[:len(base) - max(node.level - 1, 0)] if node.level else []
        pkg = ".".join(base + ([node.module] if node.module else []))
        names = [f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in known else pkg for a in node.names]
    out = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.append(name)
    return out


def import_graph(root: Path, lazy: bool) -> dict[str, set[str]]:
    """Module -> modules it imports (at module level; inside functions too when ``lazy``)."""
    known = modules(root)
    graph: dict[str, set[str]] = {m: set() for m in known}

    def visit(mod: str, f: Path, node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue  # never runs
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, (ast.Import, ast.ImportFrom)) and (lazy or not nested):
                graph[mod].update(t for t in _targets(mod, f, child, known)
                                  if t != mod and not mod.startswith(t + "."))
            visit(mod, f, child, nested)

    for mod, f in known.items():
        visit(mod, f, ast.parse(f.read_text()), False)
    return graph


def circles(root: Path, lazy: bool) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    graph = import_graph(root, lazy)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    total = 0
    for lazy in (False, True):
        found = circles(root, lazy)
        total += len(found)
        print(f"{'all imports' if lazy else 'module-level imports'}: {len(found)} circles")
        for comp in found:
            print("   " + " <-> ".join(m.removeprefix("autograd_compile.") for m in comp))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
