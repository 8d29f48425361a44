"""PyTorch's repr of a sparse COO tensor: its parts' reprs, indented under ``tensor(``.

>>> import autograd_compile as acg
>>> print(acg.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,)))
tensor(indices=tensor([[0, 1]]),
       values=tensor([1., 2.]),
       size=(3,), nnz=2, layout=torch.sparse_coo)
"""
from __future__ import annotations

from typing import Any

from ..tensor import _default_float


def _indented(text: str, by: int) -> str:
    return text.replace("\n", "\n" + " " * by)


def _body(t: Any) -> str:
    """A part's repr without autograd marks (PyTorch prints those once, at the end)."""
    return repr(t.detach())


def sparse_repr(s: Any) -> str:
    size = "(" + ", ".join(map(str, s._size)) + ("," if len(s._size) == 1 else "") + ")"
    extra = "" if s.dtype == _default_float() else f", dtype={s.dtype}"
    values = _body(s._values_t)
    if extra:  # the dtype is said once, after the size, as PyTorch does
        values = values.replace(extra, "")
    tail = f"size={size}, nnz={s._nnz()}{extra}, layout=torch.sparse_coo"
    if s.grad_fn is not None:
        tail += f",\n       grad_fn=<{s.grad_fn.name()}>"
    elif s.requires_grad:
        tail += ", requires_grad=True"
    return (f"tensor(indices={_indented(_body(s._indices_t), 15)},\n"
            f"       values={_indented(values, 14)},\n       {tail})")


__all__ = ["sparse_repr"]
