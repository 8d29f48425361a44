"""The persistent compile cache: compiled XLA programs survive the process.

A second run of the same program loads its XLA executables from disk instead of compiling
them again (DESIGN §11). The cache is JAX's persistent compilation cache, configured once
when ``autograd_compile`` is imported, before anything compiles:

- ``ACG_CACHE_DIR``: the directory (default ``~/.cache/autograd_compile``); the XLA
  executables live in its ``xla/`` subdirectory. An empty value disables the cache.
- ``ACG_CACHE_MAX_MB``: the size bound in MiB (default 1024). Past it, the least recently
  used entries (by modification time; a hit touches its entry) are deleted.
- ``ACG_CACHE_MIN_COMPILE_SECS``: programs that compiled faster than this are not written
  (default 0: every program, since an eager step runs many small kernel programs and
  their compiles add up).

The files are JAX's (``<key>-cache``), written by :class:`FileCache` instead of JAX's own
LRU cache: JAX's takes a directory-wide file lock and lists and reads the whole directory
on every write (measured: 0.2 s per write once it holds 1000 entries), and without a size
bound it writes in place, so a second process can read a half-written file. Here a write
goes to a temporary file renamed over the entry (atomic, so several processes share the
directory without a lock), and the size is kept as a running total, the directory listed
again only when the bound is passed. Should JAX's internals move so that the cache cannot
be installed, JAX's own unbounded cache is used, pruned here at start-up.

If the user already pointed JAX at a cache (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update("jax_compilation_cache_dir", ...)``), that choice stands.

>>> from autograd_compile import compile_cache
>>> compile_cache.info()["enabled"] in (True, False)
True
"""
from __future__ import annotations

import os
import pathlib
import uuid
from types import EllipsisType
from typing import Any

import jax

try:  # JAX's interface for a persistent cache (private; see _install)
    from jax._src.compilation_cache_interface import CacheInterface as _CacheInterface
except ImportError:  # another JAX: FileCache is then never installed
    _CacheInterface = object

ENV_DIR = "ACG_CACHE_DIR"
ENV_MAX_MB = "ACG_CACHE_MAX_MB"
ENV_MIN_SECS = "ACG_CACHE_MIN_COMPILE_SECS"
DEFAULT_DIR = "~/.cache/autograd_compile"
DEFAULT_MAX_MB = 1024
XLA_SUBDIR = "xla"
SUFFIX = "-cache"  # JAX's name for an entry: <key>-cache

# what configure() decided; info() reports it
_state: dict[str, Any] = {"enabled": False, "dir": None, "max_bytes": None, "owner": None,
                          "backend": None, "pruned": 0}


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


def _entries(path: pathlib.Path) -> list[tuple[float, int, pathlib.Path]]:
    """(modification time, size, file) of every entry; entries another process deletes
    meanwhile are left out."""
    out = []
    for f in path.glob(f"*{SUFFIX}"):
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((st.st_mtime, st.st_size, f))
    return out


def prune(path: pathlib.Path, max_bytes: int) -> int:
    """Delete the least recently used entries of ``path`` (oldest modification time
    first) until the rest fit in ``max_bytes``; returns how many went."""
    entries = _entries(path)
    total, removed = sum(e[1] for e in entries), 0
    for _, size, f in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        try:
            f.unlink()
        except OSError:  # another process pruned it first
            continue
        total, removed = total - size, removed + 1
    return removed


class FileCache(_CacheInterface):  # type: ignore[misc,valid-type]
    """JAX's persistent-cache interface over a directory: atomic writes, a hit touches
    its entry, LRU pruning once the running total passes ``max_bytes``."""

    __slots__ = ("_path", "max_bytes", "_total")

    def __init__(self, path: pathlib.Path, max_bytes: int) -> None:
        self._path = path
        self.max_bytes = max_bytes
        self._total: int | None = None  # bytes on disk, listed at the first write

    def get(self, key: str) -> bytes | None:
        f = self._path / f"{key}{SUFFIX}"
        try:
            data = f.read_bytes()
        except OSError:  # absent, or evicted by another process meanwhile
            return None
        try:
            os.utime(f)  # recently used: pruned last
        except OSError:
            pass
        return data

    def put(self, key: str, value: bytes) -> None:
        f = self._path / f"{key}{SUFFIX}"
        if f.exists() or len(value) > self.max_bytes:
            return
        tmp = self._path / f".{key}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_bytes(value)
            os.replace(tmp, f)  # readers see the whole entry or none
        except OSError:  # a full disk costs a recompile next time, not this run
            tmp.unlink(missing_ok=True)
            return
        if self._total is None:
            self._total = sum(e[1] for e in _entries(self._path))
        else:
            self._total += len(value)
        if self._total > self.max_bytes:  # other processes write too: list, then prune
            prune(self._path, int(self.max_bytes * 0.9))
            self._total = sum(e[1] for e in _entries(self._path))


def _install(cache: FileCache | None) -> bool:
    """Make ``cache`` JAX's persistent cache (None: none), and make JAX decide again
    whether to use one (it decides once, at its first compile, so a compile before
    ``configure`` would otherwise leave the process without a cache). False when JAX's
    internals do not allow it."""
    try:
        from jax._src import compilation_cache as cc
        cc.reset_cache()
        if cache is not None:
            if _CacheInterface is object:
                return False
            with cc._cache_initialized_mutex:
                cc._cache = cache
                cc._cache_initialized = True
    except Exception:  # noqa: BLE001 - private API of another version: JAX's own cache
        return False
    return True


def configure(path: str | os.PathLike | None | EllipsisType = ...,
              max_bytes: int | None = None, min_compile_secs: float | None = None) -> dict:
    """Point the persistent compile cache at ``path`` (default: from the environment,
    see the module docstring; None disables it). Returns :func:`info`.

    Takes effect for programs compiled afterwards; called once at import.

    >>> import tempfile
    >>> from autograd_compile import compile_cache
    >>> before = compile_cache.info()
    >>> compile_cache.configure(tempfile.mkdtemp())["enabled"]
    True
    >>> _ = compile_cache.configure(before["dir"][:-4] if before["owner"] == "acg" else None)
    """
    if path is ...:
        path = cache_dir_from_env()
    if _state["owner"] != "acg" and jax.config.jax_compilation_cache_dir is not None:
        # the user configured JAX's cache before importing us: theirs stands
        _state.update(enabled=True, dir=jax.config.jax_compilation_cache_dir, owner="user",
                      backend="jax")
        return info()
    if path is None:
        jax.config.update("jax_compilation_cache_dir", None)
        _install(None)
        _state.update(enabled=False, dir=None, max_bytes=None, owner=None, backend=None,
                      pruned=0)
        return info()
    if max_bytes is None:
        max_bytes = int(_env_number(ENV_MAX_MB, DEFAULT_MAX_MB) * 2**20)
    if min_compile_secs is None:
        min_compile_secs = _env_number(ENV_MIN_SECS, 0.0)
    xla_dir = pathlib.Path(path).expanduser() / XLA_SUBDIR
    try:
        xla_dir.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home must not stop the import: run without a cache
        return configure(None)
    # no JAX size bound: that would put its locking LRU cache in charge (see above)
    jax.config.update("jax_compilation_cache_max_size", -1)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)  # entries of any size
    jax.config.update("jax_compilation_cache_dir", str(xla_dir))
    ours = _install(FileCache(xla_dir, max_bytes))
    _state.update(enabled=True, dir=str(xla_dir), max_bytes=max_bytes, owner="acg",
                  backend="acg" if ours else "jax",
                  pruned=0 if ours else prune(xla_dir, max_bytes))
    return info()


def info() -> dict:
    """Where the cache is and how big: ``enabled``, ``dir``, ``max_bytes``, ``owner``
    (``"acg"``, or ``"user"`` when JAX was configured before us), ``backend`` (``"acg"``:
    :class:`FileCache`; ``"jax"``: JAX's own), ``entries`` and ``bytes`` on disk now."""
    out = dict(_state)
    entries = _entries(pathlib.Path(out["dir"])) if out["dir"] else []
    return out | {"entries": len(entries), "bytes": sum(e[1] for e in entries)}


def clear() -> int:
    """Delete every entry of the cache directory we configured; returns how many."""
    if _state["owner"] != "acg" or not _state["dir"]:
        return 0
    return prune(pathlib.Path(_state["dir"]), -1)
