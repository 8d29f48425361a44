"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, and raise in
the parent, with the child's traceback, the first failure (PyTorch's ``ProcessContext``).

>>> ctx = start_processes(abs, args=(), nprocs=1, join=False)
>>> while not ctx.join(): pass
>>> [p.exitcode for p in ctx.processes]
[0]
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import tempfile
import traceback
import warnings
from typing import Any, Callable

__all__ = ["ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException", "spawn", "start_processes"]


class ProcessException(Exception):
    """A child process failed; ``error_index`` is its rank, ``error_pid`` its pid."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, error_pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The child's ``fn`` raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The child exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


_PR_SET_PDEATHSIG = 1  # linux prctl: the kernel signals a child when its parent dies


def _die_with_parent() -> None:
    """SIGTERM when the parent dies: no rank outlives its group (nor holds the parent's
    output pipes open). PyTorch's children get SIGINT, which a process stuck in a C++
    collective never acts on (Python runs the handler only between bytecodes)."""
    if sys.platform != "linux":
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    except (OSError, AttributeError):
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rendezvous_env(nprocs: int) -> dict[str, str]:
    """What ``init_process_group(init_method="env://")`` reads and the parent's environment
    lacks: ``MASTER_ADDR`` 127.0.0.1, a free ``MASTER_PORT``, ``WORLD_SIZE`` and
    ``LOCAL_WORLD_SIZE`` ``nprocs`` (each child adds ``RANK``/``LOCAL_RANK`` = its index)."""
    wanted = {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": str(nprocs),
              "LOCAL_WORLD_SIZE": str(nprocs)}
    env = {k: v for k, v in wanted.items() if k not in os.environ}
    if "MASTER_PORT" not in os.environ:
        env["MASTER_PORT"] = str(_free_port())
    return env


def _wrap(fn: Callable[..., Any], i: int, args: tuple, error_file: str,
          env: dict[str, str] | None = None) -> None:
    """The child's body: ``fn(i, *args)``; a traceback goes to ``error_file``, exit code 1.
    ``env`` (the rendezvous variables the parent lacks) is added first, never replacing a
    variable the child already has."""
    _die_with_parent()
    for name, value in {**(env or {}), "RANK": str(i), "LOCAL_RANK": str(i)}.items():
        os.environ.setdefault(name, value)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is shutting the group down
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The started processes; ``join`` waits for them and raises the first failure."""

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """True once every process ended successfully; False if some still run after
        ``timeout``; raises ``ProcessRaisedException`` / ``ProcessExitedException`` (after
        terminating the others) as soon as one fails."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self.sentinels
        self._terminate_others(grace_period)
        self._raise(failed)
        return False  # unreachable: _raise raises

    def _terminate_others(self, grace_period: float | None) -> None:
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        for p in self.processes:
            p.join(grace_period)
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()

    def _raise(self, index: int) -> None:
        process, path = self.processes[index], self.error_files[index]
        trace = ""
        if os.path.exists(path):
            with open(path) as f:
                trace = f.read()
        if not trace:
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                             index, process.pid, code, name)
            raise ProcessExitedException(f"process {index:d} terminated with exit code "
                                         f"{code:d}", index, process.pid, code)
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n" + trace
        raise ProcessRaisedException(msg, index, process.pid)

    def __del__(self) -> None:
        for path in getattr(self, "error_files", []):
            try:
                os.unlink(path)
            except OSError:
                pass


def start_processes(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1,
                    join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; wait for them
    when ``join`` (returning None), else return their ``ProcessContext``.

    Each process starts with the environment ``init_process_group(init_method="env://")``
    reads. PyTorch's ``spawn`` sets none of it (its tutorials set ``MASTER_ADDR`` and
    ``MASTER_PORT`` in the child and pass ``rank``/``world_size``); here what the parent's
    environment lacks is filled in and nothing it has is replaced: ``MASTER_ADDR``
    127.0.0.1, a free ``MASTER_PORT``, ``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE`` ``nprocs``,
    ``RANK`` and ``LOCAL_RANK`` the process index. So a program in either style joins
    (one that sets the variables itself overrides these), and the parent's own
    environment is left as it was."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    env = _rendezvous_env(nprocs)
    for i in range(nprocs):
        fd, path = tempfile.mkstemp(prefix="acg_mp_error_")
        os.close(fd)
        process = ctx.Process(target=_wrap, args=(fn, i, args, path, env), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(path)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> ProcessContext | None:
    """``start_processes`` with the ``spawn`` start method (the one PyTorch's ``spawn`` uses):
    ``spawn(train, args=(world_size,), nprocs=world_size)`` runs ``train(rank, world_size)``
    in each process and returns once all ended (None), or raises the first failure. Each
    process gets the rendezvous environment its parent lacks (see ``start_processes``), so
    ``init_process_group("gloo")`` with no rank or world size joins too."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t"
                      " torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method)
