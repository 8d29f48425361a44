"""The package layout: no import circles, every old and PyTorch-style import path works,
and the subpackages' teaching docstrings run."""
from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import autograd_compile as acg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "ci"))
import import_cycles  # noqa: E402


@pytest.mark.parametrize("lazy", [False, True], ids=["module-level", "with-lazy-imports"])
def test_the_package_has_no_import_circles(lazy: bool) -> None:
    assert import_cycles.circles(ROOT, lazy) == []


def test_the_circle_finder_finds_a_planted_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "autograd_compile"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import a\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from .b import g\n")
    (pkg / "sub" / "b.py").write_text("from .a import f\n")
    for folder in ("kernels", "benchmarks"):
        (tmp_path / folder).mkdir()
    assert import_cycles.circles(tmp_path, lazy=False) == []
    assert import_cycles.circles(tmp_path, lazy=True) == [
        ["autograd_compile.sub.a", "autograd_compile.sub.b"]]


# old flat paths -> where the code lives now; each old path must be the same module object
MOVED = {
    "autograd_compile.fake": "autograd_compile.tracing.fake",
    "autograd_compile.proxy_tensor": "autograd_compile.tracing.proxy_tensor",
    "autograd_compile.lifted": "autograd_compile.tracing.lifted",
    "autograd_compile.symbolic_shapes": "autograd_compile.tracing.symbolic_shapes",
    "autograd_compile.device": "autograd_compile.devices.model",
    "autograd_compile.cuda": "autograd_compile.devices.cuda",
    "autograd_compile.cpu": "autograd_compile.devices.cpu",
    "autograd_compile.accelerator": "autograd_compile.devices.accelerator",
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_paths_still_import(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_old_paths_work_with_from_imports_in_a_fresh_process() -> None:
    code = ("from autograd_compile.fake import FakeTensorMode\n"
            "from autograd_compile.proxy_tensor import make_fx\n"
            "from autograd_compile.symbolic_shapes import ShapeEnv, SymInt\n"
            "from autograd_compile.compiled_autograd import enable, disable, counters, reset\n"
            "from autograd_compile.compiled_autograd import pure_hook, AutogradCompilerInstance\n"
            "import autograd_compile.cuda, autograd_compile.device\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_pytorch_paths_resolve_to_our_objects() -> None:
    from autograd_compile._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    from autograd_compile.fx.experimental.proxy_tensor import make_fx
    from autograd_compile.fx.experimental.symbolic_shapes import ShapeEnv
    assert make_fx is acg.make_fx is acg.tracing.proxy_tensor.make_fx
    assert ShapeEnv is acg.tracing.shape_env.ShapeEnv
    assert FakeTensorMode is acg.fake.FakeTensorMode and FakeTensor is acg.fake.FakeTensor


def test_compiled_autograd_public_api_and_backend_registry() -> None:
    ca = acg.compiled_autograd
    for name in ("enable", "disable", "counters", "reset", "pure_hook",
                 "AutogradCompilerInstance", "register_backend", "lookup_backend"):
        assert hasattr(ca, name), name
    assert ca.lookup_backend("jax") is acg.backends.get("jax")
    with pytest.raises(ValueError, match="no_such_backend"):
        ca.lookup_backend("no_such_backend")


def test_compiled_autograd_runs_through_a_registered_backend() -> None:
    ca = acg.compiled_autograd
    seen = []

    def recording(gm):
        seen.append(gm)
        return ca.lookup_backend("eager")(gm)

    ca.register_backend("recording_for_test", recording)
    w = acg.tensor([1.0, 2.0], requires_grad=True)
    ca.reset()
    try:
        with ca.enable("recording_for_test"):
            (w * w).sum().backward()
    finally:
        ca.api._BACKENDS.pop("recording_for_test")
    assert len(seen) == 1 and w.grad.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("module", ["autograd_compile.tracing", "autograd_compile.devices",
                                    "autograd_compile.compiled_autograd",
                                    "autograd_compile.autograd.accumulate"])
def test_subpackage_docstrings_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_the_architecture_document_exists_and_the_readme_links_it() -> None:
    doc = ROOT / "docs" / "architecture.md"
    assert doc.exists()
    readme = (ROOT / "README.md").read_text()
    assert "docs/architecture.md" in readme and "../shared/DESIGN.md" not in readme
    for sub in ("compiled_autograd", "tracing", "devices"):
        assert f"{sub}/" in doc.read_text()


def test_every_subpackage_is_installed() -> None:
    """pyproject lists packages by hand: a new folder must be added there, or a user's
    install lacks it."""
    text = (ROOT / "pyproject.toml").read_text()
    for init in (ROOT / "autograd_compile").rglob("__init__.py"):
        dotted = ".".join(init.parent.relative_to(ROOT).parts)
        assert f'"{dotted}"' in text, f"{dotted} is missing from pyproject's packages"


def test_import_starts_no_jax_backend() -> None:
    """distributed.init must come before JAX's runtime starts; importing us must not start it."""
    import subprocess
    import sys
    code = ("import autograd_compile\nfrom jax._src import xla_bridge\n"
            "print(bool(xla_bridge._backends))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
