"""Run one measurement in a fresh Python process and read back its JSON (issue 19's
first-run figures: a new process has every cache empty, so what it times includes each
compile a user meets the first time).

The child is ``python -m MODULE --child ARGS...``; it prints one line ``RESULT <json>``
last on stdout. A child that fails comes back as ``{"error": ...}`` with its stderr's tail.

>>> parse_result("noise\\nRESULT {\\"a\\": 1}\\n")
{'a': 1}
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

MARK = "RESULT "
TIMEOUT_S = 1800  # a full-size eager generation compiled per shape took ~41 s before issue 19


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The JSON of the last ``RESULT`` line, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    return None


def emit(result: dict[str, Any]) -> None:
    """The child's side: print the result line (flushed: the parent reads it at exit)."""
    print(MARK + json.dumps(result), flush=True)


def run_child(module: str, args: list[str]) -> dict[str, Any]:
    """``python -m module --child *args`` in a fresh process; its result or an error."""
    try:
        proc = subprocess.run([sys.executable, "-m", module, "--child", *args],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    result = parse_result(proc.stdout)
    if proc.returncode != 0 or result is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        return {"error": f"exit status {proc.returncode}: " + " | ".join(tail)}
    return result
