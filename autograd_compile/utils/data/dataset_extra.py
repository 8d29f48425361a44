"""``StackDataset``: several datasets of one length side by side, sample i a tuple or dict of
their i-th samples (``torch.utils.data.StackDataset``).

>>> import autograd_compile as acg
>>> ds = StackDataset(image=acg.arange(3), label=["a", "b", "c"])
>>> ds[1]["image"].item(), ds[1]["label"], len(ds)
(1, 'b', 3)
"""
from __future__ import annotations

from typing import Any

from .dataset import Dataset

__all__ = ["StackDataset"]


def _common_length(datasets: list[Any]) -> int:
    length = len(datasets[0])
    if any(length != len(d) for d in datasets):
        raise ValueError("Size mismatch between datasets")
    return length


def _batch_of(dataset: Any, indices: list) -> list[Any]:
    """``dataset.__getitems__(indices)`` where it has one (checked), else one by one."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return [dataset[i] for i in indices]
    items = getitems(indices)
    if len(items) != len(indices):
        raise ValueError("Nested dataset's output size mismatch."
                         f" Expected {len(indices)}, got {len(items)}")
    return items


class StackDataset(Dataset):
    """``StackDataset(a, b)[i] == (a[i], b[i])``; ``StackDataset(x=a, y=b)[i] == {"x": a[i],
    "y": b[i]}``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets: tuple | dict = args if args else kwargs
        self._length = _common_length(list(args) if args else list(kwargs.values()))

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list[Any]:
        """A batch at once, through each part's own ``__getitems__`` where it has one."""
        if isinstance(self.datasets, dict):
            columns = {k: _batch_of(d, indices) for k, d in self.datasets.items()}
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        parts = [_batch_of(d, indices) for d in self.datasets]
        return [tuple(p[j] for p in parts) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length
