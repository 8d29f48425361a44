"""Argument and sample validation that holds inside ``acg.compile``'s programs too.

Eager validation reads the values (``bool(constraint.check(value).all())``) and raises
PyTorch's ``ValueError``. A traced region has no values, so :func:`require` records the check
as one op (``dist_check``) in the program instead: each call checks its own values, and a call
whose values fail raises the ``ValueError`` eager raises, same text, before the program's
results are written anywhere. The text is built when the check fails, from the values the
program computed: the message's tensors are rebuilt as plain tensors that print as eager's
did (``grad_fn=<ExpBackward0>`` as at the trace), and the distribution's repr comes from a copy
of the distribution holding them.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal
>>> f = acg.compile(lambda s: Normal(0.0, s).log_prob(acg.tensor(0.0)), fullgraph=True)
>>> round(f(acg.tensor(1.0)).item(), 4)
-0.9189
>>> try:
...     f(acg.tensor(-1.0))
... except ValueError as e:
...     print(str(e).split(" to satisfy")[0])
Expected parameter scale (Tensor of shape ()) of distribution Normal(loc: 0.0, scale: -1.0)
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import jax
import numpy as np

from autograd_compile.kernels import special_dist as S
from autograd_compile.tensor import Tensor

__all__ = ["require"]


def require(ok: Tensor, dist: Any, values: Sequence[Tensor],
            message: Callable[..., str]) -> None:
    """Raise ``ValueError(message(dist, *values))`` unless every entry of ``ok`` holds; in a
    traced region the check goes into the program (see the module docstring)."""
    if not _traced(ok):
        if not bool(ok.all()):
            raise ValueError(message(dist, *values))
        return
    shell, slots = _shell(dist)
    shown = list(values) + [t for _, _, t in slots]
    looks = [_Look(t) for t in shown]

    def error(arrays: list) -> ValueError:
        tensors = [look.tensor(a) for look, a in zip(looks, arrays)]
        for (owner, name, _), t in zip(slots, tensors[len(values):]):
            owner.__dict__[name] = t
        return ValueError(message(shell, *tensors[:len(values)]))
    S.dist_check(ok, shown, S.check_error(error))


def _traced(t: Tensor) -> bool:
    """A fake (acg.compile's trace) or a tensor over a jax tracer (a whole step's)."""
    from autograd_compile.tracing.fake import FakeTensor  # fake imports nn: import late
    return isinstance(t, FakeTensor) or isinstance(t._store, jax.core.Tracer)


class _Look:
    """How a traced tensor prints besides its values: its dtype and autograd suffix."""

    __slots__ = ("dtype", "grad_fn", "requires_grad")

    def __init__(self, t: Tensor) -> None:
        self.dtype = t.dtype
        self.grad_fn = t.grad_fn.name() if t.grad_fn is not None else None
        self.requires_grad = t.requires_grad

    def tensor(self, array: Any) -> Tensor:
        """A plain tensor of ``array`` that prints as the traced one would have."""
        import autograd_compile as acg
        t = acg.tensor(np.asarray(array), dtype=self.dtype)
        if self.grad_fn is not None:
            t.grad_fn = _Named(self.grad_fn)  # only printed: this tensor is never differentiated
        t._requires_grad = self.requires_grad
        return t


class _Named:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name


def _shell(dist: Any) -> tuple[Any, list[tuple[Any, str, Tensor]]]:
    """A copy of ``dist`` for its repr once the check failed, and the tensors that repr shows
    (``arg_constraints``' parameters, nested distributions' too) as (copy, name, tensor); its
    other tensors are dropped, so the copy keeps no traced value alive."""
    shell = copy.copy(dist)  # its own __dict__
    try:
        shown = set(dist.arg_constraints)
    except NotImplementedError:
        shown = set()
    slots = []
    for name, value in dist.__dict__.items():
        if hasattr(value, "arg_constraints") and hasattr(value, "batch_shape"):  # nested
            shell.__dict__[name], inner = _shell(value)
            slots += inner
        elif isinstance(value, Tensor):
            if name in shown:
                slots.append((shell, name, value))
            shell.__dict__[name] = None
    return shell, slots
