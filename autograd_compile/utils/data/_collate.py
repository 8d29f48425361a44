"""``default_collate`` / ``default_convert``: samples to batches, like PyTorch's ``collate.py``.

Tensors stack along a new first dim; numpy arrays and numbers become tensors (Python
floats float64, ints int64, as PyTorch); strings stay lists; dicts, namedtuples, tuples and
lists collate field by field (a tuple of fields comes back as a list, as in PyTorch).

>>> import autograd_compile as acg
>>> b = default_collate([{"x": acg.ones(2), "y": 1}, {"x": acg.zeros(2), "y": 2}])
>>> b["x"].shape, b["y"].tolist(), b["y"].dtype
(acg.Size([2, 2]), [1, 2], torch.int64)
"""
from __future__ import annotations

import collections.abc as abc
import copy
from typing import Any, Sequence

import numpy as np

from ...kernels.api import float64, stack, tensor
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_ERR_CONVERT = ("default_convert: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found {}")


def _is_numpy(x: Any) -> bool:
    return type(x).__module__ == "numpy" and not isinstance(x, (np.str_, np.bytes_))


def _numeric_array(x: np.ndarray, err: str) -> np.ndarray:
    if x.dtype.kind in "SaUO":  # strings and objects have no tensor dtype
        raise TypeError(err.format(x.dtype))
    return x


def _rebuild(elem: Any, values: dict[str, Any]) -> Any:
    """A mapping like ``elem`` holding ``values`` (a plain dict if its type cannot be built)."""
    if isinstance(elem, abc.MutableMapping):
        clone = copy.copy(elem)
        clone.update(values)
        return clone
    try:
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into one batch, recursing into containers."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if _is_numpy(elem):
        if isinstance(elem, np.ndarray) and elem.shape != ():
            return tensor(np.stack([_numeric_array(b, _ERR) for b in batch]))
        if getattr(elem, "shape", None) == ():
            return tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(list(batch), dtype=float64)
    if isinstance(elem, int):
        return tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        return _rebuild(elem, {k: default_collate([d[k] for d in batch]) for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return columns
        try:
            return type(elem)(columns)
        except TypeError:
            return columns
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """Turn numpy arrays (in any container) into tensors; leave everything else."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if isinstance(data, np.ndarray) and data.dtype.kind in "SaUO":
            return data
        return tensor(np.asarray(data))
    if isinstance(data, abc.Mapping):
        return _rebuild(data, {k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):  # as PyTorch (kept for backward compatibility there): a list
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data
