"""A host numpy array onto the default device, at the cost of the transfer itself.

``jax.device_put(a)`` spends ~35 us of Python on a 5-element array (pytree handling,
sharding checks, a deferred shard argument) before the ~5 us transfer; a tensor built
from a Python list (``acg.tensor([3, 4, 5])``, makemore's ``__getitem__``, default_collate
of numbers) paid that every call. :func:`to_device` calls the transfer jax's own
``device_put`` ends in for this case (a numpy array, no device given: an uncommitted
array on the default device), and falls back to ``jax.device_put`` for anything else or
when jax's internals differ (checked once, on the first call).

>>> import numpy as np
>>> to_device(np.arange(3)).tolist()
[0, 1, 2]
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np

_FAST: list[Callable[[np.ndarray], Any] | None] = []  # [] unknown yet; [None] unavailable


def _direct() -> Callable[[np.ndarray], Any] | None:
    """jax's direct transfer, or None where this jax lacks it or it disagrees."""
    try:
        from jax._src import config, core
        from jax._src.interpreters import pxla
        from jax._src.lib import xla_client
        from jax.sharding import SingleDeviceSharding
        transfer = xla_client.batched_device_put  # what pxla's wrapper calls for numpy input
    except (ImportError, AttributeError):  # pragma: no cover - another jax layout
        return None

    avals: dict[tuple, Any] = {}  # (shape, dtype) -> aval: building one costs ~1.5 us
    shardings: dict[Any, Any] = {}

    def put(a: np.ndarray) -> Any:
        device = pxla.get_default_device()
        aval = avals.get((a.shape, a.dtype))
        if aval is None:
            if len(avals) > 4096:
                avals.clear()
            aval = avals[(a.shape, a.dtype)] = core.ShapedArray(a.shape, a.dtype)
        sharding = shardings.get(device)
        if sharding is None:
            sharding = shardings[device] = SingleDeviceSharding(device)
        return transfer(aval, sharding, [a], [device], False, enable_x64=config.enable_x64.value)
    try:  # the same array jax.device_put makes: value, dtype, device, uncommitted
        probe = np.arange(6, dtype=np.int64).reshape(2, 3)
        ours, theirs = put(probe), jax.device_put(probe)
        same = (ours.dtype == theirs.dtype and ours.shape == theirs.shape
                and ours.sharding == theirs.sharding and not ours.committed
                and not theirs.committed and np.array_equal(np.asarray(ours), probe))
    except Exception:  # pragma: no cover - internals changed
        return None
    return put if same else None


def to_device(a: np.ndarray) -> Any:
    """``jax.device_put(a)`` for a numpy array (jax's direct transfer where it can)."""
    if not _FAST:
        _FAST.append(_direct())
    put = _FAST[0]
    if not (a.flags.owndata and a.flags.writeable):
        # a view, e.g. numpy's view of a jax buffer (``np.asarray(array)``): PJRT would hand
        # back that very buffer, and a program donating either array would change the other
        a = np.array(a)
    if put is None or type(a) is not np.ndarray or a.dtype.kind not in "biufc" \
            or not jax.config.jax_enable_x64:  # without x64, device_put narrows 64-bit dtypes
        return jax.device_put(a)
    return put(a)
