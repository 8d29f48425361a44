"""``acg.jit``: PyTorch's ``torch.jit`` for programs that script, trace, save and load models.

There is no TorchScript compiler here, and none is needed for what programs use ``torch.jit``
for. Scripting and tracing in PyTorch make a module or function that computes what the Python
code computes; here they make objects that *run* that Python code, so outputs and gradients are
exactly eager ones (under compiled autograd too), and nothing PyTorch can script is refused:

- :func:`script` returns a :class:`ScriptFunction`, or for a module a
  :class:`RecursiveScriptModule` that shares the module's parameters and buffers, keeps its
  ``state_dict`` keys, methods and hooks, and has its own ``train()``/``eval()`` state.
- :func:`trace` runs the function once on the example inputs (PyTorch's errors for inputs and
  outputs it cannot trace) and returns an object that runs it as PyTorch's trace replays what
  it recorded: with :func:`is_tracing` True and each module's ``training`` flag as it was at
  trace time (``eval()`` later does not turn off a traced dropout, as in PyTorch).
  ``compile=True`` runs it through ``acg.compile`` (one XLA program), and ``check_trace`` then
  compares its outputs with Python's.
- ``.graph`` and ``.code`` show the fx graph of one call (``make_fx`` on fake inputs shaped as
  the example or first inputs); a scripted object's ``.code`` is its Python source.
- :func:`is_scripting` is False (the Python branch of a check is the one that runs), and
  ``ignore``/``unused``/``export`` leave functions callable.
- :func:`save`/:func:`load` round-trip these objects (a zip holding an ``acg.save`` of the
  module, or a function's import path); a TorchScript archive written by PyTorch cannot run
  here, and loading one says how to load its weights instead.
- :func:`freeze` makes parameters constants; :func:`fork` runs at once, as PyTorch's does
  outside TorchScript; the fusion settings are recorded (XLA fuses regardless).

>>> import autograd_compile as acg
>>> @acg.jit.script
... def gelu_ish(x):
...     return x * acg.sigmoid(1.702 * x)
>>> model = acg.jit.trace(acg.nn.Linear(3, 2), acg.ones(1, 3))
>>> y = gelu_ish(model(acg.ones(4, 3))); y.shape, acg.jit.is_scripting()
(acg.Size([4, 2]), False)
"""
from __future__ import annotations

from typing import Iterator  # noqa: F401  (torch.jit re-exports it)

from ._annotations import (Attribute, Final, annotate, export, ignore, interface, isinstance,
                           script_if_tracing, unused)
# names PyTorch keeps outside __all__ that model code calls (torchvision's _overload_method)
from ._annotations import (FunctionModifiers, _overload, _overload_method,  # noqa: F401
                           _unwrap_optional, copy_to_script_wrapper)
from ._freeze import freeze, optimize_for_inference, run_frozen_optimizations
from ._future import Future, fork, wait
from ._script import (CompilationUnit, Error, RecursiveScriptModule, ScriptFunction,
                      ScriptModule, ScriptWarning, script, script_method)
from ._serialization import load, save
from ._state import (enable_onednn_fusion, fuser, is_scripting, is_tracing,
                     last_executed_optimized_graph, onednn_fusion_enabled, optimized_execution,
                     set_fusion_strategy, strict_fusion)
from ._trace import (TopLevelTracedModule, TracedModule, TracerWarning, TracingCheckError, trace,
                     trace_module)

__all__ = ["Attribute", "CompilationUnit", "Error", "Final", "Future", "RecursiveScriptModule",
           "ScriptFunction", "ScriptModule", "ScriptWarning", "TopLevelTracedModule",
           "TracedModule", "TracerWarning", "TracingCheckError", "annotate",
           "enable_onednn_fusion", "export", "fork", "freeze", "fuser", "ignore", "interface",
           "is_scripting", "is_tracing", "isinstance", "last_executed_optimized_graph", "load",
           "onednn_fusion_enabled", "optimize_for_inference", "optimized_execution",
           "run_frozen_optimizations", "save", "script", "script_if_tracing", "script_method",
           "set_fusion_strategy", "strict_fusion", "trace", "trace_module", "unused", "wait"]
