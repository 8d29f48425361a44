"""Event files: TFRecord framing with CRC32C, written by a background thread.

A TFRecord is ``length (uint64 LE) | masked_crc(length) | data | masked_crc(data)``, with
CRC32C (Castagnoli) masked as TensorFlow does so that a CRC of CRCs stays well spread.

>>> hex(crc32c(b"123456789"))
'0xe3069283'
>>> frame(b"")
b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00)\\x03\\x98\\x07\\xd8\\xea\\x82\\xa2'
"""
from __future__ import annotations

import atexit
import os
import queue
import socket
import struct
import threading
import time
import weakref
from itertools import count

import numpy as np

from . import _proto as pb


def _crc_tables() -> list[list[int]]:
    """Slicing-by-8 tables for the reflected polynomial 0x82F63B78."""
    crc = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        crc = np.where(crc & 1, (crc >> 1) ^ np.uint32(0x82F63B78), crc >> 1)
    tables = [crc]
    for _ in range(7):
        prev = tables[-1]
        tables.append((prev >> 8) ^ tables[0][prev & 0xFF])
    return [t.tolist() for t in tables]  # list indexing is faster than numpy's per item


_T = _crc_tables()


def crc32c(buf: bytes) -> int:
    """CRC32C of ``buf``: 8 bytes a step through the tables, then the tail byte by byte."""
    t0, t1, t2, t3, t4, t5, t6, t7 = _T
    crc = 0xFFFFFFFF
    n8 = len(buf) & ~7
    words = np.frombuffer(buf, dtype="<u4", count=n8 // 4).tolist() if n8 else []
    for lo, hi in zip(words[0::2], words[1::2]):
        crc ^= lo
        crc = (t7[crc & 0xFF] ^ t6[(crc >> 8) & 0xFF] ^ t5[(crc >> 16) & 0xFF]
               ^ t4[crc >> 24] ^ t3[hi & 0xFF] ^ t2[(hi >> 8) & 0xFF]
               ^ t1[(hi >> 16) & 0xFF] ^ t0[hi >> 24])
    for b in buf[n8:]:
        crc = t0[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(buf: bytes) -> int:
    crc = crc32c(buf)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(record: bytes) -> bytes:
    """One TFRecord around ``record``."""
    header = struct.pack("<Q", len(record))
    return (header + struct.pack("<I", masked_crc(header)) + record
            + struct.pack("<I", masked_crc(record)))


_UID = count()  # the ``<n>`` of the file names: one per writer this process opened
_WRITER_NAME = "autograd_compile.utils.tensorboard"
_EVENT_FIELDS = {"file_version": 3, "graph_def": 4, "summary": 5, "session_log": 7,
                 "source_metadata": 10}


def event(wall_time: float, step: int | None = None, **what: bytes) -> bytes:
    """An ``Event``: wall_time (1), step (2), then one of file_version (3), graph_def (4),
    summary (5), session_log (7), and source_metadata (10); ``what`` holds encoded bodies."""
    out = pb.double(1, wall_time) + pb.varint(2, int(step) if step is not None else 0)
    return out + b"".join(pb.msg(_EVENT_FIELDS[name], body) for name, body in what.items())


class EventFileWriter:
    """Writes serialized ``Event`` records to a new file in ``logdir`` from a daemon thread.

    ``add_event`` queues (blocking once ``max_queue`` records wait); the thread writes them
    and flushes the file every ``flush_secs``; ``flush`` and ``close`` write everything queued.
    """

    def __init__(self, logdir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        self._logdir = str(logdir)
        os.makedirs(self._logdir, exist_ok=True)
        name = "events.out.tfevents.%010d.%s.%s.%s" % (
            time.time(), socket.gethostname(), os.getpid(), next(_UID))
        self.path = os.path.join(self._logdir, name) + filename_suffix
        self._file = open(self.path, "wb")
        self._queue: queue.Queue = queue.Queue(max(int(max_queue), 1))
        self._flush_secs = flush_secs
        self._error: BaseException | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="tensorboard-event-writer")
        self._thread.start()
        _OPEN.add(self)
        self.add_event(event(time.time(), file_version=b"brain.Event:2",
                             source_metadata=pb.string(1, _WRITER_NAME)))
        self.flush()

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, serialized: bytes) -> None:
        with self._lock:
            self._check("write to")
            self._queue.put(serialized)

    def flush(self) -> None:
        with self._lock:
            self._check("flush")
            self._queue.join()
            self._check("flush")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _OPEN.discard(self)
            self._queue.put(None)
            self._thread.join()
            self._file.flush()
            self._file.close()
            if self._error is not None:
                raise self._error

    def _check(self, what: str) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise OSError(f"cannot {what} a closed event file: {self.path}")

    def _run(self) -> None:
        next_flush = time.monotonic() + self._flush_secs
        while True:
            try:
                item = self._queue.get(timeout=max(next_flush - time.monotonic(), 0.001))
            except queue.Empty:
                item = b""
            try:
                if item and self._error is None:
                    self._file.write(frame(item))
                if time.monotonic() >= next_flush and self._error is None:
                    self._file.flush()
                    next_flush = time.monotonic() + self._flush_secs
            except BaseException as e:  # surfaced to the training thread on its next call
                self._error = e
            finally:
                if item != b"":
                    self._queue.task_done()
            if item is None:
                return


_OPEN: weakref.WeakSet[EventFileWriter] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    """A program that ends without ``close()`` keeps its last events (PyTorch's may lose
    up to ``flush_secs`` of them)."""
    for w in list(_OPEN):
        try:
            w.flush()
        except Exception:  # a writer that failed already said so to its caller
            pass
