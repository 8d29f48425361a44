"""``acg.autograd.graph``: graph-level utilities (saved-tensor hooks, Node)."""
from .node import Node
from .saved import saved_tensors_hooks

__all__ = ["Node", "saved_tensors_hooks"]
