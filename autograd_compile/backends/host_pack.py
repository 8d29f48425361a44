"""Small host values go into a program as one flat buffer per dtype.

An eager forward on the host tier saves its activations as numpy arrays, and a compiled
backward reads them. ``jax.jit`` brings each numpy argument in on its own (about 5 µs
each on a CPU, where a device array costs well under one), so a backward reading nine
saved activations paid more for its arguments than for its arithmetic. Concatenating the
small ones into one buffer per dtype costs a memcpy of a few KiB; the program slices them
back out, which XLA folds into the reads (no copy inside the program).

>>> import numpy as np
>>> values = (np.ones((2, 3), np.float32), np.zeros(4, np.float32), np.arange(2))
>>> dev, bufs, layout = pack(values)
>>> dev, [b.shape for b in bufs], [np.asarray(v).tolist() for v in unpack(dev, bufs, layout)]
((), [(10,), (2,)], [[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]], [0.0, 0.0, 0.0, 0.0], [0, 1]])
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

# bytes: above this a value's copy costs more than its own argument would
PACK_LIMIT = 1 << 16
_MEMO_LIMIT = 256


class Layout:
    """Where each value of one call's tuple goes: ``dev`` positions pass as they are;
    each group is ``(positions, shapes)`` of the host values packed into one buffer (a
    group of one passes its value whole, ``shapes`` None). Compared by identity: a jit
    static argument, memoised per key so equal layouts are the same object."""

    __slots__ = ("n", "dev", "groups")

    def __init__(self, n: int, dev: tuple[int, ...], groups: tuple) -> None:
        self.n, self.dev, self.groups = n, dev, groups


_MEMO: dict[tuple, Layout] = {}


def pack(values: tuple) -> tuple[tuple, tuple, Layout | None]:
    """``(device values, host buffers, layout)`` for ``values``; layout None when fewer
    than two small host values would share a buffer (then ``values`` pass unchanged)."""
    key = tuple([(v.dtype, v.shape) if type(v) is np.ndarray and v.nbytes <= PACK_LIMIT
                 else None for v in values])
    layout = _MEMO.get(key)
    if layout is None:
        layout = _layout(key)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = layout
    if layout.n < 0:
        return values, (), None
    dev = tuple([values[i] for i in layout.dev])
    bufs = tuple([values[pos[0]] if shapes is None else
                  np.concatenate([values[i].ravel() for i in pos])
                  for pos, shapes in layout.groups])
    return dev, bufs, layout


def _layout(key: tuple) -> Layout:
    by_dtype: dict[Any, list[int]] = {}
    for i, meta in enumerate(key):
        if meta is not None:
            by_dtype.setdefault(meta[0], []).append(i)
    if sum(len(pos) for pos in by_dtype.values() if len(pos) > 1) < 2:
        return Layout(-1, (), ())  # nothing to share a buffer: the values pass as they are
    groups = tuple((tuple(pos), None if len(pos) == 1 else tuple(key[i][1] for i in pos))
                   for pos in by_dtype.values())
    packed = {i for pos, _ in groups for i in pos}
    return Layout(len(key), tuple(i for i in range(len(key)) if i not in packed), groups)


def unpack(dev: tuple, bufs: tuple, layout: Layout | None) -> tuple:
    """Traced (or eager): the values ``pack`` took apart, in their order."""
    if layout is None:
        return dev
    out: list[Any] = [None] * layout.n
    for i, v in zip(layout.dev, dev):
        out[i] = v
    for (pos, shapes), buf in zip(layout.groups, bufs):
        if shapes is None:
            out[pos[0]] = buf
            continue
        start = 0
        for i, shape in zip(pos, shapes):
            size = math.prod(shape)
            out[i] = buf[start:start + size].reshape(shape)
            start += size
    return tuple(out)
