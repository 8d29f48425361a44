"""``jit.fork`` / ``jit.wait`` and their ``Future``.

Outside TorchScript PyTorch's ``fork`` runs the function at once, in the caller's thread, and
returns a completed future; so does this one (an exception raises from ``fork`` itself).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

__all__ = ["Future", "fork", "wait"]

T = TypeVar("T")


class Future(Generic[T]):
    """A value that is, or will be, set: ``wait()``/``value()`` read it, ``then`` chains.

    >>> f = Future(); f.set_result(3); f.done(), f.wait(), f.then(lambda g: g.value() + 1).wait()
    (True, 3, 4)
    """

    def __init__(self, *, devices: Any = None) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[["Future[T]"], Any]] = []
        self._lock = threading.Lock()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> T:
        """Block until set; return the value or raise the exception it was set with."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    value = wait  # set by the time it is read in every use here

    def set_result(self, result: T) -> None:
        self._finish(result, None)

    def set_exception(self, result: BaseException) -> None:
        self._finish(None, result)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Future can only be marked completed once.")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback: Callable[["Future[T]"], None]) -> None:
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[["Future[T]"], Any]) -> "Future[Any]":
        """A future of ``callback(self)``, set once this one is."""
        out: Future[Any] = Future()

        def run(fut: "Future[T]") -> None:
            try:
                out.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001  (the chained future carries it)
                out.set_exception(e)
        self.add_done_callback(run)
        return out


def fork(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Run ``func(*args, **kwargs)`` now and return its completed :class:`Future`.

    >>> wait(fork(lambda x: x * 2, 21))
    42
    """
    fut: Future[T] = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future[T]) -> T:
    """The value of a :class:`Future` from :func:`fork`."""
    return future.wait()
