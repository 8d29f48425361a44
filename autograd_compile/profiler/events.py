"""Recorded events and their summaries: ``FunctionEvent``, ``FunctionEventAvg``, ``EventList``.

One :class:`FunctionEvent` per op call or ``record_function`` range, with its wall-clock
interval (microseconds from the start of the recording), its parent and children (an op
called inside another op, or inside a range, is its child) and what the options added
(input shapes, Python stack, bytes of the outputs, FLOPs). Times:

- ``cpu_time_total``: the whole interval, children included;
- ``self_cpu_time_total``: the interval minus the children's intervals;
- ``cpu_time``: the average, ``cpu_time_total / count``.

:meth:`EventList.key_averages` groups events by name (and optionally input shapes, stack
or overload) into :class:`FunctionEventAvg` rows, which ``table()`` prints:

>>> from autograd_compile.profiler.events import EventList, FunctionEvent
>>> outer = FunctionEvent(1, "outer", 0, 0.0, 10.0)
>>> inner = FunctionEvent(2, "aten::mul", 0, 2.0, 5.0, parent=outer)
>>> outer.self_cpu_time_total, inner.self_cpu_time_total
(7.0, 3.0)
>>> [(a.key, a.count, a.cpu_time_total) for a in EventList([outer, inner]).key_averages()]
[('outer', 1, 10.0), ('aten::mul', 1, 3.0)]
"""
from __future__ import annotations

import gzip
import json
import os
from typing import Any, Iterable

from .kinds import DeviceType
from .table import build_table, format_memory, format_time


class Interval:
    """A start and an end, in microseconds."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _Times:
    """What events and averages share: the average, the (always zero) device columns,
    and PyTorch's formatted ``*_str`` properties."""

    cpu_time_total: float
    count: int
    device_time_total = 0.0
    self_device_time_total = 0.0
    device_memory_usage = 0
    self_device_memory_usage = 0
    cuda_time_total = self_cuda_time_total = 0.0  # PyTorch's older names
    cuda_memory_usage = self_cuda_memory_usage = 0

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time

    @property
    def cpu_time_str(self) -> str:
        return format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return format_time(self.self_cpu_time_total)  # type: ignore[attr-defined]


class FunctionEvent(_Times):
    """One op call or range: its name, interval, parent, children and recorded extras."""

    count = 1
    is_async = is_remote = is_legacy = False
    node_id = scope = -1
    device_index = 0
    device_type = DeviceType.CPU
    use_device = None

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float = 0.0,
                 *, overload_name: str = "", input_shapes: list | None = None,
                 stack: list[str] | None = None, is_user_annotation: bool = False,
                 parent: "FunctionEvent | None" = None, metadata: dict | None = None) -> None:
        self.id, self.name, self.thread = id, name, thread
        self.time_range = Interval(start_us, end_us)
        self.overload_name = overload_name
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.is_user_annotation = is_user_annotation
        self.metadata = metadata or {}
        self.cpu_memory_usage = 0
        self.flops = 0
        self.sequence_nr = -1
        self.kernels: list = []
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent = parent
        if parent is not None:
            parent.cpu_children.append(self)

    @property
    def key(self) -> str:
        return self.name

    @property
    def trace_name(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Times):
    """The sum of several events with one key: one row of ``key_averages().table()``."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.flops = 0
        self.input_shapes: list | None = None
        self.overload_name: str | None = None
        self.stack: list[str] | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] | None = None
        self.node_id, self.scope, self.is_async, self.is_remote = 0, 0, False, False
        self.device_type, self.is_legacy, self.use_device = DeviceType.CPU, False, None
        self.is_user_annotation = False

    def add(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        """Add an event (or another average) with the same key; returns self."""
        if self.key is None:  # the first one names the row
            self.key, self.input_shapes, self.stack = other.key, other.input_shapes, other.stack
            self.overload_name, self.is_user_annotation = other.overload_name, \
                other.is_user_annotation
            self.cpu_parent, self.cpu_children = other.cpu_parent, other.cpu_children
        elif other.key != self.key:
            raise ValueError(f"FunctionEventAvg.add: key {other.key!r} differs from {self.key!r}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.flops += other.flops
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} count={self.count} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (or of averages) that prints as a table and exports as a trace."""

    def __init__(self, *args: Any, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False, base_time_ns: int = 0) -> None:
        super().__init__(*args)
        self._use_device, self._profile_memory, self._with_flops = \
            use_device, profile_memory, with_flops
        self._base_time_ns = base_time_ns
        self._by_overload = False  # rows grouped by overload: the table shows that column

    def _like(self, items: Iterable[Any]) -> "EventList":
        return EventList(items, use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops, base_time_ns=self._base_time_ns)

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time: the time the recording saw, once."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """One :class:`FunctionEventAvg` per name (and input shapes / first ``n`` stack
        frames / overload, when asked), in order of first appearance."""
        rows: dict[tuple, FunctionEventAvg] = {}
        for e in self:
            key = (e.key,
                   str(e.input_shapes) if group_by_input_shape else "",
                   tuple(e.stack[:group_by_stack_n]) if group_by_stack_n > 0 else (),
                   e.overload_name if group_by_overload_name else "")
            rows.setdefault(key, FunctionEventAvg()).add(e)
        for row in rows.values():  # a column shows only what the rows were grouped by
            row.input_shapes = row.input_shapes if group_by_input_shape else None
            row.stack = row.stack[:group_by_stack_n] if group_by_stack_n > 0 else None
            row.overload_name = row.overload_name if group_by_overload_name else None
        out = self._like(rows.values())
        out._by_overload = group_by_overload_name
        return out

    def total_average(self) -> FunctionEventAvg:
        """Every event added into one row named 'Total'."""
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None  # the next event's key is accepted too
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as PyTorch's profiler table (sorted by an attribute, descending).

        >>> from autograd_compile.profiler.events import EventList, FunctionEvent
        >>> print(EventList([FunctionEvent(1, "aten::mm", 0, 0.0, 4.0)]).table())
        ... # doctest: +ELLIPSIS
        -----...
                Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg    # of Calls  
        ...
        Self CPU time total: 4.000us
        <BLANKLINE>
        """
        return build_table(self, sort_by=sort_by, row_limit=row_limit, header=header,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width,
                           profile_memory=self._profile_memory, with_flops=self._with_flops,
                           top_level_events_only=top_level_events_only, time_unit=time_unit,
                           overload_column=self._by_overload)

    def export_chrome_trace(self, path: str, metadata: dict | None = None) -> None:
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto, TensorBoard):
        one complete event (``"ph": "X"``, ``ts`` and ``dur`` in microseconds) per event;
        ``.gz`` paths are gzipped."""
        write_chrome_trace(self, path, metadata, self._base_time_ns)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write one 'frame;frame;...;op value' line per event (flame graph input); needs
        ``with_stack=True``. The outermost frame comes first."""
        with open(path, "w") as f:
            for e in self:
                if e.stack:
                    frames = ";".join(reversed([s.replace(";", ":") for s in e.stack]))
                    f.write(f"{frames};{e.name} {int(getattr(e, metric))}\n")

    def __str__(self) -> str:
        return self.table()


def chrome_trace(events: Iterable[FunctionEvent], metadata: dict | None = None,
                 base_time_ns: int = 0) -> dict:
    """The Chrome trace JSON object of ``events`` (see ``EventList.export_chrome_trace``)."""
    pid, out = os.getpid(), []
    for e in events:
        args: dict[str, Any] = {"External id": e.id, **e.metadata}
        if e.input_shapes:
            args["Input Dims"] = _plain(e.input_shapes)
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.flops:
            args["flops"] = e.flops
        out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                    "name": e.name, "pid": pid, "tid": e.thread, "ts": e.time_range.start,
                    "dur": e.cpu_time_total, "args": args})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_time_ns,
            "deviceProperties": [], "traceEvents": out, **(metadata or {})}


def write_chrome_trace(events: Iterable[FunctionEvent], path: str, metadata: dict | None = None,
                       base_time_ns: int = 0) -> None:
    """Write :func:`chrome_trace` to ``path`` (gzipped when it ends in '.gz')."""
    text = json.dumps(chrome_trace(events, metadata, base_time_ns))
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)


def _plain(value: Any) -> Any:
    """Shapes as JSON: symbolic sizes as their text."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if isinstance(value, (int, float, str)) or value is None else str(value)
