"""The profiler table: PyTorch's layout, so a reader (or a script) finds the same columns.

Columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then CPU Mem and
Self CPU Mem (``profile_memory=True``), # of Calls, Input Shapes (rows grouped by input
shape), Source Location (rows grouped by stack), Total FLOPs (``with_flops=True``), and a
last line with the sum of self times. Percentages are of that sum.

>>> from autograd_compile.profiler.events import EventList, FunctionEvent
>>> rows = EventList([FunctionEvent(1, "aten::mm", 0, 0.0, 3.0)]).key_averages()
>>> print(build_table(rows).splitlines()[3].split())
['aten::mm', '100.00%', '3.000us', '100.00%', '3.000us', '3.000us', '1']
"""
from __future__ import annotations

import math
from typing import Any, Sequence


def format_time(time_us: float) -> str:
    """'12.345us', '1.234ms' or '1.234s' (the profiler table's units)."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_memory(nbytes: int) -> str:
    """'512 B', '1.50 KB', '2.00 MB' or '1.00 GB'."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


_WIDTH = 12  # every numeric column
_SPACING = 2


def _share(part: float, total: float) -> str:
    return "NaN" if total == 0 else f"{part * 100.0 / total:.2f}%"


def _time(time_us: float, unit: str | None) -> str:
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(unit or "")
    return format_time(time_us) if scale is None else f"{time_us / scale:.3f}{unit}"


def _flops_unit(smallest: float) -> tuple[float, str]:
    """Scale and header for the FLOPs column, chosen by the smallest count shown."""
    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    k = int(max(0.0, min(math.log10(smallest) / 3, len(names) - 1)))
    return 10.0 ** (-3 * k), names[k]


def _columns(events: Sequence[Any], profile_memory: bool, with_flops: bool, overloads: bool,
             name_width: int, shapes_width: int, src_width: int) -> list[tuple[str, int, str]]:
    """(header, width, alignment) of every column the events need."""
    cols = [("Name", name_width, ">")]
    if overloads and any(e.overload_name for e in events):
        cols.append(("Overload Name", name_width, ">"))
    cols += [(h, _WIDTH, ">") for h in ("Self CPU %", "Self CPU", "CPU total %", "CPU total",
                                        "CPU time avg")]
    if profile_memory:
        cols += [("CPU Mem", _WIDTH, ">"), ("Self CPU Mem", _WIDTH, ">")]
    cols.append(("# of Calls", _WIDTH, ">"))
    if any(e.input_shapes for e in events):
        cols.append(("Input Shapes", shapes_width, ">"))
    if any(e.stack for e in events):
        cols.append(("Source Location", src_width, "<"))
    flops = [e.flops for e in events if e.flops > 0]
    if with_flops and flops:
        cols.append((f"Total {_flops_unit(min(flops))[1]}", _WIDTH, ">"))
    return cols


def _cell(text: Any, width: int) -> str:
    text = str(text)
    return text if len(text) < width - 3 else text[:width - 3] + "..."


def _row(e: Any, cols: list, total: float, unit: str | None, flops_scale: float) -> list[str]:
    width = {h: w for h, w, _ in cols}
    source = width.get("Source Location", 0)
    cells = {"Name": _cell(e.key, width["Name"]),
             "Overload Name": _cell(e.overload_name or "", width["Name"]),
             "Self CPU %": _share(e.self_cpu_time_total, total),
             "Self CPU": _time(e.self_cpu_time_total, unit),
             "CPU total %": _share(e.cpu_time_total, total),
             "CPU total": _time(e.cpu_time_total, unit), "CPU time avg": _time(e.cpu_time, unit),
             "CPU Mem": format_memory(e.cpu_memory_usage),
             "Self CPU Mem": format_memory(e.self_cpu_memory_usage), "# of Calls": e.count,
             "Input Shapes": str(e.input_shapes)[:width.get("Input Shapes", 0)],
             "Source Location": _trim_path(e.stack[0], source) if e.stack and source else "",
             "FLOPs": "--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}"}
    return [cells["FLOPs" if h.endswith("FLOPs") else h] for h, _, _ in cols]


def _trim_path(path: str, width: int) -> str:
    return path if len(path) <= width else "..." + path[len(path) - width + 3:]


def build_table(events: Sequence[Any], sort_by: str | None = None, row_limit: int = 100,
                header: str | None = None, max_src_column_width: int = 75,
                max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                profile_memory: bool = False, with_flops: bool = False,
                top_level_events_only: bool = False, time_unit: str | None = None,
                overload_column: bool = False) -> str:
    """The table of ``events`` (FunctionEvents or FunctionEventAvgs) as one string; the
    overload names show where ``overload_column`` (rows grouped by them)."""
    if not events:
        return ""
    if sort_by is not None:  # device columns are all zero here: "cuda"/"device" sorts are stable
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4,
                       max_shapes_column_width)
    src_width = min(max((len(s) for e in events for s in (e.stack or [])), default=0) + 4,
                    max_src_column_width)
    cols = _columns(events, profile_memory, with_flops, overload_column, name_width,
                    shapes_width, src_width)
    fmt = "".join("{:" + align + str(w) + "}" + " " * _SPACING for _, w, align in cols)
    sep = "".join("-" * w + " " * _SPACING for _, w, _ in cols)
    flops = [e.flops for e in events if e.flops > 0]
    scale = _flops_unit(min(flops))[0] if flops else 1.0
    total = sum(e.self_cpu_time_total for e in events)
    lines = ([("=" * (len(sep) - _SPACING)), header] if header is not None else [])
    lines += [sep, fmt.format(*(h for h, _, _ in cols)), sep]
    shown = [e for e in events if not (top_level_events_only and e.cpu_parent is not None)]
    for e in shown if row_limit < 0 else shown[:row_limit]:
        lines.append(fmt.format(*_row(e, cols, total, time_unit, scale)))
    lines += [sep, f"Self CPU time total: {_time(total, time_unit)}", ""]
    return "\n".join(lines)
