"""Which profiler session records on this thread: the state the op observer (recorder.py)
and the range wrappers (instrument.py) share, kept apart so neither imports the other."""
from __future__ import annotations

import threading
from typing import Any

LOCAL = threading.local()  # .session: the Session recording on this thread


def active_session() -> Any:
    """The session recording on this thread, if any."""
    s = getattr(LOCAL, "session", None)
    return s if s is not None and s.recording else None  # (stopped from another thread)
