"""``torch._dynamo``: the settings and reset that training scripts touch.

``config.cache_size_limit`` is how many traces ``acg.compile`` keeps per function; the other
settings scripts set (``suppress_errors``, ``verbose``, ``capture_scalar_outputs``...) are
accepted and kept (a region that cannot be compiled always runs eagerly here, logged).

>>> import autograd_compile as acg
>>> acg._dynamo.config.cache_size_limit = 16
>>> from autograd_compile.aot import api
>>> api.CACHE_SIZE_LIMIT
16
>>> acg._dynamo.config.cache_size_limit = 8
"""
from __future__ import annotations

from typing import Any

from .compiler import disable, is_compiling, reset

__all__ = ["config", "reset", "disable", "is_compiling"]


class _Config:
    """Attribute settings; ``cache_size_limit`` is acg.compile's own."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", {"suppress_errors": True, "verbose": False,
                                             "capture_scalar_outputs": False,
                                             "automatic_dynamic_shapes": True})

    def __getattr__(self, name: str) -> Any:
        if name in ("cache_size_limit", "recompile_limit"):
            from .aot import api
            return api.CACHE_SIZE_LIMIT
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"torch._dynamo.config has no setting {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("cache_size_limit", "recompile_limit"):
            from .aot import api
            api.CACHE_SIZE_LIMIT = int(value)
        else:
            self._values[name] = value


config = _Config()
