"""Backward formulas (the autograd layer's own table) and the Autograd-key kernel.

``kernels/`` fills :data:`DERIVATIVES` through :func:`register_derivative`; the
one Autograd fallback below reads it for every op: it runs the op below the
Autograd key, then, if an input requires grad, records an :class:`OpNode`.

A formula is ``fn(grad, *args, out) -> grads``: ``grad`` is the output's
gradient (a tuple for multi-output ops), ``args`` are the op's arguments in
schema order (saved tensors, or :class:`TensorMeta` for tensors the op did not
save), ``out`` the output when saved (else None). It returns one gradient (or
None) per Tensor argument, a list for a ``Tensor[]`` argument, and is written
in our own ops, so backward is traced, compiled and differentiable again.

``save`` may name, per input, what that input's gradient reads: then an input
is saved only when a gradient that reads it is needed (PyTorch's derivatives
do the same), and :func:`needs_input_grad` tells the formula which gradients
to compute (``x * w`` with only ``w`` requiring grad saves ``x`` alone)::

>>> register_derivative(op, lambda g, x, y, out: (g * y, g * x),
...                     save={"self": ("other",), "other": ("self",)})  # doctest: +SKIP
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..dispatch.dispatcher import OpOverload, boxed
from ..dispatch.keys import DispatchKey
from ..tensor import Tensor, is_floating
from .node import ErrorNode, Node, TensorMeta, gradient_edge
from .saved import SavedVariable

_AUTOGRAD = DispatchKey.Autograd


@dataclass(frozen=True, slots=True)
class Derivative:
    fn: Callable | None  # None: the op is not differentiable (its outputs never require grad)
    save: frozenset[str] | None  # argument names (and "out") to save; None: every Tensor arg
    # per input: the names its gradient reads (saved only when that gradient is needed)
    uses: tuple[tuple[str, frozenset[str]], ...] | None = None


DERIVATIVES: dict[OpOverload, Derivative] = {}
SaveSpec = Iterable[str] | Mapping[str, Iterable[str]] | None


def register_derivative(op: OpOverload, fn: Callable | None,
                        save: SaveSpec = None) -> Callable[[], None]:
    """Set ``op``'s backward formula; returns an undo callable. ``save``: the names the
    formula reads, or per input the names its gradient reads (see the module docstring)."""
    if op in DERIVATIVES:
        raise RuntimeError(f"{op.qualname} already has a derivative registered")
    DERIVATIVES[op] = _derivative(op, fn, save)
    return lambda: DERIVATIVES.pop(op, None)


def _derivative(op: OpOverload, fn: Callable | None, save: SaveSpec) -> Derivative:
    if not isinstance(save, Mapping):
        return Derivative(fn, None if save is None else frozenset(save))
    names = {a.name for a in op.schema.arguments} | {"out"}
    uses = {k: frozenset((v,) if isinstance(v, str) else v) for k, v in save.items()}
    unknown = {n for n in (set(uses) | set().union(*uses.values())) - names
               if _OUT_INDEX.fullmatch(n) is None}
    if unknown:
        raise ValueError(f"{op.qualname}: save names unknown arguments {sorted(unknown)}")
    return Derivative(fn, frozenset().union(*uses.values()), tuple(uses.items()))


class _Unneeded(threading.local):
    def __init__(self) -> None:
        self.ids: frozenset[int] | set[int] = frozenset()


_UNNEEDED = _Unneeded()


def needs_input_grad(value: Any) -> bool:
    """Inside a formula: whether the gradient of the argument ``value`` is needed (its
    input requires grad). Formulas skip the others, whose partners may not be saved."""
    return id(value) not in _UNNEEDED.ids


_NODE_NAMES: dict[OpOverload, str] = {}


def node_name(op: OpOverload) -> str:
    """PyTorch-style node names: acg::sum.dim -> SumBackward0 (computed once per op)."""
    name = _NODE_NAMES.get(op)
    if name is None:
        base = op.name.split(".")[0].rstrip("_")
        name = _NODE_NAMES[op] = "".join(p.capitalize() for p in re.split(r"_+", base)
                                         if p) + "Backward0"
    return name


class OpNode(Node):
    """The backward of one dispatcher op call."""

    __slots__ = ("op", "fn", "saved", "saved_out", "arg_kinds", "_name")

    def __init__(self, op: OpOverload, fn: Callable, edges: list, saved: list,
                 arg_kinds: tuple[str, ...]) -> None:
        super().__init__(edges)
        self.op, self.fn, self.saved, self.arg_kinds = op, fn, saved, arg_kinds
        self.saved_out: list[SavedVariable] | None = None
        self._name = _NODE_NAMES.get(op) or node_name(op)

    def name(self) -> str:
        return self._name

    def unpack_args(self) -> list:
        return [s.unpack(self) if type(s) is SavedVariable else
                [v.unpack(self) if type(v) is SavedVariable else v for v in s] if type(s) is list
                else s for s in self.saved]

    def apply(self, grad_outputs: list[Tensor | None]) -> list[Tensor | None]:
        outs = [s if s is None else s.unpack(self) for s in self.saved_out] \
            if self.saved_out is not None else None
        return self.apply_with(grad_outputs, self.unpack_args(), outs, self.input_meta)

    def apply_with(self, grad_outputs: list, args: list, outs: list | None, metas: list
                   ) -> list[Tensor | None]:
        """The formula on given saved values: eager passes the real ones, compiled
        autograd's capture passes fakes with symbolic sizes (one definition for both)."""
        out = None if outs is None else outs[0] if len(outs) == 1 else tuple(outs)
        grads = grad_outputs[0] if len(grad_outputs) == 1 else \
            tuple(grad_outputs) if getattr(self.fn, "takes_undefined", False) else \
            tuple(_materialize(g, m) for g, m in zip(grad_outputs, metas))
        prev, _UNNEEDED.ids = _UNNEEDED.ids, self._unneeded(args)
        try:
            return self._flatten(self.fn(grads, *args, out))
        finally:
            _UNNEEDED.ids = prev

    def _unneeded(self, args: list) -> frozenset[int] | set[int]:
        """Ids of the arguments whose gradient nobody needs (no next edge): the formula's
        needs_input_grad. An object also passed where it is needed counts as needed."""
        for n, _ in self.next_edges:
            if n is None:
                break
        else:
            return frozenset()  # the common case: every input requires grad
        edges, skip, keep = iter(self.next_edges), set(), set()
        for value, kind in zip(args, self.arg_kinds):
            for v in (value,) if kind == "tensor" else value if kind == "list" else ():
                (skip if next(edges)[0] is None else keep).add(id(v))
        return skip - keep

    def _flatten(self, result: Any) -> list[Tensor | None]:
        """One gradient per next edge, from one result per Tensor argument."""
        kinds = [k for k in self.arg_kinds if k != "other"]  # one per Tensor-typed argument
        if len(kinds) == 1 or not isinstance(result, (tuple, list)):
            result = (result,)
        if len(result) != len(kinds):
            raise RuntimeError(f"{self.name()}: the backward formula of {self.op.qualname} "
                               f"returned {len(result)} gradients, expected {len(kinds)}")
        flat: list[Tensor | None] = []
        for kind, r in zip(kinds, result):
            if kind == "list":
                flat.extend(r)
            elif kind == "tensor":
                flat.append(r)
        return flat

    def release_variables(self) -> None:
        for s in self.saved:
            if type(s) is SavedVariable:
                s.release()
            elif type(s) is list:
                for v in s:
                    if type(v) is SavedVariable:
                        v.release()
        for s in self.saved_out or ():
            if s is not None:
                s.release()


def _materialize(g: Tensor | None, meta: TensorMeta) -> Tensor | None:
    if g is not None or not is_floating(meta.dtype):
        return g
    from ..dispatch.library import ops
    return ops.acg.zeros(list(meta.shape), dtype=meta.dtype)


def _arg_kind(value: Any, is_tensor_arg: bool) -> str:
    """'tensor'/'list' (gets gradients), 'absent' (a Tensor slot holding a scalar or
    None: its gradient is dropped) or 'other' (a non-Tensor argument)."""
    if isinstance(value, Tensor):
        return "tensor"
    if type(value) in (list, tuple) and value and all(isinstance(v, Tensor) for v in value):
        return "list"
    return "absent" if is_tensor_arg else "other"


def _meta(t: Tensor) -> TensorMeta:
    return TensorMeta(t._sizes, t.dtype)


def _save_value(value: Any, kind: str, keep: bool) -> Any:
    if kind == "tensor":
        return SavedVariable(value) if keep else _meta(value)
    if kind == "list":
        return [SavedVariable(v) if keep else _meta(v) for v in value]
    return value


class _OpInfo:
    """Per-op facts ``_record`` needs, computed once: which arguments are Tensor-typed
    and which of them the formula reads (saved) rather than only their shape."""

    __slots__ = ("tensor_args", "keep", "save_out", "uses", "_kept")
    # save_out: the outputs the formula reads, as a set of indices (ALL_OUTPUTS: every one)

    def __init__(self, op: OpOverload, deriv: Derivative | None) -> None:
        args = op.schema.arguments
        self.tensor_args = tuple(a.is_tensor for a in args)
        save = None if deriv is None else deriv.save
        self.keep = tuple(save is None or a.name in save for a in args)
        self.save_out = _out_reads(save or frozenset())
        # per argument: (indices of the arguments its gradient reads, whether it reads out)
        self.uses: tuple[tuple[tuple[int, ...], bool], ...] | None = None
        if deriv is not None and deriv.uses is not None:
            index, uses = {a.name: i for i, a in enumerate(args)}, dict(deriv.uses)
            self.uses = tuple(_reads(uses.get(a.name, frozenset()), index) for a in args)
        self._kept: dict[int, tuple[tuple[bool, ...], frozenset[int]]] = {}

    def kept(self, needs: int) -> tuple[tuple[bool, ...], frozenset[int]]:
        """Which arguments to save, and which outputs, given the bit mask of the
        arguments whose gradient is needed (memoised per mask: this runs on every op)."""
        hit = self._kept.get(needs)
        if hit is None:
            keep, out = [False] * len(self.uses), frozenset()
            for i, (reads, reads_out) in enumerate(self.uses):
                if needs >> i & 1:
                    for j in reads:
                        keep[j] = True
                    out = out | reads_out
            hit = self._kept[needs] = (tuple(keep), out)
        return hit


_OUT_INDEX = re.compile(r"out\[(\d+)\]")
ALL_OUTPUTS = frozenset({-1})  # "out": every output (-1 in a union of reads)


def _out_reads(names: frozenset[str]) -> frozenset[int]:
    """The outputs named: "out" is every one (ALL_OUTPUTS), "out[k]" the k-th alone (a
    formula that reads only batch_norm's statistics must not save, and so version-check,
    the normalised output a later in-place ReLU writes)."""
    if "out" in names:
        return ALL_OUTPUTS
    return frozenset(int(m.group(1)) for m in map(_OUT_INDEX.fullmatch, names) if m)


def _reads(names: frozenset[str], index: dict[str, int]) -> tuple[tuple[int, ...], frozenset]:
    return tuple(index[n] for n in names if n in index), _out_reads(names)


_INFO: dict[OpOverload, tuple[Derivative | None, _OpInfo]] = {}


def _info(op: OpOverload, deriv: Derivative | None) -> _OpInfo:
    """The op's facts, recomputed when its derivative registration changed."""
    known = _INFO.get(op)
    if known is None or known[0] is not deriv:
        known = _INFO[op] = (deriv, _OpInfo(op, deriv))
    return known[1]


def _differentiable(bound: list, info: _OpInfo) -> tuple[tuple[str, ...], list[Tensor], int]:
    """Each argument's kind, the tensors that get gradients, and a bit mask of the
    arguments that require grad (one pass; this runs on every recorded op)."""
    kinds, tensors, needs = [], [], 0
    for i, v in enumerate(bound):
        if isinstance(v, Tensor):
            kinds.append("tensor")
            tensors.append(v)
            if v._requires_grad:
                needs |= 1 << i
            continue
        kind = _arg_kind(v, info.tensor_args[i])
        kinds.append(kind)
        if kind == "list":
            tensors.extend(v)
            if any(t._requires_grad for t in v):
                needs |= 1 << i
    return tuple(kinds), tensors, needs


def _record(op: OpOverload, bound: list, out: Any, deriv: Derivative | None) -> Any:
    """Wire a new node between ``out`` and the tensors in ``bound``."""
    info = _info(op, deriv)
    kinds, tensors, needs = _differentiable(bound, info)
    if not needs:
        return out
    outs = out if isinstance(out, tuple) else (out,)
    floating = [isinstance(o, Tensor) and is_floating(o.dtype) for o in outs]
    if True not in floating:
        return out
    edges = [(t.grad_fn, t._output_nr) if t.grad_fn is not None else gradient_edge(t)
             for t in tensors]
    save_out: frozenset[int] = frozenset()
    if deriv is None:
        node: Node = ErrorNode(f"the derivative for '{op.qualname}' is not implemented", edges)
    else:
        keeps, save_out = (info.keep, info.save_out) if info.uses is None else info.kept(needs)
        saved = [_save_value(v, k, keep) if k != "other" else v
                 for v, k, keep in zip(bound, kinds, keeps)]
        node = OpNode(op, deriv.fn, edges, saved, kinds)
    node.input_meta = [_meta(o) for o in outs]
    for i, o in enumerate(outs):
        if floating[i]:
            o.grad_fn, o._output_nr, o._requires_grad = node, i, True
    if save_out:  # an output the formula does not read is None: never version-checked
        node.saved_out = [SavedVariable(o, is_output=True)
                          if -1 in save_out or i in save_out else None
                          for i, o in enumerate(outs)]
    return out


def record(op: OpOverload, bound: list, out: Any) -> Any:
    """What the Autograd kernel does after the op ran below it: the node for ``out``
    (a fast path that computed ``op`` itself calls this, so the history is the same)."""
    deriv = DERIVATIVES.get(op)
    if deriv is not None and deriv.fn is None:
        return out
    return _record(op, bound, out, deriv)


@boxed
def autograd_fallback(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """The Autograd-key kernel of every op: compute below, then record a node."""
    deriv = DERIVATIVES.get(op)
    if op.schema.is_mutable:
        return _record_inplace(op, args, kwargs, deriv)
    out = op.redispatch(_AUTOGRAD, *args, **kwargs)
    if deriv is not None and deriv.fn is None:
        return out
    return _record(op, op.schema.bind(args, kwargs), out, deriv)


def alias_for_inplace(t: Tensor) -> Tensor:
    """A new tensor with ``t``'s current value and history: what an in-place op
    saves and differentiates through, unaffected by the write that follows."""
    a = t._shallow_alias()
    a.grad_fn, a._output_nr, a._requires_grad = t.grad_fn, t._output_nr, t._requires_grad
    return a


def _record_inplace(op: OpOverload, args: tuple, kwargs: dict, deriv: Derivative | None) -> Any:
    bound = op.schema.bind(args, kwargs)
    idx = next(i for i, a in enumerate(op.schema.arguments) if a.mutable)
    target = bound[idx]
    if target.grad_fn is None and target._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           f"operation ({op.qualname}).")
    bound[idx] = alias_for_inplace(target)
    out = op.redispatch(_AUTOGRAD, *args, **kwargs)
    if deriv is not None and deriv.fn is None:
        return out
    scratch = alias_for_inplace(target)  # receives the new history, then hands it over
    scratch.grad_fn = None
    _record(op, bound, scratch, deriv)
    if scratch.grad_fn is not None:
        old_node, old_slot = target.grad_fn, target._output_nr
        target.grad_fn, target._output_nr, target._requires_grad = scratch.grad_fn, 0, True
        if target._retains_grad:  # .grad is the gradient of the latest version (as PyTorch)
            _move_retain_grad(target, old_node, old_slot)
    return out


def _move_retain_grad(t: Tensor, old_node: Node | None, old_slot: int) -> None:
    if old_node is not None and old_node._retained:
        old_node._retained.pop(old_slot, None)
    t.grad_fn._retain_grad_for(t._output_nr, t)
