"""Whether code runs scripted or traced, and the fusion settings programs set.

Nothing here is compiled TorchScript: :func:`is_scripting` is always False (the Python code is
what runs, so its Python branch is the right one), and :func:`is_tracing` is True while a
function or module made by :func:`~autograd_compile.jit.trace` runs, because PyTorch's trace
recorded the branch taken under tracing and replays it on every call.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator

__all__ = ["is_scripting", "is_tracing", "tracing", "enable_onednn_fusion",
           "onednn_fusion_enabled", "set_fusion_strategy", "fuser", "optimized_execution",
           "strict_fusion", "last_executed_optimized_graph"]

_TLS = threading.local()  # per thread, as PyTorch's tracing state
_FUSION: dict = {"onednn": False, "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}
_FUSERS = ("fuser0", "fuser1", "fuser2", "fuser3", "none")


def is_scripting() -> bool:
    """False: scripted code runs as Python here, so the Python branch of a check is taken.

    >>> is_scripting()
    False
    """
    return False


def is_tracing() -> bool:
    """True while a traced function or module runs (their recorded branch is the traced one).

    >>> is_tracing()
    False
    """
    return getattr(_TLS, "depth", 0) > 0


class tracing:  # noqa: N801  (a class, not a generator: entered on every traced call)
    """Run the block as traced code (:func:`is_tracing` is True inside)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _TLS.depth = getattr(_TLS, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _TLS.depth -= 1


def enable_onednn_fusion(enabled: bool) -> None:
    """Record PyTorch's oneDNN fusion switch (XLA fuses here whatever it says).

    >>> enable_onednn_fusion(True); onednn_fusion_enabled()
    True
    >>> enable_onednn_fusion(False)
    """
    _FUSION["onednn"] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """The value last given to :func:`enable_onednn_fusion` (False at start)."""
    return _FUSION["onednn"]


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Set PyTorch's fusion strategy (``[("STATIC", n), ("DYNAMIC", m)]``), return the old one.

    Only recorded and checked: compiled code here is specialised by ``acg.compile``'s own rule.

    >>> old = set_fusion_strategy([("DYNAMIC", 3)]); old
    [('STATIC', 2), ('DYNAMIC', 10)]
    >>> _ = set_fusion_strategy(old)
    """
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
        if not isinstance(depth, int):
            raise TypeError(f"set_fusion_strategy: the depth of {kind!r} must be an int, got "
                            f"{type(depth).__name__}")
    old, _FUSION["strategy"] = _FUSION["strategy"], [(k, d) for k, d in strategy]
    return old


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """PyTorch's fuser choice for a block; checked and otherwise without effect here."""
    if name not in _FUSERS:
        raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002 (PyTorch's)
    yield


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """PyTorch's switch for the TorchScript optimizer; without effect here."""
    yield


class strict_fusion:  # noqa: N801  (PyTorch's name)
    """PyTorch's assertion that a block fuses fully: nothing to assert without TorchScript."""

    def __enter__(self) -> "strict_fusion":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def last_executed_optimized_graph() -> None:
    """No TorchScript graph ever runs here: None."""
    return None
