"""``jit.save`` / ``jit.load`` of scripted and traced objects.

The file is a zip: ``acg_jit/format.json`` says what it holds, ``acg_jit/module.pt`` is the
module written by ``acg.save`` (its own classes, by import path, and its state), and
``acg_jit/extra/<name>`` are the ``_extra_files``. A function is stored by its import path.
Loading imports the classes (each checked to be an ``nn.Module``) or the function it names and
wraps them again; as with PyTorch's ``jit.load``, load only files you trust. A TorchScript
archive written by PyTorch holds compiled TorchScript code, which nothing here can run: loading
one raises an error that says how to move its weights over.
"""
from __future__ import annotations

import importlib
import inspect
import io
import json
import os
import zipfile
from typing import IO, Any

from ..aot import compile as acg_compile
from ..serialization import _atomic, load as acg_load, save as acg_save
from . import _script
from ._script import RecursiveScriptModule, ScriptFunction, ScriptModule, _original
from ._script import unwrap_module, wrap_module
from ._trace import TopLevelTracedModule, TracedModule, _attach_compiled, record_modes

__all__ = ["save", "load"]

FORMAT, VERSION = "autograd_compile.jit", 1
_HEADER, _MODULE, _EXTRA = "acg_jit/format.json", "acg_jit/module.pt", "acg_jit/extra/"
_TORCHSCRIPT = (
    "jit.load: {} is a TorchScript archive written by PyTorch's torch.jit.save. It holds "
    "compiled TorchScript code, and autograd_compile has no TorchScript interpreter to run it. "
    "Load its weights instead: in PyTorch, run "
    "torch.save(torch.jit.load(path).state_dict(), 'weights.pt'); here, build the model from "
    "its Python class and call model.load_state_dict(acg.load('weights.pt')) (then "
    "acg.jit.script(model) if the program wants a ScriptModule).")


# -- save -----------------------------------------------------------------------------------------
def _function_header(sf: ScriptFunction) -> dict[str, Any]:
    fn = sf._fn
    where = f"{fn.__module__}.{fn.__qualname__}"
    if "<" in fn.__qualname__:
        raise RuntimeError(f"jit.save: the function {where} cannot be found again by its name "
                           "(a lambda or a local function): a scripted function is saved by "
                           "its import path. Define it at the top level of a module.")
    return {"kind": "function", "module": fn.__module__, "qualname": fn.__qualname__,
            "traced": sf._traced, "compiled": sf._run is not fn}


def _module_header(m: ScriptModule) -> tuple[dict[str, Any], bytes]:
    kind = ("plain" if _original(type(m)) is type(m) else
            "trace" if isinstance(m, TracedModule) else "script")
    buf = io.BytesIO()
    acg_save(unwrap_module(m), buf)
    return {"kind": "module", "wrapper": kind, "compiled": "_jit_compiled" in m.__dict__}, \
        buf.getvalue()


def _write(fh: IO[bytes], header: dict, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(_HEADER, json.dumps({"format": FORMAT, "version": VERSION, **header}))
        for name, data in entries.items():
            zf.writestr(name, data)


def save(m: Any, f: Any, _extra_files: dict[str, Any] | None = None) -> None:
    """Write a scripted or traced module or function to a path (atomically) or binary file.

    >>> import io, autograd_compile as acg
    >>> buf = io.BytesIO()
    >>> acg.jit.save(acg.jit.script(acg.nn.Linear(2, 2)), buf, _extra_files={"note": "v1"})
    >>> _ = buf.seek(0); extra = {"note": ""}; m = acg.jit.load(buf, _extra_files=extra)
    >>> type(m).__name__, extra
    ('RecursiveScriptModule', {'note': b'v1'})
    """
    if isinstance(m, ScriptFunction):
        header, entries = _function_header(m), {}
    elif isinstance(m, ScriptModule):
        header, blob = _module_header(m)
        entries = {_MODULE: blob}
    else:
        raise TypeError(f"jit.save expects a ScriptModule or ScriptFunction (from jit.script or "
                        f"jit.trace), got {type(m).__name__}; use acg.save for a checkpoint")
    for name, data in (_extra_files or {}).items():
        entries[_EXTRA + name] = data.encode() if isinstance(data, str) else bytes(data)
    if isinstance(f, (str, os.PathLike)):
        _atomic(f, lambda fh: _write(fh, header, entries))
    else:
        _write(f, header, entries)


# -- load -----------------------------------------------------------------------------------------
def _foreign(name: Any, names: list[str]) -> RuntimeError:
    """The error for a zip that jit.save did not write, saying what it is and what to do."""
    if any(n.endswith("constants.pkl") or "/code/" in n for n in names):
        return RuntimeError(_TORCHSCRIPT.format(name))
    if any(n.endswith("data.pkl") for n in names):
        return RuntimeError(f"jit.load: {name} is a checkpoint written by torch.save or "
                            "acg.save, not by jit.save: read it with acg.load")
    return RuntimeError(f"jit.load: {name} was not written by jit.save")


def _function(header: dict) -> ScriptFunction:
    where = f"{header['module']}.{header['qualname']}"
    try:
        obj: Any = importlib.import_module(header["module"])
        for part in header["qualname"].split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise RuntimeError(f"jit.load: the saved function {where} cannot be imported here "
                           f"({e}); a scripted function is stored by its import path") from e
    fn = obj._fn if isinstance(obj, ScriptFunction) else obj
    if not inspect.isfunction(fn):
        raise RuntimeError(f"jit.load: {where} is not a function")
    out = ScriptFunction(fn, traced=header["traced"])
    if header["compiled"]:
        out._run = acg_compile(fn)
    return out


def _module(raw: bytes, header: dict, map_location: Any) -> ScriptModule:
    module = acg_load(io.BytesIO(raw), map_location=map_location, weights_only=False)
    if header["wrapper"] == "script":
        return wrap_module(module, RecursiveScriptModule, RecursiveScriptModule, {})
    if header["wrapper"] == "trace":
        module = wrap_module(module, TopLevelTracedModule, TracedModule, {})
        record_modes(module, keep=True)  # those of trace time, saved with the module
        if header["compiled"]:
            _attach_compiled(module)
    return module


_script.SAVE[0] = save


def load(f: Any, map_location: Any = None, _extra_files: dict[str, Any] | None = None,
         _restore_shapes: bool = False) -> Any:
    """Read what :func:`save` wrote; ``map_location`` as ``acg.load``'s; each key of
    ``_extra_files`` present in the file gets its bytes. A TorchScript archive written by
    PyTorch raises a ``RuntimeError`` that says how to load its weights instead."""
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {f} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {f} is a directory")
    name = f if isinstance(f, (str, os.PathLike)) else getattr(f, "name", repr(f))
    try:
        zf = zipfile.ZipFile(f)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"jit.load: {name} is not a file written by jit.save (not a zip "
                           "archive)") from e
    with zf:
        names = zf.namelist()
        if _HEADER not in names:
            raise _foreign(name, names)
        header = json.loads(zf.read(_HEADER))
        if header.get("format") != FORMAT or header.get("version", 0) > VERSION:
            raise RuntimeError(f"jit.load: {name} has format {header.get('format')!r} version "
                               f"{header.get('version')!r}; this autograd_compile reads "
                               f"{FORMAT!r} up to version {VERSION}")
        for key in list(_extra_files or ()):
            if _EXTRA + key in names:
                _extra_files[key] = zf.read(_EXTRA + key)  # type: ignore[index]
        if header["kind"] == "function":
            return _function(header)
        return _module(zf.read(_MODULE), header, map_location)
