"""``python -m autograd_compile launch``: start N processes like ``torchrun``.

Each process gets torchrun's environment (``MASTER_ADDR``, ``MASTER_PORT``,
``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), which
:func:`autograd_compile.distributed.init` reads. Output is streamed line by line with a
``[rank i]`` prefix. Fail-fast: when one process exits non-zero, the others are
terminated and the launcher exits with that code.

Multi-host: run the same command on every host with the first host's address::

    # host 0                                   # host 1
    python -m autograd_compile launch \\        python -m autograd_compile launch \\
      --nnodes 2 --node-rank 0 --nproc 4 \\       --nnodes 2 --node-rank 1 --nproc 4 \\
      --coordinator host0:29500 train.py         --coordinator host0:29500 train.py
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO

GRACE_SECONDS = 5.0  # after SIGTERM, before SIGKILL
_PR_SET_PDEATHSIG = 1  # linux prctl: the kernel signals a child when its parent dies


class Terminated(Exception):
    """The launcher got SIGTERM or SIGHUP (``kill``, ``timeout``, a job scheduler)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _die_with_parent_fn() -> "object | None":
    """A function for each child to run before exec (Linux): SIGTERM when the launcher dies,
    even by SIGKILL, so no worker is ever left training with parent PID 1. Built in the
    launcher, so the child between fork and exec only makes the one system call."""
    if sys.platform != "linux":
        return None  # the launcher's own signal handlers still stop the workers
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m autograd_compile launch",
                                description="Start N processes of a training script, "
                                            "joined by autograd_compile.distributed.init().")
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int,
                   default=1, help="processes on this host (default 1)")
    p.add_argument("--nnodes", type=int, default=1, help="hosts taking part (default 1)")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0,
                   help="this host's index in [0, nnodes)")
    p.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="address of the coordinator (rank 0's host); default localhost and "
                        "a free port (one host only)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds a process waits for its peers (sets ACG_DIST_TIMEOUT)")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = p.parse_args(argv)
    if ns.nproc < 1 or ns.nnodes < 1 or not 0 <= ns.node_rank < ns.nnodes:
        p.error(f"need --nproc >= 1, --nnodes >= 1 and 0 <= --node-rank < --nnodes "
                f"(got {ns.nproc}, {ns.nnodes}, {ns.node_rank})")
    if ns.nnodes > 1 and ns.coordinator is None:
        p.error("--nnodes > 1 needs --coordinator HOST:PORT (the same on every host)")
    return ns


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(ns: argparse.Namespace, local_rank: int, host: str, port: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MASTER_ADDR=host, MASTER_PORT=port, WORLD_SIZE=str(ns.nproc * ns.nnodes),
               RANK=str(ns.node_rank * ns.nproc + local_rank), LOCAL_RANK=str(local_rank),
               LOCAL_WORLD_SIZE=str(ns.nproc), PYTHONUNBUFFERED="1")
    env.pop("ACG_COORDINATOR", None)  # MASTER_ADDR/PORT say it
    if ns.timeout is not None:
        env["ACG_DIST_TIMEOUT"] = str(ns.timeout)
    return env


def _pump(stream: IO[str], prefix: str, out: IO[str], lock: threading.Lock) -> None:
    """Copy lines from a child to our stream, each with its rank prefix."""
    for line in iter(stream.readline, ""):
        with lock:
            out.write(prefix + line)
            out.flush()
    stream.close()


def start(ns: argparse.Namespace) -> list[tuple[int, subprocess.Popen, list[threading.Thread]]]:
    host, port = (ns.coordinator.rsplit(":", 1) if ns.coordinator
                  else ("127.0.0.1", str(free_port())))
    lock = threading.Lock()
    procs = []
    die_with_parent = _die_with_parent_fn()
    for local in range(ns.nproc):
        rank = ns.node_rank * ns.nproc + local
        proc = subprocess.Popen([sys.executable, ns.script, *ns.args], text=True, bufsize=1,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=child_env(ns, local, host, port),
                                preexec_fn=die_with_parent)
        pumps = [threading.Thread(target=_pump, args=(s, f"[rank {rank}] ", o, lock), daemon=True)
                 for s, o in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))]
        for t in pumps:
            t.start()
        procs.append((rank, proc, pumps))
    return procs


def stop(procs: list) -> None:
    """SIGTERM every live process, SIGKILL what is left after the grace period."""
    for _, proc, _ in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for _, proc, _ in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def supervise(procs: list) -> int:
    """Wait for every process; the first failure stops the rest (fail-fast)."""
    live = list(procs)
    while live:
        for item in list(live):
            rank, proc, _ = item
            code = proc.poll()
            if code is None:
                continue
            live.remove(item)
            if code != 0:
                print(f"[launcher] rank {rank} exited with code {code}; stopping the other "
                      f"{len(live)} process(es)", file=sys.stderr, flush=True)
                stop(live)
                return code if code > 0 else 128 - code  # killed by signal -s: 128 + s
        time.sleep(0.05)
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``python -m autograd_compile launch``; returns the exit code."""
    ns = parse_args(argv)
    previous = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    procs: list = []
    try:
        procs = start(ns)
        code = supervise(procs)
    except KeyboardInterrupt:
        stop(procs)
        code = 130
    except Terminated as e:  # stop the workers, then exit as a process killed by the signal
        print(f"[launcher] got {e}; stopping {len(procs)} process(es)", file=sys.stderr,
              flush=True)
        stop(procs)
        code = 128 + e.signum
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for _, _, pumps in procs:
        for t in pumps:
            t.join(timeout=2.0)
    return code
