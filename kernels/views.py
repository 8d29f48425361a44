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

``diagonal`` and ``as_strided`` are views too, written back by a scatter (diagonal_scatter,
as_strided_scatter). An ``as_strided`` view may hold one element of its base twice
(overlapping strides); its write-back is then an :class:`Overlapping`, and the only in-place
op allowed on it is a fill of that view itself (``fill_``, ``zero_``: every copy gets the same
value), anything else raises PyTorch's internal-overlap error.

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


class Overlapping:
    """The write-back of a view that may hold one element of its base twice (an
    ``as_strided`` view whose strides may overlap): ``write`` itself, and ``overlaps``, which
    tells whether it does (asked only when the view is written, then kept), so that
    :func:`check_writable` lets only a fill of such a view through."""

    def __init__(self, write: Write, overlaps: Callable[[], bool]) -> None:
        self.write, self._overlaps, self._known = write, overlaps, None

    def __call__(self, base: Tensor, view: Tensor) -> Tensor:
        return self.write(base, view)

    def overlaps(self) -> bool:
        if self._known is None:
            self._known = bool(self._overlaps())
        return self._known


_FILLS = frozenset({"fill_", "zero_"})  # every element of the view gets the same value
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def _op_name(op: Any) -> str:
    return str(getattr(op, "name", getattr(op, "__name__", ""))).partition(".")[0]


def check_writable(t: Tensor, op: Any = None) -> None:
    """PyTorch's errors for an in-place op (``op``; None: an assignment or a copy) on a view,
    raised before anything is written: of a leaf that requires grad, or through a view that
    holds one element of its base twice (:class:`Overlapping`; a fill of that view itself
    is allowed)."""
    meta, written = t._base_meta, True
    while meta is not None and meta[1] is not DATA_ALIAS:  # .data: writable as PyTorch's
        base, write = meta
        if TLS.grad_enabled and base.grad_fn is None and base.requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if isinstance(write, Overlapping) and not (written and _op_name(op) in _FILLS) \
                and write.overlaps():
            raise RuntimeError(_OVERLAP)
        meta, written = base._base_meta, False


def write_through(t: Tensor) -> None:
    """After an in-place op on ``t``: copy its new value into its base, and on up."""
    meta = t._base_meta
    while meta is not None:
        base, write = meta
        if write is DATA_ALIAS:  # t is base.data: same storage, not recorded by autograd
            base = base()  # (held weakly: gone, nothing shares the storage any more)
            if base is None:
                return
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
        check_writable(self, op)
        out = op(self, *args, **kwargs)
        write_through(self)
        # self, as PyTorch: under a trace the op answers with the traced alias of a real
        # tensor, and `self.buf += 1` would put that alias into the module
        return self if isinstance(out, Tensor) else out
    method.__name__ = method.__qualname__ = getattr(op, "name", getattr(op, "__name__", "op"))
    return method
