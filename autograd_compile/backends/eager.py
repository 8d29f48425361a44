"""The eager backend: run the captured GraphModule as Python, op by op.

Useful to debug a capture (the generated code is what runs, and a failure
points at its line) and as the reference the JAX backend is tested against.
"""
from __future__ import annotations

from typing import Callable

from ..fx import GraphModule


def eager(gm: GraphModule) -> Callable:
    """compiler_fn that returns the graph module itself."""
    return gm
