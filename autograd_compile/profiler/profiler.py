"""``torch.profiler.profile``, ``schedule`` and ``tensorboard_trace_handler``.

A :class:`profile` records while it is active: from ``__enter__`` (or ``.start()``) to
``__exit__`` (``.stop()``). With a ``schedule``, ``prof.step()`` marks the end of each
training step and the schedule decides, step by step, what the profiler does:

==================  ==============================================================
``NONE``            nothing is recorded (the ``wait`` and ``skip_first`` steps)
``WARMUP``          nothing is recorded yet (PyTorch warms its tracer up here)
``RECORD``          the step is recorded, inside a ``ProfilerStep#<n>`` range
``RECORD_AND_SAVE`` the last active step of a cycle: recorded, then
                    ``on_trace_ready(prof)`` sees the cycle's events
==================  ==============================================================

>>> import autograd_compile as acg
>>> from autograd_compile.profiler import profile, schedule
>>> seen = []
>>> with profile(schedule=schedule(wait=1, warmup=1, active=2),
...              on_trace_ready=lambda p: seen.append(
...                  [e.name for e in p.events() if e.name.startswith("ProfilerStep")])) as prof:
...     for _ in range(4):
...         y = acg.ones(2) + 1
...         prof.step()
>>> seen
[['ProfilerStep#2', 'ProfilerStep#3']]
"""
from __future__ import annotations

import os
import socket
import time
import warnings
from typing import Any, Callable, Iterable

from .events import EventList
from .kinds import ProfilerAction, ProfilerActivity
from .recorder import Options, Session, record_function

_N, _W, _R, _S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                  ProfilerAction.RECORD_AND_SAVE)
# (action before, action now) -> what the profiler does on the way; None: profiling ends
_TRANSITIONS: dict[tuple[ProfilerAction, ProfilerAction | None], tuple[str, ...]] = {
    (_N, _W): ("prepare_trace",), (_N, _R): ("prepare_trace", "start_trace"),
    (_N, _S): ("prepare_trace", "start_trace"),
    (_W, _N): ("warn", "start_trace", "stop_trace"), (_W, _R): ("start_trace",),
    (_W, _S): ("start_trace",),
    (_R, _N): ("warn", "stop_trace"), (_R, _W): ("warn", "stop_trace"),
    (_S, _N): ("stop_trace", "trace_ready"), (_S, _W): ("stop_trace", "trace_ready",
                                                        "prepare_trace"),
    (_S, _R): ("stop_trace", "trace_ready", "prepare_trace", "start_trace"),
    (_S, _S): ("stop_trace", "trace_ready", "prepare_trace", "start_trace"),
    (_W, None): ("start_trace", "stop_trace"), (_R, None): ("stop_trace", "trace_ready"),
    (_S, None): ("stop_trace", "trace_ready"),
}


def supported_activities() -> set[ProfilerActivity]:
    """The activities a profiler can be asked for: CPU, and CUDA where a GPU is present.

    >>> from autograd_compile.profiler import ProfilerActivity, supported_activities
    >>> ProfilerActivity.CPU in supported_activities()
    True
    """
    from ..devices import cuda
    return {ProfilerActivity.CPU} | ({ProfilerActivity.CUDA} if cuda.is_available() else set())


def kineto_available() -> bool:
    """False: there is no Kineto here; this profiler records on its own."""
    return False


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A schedule for ``profile(schedule=...)``: skip ``skip_first`` steps, then cycles of
    ``wait`` idle steps, ``warmup`` steps and ``active`` recorded steps, ``repeat`` times
    (0: until profiling ends). ``skip_first_wait`` drops the first cycle's wait.

    >>> from autograd_compile.profiler import schedule
    >>> [a.name for a in map(schedule(wait=1, warmup=1, active=2, repeat=1), range(5))]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
            f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return _N
        step = step - skip_first + (wait if skip_first_wait else 0)
        if repeat > 0 and step // cycle >= repeat:
            return _N
        at = step % cycle
        if at < wait:
            return _N
        if at < wait + warmup:
            return _W
        return _R if at < cycle - 1 else _S
    return action


def _always_record(step: int) -> ProfilerAction:
    return _R


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False
                              ) -> Callable[[Any], None]:
    """An ``on_trace_ready`` that writes each cycle's Chrome trace into ``dir_name`` as
    ``<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` with ``use_gzip``); the worker name
    defaults to ``<hostname>_<pid>``. TensorBoard's profiler plugin reads the directory.

    >>> import os, tempfile, autograd_compile as acg
    >>> from autograd_compile.profiler import profile, tensorboard_trace_handler
    >>> d = tempfile.mkdtemp()
    >>> with profile(on_trace_ready=tensorboard_trace_handler(d, worker_name="w0")):
    ...     y = acg.ones(2) * 2
    >>> [f.startswith("w0.") and f.endswith(".pt.trace.json") for f in os.listdir(d)]
    [True]
    """
    def handler(prof: Any) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError(f"Can't create directory: {dir_name}") from e
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler


def _activities(activities: Iterable[Any] | None) -> set[ProfilerActivity]:
    if activities is None:
        return supported_activities()
    out: set[ProfilerActivity] = set()
    for a in activities:  # an activity, or a {activity: [filters]} dict (filters unused)
        out.update(a.keys() if isinstance(a, dict) else (a,))
    return out


class _KinetoProfile:
    """The recording half of :class:`profile`: start, stop, and the results (no schedule)."""

    def __init__(self, *, activities: Iterable[Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None) -> None:
        self.activities = _activities(activities)
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.options = Options(record_shapes, profile_memory, with_stack, with_flops)
        self.session: Session | None = None  # the recording in progress
        self._results: EventList | None = None  # the last finished recording's events
        self._metadata: dict[str, Any] = {}

    def start(self) -> None:
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        self.stop_trace()

    def prepare_trace(self) -> None:
        """(PyTorch readies its tracer here; recording needs no preparation.)"""

    def start_trace(self) -> None:
        if self.session is None:
            self.session = Session(self.options)
            try:
                self.session.start()
            except BaseException:
                self.session = None
                raise

    def stop_trace(self) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        session.stop()
        self._results = session.results(self._results if self.acc_events else None)

    # -- results --------------------------------------------------------------------------
    def events(self) -> EventList:
        """Every recorded event of the last finished recording (cycle), in start order."""
        return self._results if self._results is not None else EventList()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events grouped by name (and input shapes / stack / overload, if asked)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n,
                                          group_by_overload_name)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write the Chrome trace JSON (gzipped when ``path`` ends in '.gz')."""
        self.events().export_chrome_trace(path, self._metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        """A key the exported trace carries at its top level."""
        self._metadata[key] = value

    def add_metadata_json(self, key: str, value: str) -> None:
        import json
        self._metadata[key] = json.loads(value)

    def toggle_collection_dynamic(self, enable: bool, activities: Iterable[ProfilerActivity]
                                  ) -> None:
        """Pause (``enable=False``) or resume recording ops, if ``activities`` holds CPU."""
        if self.session is not None and ProfilerActivity.CPU in set(activities):
            self.session.paused = not enable


class profile(_KinetoProfile):
    """Record the ops, autograd nodes and ``record_function`` ranges run inside the block.

    Every op through the dispatcher becomes an event (PyTorch's ``aten::`` names) with its
    wall-clock time; ops called by another op, and everything inside a range, are its
    children: their time counts in its total, not in its self time. Profiling never changes
    a result. Only the thread that started the profiler is recorded.

    >>> import autograd_compile as acg
    >>> from autograd_compile.profiler import ProfilerActivity, profile, record_function
    >>> x = acg.randn(8, 4, requires_grad=True)
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("model_forward"):
    ...         loss = (x @ x.T).relu().sum()
    ...     loss.backward()
    >>> rows = {r.key: r for r in prof.key_averages()}
    >>> rows["aten::relu"].count, rows["model_forward"].count
    (1, 1)
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))
    ... # doctest: +SKIP
    """

    def __init__(self, *, activities: Iterable[Any] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False,
                 experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None,
                 custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None) -> None:
        activities = _activities(activities)
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            activities = activities | {ProfilerActivity.CUDA} if use_cuda else \
                activities - {ProfilerActivity.CUDA}
        if not activities:
            raise AssertionError("No valid profiler activities found")
        super().__init__(activities=activities, record_shapes=record_shapes,
                         profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules,
                         experimental_config=experimental_config,
                         execution_trace_observer=execution_trace_observer, acc_events=acc_events)
        self.schedule = schedule or _always_record
        self.record_steps = schedule is not None  # ProfilerStep#<n> ranges only with a schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: record_function | None = None

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._transit(_N, self.current_action)
        self._open_step()

    def stop(self) -> None:
        self._close_step()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Mark the end of a step: the schedule's next action takes effect."""
        self._close_step()
        before = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(before, self.current_action)
        self._open_step()

    def _open_step(self) -> None:
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _close_step(self) -> None:
        rec, self.step_rec_fn = self.step_rec_fn, None
        if rec is not None:
            rec.__exit__(None, None, None)

    def _transit(self, before: ProfilerAction, now: ProfilerAction | None) -> None:
        for what in _TRANSITIONS.get((before, now), ()):
            if what == "warn":
                warnings.warn(f"Incorrect schedule: {before.name} followed by "
                              f"{now.name if now else 'None'}", stacklevel=3)
            elif what == "trace_ready":
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
            else:
                getattr(self, what)()
