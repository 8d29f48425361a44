"""Utilities a training program imports as ``torch.utils``: ``data`` (datasets and loaders),
``checkpoint``, ``hooks``, ``model_zoo`` and ``_pytree``."""
from . import data

__all__ = ["data"]
# issue 21 (ckptact): activation checkpointing, torch.utils.checkpoint
from . import checkpoint  # noqa: E402
from . import _pytree, hooks  # noqa: E402
