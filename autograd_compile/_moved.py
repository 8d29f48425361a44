"""Old import paths of modules that moved into subpackages keep working.

``import autograd_compile.fake`` (and ``.proxy_tensor``, ``.symbolic_shapes``, ``.lifted``,
``.device``, ``.cuda``, ``.cpu``, ``.accelerator``) gives the moved module itself, no copy and
no shim file: a finder on ``sys.meta_path`` answers the old name by importing the new one.
It is installed before anything else of the package is imported, so code that runs while the
package initialises (kernels registering ops) may use either path; once the moved modules are
imported, :func:`register` also lists them in ``sys.modules`` under their old names.

>>> import autograd_compile.fake, autograd_compile.tracing.fake
>>> autograd_compile.fake is autograd_compile.tracing.fake
True
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Sequence

# old name (under autograd_compile) -> where the module lives now
MOVED = {
    "fake": "tracing.fake", "proxy_tensor": "tracing.proxy_tensor", "lifted": "tracing.lifted",
    "symbolic_shapes": "tracing.symbolic_shapes", "device": "devices.model",
    "cuda": "devices.cuda", "cpu": "devices.cpu", "accelerator": "devices.accelerator",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``autograd_compile.<old>`` and loads it as the module at its new path."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        head, _, old = fullname.rpartition(".")
        if head != self.package or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        old = spec.name.rpartition(".")[2]
        module = importlib.import_module(f"{self.package}.{MOVED[old]}")
        spec.loader_state = module.__spec__  # the import system overwrites __spec__: restore it
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = module.__spec__.loader_state  # already executed at its new path


def install(package: str) -> None:
    """Answer the old names of ``package``'s moved modules (once)."""
    if not any(isinstance(f, _Alias) and f.package == package for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias(package))


def register(package: str) -> None:
    """Put every moved module in ``sys.modules`` under its old name too, once the package
    has imported them: an import of the old name then never binds the module over a
    same-named attribute of the package (``acg.device`` is the class, not the module)."""
    for old, new in MOVED.items():
        sys.modules.setdefault(f"{package}.{old}", importlib.import_module(f"{package}.{new}"))
