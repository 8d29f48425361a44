"""``torch.utils.benchmark``: :class:`Timer` (``timeit``, ``blocked_autorange``,
``adaptive_autorange``) returning a :class:`Measurement`, and :class:`Compare` to tabulate
measurements. Python statements only (no C++ timing, no Callgrind).

>>> from autograd_compile.utils import benchmark
>>> m = benchmark.Timer("x + 1", globals={"x": 1}).timeit(100)
>>> m.number_per_run, len(m.times)
(100, 1)
"""
from .common import (Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads,
                     trim_sigfig, unit_to_english)
from .compare import Colorize, Compare
from .timer import Language, Timer, timer

__all__ = ["Colorize", "Compare", "Language", "Measurement", "TaskSpec", "Timer",
           "ordered_unique", "select_unit", "set_torch_threads", "timer", "trim_sigfig",
           "unit_to_english"]
