"""Utilities a training program imports as ``torch.utils``: ``data`` (datasets and loaders)."""
from . import data

__all__ = ["data"]
# issue 21 (ckptact): activation checkpointing, torch.utils.checkpoint
from . import checkpoint  # noqa: E402
