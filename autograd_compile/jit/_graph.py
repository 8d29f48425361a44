"""``.graph`` and ``.code`` of scripted and traced objects, from ``make_fx``.

TorchScript shows the IR it compiled. Here the readable form of what runs is the fx graph of one
call: the function is traced with ``make_fx`` on fake tensors shaped like the inputs it was
traced with (``jit.trace``) or first called with; a module's forward runs on a copy of the
module, so making the graph never changes the module's state.
"""
from __future__ import annotations

import copy
import inspect
import textwrap
from typing import Any, Callable

import autograd_compile as acg
from ..aot.tree import flatten, unflatten
from ..tensor import Tensor

__all__ = ["InputSpec", "annotated_code", "graph_module", "module_graph", "source"]


class _Meta:
    """A tensor argument reduced to what a fake stand-in needs."""

    __slots__ = ("shape", "dtype")

    def __init__(self, t: Tensor) -> None:
        self.shape, self.dtype = tuple(t.shape), t.dtype


class InputSpec:
    """The structure of a call's arguments with each tensor kept as (shape, dtype) only."""

    def __init__(self, args: tuple, kwargs: dict) -> None:
        leaves, self._spec = flatten((args, kwargs), keyed=False)
        self._metas = [_Meta(t) for t in leaves]

    def tensors(self) -> list[Tensor]:
        """Zero tensors standing in for the arguments (their values are never read)."""
        return [acg.zeros(m.shape, dtype=m.dtype) for m in self._metas]

    def call(self, fn: Callable[..., Any], tensors: tuple) -> Any:
        args, kwargs = unflatten(self._spec, iter(tensors))
        return fn(*args, **kwargs)


def graph_module(fn: Callable[..., Any], spec: InputSpec | None, what: str,
                 mode: str = "fake") -> Any:
    """The GraphModule of ``fn`` called with arguments shaped as ``spec`` says."""
    if spec is None:
        raise RuntimeError(f"jit: the graph of {what} is traced from its inputs' shapes, and it "
                           "has not been called yet: call it once first, or make it with "
                           "jit.trace(fn, example_inputs)")
    return acg.make_fx(lambda *tensors: spec.call(fn, tensors), mode)(*spec.tensors())


def module_graph(forward: Callable[..., Any], module: Any, spec: InputSpec | None,
                 what: str) -> tuple[Any, Any]:
    """``(GraphModule of forward(copy, ...), copy)`` for a copy of ``module``: tracing can
    write its buffers (BatchNorm's statistics in training; fake tracing may even leave one
    without data), so it never runs on the module itself. Fake inputs first; where fake
    tracing fails, zeros through a fresh copy."""
    if spec is None:
        graph_module(forward, spec, what)  # the error saying to call it first
    twin = copy.deepcopy(module)
    try:
        return graph_module(lambda *a, **k: forward(twin, *a, **k), spec, what), twin
    except Exception:  # noqa: BLE001  (fake tracing failed: run a fresh copy for real)
        twin = copy.deepcopy(module)
    return graph_module(lambda *a, **k: forward(twin, *a, **k), spec, what, "real"), twin


def annotated_code(gm: Any, module: Any = None) -> str:
    """``gm.code`` headed by which parameter or buffer each of its constants is."""
    names = {}
    if module is not None:
        named = [*module.named_parameters(remove_duplicate=False),
                 *module.named_buffers(remove_duplicate=False)]
        names = {id(t): name for name, t in named}
    lines = [f"# {attr}: {names[id(value)]}" for attr, value in vars(gm).items()
             if attr.startswith("_tensor_constant") and id(value) in names]
    return "\n".join(lines + [gm.code]) if lines else gm.code


def source(fn: Callable[..., Any]) -> str:
    """The Python source of ``fn`` without its decorators (what TorchScript's ``.code`` shows
    compiled); a note where Python keeps no source."""
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return f"# the source of {getattr(fn, '__qualname__', fn)!s} is not available\n"
    lines = text.splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return "".join(lines)
