"""``out=`` for the funclin namespaces (linalg, fft, special, their top-level spellings): the
result is written into the given tensor(s) (resized as PyTorch does), which is returned.

>>> import autograd_compile as acg
>>> out = acg.empty(0)
>>> r = acg.linalg.inv(acg.tensor([[2.0, 0.0], [0.0, 4.0]]), out=out)
>>> r is out, out.tolist()
(True, [[0.5, 0.0], [0.0, 0.25]])
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from autograd_compile.autograd.grad_mode import is_grad_enabled
from autograd_compile.tensor import Tensor

from autograd_compile._dtype import scalar_type_name


def _write(name: str, result: Any, out: Any) -> Any:
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
        written = [_write(name, r, o) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    if out.dtype != result.dtype and not (out.dtype.kind == result.dtype.kind == "c" or
                                          (out.dtype.kind == "f" and result.dtype.kind in "fiub")):
        raise RuntimeError(f"Expected out tensor to have dtype {scalar_type_name(result.dtype)}, but "
                           f"got {scalar_type_name(out.dtype)} instead")
    out._set_data(result.__jax_array__().astype(out.dtype))
    return out


def with_out(fn: Callable, name: str) -> Callable:
    """``fn`` (which takes and ignores ``out=``) writing its result into ``out`` when given."""
    if "out" not in inspect.signature(fn).parameters:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        return result if out is None else _write(name, result, out)
    return wrapper


def install_out(namespace: dict, names: Any, prefix: str) -> None:
    """Wrap each public function of a module's globals that has an ``out`` parameter."""
    for n in names:
        f = namespace.get(n)
        if inspect.isfunction(f):
            namespace[n] = with_out(f, prefix + n)
