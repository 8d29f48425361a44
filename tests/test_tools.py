"""The command-line tools work without the optional extras, say which extra adds what, and
describe themselves; an unknown ACG_LOGS channel warns."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# a child interpreter in which tqdm and matplotlib cannot be imported (a venv without extras)
_WITHOUT_EXTRAS = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("tqdm", "matplotlib"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Block())
from autograd_compile.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _WITHOUT_EXTRAS, *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_bench_runs_without_tqdm_and_matplotlib(tmp_path: Path) -> None:
    png = tmp_path / "bench.png"
    out = _run("bench", "--group", "backward", "--smoke", "--no-sweep", "--workload", "mlp",
               "--systems", "acg-eager,jax-floor", "--plot", str(png))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "tqdm is not installed (pip install 'autograd-compile[bench]' adds it)" in out.stderr
    assert "--plot needs matplotlib, which is not installed" in out.stderr
    assert "mlp" in out.stdout and not png.exists()


def test_help_lists_commands_and_options_with_descriptions() -> None:
    top = _run("--help")
    assert top.returncode == 0
    described = {line.split()[0] for line in top.stdout.splitlines()
                 if line.startswith("  ") and len(line.split()) > 3}
    assert described == {"demo", "bench", "launch"}
    bench = _run("bench", "--help")
    assert bench.returncode == 0 and "Backward-only" not in bench.stdout
    assert "whole" in bench.stdout or "step group" in bench.stdout
    assert "--plot PATH" in bench.stdout and "write a PNG bar chart" in bench.stdout
    demo = _run("demo", "--help")
    assert "training steps per system" in demo.stdout and "--systems" in demo.stdout
    bad = _run("nope")
    assert bad.returncode == 2 and "unknown command 'nope'" in bad.stderr and "demo" in bad.stderr


def test_an_unknown_log_channel_warns_once_naming_the_channels() -> None:
    import os
    env = dict(os.environ, ACG_LOGS="compiled_autogard,aot")
    out = subprocess.run([sys.executable, "-c", "import autograd_compile, autograd_compile.aot"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0
    assert out.stderr.count("ACG_LOGS: unknown channel compiled_autogard") == 1
    assert "the channels are compiled_autograd, compiled_autograd_verbose, aot" in out.stderr
