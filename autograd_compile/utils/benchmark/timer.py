"""``Timer``: PyTorch's benchmark timer over ``timeit.Timer`` (Python statements only).

Pending device work is waited for before each clock read (``timer``), as PyTorch
synchronises its accelerator, since our kernels run asynchronously on JAX devices.
"""
from __future__ import annotations

import enum
import statistics
import sys
import textwrap
import timeit
from typing import Any, Callable

from ...devices import accelerator
from .common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """``timeit.default_timer`` after the accelerator (if any) finished its queued work."""
    if accelerator.is_available():
        accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _clean(code: str) -> str:
    code = textwrap.dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    """Time ``stmt`` (after ``setup``) with ``globals``; ``torch`` is bound to this package.

    >>> from autograd_compile.utils.benchmark import Timer
    >>> t = Timer("x * 2", setup="x = torch.ones(3)", label="mul")
    >>> m = t.blocked_autorange(min_run_time=0.01)
    >>> m.median > 0 and m.title
    'mul'
    """

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "",
                 timer: Callable[[], float] = timer, globals: dict[str, Any] | None = None,
                 label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language: Language | str = Language.PYTHON) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("C++ timing is not supported by autograd_compile; time "
                                      "the Python statement (language='python').")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this "
                             "code can simply be moved to `setup`.")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", sys.modules[__name__.split(".")[0]])
        self._language = Language.PYTHON
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup,
                                   label=label, sub_label=sub_label, description=description,
                                   env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)  # zero would break the statistics

    def _measurement(self, number: int, times: list[float]) -> Measurement:
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs (after a warm-up of ``number // 100``)."""
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return self._measurement(number, [self._timeit(number=number)])

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], Any] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _loop(self, number: int, stop: Callable[[list[float]], bool], min_run_time: float,
              max_run_time: float | None = None,
              callback: Callable[[int, float], Any] | None = None) -> list[float]:
        """Blocks of ``number`` runs until ``min_run_time`` is spent and ``stop`` agrees (or
        ``max_run_time`` is exceeded)."""
        total, can_stop, times = 0.0, False, []
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """Runs per block: powers of ten until the timer's overhead is negligible."""
        with set_torch_threads(self._task_spec.num_threads):
            overhead = statistics.median(self._timeit(0) for _ in range(5))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> Measurement:
        """Blocks of an estimated size until at least ``min_run_time`` seconds are spent."""
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda times: True, min_run_time, callback=callback)
        return self._measurement(number, times)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> Measurement:
        """Blocks until the IQR is below ``threshold`` of the median (more than 3 blocks,
        at least ``min_run_time``, at most about ``max_run_time`` seconds)."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times: list[float]) -> bool:
            return len(times) > 3 and self._measurement(number, times).meets_confidence(
                threshold=threshold)
        times = self._loop(number, stop, min_run_time, max_run_time, callback=callback)
        return self._measurement(number, times)
