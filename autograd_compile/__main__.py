"""``python -m autograd_compile demo|bench|launch``: the main job, the benchmarks, and the
multi-process launcher. ``python -m autograd_compile COMMAND --help`` lists a command's options.
"""
from __future__ import annotations

import sys

COMMANDS = {
    "demo": "train a small model with compiled backward and hooks; print eager vs compiled "
            "throughput",
    "bench": "benchmarks side by side in one process: backward, whole step, per-op groups",
    "launch": "run a script in N processes joined by acg.distributed (like torchrun)",
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m autograd_compile {demo,bench,launch} [options]", "",
             "commands:"]
    lines += [f"  {name:{width}}  {what}" for name, what in COMMANDS.items()]
    lines += ["", "python -m autograd_compile COMMAND --help lists a command's options."]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    command, rest = argv[0], argv[1:]
    if command == "demo":
        from .demo import main as demo
        return demo(rest)
    if command == "bench":
        from .benchmarks.run import main as bench  # benchmarks/, installed here
        return bench(rest)
    if command == "launch":  # torchrun-like: N processes joined by distributed.init()
        from .distributed.launch import main as launch
        return launch(rest)
    print(f"unknown command {command!r}\n\n{usage()}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
