"""The decorators and type helpers of TorchScript code, as plain Python.

Marks such as ``@jit.ignore`` and ``@jit.unused`` tell the TorchScript compiler what to leave
as Python; with no compiler they leave the function as it is (callable, since
:func:`~autograd_compile.jit.is_scripting` is False and Python branches call them) and record
the mark where PyTorch does (``fn._torchscript_modifier``). Type helpers return their value.
"""
from __future__ import annotations

import builtins
import typing
from collections import namedtuple
from typing import Any, Callable, Final  # noqa: F401  (re-exported: torch.jit.Final)

__all__ = ["FunctionModifiers", "Attribute", "Final", "annotate", "export", "ignore", "unused",
           "interface", "script_if_tracing", "isinstance", "copy_to_script_wrapper"]


class FunctionModifiers:
    """What a decorator asked of the TorchScript compiler (recorded, never acted on); the
    values are PyTorch's strings, so code comparing ``fn._torchscript_modifier`` keeps working."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = ("if this method is not scripted, copy the python method onto the "
                              "scripted model")
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


# ScriptModule.__setattr__ and script() store ``.value``; ``.type`` is for the compiler
Attribute = namedtuple("Attribute", ["value", "type"])


def _mark(fn: Any, modifier: str) -> Any:
    target = fn.fget if builtins.isinstance(fn, property) else fn
    target._torchscript_modifier = modifier
    return fn


def export(fn: Callable) -> Callable:
    """Mark a method to be compiled even if ``forward`` does not call it; returns it as is.

    >>> class M:
    ...     @export
    ...     def f(self): return 1
    >>> M().f()
    1
    """
    return _mark(fn, FunctionModifiers.EXPORT)


def unused(fn: Any) -> Any:
    """Mark a function (or property) the compiler should replace by a raise; stays callable.

    >>> @unused
    ... def f(x): return x + 1
    >>> f(1)
    2
    """
    return _mark(fn, FunctionModifiers.UNUSED)


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Mark a function to stay Python (``@ignore`` or ``@ignore(drop=True)``); stays callable.

    >>> @ignore
    ... def f(x): return x * 2
    >>> f(3), ignore(drop=True)(f)(4)
    (6, 8)
    """
    if callable(drop):
        return _mark(drop, FunctionModifiers.IGNORE)
    drop = kwargs.pop("drop_on_export", drop)
    if not builtins.isinstance(drop, bool):
        raise RuntimeError("Argument to @torch.jit.ignore must be a bool or a function but got "
                           f"{drop}")
    modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
    return lambda fn: _mark(fn, modifier)


def copy_to_script_wrapper(fn: Callable) -> Callable:
    """Mark a method to copy onto scripted modules; every method is there already here."""
    return _mark(fn, FunctionModifiers.COPY_TO_SCRIPT_WRAPPER)


def interface(obj: Any) -> Any:
    """A TorchScript interface class: an ordinary class here, returned as is."""
    return obj


def script_if_tracing(fn: Callable) -> Callable:
    """PyTorch scripts ``fn`` on first call under tracing; it runs as Python here, as is."""
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """Give the compiler a value's type (``annotate(List[int], [])``); returns the value.

    >>> annotate(typing.List[int], [])
    []
    """
    return the_value


def _overload(fn: Callable) -> Callable:
    """A TorchScript overload declaration: the last definition of the name is the one kept."""
    return fn


_overload_method = _overload


def _unwrap_optional(x: Any) -> Any:
    assert x is not None, "Unwrapping null optional"
    return x


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001  (PyTorch's name)
    """``builtins.isinstance`` that also checks typing containers, as ``torch.jit.isinstance``.

    >>> from typing import Dict, List, Optional
    >>> isinstance([1, 2], List[int]), isinstance({"a": 1.0}, Dict[str, int])
    (True, False)
    >>> isinstance(None, Optional[int])
    True
    """
    if target_type is Any:
        return True
    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if origin is None:
        return builtins.isinstance(obj, target_type)
    if origin is typing.Union or getattr(origin, "__name__", "") == "UnionType":
        return any(isinstance(obj, t) for t in args)
    if not builtins.isinstance(obj, origin):
        return False
    return _items_match(obj, origin, args)


def _items_match(obj: Any, origin: type, args: tuple) -> bool:
    if not args:
        return True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(isinstance(v, t) for v, t in zip(obj, args))
    if issubclass(origin, dict):
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    return all(isinstance(v, args[0]) for v in obj)
