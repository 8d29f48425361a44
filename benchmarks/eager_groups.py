"""The bench groups of issue 19 (eager execution without compile stalls), run from
``run.main``: ``generate`` (:mod:`.generate`) and ``data`` (:mod:`.data`). Each system
runs in a fresh process, so the first figures include every compile a new user meets.

Their tables go to stdout after the others; with ``--json`` they are added to the
document under ``"generate"`` and ``"data"``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import data as data_group
from . import generate as generate_group
from . import report

# a warm repetition is a whole generation or epoch (a full-size acg epoch takes seconds):
# fewer than the default 30 reps keep a full run in minutes
MAX_REPS = {"generate": 10, "data": 5}


def run_eager_groups(args: argparse.Namespace, torch_ok: bool) -> list[str]:
    """Run the selected groups; print their tables; amend the JSON; return failures."""
    doc: dict = {}
    failures: list[str] = []
    if "generate" in args.group:
        reps = min(args.reps, MAX_REPS["generate"])
        gen = generate_group.run_generate(reps, args.smoke, torch_ok)
        generate_group.print_generate(gen, sys.stdout)
        failures += [f"generate/{r['system']}: {r['error']}" for r in gen if r.get("error")]
        doc["generate"] = gen
    if "data" in args.group:
        data = data_group.run_data(min(args.reps, MAX_REPS["data"]), args.smoke, torch_ok)
        data_group.print_data(data, sys.stdout)
        failures += data_group.failures(data)
        doc["data"] = data
    for f in failures:
        print(f"FAILED {f}", file=sys.stderr)
    if args.json and doc:
        full = json.loads(Path(args.json).read_text())
        full["failures"] = full.get("failures", []) + failures
        report.write_json(args.json, {**full, **doc})
    return failures
