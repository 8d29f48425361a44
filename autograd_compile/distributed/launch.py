"""``python -m autograd_compile launch``: start N processes like ``torchrun``.

Each process gets torchrun's environment (``MASTER_ADDR``, ``MASTER_PORT``,
``WORLD_SIZE``, ``RANK``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), which
:func:`autograd_compile.distributed.init` reads. Output is streamed line by line with a
``[rank i]`` prefix. Fail-fast: when one process exits non-zero, the others are
terminated and the launcher exits with that code, naming the rank that failed first and
its exception.

Quiet by default: gloo's "Rank N is connected to M peer ranks" lines (printed by the
C++ collectives library of every process, with no switch of its own) are dropped, and
once a rank has failed, what the other ranks print afterwards is held back: it is the
consequence (the C++ runtime's log and stack of a process whose peer died, a collective
that failed because a peer is gone), not the cause. ``ACG_LOGS=distributed`` shows
everything. A script run without the launcher prints all of it.

Multi-host: run the same command on every host with the first host's address::

    # host 0                                   # host 1
    python -m autograd_compile launch \\        python -m autograd_compile launch \\
      --nnodes 2 --node-rank 0 --nproc 4 \\       --nnodes 2 --node-rank 1 --nproc 4 \\
      --coordinator host0:29500 train.py         --coordinator host0:29500 train.py

``--max-time S`` bounds the whole run (CI's guard against a hang that no peer detects,
such as a deadlocked collective): past it, every process still running prints its Python
stack (``faulthandler``, on SIGABRT) and is stopped, and the launcher exits 124 (as
``timeout(1)``), naming those ranks.
"""
from __future__ import annotations

import argparse
import collections
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import IO

GRACE_SECONDS = 5.0  # after SIGTERM, before SIGKILL
HOLD_SECONDS = 0.3  # a rank's stderr line waits this long: has a peer died just before?
DUMP_SECONDS = 3.0  # past --max-time: how long the ranks get to print their stacks
OVERTIME = 124  # the exit code of a run stopped by --max-time (timeout(1)'s)
# gloo's connection report, printed to stdout by every process for every communicator
# (two of its threads may print at once: a line of only its fragments is one of them too)
_GLOO_CONNECTED = re.compile(r"^(?=.*(?:\[Gloo\] Rank|peer ranks))(?:\[Gloo\] Rank |\d+|is connected to |peer ranks\.|"
                             r"Expected number of connected peer ranks is : |\s)+$")
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
    p.add_argument("--max-time", "--max_time", dest="max_time", type=float, default=None,
                   metavar="S", help="seconds the whole run may take; past it every process "
                                     "still running prints its Python stack and is stopped "
                                     f"(exit code {OVERTIME})")
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
    if ns.max_time is not None:  # a rank stopped for overtime prints its stack on SIGABRT
        env["PYTHONFAULTHANDLER"] = "1"
    return env


class Output:
    """Where the workers' lines go: prefixed with their rank, gloo's connection lines
    dropped, and after the first failure the other ranks' lines held back (unless
    ``verbose``). Remembers each rank's last stderr lines to name the first failure."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.lock = threading.Lock()
        self.first: tuple[int, int, float] | None = None  # rank, exit code, time
        self.overtime = False  # past --max-time: exits are the launcher's doing, not failures
        self.hidden: collections.Counter = collections.Counter()
        self.tail: dict[int, collections.deque] = collections.defaultdict(
            lambda: collections.deque(maxlen=200))

    def failed(self, rank: int, code: int, when: float) -> None:
        with self.lock:
            if self.first is None and not self.overtime:
                self.first = (rank, code, when)

    def write(self, rank: int, line: str, out: IO[str], when: float, err: bool) -> None:
        if not self.verbose and _GLOO_CONNECTED.match(line):
            return
        with self.lock:
            first = self.first
            # a line that came after a peer died is that death's echo
            if not self.verbose and first is not None and first[0] != rank and \
                    when >= first[2] - 0.05:
                self.hidden[rank] += 1
                return
            if err:
                self.tail[rank].append(line.rstrip("\n"))
            out.write(f"[rank {rank}] {line}")
            out.flush()

    def summary(self) -> str | None:
        """One line naming the rank that failed first, how, and its exception."""
        if self.first is None:
            return None
        rank, code, _ = self.first
        how = f"killed by {signal.Signals(-code).name}" if code < 0 and -code in \
            signal.valid_signals() else f"exit code {code}"
        error = _last_exception(list(self.tail[rank]))
        text = f"[launcher] rank {rank} failed first ({how})"
        text += f": {error} (its traceback is above)" if error else ""
        if self.hidden:
            ranks = ", ".join(str(r) for r in sorted(self.hidden))
            text += (f"; the output of rank {ranks} after that is hidden "
                     "(ACG_LOGS=distributed shows it)")
        return text


def _last_exception(lines: list[str]) -> str | None:
    """The exception line of the last Python traceback among ``lines``."""
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call")]
    if not starts:
        return None
    body = [ln for ln in lines[starts[-1] + 1:] if ln and not ln[0].isspace()]
    return body[0] if body else None  # the frames are indented; the exception is not


def _pump(stream: IO[str], rank: int, out: IO[str], output: Output, err: bool) -> None:
    """Copy lines from a child to our stream; stderr lines wait ``HOLD_SECONDS`` (in a
    second thread, so a burst is not delayed line by line) so that a failure of another
    rank just before them is known when they are written."""
    if not err:
        for line in iter(stream.readline, ""):
            output.write(rank, line, out, time.monotonic(), err)
        stream.close()
        return
    lines: queue.Queue = queue.Queue()

    def writer() -> None:
        while (item := lines.get()) is not None:
            line, when = item
            time.sleep(max(0.0, when + HOLD_SECONDS - time.monotonic()))
            output.write(rank, line, out, when, err)
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    for line in iter(stream.readline, ""):
        lines.put((line, time.monotonic()))
    stream.close()
    lines.put(None)
    thread.join()


def start(ns: argparse.Namespace, output: Output
          ) -> list[tuple[int, subprocess.Popen, list[threading.Thread]]]:
    host, port = (ns.coordinator.rsplit(":", 1) if ns.coordinator
                  else ("127.0.0.1", str(free_port())))
    procs = []
    die_with_parent = _die_with_parent_fn()
    for local in range(ns.nproc):
        rank = ns.node_rank * ns.nproc + local
        proc = subprocess.Popen([sys.executable, ns.script, *ns.args], text=True, bufsize=1,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=child_env(ns, local, host, port),
                                preexec_fn=die_with_parent)
        pumps = [threading.Thread(target=_pump, args=(s, rank, o, output, err), daemon=True)
                 for s, o, err in ((proc.stdout, sys.stdout, False),
                                   (proc.stderr, sys.stderr, True))]
        for t in pumps:
            t.start()
        procs.append((rank, proc, pumps))
    return procs


def _signal_and_wait(procs: list, sig: int, seconds: float) -> list:
    """Send ``sig`` to every live process and wait up to ``seconds`` in all; the processes
    still running after that."""
    for _, proc, _ in procs:
        if proc.poll() is None:
            proc.send_signal(sig)
    deadline = time.monotonic() + seconds
    left = []
    for _, proc, _ in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            left.append(proc)
    return left


def stop(procs: list) -> None:
    """SIGTERM every live process, SIGKILL what is left after the grace period."""
    for proc in _signal_and_wait(procs, signal.SIGTERM, GRACE_SECONDS):
        proc.kill()
        proc.wait()


def _watch(procs: list, output: Output) -> queue.Queue:
    """A thread per process records the moment it exits (and the first failure)."""
    exits: queue.Queue = queue.Queue()

    def wait(rank: int, proc: subprocess.Popen) -> None:
        code = proc.wait()
        when = time.monotonic()
        if code != 0:
            output.failed(rank, code, when)
        exits.put((rank, code))
    for rank, proc, _ in procs:
        threading.Thread(target=wait, args=(rank, proc), daemon=True).start()
    return exits


def supervise(procs: list, output: Output, max_time: float | None = None) -> int:
    """Wait for every process; the first failure stops the rest (fail-fast); past
    ``max_time`` seconds the ones still running are stopped (:func:`overtime`)."""
    live = {item[0]: item for item in procs}
    exits = _watch(procs, output)
    deadline = None if max_time is None else time.monotonic() + max_time
    while live:
        if deadline is not None and time.monotonic() > deadline:
            return overtime(list(live.values()), output, max_time)
        try:
            rank, code = exits.get(timeout=0.1)  # a timeout: signals reach the main thread
        except queue.Empty:
            continue
        live.pop(rank, None)
        if code != 0:
            print(f"[launcher] rank {rank} exited with code {code}; stopping the other "
                  f"{len(live)} process(es)", file=sys.stderr, flush=True)
            stop(list(live.values()))
            first = output.first[1] if output.first else code
            return first if first > 0 else 128 - first  # killed by signal -s: 128 + s
    return 0


def overtime(live: list, output: Output, max_time: float | None) -> int:
    """The run took longer than ``--max-time``: each live rank prints its Python stack
    (SIGABRT with ``PYTHONFAULTHANDLER``), then every one left is stopped."""
    ranks = ", ".join(str(rank) for rank, _, _ in live)
    print(f"[launcher] the run exceeded --max-time {max_time:g} s with rank {ranks} still "
          "running; their Python stacks follow, then they are stopped", file=sys.stderr,
          flush=True)
    with output.lock:
        output.overtime = True  # every rank's stack is shown, none is "the first failure"
    _signal_and_wait(live, signal.SIGABRT, DUMP_SECONDS)  # faulthandler prints the stacks
    stop(live)
    return OVERTIME


def main(argv: list[str]) -> int:
    """Entry point of ``python -m autograd_compile launch``; returns the exit code."""
    ns = parse_args(argv)
    from ..config import log_enabled
    output = Output(verbose=log_enabled("distributed"))
    previous = {s: signal.signal(s, _raise_terminated) for s in (signal.SIGTERM, signal.SIGHUP)}
    procs: list = []
    summary = None
    try:
        procs = start(ns, output)
        code = supervise(procs, output, ns.max_time)
        # a worker failed (not the launcher stopped it, nor --max-time)
        summary = code and code != OVERTIME and output.summary
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
    text = summary() if summary else None
    if text:
        print(text, file=sys.stderr, flush=True)
    return code
