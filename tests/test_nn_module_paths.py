"""PyTorch's module paths resolve: ``torch.nn.modules.rnn.LSTM`` is ``acg.nn.LSTM`` (programs
import from there, e.g. to list safe globals for checkpoint loading)."""
from __future__ import annotations

import importlib
import inspect

import pytest

import autograd_compile as acg


@pytest.mark.parametrize("path, name", [("rnn", "LSTM"), ("linear", "Linear"),
                                        ("activation", "LeakyReLU"), ("conv", "ConvTranspose2d"),
                                        ("transformer", "TransformerEncoderLayer"),
                                        ("normalization", "GroupNorm"), ("dropout", "Dropout2d"),
                                        ("container", "Sequential"), ("sparse", "Embedding"),
                                        ("module", "Module"), ("loss", "CrossEntropyLoss")])
def test_pytorch_module_paths_are_our_classes(path: str, name: str) -> None:
    module = importlib.import_module(f"autograd_compile.nn.modules.{path}")
    assert getattr(module, name) is getattr(acg.nn, name)
    assert getattr(acg.nn.modules, name) is getattr(acg.nn, name)


def test_every_class_torch_keeps_in_a_submodule_is_there_when_we_have_it() -> None:
    torch_modules = pytest.importorskip("torch.nn.modules")
    import pkgutil
    missing = []
    for info in pkgutil.iter_modules(torch_modules.__path__):
        if info.name.startswith("_"):
            continue
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        for name in getattr(theirs, "__all__", []):
            if inspect.isclass(getattr(theirs, name, None)) and hasattr(acg.nn, name):
                try:
                    ours = importlib.import_module(f"autograd_compile.nn.modules.{info.name}")
                except ModuleNotFoundError:
                    missing.append(f"{info.name} (module)")
                    continue
                if getattr(ours, name, None) is not getattr(acg.nn, name):
                    missing.append(f"{info.name}.{name}")
    assert missing == []


def test_every_torch_distributions_submodule_resolves_to_our_classes() -> None:
    """``from torch.distributions.categorical import Categorical`` (CleanRL's PPO) ports."""
    torch_dist = pytest.importorskip("torch.distributions")
    import pkgutil
    wrong = []
    for info in pkgutil.iter_modules(torch_dist.__path__):
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        ours = importlib.import_module(f"autograd_compile.distributions.{info.name}")
        for name in getattr(theirs, "__all__", []):
            top = getattr(acg.distributions, name, None)  # (constraints etc. live only there)
            if not hasattr(ours, name) or (top is not None and getattr(ours, name) is not top):
                wrong.append(f"{info.name}.{name}")
    assert wrong == []
    from autograd_compile.distributions.categorical import Categorical
    assert Categorical is acg.distributions.Categorical
