"""Joining processes: ``init`` over ``jax.distributed``, ranks, world size, barrier.

The launcher (``python -m autograd_compile launch``) sets torchrun's environment:
``MASTER_ADDR``/``MASTER_PORT`` (the coordinator), ``WORLD_SIZE`` (processes),
``RANK`` (this process), ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``.
"""
from __future__ import annotations

import datetime
import os
import socket
import sys
import threading
import time
from typing import Any

import jax

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "autograd_compile.distributed.init()")
DEFAULT_TIMEOUT = 300.0  # seconds, as jax.distributed's own default
_state: dict[str, Any] = {"initialized": False, "rank": 0, "world_size": 1, "multi": False}


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def _env_coordinator() -> str | None:
    if os.environ.get("ACG_COORDINATOR"):
        return os.environ["ACG_COORDINATOR"]
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if addr and port:
        return f"{addr}:{port}"
    return None


def _seconds(timeout: Any) -> int:
    if timeout is None:
        env = os.environ.get("ACG_DIST_TIMEOUT")
        timeout = float(env) if env else DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    return max(1, int(round(float(timeout))))


def init(coordinator_address: str | None = None, num_processes: int | None = None,
         process_id: int | None = None, *, timeout: Any = None) -> None:
    """Join this process to the others (``torch.distributed.init_process_group``).

    Arguments left ``None`` come from the launcher's environment (``MASTER_ADDR`` and
    ``MASTER_PORT`` or ``ACG_COORDINATOR``, ``WORLD_SIZE``, ``RANK``). With one process
    (``WORLD_SIZE`` unset or 1) no coordinator is needed: every local device serves.
    ``timeout`` (seconds or a ``timedelta``; default ``ACG_DIST_TIMEOUT`` or 300) bounds
    the wait for peers at start-up and how long a silent peer counts as alive. CPU
    processes exchange data over gloo. Call it before any tensor is made.

    >>> import autograd_compile as acg
    >>> acg.distributed.init()            # a single process: nothing to join
    >>> acg.distributed.get_world_size(), acg.distributed.get_rank()
    (1, 0)
    """
    if _state["initialized"]:
        raise RuntimeError("trying to initialize the default process group twice!")
    num_processes = num_processes if num_processes is not None else _env_int("WORLD_SIZE")
    process_id = process_id if process_id is not None else _env_int("RANK")
    coordinator_address = coordinator_address or _env_coordinator()
    if num_processes is None and _jax_already_joined():  # the user called jax's own
        num_processes, process_id = jax.process_count(), jax.process_index()
        _state.update(initialized=True, world_size=num_processes, multi=num_processes > 1,
                      rank=process_id)
        return
    num_processes = 1 if num_processes is None else num_processes
    if num_processes < 1:
        raise ValueError(f"init: num_processes must be at least 1, got {num_processes}")
    if num_processes > 1:
        _join(coordinator_address, num_processes, process_id, _seconds(timeout))
    _state.update(initialized=True, world_size=num_processes, multi=num_processes > 1,
                  rank=process_id or 0)


def _join(coordinator: str | None, num_processes: int, process_id: int | None,
          timeout: int) -> None:
    """``jax.distributed.initialize`` with gloo collectives on CPU and bounded waits."""
    if coordinator is None:
        raise ValueError("init: num_processes > 1 needs a coordinator address: pass "
                         "coordinator_address='host:port' or set MASTER_ADDR and MASTER_PORT")
    if process_id is None or not 0 <= process_id < num_processes:
        raise ValueError(f"init: process_id must be in [0, {num_processes}), got {process_id} "
                         "(argument or RANK)")
    if _jax_started():
        raise RuntimeError("init: call autograd_compile.distributed.init() before any tensor is "
                           "created or computed (JAX's runtime has already started in this "
                           "process, and joining others must come first)")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if process_id != 0:
        _wait_for_coordinator(coordinator, process_id, timeout)
    # jax aborts the process when peers miss the deadline: say why first
    warn = threading.Timer(0.8 * timeout, _say, (
        f"autograd_compile.distributed.init: process {process_id} of {num_processes} is still "
        f"waiting for its peers at {coordinator} after {0.8 * timeout:.0f} s; it stops at "
        f"{timeout} s if they do not all join (a process failed to start, or WORLD_SIZE, RANK "
        "or MASTER_ADDR/MASTER_PORT differ between processes)",))
    warn.daemon = True
    warn.start()
    try:
        jax.distributed.initialize(coordinator, num_processes, process_id,
                                   initialization_timeout=timeout,
                                   heartbeat_timeout_seconds=max(10, min(timeout, 100)),
                                   shutdown_timeout_seconds=max(5, min(timeout, 60)))
    except Exception as e:
        raise RuntimeError(f"init: process {process_id} of {num_processes} could not join the "
                           f"coordinator at {coordinator} within {timeout} s: {e}") from e
    finally:
        warn.cancel()
    _fail_fast_on_uncaught_exception()


def _jax_started() -> bool:
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - a jax without the helper
        return False


def _jax_already_joined() -> bool:
    try:
        from jax._src import distributed
        return distributed.global_state.client is not None
    except (ImportError, AttributeError):  # pragma: no cover
        return False


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _wait_for_coordinator(coordinator: str, process_id: int, timeout: int) -> None:
    """Fail with a Python error (not jax's abort) when no coordinator ever answers."""
    host, _, port = coordinator.rpartition(":")
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=1.0):
                return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise RuntimeError(f"init: process {process_id} found no coordinator at "
                                   f"{coordinator} within {timeout} s ({e}); is rank 0 "
                                   "running with the same MASTER_ADDR/MASTER_PORT?") from None
            time.sleep(0.2)


def _fail_fast_on_uncaught_exception() -> None:
    """An uncaught exception ends a joined process at once (exit code 1): without this
    it would wait at JAX's shutdown barrier for peers that wait for it, and neither the
    launcher nor the peers would see the failure until that barrier timed out."""
    previous = _state.setdefault("excepthook", sys.excepthook)

    def excepthook(kind: type, value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    sys.excepthook = excepthook


def is_initialized() -> bool:
    """True after :func:`init` (``torch.distributed.is_initialized``)."""
    return _state["initialized"]


def is_available() -> bool:
    """Always True: JAX's distributed runtime is part of jaxlib."""
    return True


def _require() -> None:
    if not _state["initialized"]:
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group: Any = None) -> int:
    """This process's index in ``[0, world_size)``; ValueError before :func:`init`,
    as PyTorch."""
    _require()
    return _state["rank"]


def get_world_size(group: Any = None) -> int:
    """The number of processes (not devices; see :func:`device_mesh` for those)."""
    _require()
    return _state["world_size"]


def get_local_rank() -> int:
    """This process's index on its host (``LOCAL_RANK``; 0 when not launched)."""
    return _env_int("LOCAL_RANK") or 0


def barrier(group: Any = None) -> None:
    """Wait until every process reaches this point."""
    _require()
    if _state["multi"]:
        from jax.experimental import multihost_utils
        multihost_utils.sync_global_devices("autograd_compile.distributed.barrier")


def destroy_process_group(group: Any = None) -> None:
    """Leave the process group; :func:`init` may be called again afterwards."""
    _require()
    if _state["multi"]:
        jax.distributed.shutdown()
        sys.excepthook = _state.pop("excepthook", sys.excepthook)
    _state.update(initialized=False, rank=0, world_size=1, multi=False, torch_style=False)


def is_multiprocess() -> bool:
    """True when more than one process was joined (collectives cross processes)."""
    return _state["multi"]


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: Any = None, world_size: int = -1, rank: int = -1,
                       **kwargs: Any) -> None:
    """PyTorch's spelling of :func:`init`; ``backend`` is ignored (JAX picks gloo on CPU,
    NCCL on GPU), ``init_method`` may be ``"tcp://host:port"`` or ``"env://"``.

    A program that joins this way is a PyTorch program: ``DistributedDataParallel``
    then works as PyTorch's (each process computes on its own batch; gradients are
    averaged over the processes after backward) instead of one SPMD program over the
    global batch (:func:`init` with ``acg.distributed.shard``)."""
    address = None
    if init_method and init_method.startswith("tcp://"):
        address = init_method[len("tcp://"):]
    elif init_method and not init_method.startswith("env://"):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not supported "
                         "(use 'env://' or 'tcp://host:port')")
    init(address, world_size if world_size >= 0 else None, rank if rank >= 0 else None,
         timeout=timeout)
    _state["torch_style"] = True  # DistributedDataParallel then behaves as PyTorch's
