"""What a benchmark measured (:class:`Measurement`) and of what (:class:`TaskSpec`), with
PyTorch's statistics (quantiles with linear interpolation), warnings and printed form."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import textwrap
from typing import Any, Iterable, Iterator

import numpy as np

from ...kernels.api_tail_a import get_num_threads, set_num_threads

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """The statement timed, its setup, and the labels a :class:`Compare` table groups by."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        sub = self.sub_label
        if self.label is not None:
            return self.label + (f": {sub}" if sub else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {sub}" if sub else "")
        return f"stmt:{f' ({sub})' if sub else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """``raw_times`` are seconds per block of ``number_per_run`` runs; ``times``, ``mean``,
    ``median`` and ``iqr`` are per run. TaskSpec fields read through (``m.label``)."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # reserved for user payloads

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """Figures the interquartile points support (a 90% confidence interval), 1 to 4."""
        self._lazy_init()
        n = len(self._sorted_times)
        points = self._sorted_times[n // 4:math.ceil(3 * n / 4)]
        ci = max(1.645 * float(np.std(points)) / math.sqrt(len(points)),
                 _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self._median / ci))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if not self.raw_times or self._sorted_times:
            return
        self._sorted_times = tuple(sorted(self.times))
        ts = np.asarray(self._sorted_times, np.float64)
        self._median, self._mean = float(np.quantile(ts, 0.5)), float(ts.mean())
        self._p25, self._p75 = float(np.quantile(ts, 0.25)), float(np.quantile(ts, 0.75))
        if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
            self._add_warning("This suggests significant environmental influence.")
        elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
            self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg: str) -> None:
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                           f"of the median measurement.\n           {msg}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        many = n > 1
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if many else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        lines.append(f"  {n} measurement{'s' if many else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if many else ','} {threads}")
        lines.append("\n".join(self._warnings))
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list["Measurement"]:
        """One Measurement per TaskSpec, replicates' per-run times pooled (number_per_run 1)."""
        groups: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit to print ``t`` seconds in: ns, us, ms or s."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -4, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (half to even, as ``torch.round``)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    scale = 10 ** (math.ceil(math.log10(abs(x))) - n)
    return float(np.round(x / scale) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    prior = get_num_threads()
    try:
        set_num_threads(n)
        yield
    finally:
        set_num_threads(prior)
