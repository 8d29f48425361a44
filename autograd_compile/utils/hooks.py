"""``torch.utils.hooks``: the handle every ``register_*_hook`` returns, for code that keeps
its own hook dicts the way PyTorch's modules do.

>>> from autograd_compile.utils.hooks import RemovableHandle
>>> hooks = {}
>>> handle = RemovableHandle(hooks)
>>> hooks[handle.id] = print
>>> handle.remove(); hooks
{}
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..tensor import RemovableHandle


def unserializable_hook(f: Callable) -> Callable:
    """Mark a hook as one that need not be saved with its tensor (PyTorch's decorator)."""
    f.__torch_unserializable__ = True  # type: ignore[attr-defined]
    return f


def warn_if_has_hooks(tensor: Any) -> None:
    """Warn when ``tensor`` holds backward hooks not marked :func:`unserializable_hook`."""
    for hook in (getattr(tensor, "_backward_hooks", None) or {}).values():
        if not getattr(hook, "__torch_unserializable__", False):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If "
                          f"this is expected, you can decorate the function with "
                          f"@torch.utils.hooks.unserializable_hook to suppress this warning")


__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]
