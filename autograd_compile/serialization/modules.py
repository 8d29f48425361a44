"""Whole modules in a checkpoint: ``acg.save(model, f)`` and ``acg.load(f, weights_only=False)``.

PyTorch pickles the module object itself, so loading it runs whatever the pickle names. Here a
module is stored as its class's import path plus its attributes (parameters, buffers,
submodules, plain settings such as ``in_features``); loading imports that class, checks it is
an ``nn.Module``, makes an instance with the base ``Module.__init__`` only (the subclass's
constructor is not called) and sets the attributes back. Nothing named by the file is called.
Forward hooks and other Python callables on a module are not saved; functions of this package
stored as attributes (``self.act = F.gelu``) are stored by name.

>>> import io, autograd_compile as acg
>>> buf = io.BytesIO(); acg.save(acg.nn.Linear(2, 3), buf); _ = buf.seek(0)
>>> acg.load(buf, weights_only=False)
Linear(in_features=2, out_features=3, bias=True)
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

from .pickle_read import Refused, refuse

HERE = __name__
_SKIPPED = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
            "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
            "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
            "_load_state_dict_post_hooks", "_compiled_call_impl")


def module_attrs(module: Any) -> dict[str, Any]:
    """What is saved of a module: its ``__dict__`` without hooks."""
    return {k: v for k, v in vars(module).items() if k not in _SKIPPED and "hook" not in k}


def is_package_global(obj: Any) -> bool:
    """A function or class of this package, saved by its import path."""
    mod = getattr(obj, "__module__", "") or ""
    return (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)) and (
        mod == "autograd_compile" or mod.startswith("autograd_compile."))


def _class(module: str, qualname: str) -> type:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def rebuild_module(module: str, qualname: str, attrs: dict) -> Any:
    """A module of class ``module.qualname`` with ``attrs`` as its state."""
    from ..nn import Module
    cls = _class(module, qualname)
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise refuse(f"'{module}.{qualname}', which is not an nn.Module")
    inst = cls.__new__(cls)
    Module.__init__(inst)  # the base registries and empty hook tables: our code, not the file's
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise refuse(f"module state of type {type(attrs).__name__}")
    inst.__dict__.update(attrs)
    return inst


def package_global(module: str, qualname: str) -> Any:
    """A function or class of this package, by import path (never anything outside it)."""
    if not (module == "autograd_compile" or module.startswith("autograd_compile.")):
        raise refuse(f"the global '{module}.{qualname}'")
    obj = _class(module, qualname)
    if not is_package_global(obj):
        raise refuse(f"'{module}.{qualname}', which is not a function or class of this package")
    return obj


def load_table(weights_only: bool) -> dict[tuple[str, str], Callable]:
    """The module globals a load admits: only with ``weights_only=False``."""
    if not weights_only:
        return {(HERE, "rebuild_module"): rebuild_module, (HERE, "package_global"): package_global}

    def refused(module: str, qualname: str, *rest: Any) -> Any:
        raise Refused(f"Weights only load failed: the checkpoint holds whole modules or objects "
                      f"(such as '{module}.{qualname}'), saved with acg.save(model). If you trust "
                      "the file, load it with weights_only=False: each class is imported and "
                      "checked to be an nn.Module, and nothing else from the file is called. "
                      "Better: save and load model.state_dict().")
    return {(HERE, "rebuild_module"): refused, (HERE, "package_global"): refused}
