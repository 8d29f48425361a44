"""``torch.autograd.profiler``: the older profiler API (one recording per ``with`` block).

>>> import autograd_compile as acg
>>> from autograd_compile.profiler.legacy import profile
>>> with profile(record_shapes=True) as prof:
...     y = (acg.ones(2, 3) * 2).sum()
>>> [e.name for e in prof.function_events]
['aten::ones', 'aten::mul', 'aten::sum']
>>> prof.key_averages(group_by_input_shape=True)[1].input_shapes
[[2, 3], []]
"""
from __future__ import annotations

import warnings
from typing import Any

from .events import EventList, FunctionEventAvg
from .recorder import Options, Session


class profile:
    """Record the ops and ``record_function`` ranges run inside the block (see
    :class:`autograd_compile.profiler.profile`; CUDA options are accepted and change
    nothing: a GPU op's time is part of its CPU time here)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: float | None = None,
                 activity_filters: Any = None) -> None:
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
        self.enabled, self.use_cuda, self.use_device = enabled, use_cuda, use_device
        self.record_shapes, self.with_flops, self.profile_memory = \
            record_shapes, with_flops, profile_memory
        self.with_stack, self.with_modules, self.acc_events = with_stack, with_modules, acc_events
        self.entered = False
        self.function_events: EventList | None = None
        self._session: Session | None = None
        self._options = Options(record_shapes, profile_memory, with_stack, with_flops)

    def __enter__(self) -> "profile":
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        session = Session(self._options)
        session.start()
        self._session, self.entered = session, True
        return self

    def __exit__(self, *exc: object) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        session.stop()
        events = session.results(self.function_events if self.acc_events else None)
        self.function_events, self.entered = events, False

    def _results(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """The events as the profiler table (see ``EventList.table``)."""
        return self._results().table(sort_by, row_limit, max_src_column_width,
                                     max_name_column_width, max_shapes_column_width, header,
                                     top_level_events_only)

    def export_chrome_trace(self, path: str, metadata: dict | None = None,
                            use_python_export: bool = False) -> None:
        self._results().export_chrome_trace(path, metadata)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self._results().export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        return self._results().key_averages(group_by_input_shape, group_by_stack_n,
                                            group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        return self._results().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time, in microseconds."""
        return self._results().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()

    __repr__ = __str__


class _annotations:
    """A context manager that does nothing but refuse to be entered twice at once."""

    _what = "annotation"

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled, self.record_shapes, self.entered = enabled, record_shapes, False

    def __enter__(self) -> "_annotations":
        if self.enabled:
            if self.entered:
                raise RuntimeError(f"{self._what} annotation context manager is not reentrant")
            self.entered = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.entered = False


class emit_nvtx(_annotations):
    """PyTorch's NVTX ranges for ``nvprof``/Nsight: nothing here (no CUDA runtime); accepted
    so a program that wraps its loop in it runs unchanged.

    >>> from autograd_compile.profiler.legacy import emit_nvtx
    >>> with emit_nvtx():
    ...     pass
    """

    _what = "NVTX"


class emit_itt(_annotations):
    """PyTorch's Intel ITT ranges for VTune: nothing here; accepted as ``emit_nvtx`` is."""

    _what = "ITT"
