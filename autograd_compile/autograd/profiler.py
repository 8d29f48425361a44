"""``torch.autograd.profiler``: the older profiler API, re-exported from
:mod:`autograd_compile.profiler` (where it lives, with the newer one).

>>> import autograd_compile as acg
>>> from autograd_compile.autograd import profiler
>>> with profiler.profile() as prof:
...     with profiler.record_function("double"):
...         y = acg.ones(3) * 2
>>> [(e.key, e.count) for e in prof.key_averages()]
[('double', 1), ('aten::ones', 1), ('aten::mul', 1)]
"""
from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler.legacy import emit_itt, emit_nvtx, profile
from ..profiler.recorder import record_function

__all__ = ["profile", "record_function", "emit_itt", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
