"""``python -m autograd_compile demo|bench``: the main job and the benchmarks."""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m autograd_compile {demo,bench} [options]")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "demo":
        from .demo import main as demo
        return demo(rest)
    if command == "bench":
        from .benchmarks.run import main as bench  # benchmarks/, installed here
        return bench(rest)
    print(f"unknown command {command!r}; expected 'demo' or 'bench'", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
