"""``Compare``: measurements as PyTorch's table, one per label: rows by (threads, env,
sub_label or stmt), columns by description, medians in one unit per table."""
from __future__ import annotations

import collections
import enum
import itertools as it
import math

from .common import Measurement, ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["Colorize", "Compare"]

BEST, GOOD, BAD, VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
BOLD, TERMINATE = "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


class _Column:
    """One description's cells: a shared number format (digits from significant figures)."""

    def __init__(self, grouped: list[tuple], time_scale: float, trim: bool, warn: bool) -> None:
        self.grouped = grouped
        flat = [r for r in it.chain.from_iterable(grouped) if r is not None]
        self.trim, self.warn = trim, warn and any(r.has_warnings for r in flat)
        digits = [(math.ceil(math.log10(r.median / time_scale)), r) for r in flat]
        unit_digits = max(d for d, _ in digits)
        decimals = min(max(r.significant_figures - d, 0) for d, r in digits) if trim else 1
        length = unit_digits + decimals + (1 if decimals else 0)
        self.template = f"{{:>{length}.{decimals}f}}{{:>{7 if self.warn else 0}}}"

    def num_to_str(self, value: float | None, sigfigs: int, spread: float | None) -> str:
        if value is None:
            return " " * len(self.num_to_str(1, sigfigs, None))
        if self.trim:
            value = trim_sigfig(value, sigfigs)
        return self.template.format(
            value, f" (! {spread * 100:.0f}%)" if self.warn and spread is not None else "")


def _color(segment: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


class _Table:
    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool,
                 warn: bool) -> None:
        self.results, self.colorize, self.warn = results, colorize, warn
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(r.median for r in results))
        row_keys = ordered_unique((r.num_threads, r.env, r.as_row_name) for r in results)
        row_keys.sort(key=lambda k: k[:2])  # stable: statements keep their order
        self.row_keys, self.col_keys = row_keys, ordered_unique(r.description for r in results)
        self.cells = [[None] * len(self.col_keys) for _ in row_keys]
        for r in results:
            self.cells[row_keys.index((r.num_threads, r.env, r.as_row_name))][
                self.col_keys.index(r.description)] = r
        groups = [list(g) for _, g in it.groupby(range(len(row_keys)),
                                                 key=lambda i: row_keys[i][0])]
        self.group_of = {i: n for n, g in enumerate(groups) for i in g}
        self.columns = [_Column([tuple(self.cells[i][j] for i in g) for g in groups],
                                self.scale, trim, warn) for j in range(len(self.col_keys))]

    def _row_strings(self, i: int, render_env: bool, env_len: int) -> list[str]:
        row = self.cells[i]
        first = next(r for r in row if r is not None)
        env = (f"({first.env})" if render_env else "").ljust(env_len + 4)
        out = ["  " + env + first.as_row_name]
        for m, col in zip(row, self.columns):
            out.append(col.num_to_str(None, 1, None) if m is None else col.num_to_str(
                m.median / self.scale, m.significant_figures,
                m.iqr / m.median if m.has_warnings else None))
        return out

    def _finalize(self, i: int, strings: list[str], widths: list[int]) -> str:
        row = self.cells[i]
        best: list = [-1] * len(row)
        if self.colorize == Colorize.ROWWISE:
            best = [min(r.median for r in row if r is not None)] * len(row)
        elif self.colorize == Colorize.COLUMNWISE:
            g = self.group_of[i]
            best = [min((r.median for r in c.grouped[g] if r is not None), default=None)
                    for c in self.columns]
        cells = [strings[0].ljust(widths[0])]
        for s, w, r, b in zip(strings[1:], widths[1:], row, best):
            s = s.center(w)
            if self.colorize != Colorize.NONE and r is not None and b is not None:
                s = _color(s, r.median, b)
            cells.append(s)
        return "  |  ".join(cells)

    def render(self) -> str:
        envs = {r.env for r in self.results}
        render_env = len(envs) > 1
        env_len = max(len(e) for e in envs) if render_env else 0
        rows, prior = [], (None, None)
        for i, (threads, env, _) in enumerate(self.row_keys):
            show_env = render_env and (env != prior[1] or threads != prior[0])
            rows.append((i, threads != prior[0], self._row_strings(i, show_env, env_len)))
            prior = (threads, env)
        strings = [[""] + [str(k) if k is not None else "" for k in self.col_keys]]
        strings += [s for _, _, s in rows]
        width = max(len(s) for s in strings)
        strings = [s + [""] * (width - len(s)) for s in strings]
        widths = [max(len(c) for c in col) for col in zip(*strings)]
        lines = ["  |  ".join(c.center(w) for c, w in zip(strings[0], widths))]
        overall = len(lines[0])
        for (i, new_threads, _), s in zip(rows, strings[1:]):
            if new_threads:
                lines.append(f"{self.row_keys[i][0]} threads: ".ljust(overall, "-"))
            lines.append(self._finalize(i, s, widths))
        warned = self.warn and any(r.has_warnings for r in self.results)
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if warned else "")
        title = f"[{(' ' + (self.label or '') + ' ').center(overall - 2, '-')}]"
        return (f"{title}\n" + "\n".join(lines) +
                f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n{note}")


class Compare:
    """Tabulate measurements: ``print(Compare(results))`` or ``Compare(results).print()``."""

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: list[Measurement]) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 "instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict = collections.defaultdict(list)
        for r in Measurement.merge(self._results):
            by_label[r.label].append(r)
        return [_Table(g, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for g in by_label.values()]
