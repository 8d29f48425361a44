"""Autograd graph nodes: ``grad_fn`` objects and the leaf accumulators.

A :class:`Node` is one backward function. It receives the gradients of its
forward outputs (``grad_outputs``, one per output slot) and returns the
gradients of its forward inputs (``grad_inputs``, one per ``next_edges`` entry).
Hooks live on nodes: per-slot tensor pre-hooks, ``retain_grad`` slots, node
pre-hooks ``fn(grad_outputs)`` and post-hooks ``fn(grad_inputs, grad_outputs)``.

>>> import autograd_compile as acg
>>> x = acg.ones(2, requires_grad=True)
>>> y = (x * 2).sum()
>>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
('SumBackward0', 'MulBackward0')
"""
from __future__ import annotations

import itertools
import sys
import weakref
from typing import Any, Callable, Sequence

from ..tensor import HookDict, RemovableHandle, Tensor
from .accumulate import accumulate_into_grad, run_post_acc_hooks

Edge = tuple["Node | None", int]
_seq = itertools.count()
_LEAF_SEQ = sys.maxsize  # accumulators run as soon as they are ready, as in PyTorch


class TensorMeta:
    """Shape and dtype of a tensor an op did not save (enough for most formulas)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape, self.dtype = shape, dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    @property
    def mT(self) -> "TensorMeta":
        """The matrix transpose's shape (formulas pass an unsaved operand along as one)."""
        return TensorMeta(self.shape[:-2] + self.shape[-2:][::-1], self.dtype)

    def __repr__(self) -> str:
        return f"TensorMeta({list(self.shape)}, {self.dtype.name})"


class Node:
    """Base of every backward function in the autograd graph."""

    __slots__ = ("next_edges", "seq", "input_meta", "_pre_hooks", "_post_hooks",
                 "_tensor_hooks", "_retained", "_ca_memo", "__weakref__")

    def __init__(self, next_edges: Sequence[Edge] = (), seq: int | None = None) -> None:
        self.next_edges = tuple(next_edges)
        self.seq = next(_seq) if seq is None else seq
        self.input_meta: list[TensorMeta] = []  # shape/dtype of each forward output slot
        self._pre_hooks: HookDict | None = None
        self._post_hooks: HookDict | None = None
        self._tensor_hooks: dict[int, HookDict] | None = None
        self._retained: dict[int, weakref.ref] | None = None
        self._ca_memo = None  # compiled autograd's cached visit of this node

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def next_functions(self) -> tuple[Edge, ...]:
        return tuple((n, i) if n is not None else (None, 0) for n, i in self.next_edges)

    @property
    def num_outputs(self) -> int:
        return len(self.input_meta)

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        raise NotImplementedError(f"{self.name()}.apply")

    def __call__(self, *grad_outputs: Tensor | None) -> tuple:
        return tuple(self.apply(list(grad_outputs)))

    def release_variables(self) -> None:
        """Free saved tensors after a backward without retain_graph."""

    # -- hooks -------------------------------------------------------------------------
    def register_prehook(self, hook: Callable[[tuple], tuple | None]) -> RemovableHandle:
        """``hook(grad_outputs)`` before this node runs; may return replacements."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = hook
        return handle

    def register_hook(self, hook: Callable[[tuple, tuple], tuple | None]) -> RemovableHandle:
        """``hook(grad_inputs, grad_outputs)`` after this node ran; may return replacements."""
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = hook
        return handle

    def _tensor_hooks_for(self, slot: int) -> HookDict:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return self._tensor_hooks.setdefault(slot, HookDict())

    def _retain_grad_for(self, slot: int, tensor: Tensor) -> None:
        if self._retained is None:
            self._retained = {}
        self._retained[slot] = weakref.ref(tensor)

    def tensor_pre_hooks(self) -> list[tuple[int, Callable]]:
        """(slot, hook) pairs in the order they run."""
        if not self._tensor_hooks:
            return []
        return [(slot, h) for slot, d in self._tensor_hooks.items() for h in list(d.values())]

    def retained_tensors(self) -> list[tuple[int, Tensor]]:
        if not self._retained:
            return []
        return [(slot, t) for slot, r in self._retained.items() if (t := r()) is not None]

    def pre_hooks(self) -> list[Callable]:
        return list(self._pre_hooks.values()) if self._pre_hooks else []

    def post_hooks(self) -> list[Callable]:
        return list(self._post_hooks.values()) if self._post_hooks else []


class AccumulateGrad(Node):
    """The sink of a leaf tensor: writes (accumulates) its ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor) -> None:
        super().__init__((), seq=_LEAF_SEQ)
        self.variable = variable
        self.input_meta = [TensorMeta(tuple(variable.shape), variable.dtype)]

    def _tensor_hooks_for(self, slot: int) -> HookDict:
        return self.variable._leaf_hooks()

    def tensor_pre_hooks(self) -> list[tuple[int, Callable]]:
        hooks = self.variable._backward_hooks
        return [(0, h) for h in list(hooks.values())] if hooks else []

    def post_acc_hooks(self) -> list[Callable]:
        hooks = self.variable._post_acc_hooks
        return list(hooks.values()) if hooks else []

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        self.apply_with_hooks(grad_outputs, self.post_acc_hooks())
        return []

    def apply_with_hooks(self, grad_outputs: list[Tensor | None], post_acc: list[Callable]
                         ) -> Tensor | None:
        """Write ``.grad``, then run the post-accumulate-grad hooks given; returns the new
        ``.grad`` when it is the incoming gradient itself (see accumulate_into_grad)."""
        g = grad_outputs[0]
        if g is None:
            return None
        stolen = accumulate_into_grad(self.variable, g)
        run_post_acc_hooks(self.variable, post_acc)
        return stolen


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's unique AccumulateGrad node (kept alive by the graphs that use it)."""
    node = t._acc_ref() if t._acc_ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._acc_ref = weakref.ref(node)
    return node


def gradient_edge(t: Tensor) -> Edge:
    """Where a gradient for ``t`` flows: its grad_fn slot, or its accumulator."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


class GraphRoot(Node):
    """Feeds the root gradients of one backward call into their nodes."""

    __slots__ = ("grads",)

    def __init__(self, edges: Sequence[Edge], grads: Sequence[Tensor]) -> None:
        super().__init__(edges, seq=_LEAF_SEQ + 1)
        self.grads = list(grads)

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        return list(self.grads)


class ErrorNode(Node):
    """Stands where a derivative is missing; raises only if backward reaches it."""

    __slots__ = ("message",)

    def __init__(self, message: str, next_edges: Sequence[Edge]) -> None:
        super().__init__(next_edges)
        self.message = message

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        raise RuntimeError(self.message)
