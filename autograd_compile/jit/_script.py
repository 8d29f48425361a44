"""``jit.script``: scripted functions and modules that run their Python code.

A scripted module is a copy of the module's object tree, each level an instance of a subclass of
its own class and of :class:`ScriptModule` (made once per class), sharing the original's
Parameter and buffer objects: every method, property and ``super()`` call of the original
works, ``state_dict`` keys are the original's, and ``train()``/``eval()`` or hooks added on the
copy leave the original alone, as PyTorch's ``RecursiveScriptModule``.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import types
import weakref
from collections import OrderedDict
from typing import Any, Callable

from ..nn.module import Module
from ._annotations import Attribute
from ._graph import InputSpec, annotated_code, graph_module, module_graph, source
from ._state import tracing

# jit.save, set by _serialization (which imports this module: no import back from here)
SAVE: list[Any] = [None]

__all__ = ["Error", "ScriptWarning", "ScriptModule", "RecursiveScriptModule", "ScriptFunction", "script",
           "script_method", "CompilationUnit", "wrap_module", "unwrap_module"]

_NO_COMPILER = ("autograd_compile has no TorchScript compiler: TorchScript source cannot be "
                "compiled here. Define the function in Python (optionally decorated with "
                "@acg.jit.script) instead.")
# per scripted or traced object: the first call's input shapes and the graph made from them
_SEEN: "weakref.WeakKeyDictionary[Any, InputSpec]" = weakref.WeakKeyDictionary()
_GRAPHS: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


class Error(RuntimeError):
    """PyTorch's ``torch.jit.Error`` (an error raised inside TorchScript code)."""


class ScriptWarning(Warning):
    """PyTorch's warning category for scripted code."""


class _info:  # noqa: N801  (used as a decorator, like property)
    """A read-only attribute of scripted modules that yields to a module's own member of the
    same name (a parameter, buffer, submodule or attribute called ``code`` or ``graph``)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn, self.name = fn, fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if self.name in d.get(registry, ()):
                return d[registry][self.name]
        try:
            return self.fn(obj)
        except AttributeError as e:  # not "no such attribute": Module.__getattr__ would say so
            raise RuntimeError(f"jit: computing .{self.name} failed: {e}") from e


def _original(cls: type) -> type:
    """The user's class behind a scripted or traced module's class."""
    return getattr(cls, "_jit_original", cls)


class ScriptModule(Module):
    """``torch.jit.ScriptModule``: what ``jit.script`` and ``jit.trace`` make of a Module.

    Also a base class, for PyTorch's older API (``class M(jit.ScriptModule)`` with
    ``@jit.script_method`` methods and ``jit.Attribute`` values): such a module runs as Python.

    >>> import autograd_compile as acg
    >>> m = acg.jit.script(acg.nn.Linear(2, 3))
    >>> isinstance(m, acg.jit.ScriptModule), list(m.state_dict())
    (True, ['weight', 'bias'])
    """

    _jit_traced = False  # a traced module runs with jit.is_tracing() True

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Attribute):  # the value; its type is for a compiler
            value = value.value
        super().__setattr__(name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _note_inputs(self, args, kwargs)
        return super().__call__(*args, **kwargs)

    @_info
    def original_name(self) -> str:
        """The name of the scripted module's own class."""
        return _original(type(self)).__name__

    @_info
    def graph(self) -> Any:
        """The fx graph of ``forward`` (traced on fake inputs shaped as its example or first
        inputs): a readable stand-in for TorchScript's IR."""
        return self._jit_graph_module().graph

    @_info
    def inlined_graph(self) -> Any:
        """The same as :attr:`graph`: submodule calls are inlined in it already."""
        return self._jit_graph_module().graph

    @_info
    def code(self) -> str:
        """The Python source of ``forward`` (what runs); a traced module's graph as code."""
        if self._jit_traced:
            gm = self._jit_graph_module()
            return annotated_code(gm, _GRAPHS[self][1])
        return source(_original(type(self)).forward)

    @_info
    def code_with_constants(self) -> tuple[str, dict]:
        """``(code, constants)``: constants are Python values in the code here."""
        return self.code, {}

    def _jit_graph_module(self) -> Any:
        if self not in _GRAPHS:
            with tracing() if self._jit_traced else contextlib.nullcontext():
                _GRAPHS[self] = module_graph(_original(type(self)).forward, self,
                                             _SEEN.get(self), f"{self._get_name()}.forward")
        return _GRAPHS[self][0]

    def save(self, f: Any, _extra_files: dict | None = None) -> None:
        """``jit.save(self, f)``."""
        SAVE[0](self, f, _extra_files=_extra_files)

    def define(self, src: str) -> None:
        raise NotImplementedError(f"ScriptModule.define: {_NO_COMPILER}")


def _note_inputs(module: Module, args: tuple, kwargs: dict) -> None:
    """Keep the shapes of a module's first call, for its ``.graph``."""
    d = module.__dict__
    if d.get("_jit_seen") != id(module):  # a dict look-up per call (a copy's id differs)
        d["_jit_seen"] = id(module)
        _SEEN[module] = InputSpec(args, kwargs)


def _call_recorded(self: Module, *args: Any, **kwargs: Any) -> Any:
    """Module.__call__ of a wrapper class: the original class's, after noting the inputs."""
    _note_inputs(self, args, kwargs)
    return _original(type(self)).__call__(self, *args, **kwargs)


def _original_name_repr(self: Module) -> str:
    return f"original_name={_original(type(self)).__name__}"


class RecursiveScriptModule(ScriptModule):
    """The class of ``jit.script(module)`` and of each of its submodules (a subclass of it and
    of the module's own class is made per class)."""

    _JIT_NAMESPACE: dict[str, Any] = {"__call__": _call_recorded,
                                      "_get_name": lambda self: "RecursiveScriptModule",
                                      "extra_repr": _original_name_repr}


@functools.cache
def wrapper_class(orig: type, base: type) -> type:
    """The class of ``orig`` modules wrapped as ``base``: ``orig`` first in its MRO (its methods
    win), ``base`` after it (what ScriptModule adds), ``base._JIT_NAMESPACE`` above both."""
    ns = {"__module__": orig.__module__, "__doc__": orig.__doc__, "_jit_original": orig,
          # acg.save(wrapped) then names the original class, which acg.load can import
          "__qualname__": orig.__qualname__, **base._JIT_NAMESPACE}
    return types.new_class(base.__name__, (orig, base), exec_body=lambda d: d.update(ns))


def _state(module: Module) -> dict[str, Any]:
    """``module.__dict__`` for a copy: registries copied (so the copy's own additions stay
    its own), members (Parameters, buffers, settings) shared, ``jit.Attribute`` unwrapped."""
    state = {}
    for key, value in vars(module).items():
        if key in ("_parameters", "_buffers", "_non_persistent_buffers_set") or "hook" in key:
            value = copy.copy(value)
        elif isinstance(value, Attribute):
            value = value.value
        state[key] = value
    return state


def wrap_module(module: Module, top: type, below: type, memo: dict[int, Module]) -> Module:
    """``module`` as a ``top`` wrapper whose submodules are ``below`` wrappers (a module already
    scripted or traced is kept; one reached twice is wrapped once)."""
    if isinstance(module, ScriptModule):
        return module
    if id(module) in memo:
        return memo[id(module)]
    cls = wrapper_class(type(module), top)
    new = cls.__new__(cls)
    memo[id(module)] = new
    state = _state(module)
    state["_modules"] = OrderedDict(
        (name, None if child is None else wrap_module(child, below, below, memo))
        for name, child in module._modules.items())
    new.__dict__.update(state)
    return new


def unwrap_module(module: Module, memo: dict[int, Module] | None = None) -> Module:
    """A plain copy of a wrapped module tree (its own classes, no ``_jit_*`` state): what
    ``jit.save`` stores, so loading imports only the user's classes."""
    memo = {} if memo is None else memo
    if id(module) in memo:
        return memo[id(module)]
    cls = _original(type(module))
    new = cls.__new__(cls)
    memo[id(module)] = new
    state = {k: v for k, v in vars(module).items() if not k.startswith("_jit_")}
    state["_modules"] = OrderedDict((name, None if child is None else unwrap_module(child, memo))
                                    for name, child in module._modules.items())
    new.__dict__.update(state)
    return new


class ScriptFunction:
    """``torch.jit.ScriptFunction``: a scripted or traced function; calling it runs the Python
    function (a traced one with :func:`~autograd_compile.jit.is_tracing` True, or compiled).

    >>> import autograd_compile as acg
    >>> @acg.jit.script
    ... def swish(x):
    ...     return x * acg.sigmoid(x)
    >>> swish(acg.zeros(2)).tolist(), swish.name
    ([0.0, 0.0], 'swish')
    """

    def __init__(self, fn: Callable[..., Any], traced: bool = False,
                 example: InputSpec | None = None) -> None:
        functools.update_wrapper(self, fn)
        self._fn, self._traced, self._spec = fn, traced, example
        self._run: Callable[..., Any] = fn  # a traced one may run compiled instead
        self._gm: Any = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._spec is None:
            self._spec = InputSpec(args, kwargs)
        if not self._traced:
            return self._fn(*args, **kwargs)
        with tracing():
            return self._run(*args, **kwargs)

    @property
    def name(self) -> str:
        return getattr(self._fn, "__name__", type(self._fn).__name__)

    @property
    def qualified_name(self) -> str:
        return f"__torch__.{getattr(self._fn, '__qualname__', self.name)}"

    @property
    def graph(self) -> Any:
        """The fx graph of one call (on fake inputs shaped as the example or first inputs)."""
        return self._graph_module().graph

    inlined_graph = graph

    @property
    def code(self) -> str:
        """A traced function's graph as Python code; a scripted one's own source."""
        return self._graph_module().code if self._traced else source(self._fn)

    def _graph_module(self) -> Any:
        if self._gm is None:
            with tracing() if self._traced else contextlib.nullcontext():
                self._gm = graph_module(self._fn, self._spec, self.name)
        return self._gm

    def save(self, f: Any, _extra_files: dict | None = None) -> None:
        """``jit.save(self, f)``."""
        SAVE[0](self, f, _extra_files=_extra_files)

    def __repr__(self) -> str:
        return f"<autograd_compile.jit.ScriptFunction {self.qualified_name[10:]}>"


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: a Module becomes a :class:`RecursiveScriptModule`, a function a
    :class:`ScriptFunction`; both run their Python code (there is no TorchScript compiler here),
    so results and gradients are eager PyTorch's. Classes, enums, dicts and lists are returned
    as they are (TorchScript classes are Python classes here).

    >>> import autograd_compile as acg
    >>> net = acg.nn.Sequential(acg.nn.Linear(2, 2), acg.nn.ReLU())
    >>> s = acg.jit.script(net)
    >>> s[0].weight is net[0].weight, s.eval().training, net.training
    (True, False, True)
    """
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return wrap_module(obj, RecursiveScriptModule, RecursiveScriptModule, {})
    if isinstance(obj, (type, dict, list)):
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"jit.script: cannot script an object of type {type(obj).__name__}; "
                       "expected an nn.Module, a function or a class")


def script_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A method of a ``ScriptModule`` subclass (PyTorch's older API): a method as it is."""
    return fn


class CompilationUnit:
    """PyTorch's unit of TorchScript source: there is no compiler here to give it source."""

    def __init__(self, lang: str | None = None, _frames_up: int = 0) -> None:
        if lang is not None:
            raise NotImplementedError(f"jit.CompilationUnit: {_NO_COMPILER}")

    def define(self, src: str, rcb: Any = None, _frames_up: int = 0) -> None:
        raise NotImplementedError(f"jit.CompilationUnit.define: {_NO_COMPILER}")
