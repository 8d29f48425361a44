"""``torch.profiler``: where the time of a training loop goes, op by op.

Wrap the code in :class:`profile`; every op it runs is timed and, afterwards,
``key_averages()`` sums the calls per op into PyTorch's table:

>>> import autograd_compile as torch
>>> from autograd_compile.profiler import ProfilerActivity, profile, record_function
>>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
>>> x = torch.randn(16, 4)
>>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
...     with record_function("forward"):
...         loss = model(x).sum()
...     loss.backward()
>>> by_name = {row.key: row for row in prof.key_averages()}
>>> by_name["aten::linear"].count, by_name["aten::relu"].count, by_name["forward"].count
(2, 1, 1)
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
... # doctest: +SKIP
>>> prof.export_chrome_trace("trace.json")  # doctest: +SKIP

How it works (:mod:`.recorder`): while a profiler records, a dispatch mode sits on the mode
stack and sees every op call (``acg::mul.Tensor`` shows as PyTorch's ``aten::mul``). Each
call is an event with its wall-clock interval; the op waits for its results before its
event closes, so the time is the op's work, not only its launch. Ops an op calls (a
backward formula's, a composite's) and everything inside a ``record_function`` range are
children of it: they count in its total (``cpu_time_total``) and not in its self time
(``self_cpu_time_total``). :mod:`.instrument` adds what is not an op: each autograd node
the engine runs (``autograd::engine::evaluate_function: MulBackward0``), each call of an
``acg.compile``d function (``CompiledFunction: <name>``) and each compiled-autograd
backward (``CompiledAutograd``): a compiled program is one event, its ops are not seen.

Training loops use a :func:`schedule` and call ``prof.step()`` once per iteration: only
the active steps are recorded, each in a ``ProfilerStep#<n>`` range, and
``on_trace_ready(prof)`` runs at the end of every active cycle (for instance
:func:`tensorboard_trace_handler`, which writes the cycle's Chrome trace).

What is different from PyTorch: only the thread that started the profiler is recorded;
there is no device (CUDA) time or memory column (a GPU op's time shows in its CPU time);
``profile_memory`` counts the bytes of each op's new outputs (frees are not seen);
``with_flops`` counts matmul-like and elementwise arithmetic ops. While it records, eager
ops take the dispatcher's observed paths (the shortcuts taken when no mode is active are
off), so eager times are of those paths; a compiled program runs exactly as unprofiled.
Results are the same, bit for bit, either way.

The older API, ``torch.autograd.profiler.profile``, is :mod:`.legacy`.
"""
from .events import EventList, FunctionEvent, FunctionEventAvg
from .kinds import DeviceType, ProfilerAction, ProfilerActivity
from .profiler import (_KinetoProfile, kineto_available, profile, schedule, supported_activities,
                       tensorboard_trace_handler)
from .recorder import record_function
from . import legacy

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "kineto_available", "DeviceType",
           "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "legacy",
           "_KinetoProfile"]
