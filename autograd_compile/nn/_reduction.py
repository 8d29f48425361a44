"""PyTorch's ``torch.nn._reduction``: the deprecated ``size_average``/``reduce`` flags of the
losses mapped onto ``reduction``. One resolver for ``nn.functional`` and the loss modules, so
both give PyTorch's answer and its warning.

>>> import warnings
>>> from autograd_compile.nn import _reduction
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     _reduction.legacy_get_string(size_average=False, reduce=None)
'sum'
>>> str(caught[0].message)
"size_average and reduce args will be deprecated, please use reduction='sum' instead."
"""
from __future__ import annotations

import warnings
from typing import Any

__all__ = ["get_enum", "legacy_get_string", "legacy_get_enum", "resolve"]

LEGACY_WARNING = ("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.")


def get_enum(reduction: str) -> int:
    """"none" -> 0, "mean" (or the deprecated "elementwise_mean") -> 1, "sum" -> 2."""
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' "
                      "instead.", stacklevel=2)
        return 1
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ("none", "mean", "sum").index(reduction)


def _legacy(size_average: Any, reduce: Any, emit_warning: bool, stacklevel: int) -> str:
    # None means True for both; truthiness as PyTorch's `size_average and reduce`
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(LEGACY_WARNING.format(result), stacklevel=stacklevel + 1)
    return result


def legacy_get_string(size_average: bool | None, reduce: bool | None,
                      emit_warning: bool = True) -> str:
    """The ``reduction`` the two flags stand for: "mean" unless ``reduce`` is false ("none")
    or ``size_average`` is ("sum"); warns (at the caller) that the flags are deprecated."""
    return _legacy(size_average, reduce, emit_warning, 2)


def legacy_get_enum(size_average: bool | None, reduce: bool | None,
                    emit_warning: bool = True) -> int:
    """:func:`get_enum` of :func:`legacy_get_string`."""
    return get_enum(_legacy(size_average, reduce, emit_warning, 2))


def resolve(size_average: Any, reduce: Any, reduction: str) -> str:
    """``reduction``, or what the flags stand for when either is given (PyTorch's losses'
    ``if size_average is not None or reduce is not None``); the warning points at the loss
    that called this, as PyTorch's does."""
    if size_average is None and reduce is None:
        return reduction
    return _legacy(size_average, reduce, True, 2)
