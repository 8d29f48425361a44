"""The profiler's enumerations, under PyTorch's names and values.

>>> from autograd_compile.profiler import ProfilerActivity, ProfilerAction
>>> ProfilerActivity.CPU.value, ProfilerAction.RECORD_AND_SAVE.name
(0, 'RECORD_AND_SAVE')
"""
from __future__ import annotations

from enum import Enum


class ProfilerActivity(Enum):
    """What a profiler collects. Only ``CPU`` is measured here; the others are accepted
    (a GPU op's time shows in its CPU time, since each op waits for its results)."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(Enum):
    """What the profiler does during a step, as a ``schedule`` returns it."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


class DeviceType(Enum):
    """Where an event ran (every recorded event here is a CPU event)."""

    CPU = 0
    CUDA = 1
    XLA = 9
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    MTIA = 19
    PrivateUse1 = 20
