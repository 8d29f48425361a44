"""The persistent compile cache: compiled XLA programs survive the process.

A second run of the same program loads its XLA executables from disk instead of compiling
them again (DESIGN §11). The cache is JAX's persistent compilation cache, configured once
when ``autograd_compile`` is imported:

- ``ACG_CACHE_DIR``: the directory (default ``~/.cache/autograd_compile``); the XLA
  executables live in its ``xla/`` subdirectory. An empty value disables the cache.
- ``ACG_CACHE_MAX_MB``: the size bound in MiB (default 1024). Past it, the least recently
  used entries are evicted (JAX's LRU cache, under a file lock).
- ``ACG_CACHE_MIN_COMPILE_SECS``: programs that compiled faster than this are not written
  (default 0: every program, since an eager step runs many small kernel programs and
  their compiles add up).

Several processes may share the directory: with a size bound, every read and write takes
the cache's file lock, so no process reads a half-written entry. When the ``filelock``
package is missing, JAX cannot bound the cache itself; then the directory is pruned here
(oldest first) at start-up and JAX runs it unbounded.

If the user already pointed JAX at a cache (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update("jax_compilation_cache_dir", ...)``), that choice stands.

>>> from autograd_compile import compile_cache
>>> compile_cache.info()["enabled"] in (True, False)
True
"""
from __future__ import annotations

import os
import pathlib
from types import EllipsisType
from typing import Any

import jax

ENV_DIR = "ACG_CACHE_DIR"
ENV_MAX_MB = "ACG_CACHE_MAX_MB"
ENV_MIN_SECS = "ACG_CACHE_MIN_COMPILE_SECS"
DEFAULT_DIR = "~/.cache/autograd_compile"
DEFAULT_MAX_MB = 1024
XLA_SUBDIR = "xla"

# what configure() decided; info() reports it
_state: dict[str, Any] = {"enabled": False, "dir": None, "max_bytes": None, "owner": None,
                          "pruned": 0}


def cache_dir_from_env() -> pathlib.Path | None:
    """The cache directory ``ACG_CACHE_DIR`` names (its default when unset); None when
    it is set to the empty string."""
    raw = os.environ.get(ENV_DIR, DEFAULT_DIR)
    return pathlib.Path(raw).expanduser() if raw.strip() else None


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a number") from None


def _have_filelock() -> bool:
    try:
        import filelock  # noqa: F401  (JAX's LRU cache needs it to bound the size)
    except ImportError:
        return False
    return True


def prune(path: pathlib.Path, max_bytes: int) -> int:
    """Delete the oldest (by modification time) ``*-cache`` entries of ``path`` until the
    rest fit in ``max_bytes``; returns how many went. Used only when JAX cannot bound the
    cache itself."""
    entries = []
    for f in path.glob("*-cache"):
        try:
            st = f.stat()
        except OSError:  # another process evicted it meanwhile
            continue
        entries.append((st.st_mtime, st.st_size, f))
    total, removed = sum(e[1] for e in entries), 0
    for _, size, f in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        try:
            f.unlink()
        except OSError:
            continue
        total, removed = total - size, removed + 1
    return removed


def _reset_if_checked() -> None:
    """JAX decides once per process whether the cache is used, at its first compile; if
    something compiled before we configured, ask it to decide again."""
    try:
        from jax._src import compilation_cache as cc
        if getattr(cc, "_cache_checked", False) and not getattr(cc, "_cache_initialized", True):
            cc.reset_cache()
    except Exception:  # noqa: BLE001 - a private API; the worst case is a cold start
        pass


def configure(path: str | os.PathLike | None | EllipsisType = ...,
              max_bytes: int | None = None, min_compile_secs: float | None = None) -> dict:
    """Point JAX's persistent compilation cache at ``path`` (default: from the
    environment, see the module docstring; None disables). Returns :func:`info`.

    Takes effect for programs compiled afterwards; called once at import.

    >>> import tempfile
    >>> from autograd_compile import compile_cache
    >>> before = compile_cache.info()
    >>> compile_cache.configure(tempfile.mkdtemp())["enabled"]
    True
    >>> _ = compile_cache.configure(before["dir"] if before["owner"] == "acg" else None)
    """
    if path is ...:
        path = cache_dir_from_env()
    if _state["owner"] != "acg" and jax.config.jax_compilation_cache_dir is not None:
        # the user configured JAX's cache before importing us: theirs stands
        _state.update(enabled=True, dir=jax.config.jax_compilation_cache_dir, owner="user")
        return info()
    if path is None:
        jax.config.update("jax_compilation_cache_dir", None)
        _state.update(enabled=False, dir=None, max_bytes=None, owner=None)
        _reset_if_checked()
        return info()
    if max_bytes is None:
        max_bytes = int(_env_number(ENV_MAX_MB, DEFAULT_MAX_MB) * 2**20)
    if min_compile_secs is None:
        min_compile_secs = _env_number(ENV_MIN_SECS, 0.0)
    xla_dir = pathlib.Path(path).expanduser() / XLA_SUBDIR
    try:
        xla_dir.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home must not stop the import: run without a cache
        _state.update(enabled=False, dir=None, owner=None)
        return info()
    bounded = _have_filelock()
    if not bounded:
        _state["pruned"] = prune(xla_dir, max_bytes)
    jax.config.update("jax_compilation_cache_max_size", max_bytes if bounded else -1)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)  # entries of any size
    jax.config.update("jax_compilation_cache_dir", str(xla_dir))
    _reset_if_checked()
    _state.update(enabled=True, dir=str(xla_dir), max_bytes=max_bytes, owner="acg")
    return info()


def info() -> dict:
    """Where the cache is and how big: ``enabled``, ``dir``, ``max_bytes``, ``owner``
    (``"acg"``, or ``"user"`` when JAX was configured before us), ``entries`` and
    ``bytes`` on disk now."""
    out = dict(_state)
    entries = list(pathlib.Path(out["dir"]).glob("*-cache")) if out["dir"] else []
    sizes = []
    for f in entries:
        try:
            sizes.append(f.stat().st_size)
        except OSError:
            continue
    return out | {"entries": len(sizes), "bytes": sum(sizes)}


def clear() -> int:
    """Delete every entry of the cache directory we configured; returns how many."""
    if _state["owner"] != "acg" or not _state["dir"]:
        return 0
    path = pathlib.Path(_state["dir"])
    for f in path.glob("*-atime"):  # the LRU's access times go with their entries
        f.unlink(missing_ok=True)
    return prune(path, -1)
