"""Saved tensors: what a backward formula reads, checked against in-place edits.

A :class:`SavedVariable` remembers the tensor's version when saved; unpacking a
tensor whose version moved raises PyTorch's error. An op's own output is saved
without a strong reference to the output tensor (which owns the node), so no
reference cycle forms; unpacking rebuilds it with the node as its grad_fn.
``saved_tensors_hooks(pack, unpack)`` intercept saving and unpacking.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
          "you need to backward through the graph a second time or if you need to access saved "
          "tensors after calling backward.")


class _HookState(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[Callable, Callable]] = []


_HOOKS = _HookState()

# compiled autograd's capture swaps saved tensors for fake ones here (by id of the
# SavedVariable), so a node's own apply() runs unchanged on fakes
UNPACK_OVERRIDE: dict[int, Any] = {}


class saved_tensors_hooks:
    """Intercept tensors saved for backward: ``pack(t)`` at save, ``unpack(obj)`` at use.

    >>> import autograd_compile as acg
    >>> seen = []
    >>> x = acg.ones(2, requires_grad=True)
    >>> with acg.autograd.graph.saved_tensors_hooks(lambda t: seen.append(1) or t, lambda t: t):
    ...     y = (x * x).sum()
    >>> len(seen) > 0
    True
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.hooks = (pack_hook, unpack_hook)

    def __enter__(self) -> None:
        _HOOKS.stack.append(self.hooks)

    def __exit__(self, *exc: object) -> None:
        _HOOKS.stack.pop()


class SavedVariable:
    """One tensor saved for backward."""

    __slots__ = ("value", "version", "ref", "is_output", "output_nr", "unpack_hook", "freed",
                 "requires_grad", "meta")

    def __init__(self, tensor: Any, is_output: bool = False) -> None:
        self.version = tensor._version
        self.is_output = is_output
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        self.freed = False
        hooks = _HOOKS.stack[-1] if _HOOKS.stack else None
        self.unpack_hook = hooks[1] if hooks else None
        if hooks:  # compiled autograd keys on it: the hook runs only when the node does
            self.meta = (tuple(tensor.shape), tensor.dtype)
        if is_output:  # keep an alias (no grad_fn), not the tensor that owns our node
            self.ref = weakref.ref(tensor)
            self.value = hooks[0](tensor.detach()) if hooks else tensor._shallow_alias()
        else:
            self.ref = None
            self.value = hooks[0](tensor) if hooks else tensor

    def unpack(self, node: Any = None) -> Any:
        """The saved tensor; raise if freed or modified in place since it was saved."""
        if UNPACK_OVERRIDE and id(self) in UNPACK_OVERRIDE:
            return UNPACK_OVERRIDE[id(self)]
        if self.freed:
            raise RuntimeError(_FREED)
        current = self.ref() if self.is_output else (None if self.unpack_hook else self.value)
        if current is not None and current._version != self.version:
            raise RuntimeError(_version_error(current, node, self.version))
        if self.unpack_hook is not None:
            return self._from_hook(node)
        if not self.is_output:
            return self.value
        if current is not None:  # the output itself is alive: it is what was saved
            return current
        return _rebuild_output(self.value, node, self.output_nr, self.requires_grad)

    def check_version(self, node: Any = None) -> None:
        """Raise PyTorch's error if the saved tensor changed in place (no unpack hook call:
        compiled autograd re-checks after hooks ran, unpacking stays once per tensor)."""
        if self.unpack_hook is None:
            self.unpack(node)
            return
        current = self.ref() if self.is_output else None
        if current is not None and current._version != self.version:
            raise RuntimeError(_version_error(current, node, self.version))

    def _from_hook(self, node: Any) -> Any:
        from ..tensor import Tensor
        t = self.unpack_hook(self.value)
        if not isinstance(t, Tensor):
            raise TypeError(f"saved_tensors_hooks: unpack hook returned {type(t).__name__}, "
                            "expected a Tensor")
        return _rebuild_output(t._shallow_alias(), node, self.output_nr, self.requires_grad) \
            if self.is_output else t

    def release(self) -> None:
        self.value, self.freed = None, True


def _rebuild_output(alias: Any, node: Any, output_nr: int, requires_grad: bool) -> Any:
    """The saved alias of a dead output, reconnected to its node (proxy tracing knows
    the alias: it is registered with the output's proxy when the op is recorded)."""
    if requires_grad and node is not None:
        alias._requires_grad, alias.grad_fn, alias._output_nr = True, node, output_nr
    return alias


def output_aliases(t: Any) -> list:
    """Aliases saved for backward of the output ``t`` (tracing maps them to t's proxy)."""
    node = t.grad_fn
    saved = getattr(node, "saved_out", None) or getattr(node, "_saved", None) or ()
    return [s.value for s in saved if s is not None and s.is_output and s.ref() is t
            and s.unpack_hook is None]


def _version_error(t: Any, node: Any, expected: int) -> str:
    owner = (f"output {t._output_nr} of {t.grad_fn.name()}" if t.grad_fn is not None
             else "a leaf tensor")
    user = f" (saved by {node.name()})" if node is not None else ""
    return (f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{t.dtype.name} {list(t.shape)}], which is {owner}{user}, is at "
            f"version {t._version}; expected version {expected} instead. Hint: the inplace "
            f"operation changed a tensor this backward needs; use an out-of-place op or .clone().")
