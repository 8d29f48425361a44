"""``jit.trace``: traced functions and modules.

PyTorch's trace runs the function once and keeps the ops it ran. Here the traced object keeps the
function and runs it each call with :func:`~autograd_compile.jit.is_tracing` True and, for a
module, each submodule's ``training`` as it was at trace time, so a branch on either takes the
path the trace recorded (a traced dropout stays on after ``eval()``, as PyTorch's), and results
and gradients are eager ones. With ``compile=True`` (an option of ours) it runs through ``acg.compile`` instead, and
``check_trace`` then compares compiled outputs with the Python function's, as PyTorch compares
its trace with Python. Inputs and outputs PyTorch cannot trace raise PyTorch's errors.
"""
from __future__ import annotations

import copy
import functools
import warnings
from typing import Any, Callable

from ..aot import compile as acg_compile
from ..nn.module import Module
from ..tensor import Tensor
from ._graph import InputSpec
from ._script import (ScriptFunction, ScriptModule, _call_recorded, _original,
                      _original_name_repr, wrap_module)
from ._state import is_tracing, tracing

__all__ = ["TracerWarning", "TracingCheckError", "TracedModule", "TopLevelTracedModule",
           "trace", "trace_module"]

# each traced module's ``training`` at trace time (kept by jit.save: a plain attribute)
TRACED_TRAINING = "_traced_training"

_OUTPUT_TYPES = ("Only tensors, lists, tuples of tensors, or dictionary of tensors can be "
                 "output from traced functions")
_NO_OUTPUT = ("The traced function didn't return any values! Side-effects are not captured in "
              "traces, so it would be a no-op.")
_MUTABLE_OUTPUT = ("Encountering a {} at the output of the tracer might cause the trace to be "
                   "incorrect, this is only valid if the container structure does not change "
                   "based on the module's inputs. Consider using a constant container instead "
                   "(e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` "
                   "instead). If you absolutely need this and know the side effects, pass "
                   "strict=False to trace() to allow this behavior.")


class TracerWarning(Warning):
    """A traced result may not generalise (PyTorch's warning category)."""

    @staticmethod
    def ignore_lib_warnings() -> None:
        warnings.filterwarnings("ignore", category=TracerWarning, module="torch.(?!jit)")


class TracingCheckError(Exception):
    """``check_trace`` found the trace differs from the Python function."""

    def __init__(self, graph_diff_error: str, tensor_compare_error: str,
                 extra_msg: str | None = None) -> None:
        self.message = "Tracing failed sanity checks!\n" + (extra_msg or "")
        self.message += "\n".join(m for m in (graph_diff_error, tensor_compare_error) if m)
        super().__init__(self.message)


# -- traced modules -------------------------------------------------------------------------------
class _TrainingAsTraced:
    """``training`` of a traced module: within its traced calls, the flag it was traced with
    (PyTorch's trace keeps the ops it ran: dropout on, batch statistics), otherwise the one
    ``train()``/``eval()`` set, as PyTorch shows it."""

    def __get__(self, obj: Module | None, cls: type | None = None) -> Any:
        if obj is None:
            return self
        d = obj.__dict__
        if TRACED_TRAINING in d and is_tracing():
            return d[TRACED_TRAINING]
        return d.get("training", True)

    def __set__(self, obj: Module, value: bool) -> None:
        obj.__dict__["training"] = value


def _traced_forward(self: Module, *args: Any, **kwargs: Any) -> Any:
    """forward of a traced module: the original one (or its compiled form) while tracing."""
    compiled = self.__dict__.get("_jit_compiled")
    with tracing():
        if compiled is not None:
            return compiled(*args, **kwargs)
        return _original(type(self)).forward(self, *args, **kwargs)


def _traced_deepcopy(self: Module, memo: dict) -> Module:
    """A copy with its own compiled program (compiled traces belong to one module's identity)."""
    new = type(self).__new__(type(self))
    memo[id(self)] = new
    for key, value in self.__dict__.items():
        if key != "_jit_compiled":
            new.__dict__[key] = copy.deepcopy(value, memo)
    if "_jit_compiled" in self.__dict__:
        _attach_compiled(new)
    return new


class TracedModule(ScriptModule):
    """The class of each submodule of ``jit.trace(module)`` (one subclass per module class)."""

    _jit_traced = True
    _JIT_NAMESPACE: dict[str, Any] = {"__call__": _call_recorded, "forward": _traced_forward,
                                      "__deepcopy__": _traced_deepcopy,
                                      "training": _TrainingAsTraced(),
                                      "_get_name": lambda self: _original(type(self)).__name__,
                                      "extra_repr": _original_name_repr}


class TopLevelTracedModule(TracedModule):
    """The class of ``jit.trace(module)`` itself."""

    _JIT_NAMESPACE = TracedModule._JIT_NAMESPACE


def record_modes(module: Module, keep: bool = False) -> None:
    """Note each submodule's ``training`` now as the one its traced calls run with (``keep``:
    where none was noted yet)."""
    for m in module.modules():
        if not (keep and TRACED_TRAINING in m.__dict__):
            m.__dict__[TRACED_TRAINING] = m.training


def _attach_compiled(module: Module) -> None:
    """Run ``module``'s forward through ``acg.compile`` (the module is found in the closure,
    so its parameters, buffers and training flags are guarded as acg.compile's own)."""
    forward = _original(type(module)).forward

    def traced_forward(*args: Any, **kwargs: Any) -> Any:
        return forward(module, *args, **kwargs)
    traced_forward.__qualname__ = f"{type(module).__qualname__}.forward"
    module.__dict__["_jit_compiled"] = acg_compile(traced_forward)


# -- checks ---------------------------------------------------------------------------------------
def _type_name(x: Any) -> str:
    """The TorchScript type PyTorch names in its "cannot be traced" error."""
    if isinstance(x, Tensor):
        return "Tensor"
    if isinstance(x, tuple):
        return f"Tuple[{', '.join(_type_name(v) for v in x)}]"
    if isinstance(x, list):
        return f"List[{_type_name(x[0]) if x else 'Tensor'}]"
    if isinstance(x, dict):
        k, v = next(iter(x.items())) if x else ("", None)
        return f"Dict[{type(k).__name__}, {_type_name(v) if x else 'Tensor'}]"
    return type(x).__name__


def _only_tensors(x: Any) -> bool:
    if isinstance(x, Tensor):
        return True
    if isinstance(x, (tuple, list)):
        return all(_only_tensors(v) for v in x)
    if isinstance(x, dict):
        return all(_only_tensors(v) for v in x.values())
    return False


def _check_inputs(args: tuple, kwargs: dict) -> None:
    for value in (args, *kwargs.values()):
        if not _only_tensors(value):
            raise RuntimeError(f"Type '{_type_name(value)}' cannot be traced. Only Tensors and "
                               "(possibly nested) Lists, Dicts, and Tuples of Tensors can be "
                               "traced")


def _check_output(out: Any, strict: bool, top: bool = True) -> None:
    if out is None and top:
        raise RuntimeError(_NO_OUTPUT)
    if isinstance(out, Tensor):
        return
    if isinstance(out, dict) and strict:
        raise RuntimeError(_MUTABLE_OUTPUT.format("dict"))
    if isinstance(out, list) and strict:
        warnings.warn(_MUTABLE_OUTPUT.format("list"), TracerWarning, stacklevel=4)
    if isinstance(out, (tuple, list)):
        for v in out:
            _check_output(v, strict, False)
    elif isinstance(out, dict):
        for v in out.values():
            _check_output(v, strict, False)
    else:
        raise RuntimeError(_OUTPUT_TYPES)


def _example_call(example_inputs: Any, example_kwarg_inputs: Any) -> tuple[tuple, dict]:
    if example_kwarg_inputs is not None:
        if not isinstance(example_kwarg_inputs, dict):
            raise RuntimeError("example_kwarg_inputs should be a dict")
        return (), dict(example_kwarg_inputs)
    if example_inputs is None:
        raise TypeError("jit.trace needs example_inputs (a tuple of tensors, or one tensor) or "
                        "example_kwarg_inputs (a dict of them)")
    if isinstance(example_inputs, (Tensor, dict)):
        return (example_inputs,), {}
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs), {}
    return (example_inputs,), {}


def _compare(traced: Callable[..., Any], python: Callable[..., Any], calls: list,
             tolerance: float) -> None:
    """Warn, as PyTorch's check_trace, where the compiled outputs differ from Python's."""
    from ..testing import assert_close
    from ..testing._comparison import default_tolerances
    for args, kwargs in calls:
        ours = _tensor_leaves(traced(*args, **kwargs))
        theirs = _tensor_leaves(python(*args, **kwargs))
        for i, (a, e) in enumerate(zip(ours, theirs), start=1):
            try:
                assert_close(a.detach(), e.detach(), rtol=tolerance,
                             atol=default_tolerances(a, e)[1], equal_nan=True)
            except AssertionError as err:
                warnings.warn(f"Output nr {i}. of the traced function does not match the "
                              "corresponding output of the Python function. Detailed error:\n"
                              f"{err}", TracerWarning, stacklevel=4)


def _tensor_leaves(x: Any) -> list[Tensor]:
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensor_leaves(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensor_leaves(v)]
    return []


def _check_calls(check_inputs: Any, args: tuple, kwargs: dict, is_kwarg: bool) -> list:
    if check_inputs is None:
        return [(args, kwargs)]
    return [((), dict(c)) if is_kwarg else _example_call(c, None) for c in check_inputs]


def _under_tracing(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with tracing():
        return fn(*args, **kwargs)


# -- the entry points -----------------------------------------------------------------------------
def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: list | None = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None,
          _compilation_unit: Any = None, example_kwarg_inputs: dict | None = None,
          _store_inputs: bool = True, *, compile: bool = False) -> Any:  # noqa: A002
    """``torch.jit.trace``: a :class:`ScriptFunction` (or, for a Module or its ``forward``, a
    :class:`TopLevelTracedModule` sharing its parameters) that runs ``func`` with
    :func:`~autograd_compile.jit.is_tracing` True.

    ``func`` runs once on the example inputs, which, like its outputs, must be tensors or
    tuples, lists and dicts of them (PyTorch's errors otherwise; a dict output needs
    ``strict=False``, a list one warns). ``compile=True`` (ours) runs it through
    ``acg.compile``; ``check_trace`` then warns where compiled outputs differ from Python's by
    more than ``check_tolerance`` (on ``check_inputs`` if given).

    >>> import autograd_compile as acg
    >>> f = acg.jit.trace(lambda x: x * 2 if acg.jit.is_tracing() else x, acg.ones(2))
    >>> f(acg.ones(2)).tolist()
    [2.0, 2.0]
    """
    if isinstance(func, ScriptModule):
        warnings.warn("The input to trace is already a ScriptModule, tracing it is a no-op. "
                      "Returning the object as is.", stacklevel=2)
        return func
    owner = getattr(func, "__self__", None)
    if isinstance(func, Module) or (isinstance(owner, Module) and
                                    getattr(func, "__name__", "") == "forward"):
        kwarg = example_kwarg_inputs is not None
        example = example_kwarg_inputs if kwarg else example_inputs
        return trace_module(func if isinstance(func, Module) else owner, {"forward": example},
                            None, check_trace, check_inputs and [{"forward": c}
                                                                 for c in check_inputs],
                            check_tolerance, strict, example_inputs_is_kwarg=kwarg,
                            compile=compile)
    fn = func._fn if isinstance(func, ScriptFunction) else func
    args, kwargs = _example_call(example_inputs, example_kwarg_inputs)
    _check_inputs(args, kwargs)
    _check_output(_under_tracing(fn, *args, **kwargs), strict)
    traced = ScriptFunction(fn, traced=True, example=InputSpec(args, kwargs))
    if compile:
        traced._run = acg_compile(fn)
        if check_trace:
            calls = _check_calls(check_inputs, args, kwargs, example_kwarg_inputs is not None)
            _compare(traced, functools.partial(_under_tracing, fn), calls, check_tolerance)
    return traced


def trace_module(mod: Module, inputs: dict[str, Any], optimize: Any = None,
                 check_trace: bool = True, check_inputs: list[dict] | None = None,
                 check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class: Any = None,
                 _compilation_unit: Any = None, example_inputs_is_kwarg: bool = False,
                 _store_inputs: bool = True, *,
                 compile: bool = False) -> ScriptModule:  # noqa: A002
    """``torch.jit.trace_module``: trace the methods named in ``inputs`` (``{name: example}``)
    of ``mod``; the result shares ``mod``'s parameters and buffers (see :func:`trace`).

    >>> import autograd_compile as acg
    >>> lin = acg.nn.Linear(2, 2)
    >>> t = acg.jit.trace_module(lin, {"forward": acg.ones(1, 2)})
    >>> type(t).__name__, t.weight is lin.weight
    ('TopLevelTracedModule', True)
    """
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    traced = wrap_module(mod, TopLevelTracedModule, TracedModule, {})
    record_modes(traced)
    for name, example in inputs.items():
        args, kwargs = _method_call(example, example_inputs_is_kwarg)
        _check_inputs(args, kwargs)
        run = traced if name == "forward" else getattr(traced, name)  # forward: with its hooks
        _check_output(_under_tracing(run, *args, **kwargs), strict)
    if compile:
        _attach_compiled(traced)
        if check_trace and "forward" in inputs:
            args, kwargs = _method_call(inputs["forward"], example_inputs_is_kwarg)
            checks = [c["forward"] for c in check_inputs] if check_inputs else None
            calls = _check_calls(checks, args, kwargs, example_inputs_is_kwarg)
            _check_compiled_module(traced, calls, check_tolerance)
    return traced


def _method_call(example: Any, is_kwarg: bool) -> tuple[tuple, dict]:
    return ((), dict(example)) if is_kwarg else _example_call(example, None)


def _check_compiled_module(traced: Module, calls: list, tolerance: float) -> None:
    """Compare the compiled forward with the Python one (both without the module's hooks)."""
    python = functools.partial(_original(type(traced)).forward, traced)
    compiled = traced.__dict__["_jit_compiled"]
    _compare(functools.partial(_under_tracing, compiled),
             functools.partial(_under_tracing, python), calls, tolerance)
