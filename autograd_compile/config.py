"""Every debug and log flag, read from the environment in one place.

- ``ACG_LOGS``: comma-separated log channels, e.g. ``compiled_autograd`` or
  ``compiled_autograd_verbose`` (like ``TORCH_LOGS``); ``aot`` logs what ``acg.compile``
  traces (both graphs and their guards) and why it traces again; ``distributed`` makes
  the launcher show gloo's connection lines and what the other ranks print after one failed.
- ``ACG_DEBUG``: ``1`` adds extra context to errors.
- ``ACG_CHECK``: ``1`` runs IR checkers (``Graph.lint()``,
  ``dispatcher.check_invariants``) after every pass and registration.
- ``ACG_CHECKS``: ``0`` leaves index-bounds and class-target checks out of compiled
  programs (see ``runtime_checks``; eager checks stay).
- ``ACG_SLOW``: ``1`` turns on the long fuzzing and soak tests (``make test-slow``).
- ``ACG_XLA_CPU_FIX``: ``0`` keeps XLA's CPU defaults (see :func:`apply_xla_cpu_fix`).
- ``ACG_CACHE_DIR``: the persistent compile cache (default ``~/.cache/autograd_compile``;
  empty disables it); ``ACG_CACHE_MAX_MB`` bounds it (default 1024),
  ``ACG_CACHE_MIN_COMPILE_SECS`` skips programs that compile faster (default 0). Read by
  :mod:`autograd_compile.compile_cache`, which configures JAX's cache at import.
"""
from __future__ import annotations

import logging
import os
import warnings


def _flag(name: str) -> bool:
    return os.environ.get(name, "0").lower() not in ("", "0", "false", "no")


DEBUG: bool = _flag("ACG_DEBUG")
CHECK: bool = _flag("ACG_CHECK")
SLOW: bool = _flag("ACG_SLOW")
LOGS: frozenset[str] = frozenset(
    s.strip() for s in os.environ.get("ACG_LOGS", "").split(",") if s.strip()
)
# every channel a module logs to; ACG_LOGS naming another one is a typo worth a warning
CHANNELS = ("compiled_autograd", "compiled_autograd_verbose", "aot", "aot_verbose",
            "distributed")  # distributed: the launcher shows every line of every rank


def _check_channels(logs: frozenset[str]) -> None:
    unknown = sorted(logs - set(CHANNELS))
    if unknown:
        warnings.warn(f"ACG_LOGS: unknown channel{'s' if len(unknown) > 1 else ''} "
                      f"{', '.join(unknown)}; the channels are {', '.join(CHANNELS)}",
                      stacklevel=2)


_check_channels(LOGS)


def log_enabled(channel: str) -> bool:
    """True when ``channel`` (or a verbose variant that implies it) is on."""
    return channel in LOGS or f"{channel}_verbose" in LOGS


def get_logger(channel: str) -> logging.Logger:
    """A logger for ``channel`` that prints to stderr when the channel is on."""
    logger = logging.getLogger(f"autograd_compile.{channel}")
    if log_enabled(channel) and not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(f"[{channel}] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    return logger


_YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce"


def apply_xla_cpu_fix() -> bool:
    """Avoid jaxlib 0.10's CPU trap: matmul chains ending in a reduction fuse into a
    kernel several times slower (measured: attention backward 255 -> 141 ms, a jitted
    MLP forward 80 -> 9 ms). Adds the flag to XLA_FLAGS before jax starts its backend,
    never when the user's XLA_FLAGS already mention it, only on the jaxlib versions it
    was verified on (an unknown flag aborts XLA), and not when ACG_XLA_CPU_FIX=0."""
    if os.environ.get("ACG_XLA_CPU_FIX", "1") == "0":
        return False
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_experimental_ynn_fusion_type" in flags:
        return False
    try:
        from importlib.metadata import version
        if not version("jaxlib").startswith("0.10."):
            return False
    except Exception:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {_YNN_FLAG}".strip()
    return True
