"""Views: an in-place op on a view writes through to its base, as in PyTorch.

JAX arrays are immutable, so a view cannot share storage. Instead the result of a view op
(``x[1:]``, ``x.view(...)``, ``x.t()``, ``x.unsqueeze(0)`` ...) remembers its base and how to
write a new value of itself back into it. After an in-place op on the view, the base gets
``base.copy_(write(base, view))`` (a slice_scatter, a reshape ...), and so on up a chain of
views. Autograd follows: the base's new history runs through the scatter into the view's.

>>> import autograd_compile as acg
>>> u = acg.tensor([1.0, 2.0, 3.0])
>>> _ = u[1:].mul_(10.0)
>>> u.tolist()
[1.0, 20.0, 30.0]

Limits: a write into the base is not seen by views taken from it earlier, and views of an
expanded tensor are not writable (``expand`` results are not views here).
"""
from __future__ import annotations

from typing import Any, Callable

from autograd_compile.autograd.derivatives import alias_for_inplace
from autograd_compile.dispatch.keys import TLS
from autograd_compile.tensor import DATA_ALIAS, Tensor

from . import shape as S

Write = Callable[[Tensor, Tensor], Tensor]  # (old base, new view value) -> new base value


def view_of(out: Any, base: Tensor, write: Write) -> Any:
    """Mark ``out`` as a view of ``base``; returns ``out``."""
    if isinstance(out, Tensor) and out is not base:
        out._base_meta = (base, write)
    return out


def as_shape_of(b: Tensor, v: Tensor) -> Tensor:
    """Write-back of view/reshape/(un)squeeze/flatten: the same elements, the base's shape."""
    return S.reshape(v, list(b.shape))


def check_writable(t: Tensor) -> None:
    """PyTorch's error for an in-place op on a view of a leaf that requires grad (raised
    before anything is written)."""
    meta = t._base_meta
    while meta is not None and meta[1] is not DATA_ALIAS:  # .data: writable as PyTorch's
        base = meta[0]
        if TLS.grad_enabled and base.grad_fn is None and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        meta = base._base_meta


def write_through(t: Tensor) -> None:
    """After an in-place op on ``t``: copy its new value into its base, and on up."""
    meta = t._base_meta
    while meta is not None:
        base, write = meta
        if write is DATA_ALIAS:  # t is base.data: same storage, not recorded by autograd
            base._set_data(t._data, bump=False)
            if base._base_meta is not None:
                from autograd_compile.autograd.grad_mode import no_grad
                with no_grad():
                    write_through(base)
            return
        S.copy_(base, write(alias_for_inplace(base), t))
        t, meta = base, base._base_meta


def inplace_method(op: Any) -> Callable:
    """The Tensor method of an in-place op: run it, then write through to the bases."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        check_writable(self)
        out = op(self, *args, **kwargs)
        write_through(self)
        # self, as PyTorch: under a trace the op answers with the traced alias of a real
        # tensor, and `self.buf += 1` would put that alias into the module
        return self if isinstance(out, Tensor) else out
    method.__name__ = method.__qualname__ = getattr(op, "name", getattr(op, "__name__", "op"))
    return method
