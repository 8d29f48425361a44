"""Utilities a training program imports as ``torch.utils``: ``data`` (datasets and loaders),
``checkpoint``, ``hooks``, ``model_zoo`` and ``_pytree``."""
from . import data

__all__ = ["data"]
# issue 21 (ckptact): activation checkpointing, torch.utils.checkpoint
from . import checkpoint  # noqa: E402
from . import _pytree, hooks  # noqa: E402
from . import benchmark  # noqa: E402  (torch.utils.benchmark)


def __getattr__(name: str) -> object:
    # torch.utils.tensorboard: loaded on first use, so `import autograd_compile` stays light
    if name == "tensorboard":
        import importlib
        return importlib.import_module(f"{__name__}.tensorboard")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
