"""``python -m autograd_compile demo|bench|launch``: the main job, the benchmarks, and the
multi-process launcher."""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m autograd_compile {demo,bench,launch} [options]")
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
    print(f"unknown command {command!r}; expected 'demo', 'bench' or 'launch'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
