"""What compiled autograd reads from each node: one visitor walk, two uses.

Each node type has one visit function (looked up in :data:`VISITORS`). It
reports the node's state through a visitor ``v``:

- ``v.const(x)``   specialised: ``x`` goes into the cache key,
- ``v.saved(sv)``  a saved tensor: a runtime input (dtype/rank in the key),
- ``v.tensor(t)``  any other tensor input (root gradients, tensors in args),
- ``v.meta(m)``    shape/dtype of a tensor: sizes lifted, dtype in the key,
- ``v.size_arg(xs)`` a SymInt[] argument: lifted sizes,
- ``v.scalar(f)``  a float a binary op or ctx saved: lifted,
- ``v.leaf(t)``    a tensor whose ``.grad`` the backward writes.

The :class:`Collector` (every backward) returns the real values and builds
the key; the replayer (capture only) returns fakes, SymInts and lifted
scalars in the same order. So the key, the runtime inputs and the captured
graph can never disagree about what is where.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.derivatives import OpNode
from ..autograd.function import BackwardCFunction
from ..autograd.node import AccumulateGrad, ErrorNode, GraphRoot, Node, TensorMeta
from ..autograd.saved import UNPACK_OVERRIDE, SavedVariable
from .._types import Size
from ..tensor import Tensor

_SIZE_TYPES = frozenset({"SymInt", "SymInt[]", "SymInt?", "SymInt[]?"})
_CTX_INTERNAL = frozenset({"fn_cls", "materialize_grads", "needs_input_grad", "input_meta",
                           "next_edges", "seq"})


class NodeState:
    """What a visit returned for one node (the capture runs the node on it)."""

    __slots__ = ("args", "outs", "metas", "extra")

    def __init__(self, args: Any = None, outs: Any = None, metas: Any = None,
                 extra: Any = None) -> None:
        self.args, self.outs, self.metas, self.extra = args, outs, metas, extra


def visit_value(value: Any, v: Any, is_size: bool = False) -> Any:
    """A non-saved argument: lift tensors, floats and sizes; specialise the rest."""
    if isinstance(value, Tensor):
        return v.tensor(value)
    if type(value) is TensorMeta:
        return v.meta(value)
    if is_size and value is not None:
        return v.size_arg(value)
    if type(value) is float:
        return v.scalar(value)
    if type(value) in (list, tuple):
        v.const((type(value).__name__, len(value)))
        return type(value)(visit_value(x, v) for x in value)
    if type(value) is slice:
        v.const("slice")
        return slice(*(visit_value(x, v) for x in (value.start, value.stop, value.step)))
    return v.const(value)


_NO_DEFAULT, _NOT_LIFTED = object(), object()
_LIFT_INTS: dict[Any, tuple[Any, ...]] = {}


def _int_lift_flags(op: Any) -> tuple[Any, ...]:
    """Per argument: where a Python int is a number the formula computes with (a scalar
    in a Tensor slot, a Scalar argument), the value it is NOT lifted at (the schema's
    default, so ``alpha=1`` stays a constant), else _NOT_LIFTED (dims, sizes: specialised)."""
    flags = _LIFT_INTS.get(op)
    if flags is None:
        flags = _LIFT_INTS[op] = tuple(
            (a.default if a.has_default else _NO_DEFAULT)
            if a.is_tensor or a.type in ("Scalar", "Scalar?") else _NOT_LIFTED
            for a in op.schema.arguments)
    return flags


def _lifts_int(value: Any, flag: Any) -> bool:
    return type(value) is int and flag is not _NOT_LIFTED and not (
        flag is not _NO_DEFAULT and type(flag) is int and flag == value)


_SIZE_FLAGS: dict[Any, tuple[bool, ...]] = {}
_CONSTS = frozenset({int, bool, str, type(None)})  # specialised as they are


def _size_flags(op: Any) -> tuple[bool, ...]:
    """Which of ``op``'s arguments are SymInt-typed (computed once per op)."""
    flags = _SIZE_FLAGS.get(op)
    if flags is None:
        flags = _SIZE_FLAGS[op] = tuple(a.type in _SIZE_TYPES for a in op.schema.arguments)
    return flags


def visit_op_node(node: OpNode, v: Any) -> NodeState:
    v.const((OpNode, node.op.qualname, node.arg_kinds, node.saved_out is not None))
    args = []
    for value, is_size, lift in zip(node.saved, _size_flags(node.op), _int_lift_flags(node.op)):
        kind = type(value)
        if kind is int and _lifts_int(value, lift):
            args.append(v.scalar(value))
        elif kind is SavedVariable:
            args.append(v.saved(value, node))
        elif kind is TensorMeta:
            args.append(v.meta(value))
        elif kind is list and value and type(value[0]) in (SavedVariable, TensorMeta):
            args.append([v.saved(x, node) if type(x) is SavedVariable else v.meta(x)
                         for x in value])
        else:
            args.append(visit_value(value, v, is_size))
    outs = [s if s is None else v.saved(s, node) for s in node.saved_out] \
        if node.saved_out is not None else None
    return NodeState(args, outs)


class NotCapturable(Exception):
    """This backward reads state compiled autograd cannot lift or guard: run it eagerly."""


_PLAIN = (int, float, str, bool, type(None), Tensor, TensorMeta, slice)


def _liftable(value: Any) -> bool:
    """Numbers, strings, tensors, dtypes, classes and tuples/lists of them: their values
    are lifted or guarded. Any other object could hide values backward reads from it."""
    if isinstance(value, (list, tuple)):
        return all(_liftable(x) for x in value)
    return isinstance(value, _PLAIN) or isinstance(value, type) or hasattr(value, "itemsize")


def visit_function_node(node: BackwardCFunction, v: Any) -> NodeState:
    v.const((BackwardCFunction, node.fn_cls, node.materialize_grads, node._arg_is_tensor,
             node._out_is_tensor, node.needs_input_grad))
    saved = [None if s is None else v.saved(s, node) for s in getattr(node, "_saved", ())]
    attrs = {}
    for name in sorted(k for k in vars(node) if not k.startswith("_") and k not in _CTX_INTERNAL):
        value = vars(node)[name]
        if not _liftable(value):
            raise NotCapturable(f"{node.name()}: ctx.{name} is a {type(value).__name__}; its "
                                "contents cannot be lifted or guarded")
        v.const(name)
        attrs[name] = _visit_ctx_value(value, v)
    return NodeState(saved, extra=attrs)


def _visit_ctx_value(value: Any, v: Any) -> Any:
    """A ctx attribute: an int is a lifted scalar (it specialises only where backward
    decides on it), a tuple or list of ints (a shape) symbolic sizes; the rest as args."""
    if type(value) is int:
        return v.scalar(value)
    if type(value) in (tuple, list, Size) and value and all(type(x) is int for x in value):
        v.const(("ints", type(value).__name__, len(value)))
        return v.size_arg(value)
    return visit_value(value, v)


def visit_accumulate(node: AccumulateGrad, v: Any) -> NodeState:
    t = node.variable
    v.const((AccumulateGrad, t.dtype, t._grad is not None))
    return NodeState(extra=v.leaf(t))


def visit_root(node: GraphRoot, v: Any) -> NodeState:
    v.const((GraphRoot, len(node.grads)))
    return NodeState([v.tensor(g) for g in node.grads])


def visit_error(node: ErrorNode, v: Any) -> NodeState:
    v.const(ErrorNode)
    return NodeState(extra=v.const(node.message))


VISITORS: dict[type, Callable[[Any, Any], NodeState]] = {
    OpNode: visit_op_node, BackwardCFunction: visit_function_node,
    AccumulateGrad: visit_accumulate, GraphRoot: visit_root, ErrorNode: visit_error,
}


def visit_node(node: Node, v: Any) -> NodeState:
    """Key material and lifted values of one node (state, output metadata); each
    visitor's first key item names the node type."""
    fn = VISITORS.get(type(node))
    if fn is None:
        raise NotImplementedError(f"compiled autograd cannot capture node type "
                                  f"{type(node).__name__}; add a visitor to VISITORS")
    state = fn(node, v)
    state.metas = [v.meta(m) for m in node.input_meta]
    return state


class NodeMemo:
    """A node's visit, recorded once: an op node's key material, sizes and saved
    tensors never change after it is created, so later backwards only replay it."""

    __slots__ = ("key", "sizes", "scalars", "saved", "state")

    def __init__(self) -> None:
        self.key: list = []
        self.sizes: list[int] = []
        self.scalars: list[float] = []
        self.saved: list[SavedVariable] = []
        self.state: NodeState | None = None


class _Recorder:
    """A visitor that fills a NodeMemo (only op nodes: no leaves, no loose tensors)."""

    def __init__(self, memo: NodeMemo) -> None:
        self.m = memo

    def const(self, value: Any) -> Any:
        self.m.key.append(value)  # hashability is checked once, by CacheKey
        return value

    def saved(self, sv: SavedVariable, node: Node) -> Any:
        if sv.unpack_hook is not None:
            raise _NotMemoizable  # a user unpack hook must run once per backward, not twice
        t = sv.unpack(node)
        self.m.key.append(("T", t.dtype, len(t.shape), t.requires_grad))
        self.m.sizes.extend(t.shape)
        self.m.saved.append(sv)
        return t

    def tensor(self, t: Tensor) -> Tensor:
        raise _NotMemoizable

    def meta(self, m: TensorMeta) -> TensorMeta:
        self.m.key.append(("M", m.dtype, len(m.shape)))
        self.m.sizes.extend(m.shape)
        return m

    def size_arg(self, values: Any) -> Any:
        if isinstance(values, (list, tuple)):
            self.m.key.append(("Z", len(values)))
            self.m.sizes.extend(int(x) for x in values)
        else:
            self.m.key.append("z")
            self.m.sizes.append(int(values))
        return values

    def scalar(self, value: float) -> float:
        self.m.key.append("S")
        self.m.scalars.append(value)
        return value

    def leaf(self, t: Tensor) -> int:
        raise _NotMemoizable


class _NotMemoizable(Exception):
    pass


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return ("unhashable", type(value), id(value))


class CacheKey:
    """A backward's cache key: the collected items as a tuple, hashed once (a tuple
    re-hashes all its items on every dict operation, and a key has hundreds)."""

    __slots__ = ("items", "_hash")

    def __init__(self, items: list) -> None:
        key = tuple(items)
        try:
            h = hash(key)
        except TypeError:  # rare: an unhashable constant, which matches only itself
            key = tuple(_hashable(x) for x in key)
            h = hash(key)
        self.items, self._hash = key, h

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is CacheKey and self._hash == other._hash
                                 and self.items == other.items)


def memo_of(node: Node) -> NodeMemo | None:
    """The node's recorded visit (made on first use); None if it must be visited live."""
    memo = node._ca_memo
    if memo is None:  # first collect: visit live (most graphs are collected only once)
        node._ca_memo = 0
        return None
    if memo == 0 and type(node) is OpNode:  # collected again (retain_graph): record it
        memo = NodeMemo()
        try:
            memo.state = visit_node(node, _Recorder(memo))
            memo.key = tuple(memo.key)
        except _NotMemoizable:
            memo = False
        node._ca_memo = memo
    return memo or None


class UsesUnpackHook(Exception):
    """The fast path met a saved tensor with an unpack hook (the general path unpacks it,
    once)."""


_ARG_FLAGS: dict[Any, tuple[tuple[bool, Any], ...]] = {}


def _arg_flags(op: Any) -> tuple[tuple[bool, Any], ...]:
    """(is a SymInt argument, int-lifting flag) per argument of ``op``, computed once."""
    flags = _ARG_FLAGS[op] = tuple(zip(_size_flags(op), _int_lift_flags(op)))
    return flags


_AVAL_OK: dict[type, bool] = {}


def _aval(t: Tensor) -> Any:
    """The jax aval behind ``t`` (shape and dtype as plain attributes, far cheaper than
    the properties), or None where a subclass may define its own shape or dtype."""
    ok = _AVAL_OK.get(type(t))
    if ok is None:
        cls = type(t)
        ok = _AVAL_OK[cls] = cls.shape is Tensor.shape and cls.dtype is Tensor.dtype
    return array_meta(t) if ok else None


def array_meta(t: Tensor) -> Any:
    """What holds ``t``'s shape and dtype as plain attributes: a host value's numpy array
    itself (reading it must not move it to the device: the program call moves it, in C++,
    ~10 us cheaper per array than our transfer), else the jax array's aval."""
    store = t._store
    return store if type(store) is np.ndarray else getattr(t._data, "aval", None)


class Collector:
    """Builds the cache key and gathers runtime inputs (runs on every backward)."""

    def __init__(self) -> None:
        self.key: list = []
        self.inputs: list[Tensor] = []
        self.sizes: list[int] = []
        self.scalars: list[float] = []
        self.leaves: list[Tensor] = []
        self._leaf_ids: dict[int, int] = {}
        # (saved variable, its node, its index in inputs): re-checked after hooks ran
        self.saved_vars: list[tuple[SavedVariable, Node, int]] = []
        # the graph's ``hooks`` input: hooks, and (saved, node) pairs to unpack at run time
        self.opaque: list = []
        self.unpack_at: dict[int, int] = {}  # id(saved variable) -> its index in opaque
        self.no_unpack_hooks = False  # the fast path hands unpack-hooked graphs over

    def const(self, value: Any) -> Any:
        self.key.append(value)  # hashability is checked once, by CacheKey
        return value

    def replay_memo(self, memo: NodeMemo, node: Node) -> None:
        """Add a memoised node: its key as one item, its sizes and saved tensors."""
        self.key.extend(memo.key)  # the same items a live visit appends: same cache key
        self.sizes.extend(memo.sizes)
        self.scalars.extend(memo.scalars)
        start = len(self.inputs)
        self.inputs.extend(sv.unpack(node) for sv in memo.saved)
        self.saved_vars.extend((sv, node, start + k) for k, sv in enumerate(memo.saved))

    def saved(self, sv: SavedVariable, node: Node) -> Tensor | None:
        if sv.unpack_hook is not None:
            if self.no_unpack_hooks:
                raise UsesUnpackHook
            return self.hooked(sv, node)
        if not sv.freed and not UNPACK_OVERRIDE:  # sv.unpack(node), inlined
            t = sv.ref() if sv.is_output else sv.value
            if t is None or t._version != sv.version:
                t = sv.unpack(node)  # a dead output rebuilt, or PyTorch's version error
        else:
            t = sv.unpack(node)
        if not self.no_unpack_hooks:  # the fast path has no hooks: nothing to re-check
            self.saved_vars.append((sv, node, len(self.inputs)))
        self.inputs.append(t)
        try:
            aval = array_meta(t) if _AVAL_OK[type(t)] else None
        except (KeyError, AttributeError):
            aval = _aval(t)
        if aval is None:
            self.key.append(("T", t.dtype, len(t.shape), t.requires_grad))  # as tensor(t)
            self.sizes.extend(t.shape)
        else:
            shape = aval.shape
            self.key.append(("T", aval.dtype, len(shape), t._requires_grad))
            self.sizes.extend(shape)
        return t

    def hooked(self, sv: SavedVariable, node: Node) -> None:
        """A saved tensor with an unpack hook: the graph calls the hook where its node runs
        (as eager does), so the key and sizes come from its metadata at pack time."""
        if sv.freed:
            sv.unpack(node)  # PyTorch's "backward through the graph a second time" error
        shape, dtype = sv.meta
        self.key.append(("H", dtype, len(shape)))
        self.sizes.extend(shape)
        self.unpack_at[id(sv)] = len(self.opaque)
        self.opaque.append((sv, node))

    def op_node(self, node: OpNode) -> None:
        """``visit_node`` of an op node, inlined (the hot loop of every backward): the
        same items in the same order, without building the NodeState only capture
        reads. ``tests/test_compiled_autograd.py`` checks it against the generic visit."""
        key, sizes = self.key, self.sizes
        op = node.op
        flags = _ARG_FLAGS.get(op) or _arg_flags(op)
        key.append((OpNode, op.qualname, node.arg_kinds, node.saved_out is not None))
        for value, (is_size, lift) in zip(node.saved, flags):
            kind = type(value)
            if kind is SavedVariable:
                self.saved(value, node)
            elif kind is TensorMeta:
                shape = value.shape
                key.append(("M", value.dtype, len(shape)))
                sizes.extend(shape)
            elif kind is int and _lifts_int(value, lift):
                key.append("S")
                self.scalars.append(value)
            elif kind is list and value and type(value[0]) in (SavedVariable, TensorMeta):
                for x in value:
                    self.saved(x, node) if type(x) is SavedVariable else self.meta(x)
            elif kind in _CONSTS and not is_size:
                key.append(value)
            else:
                visit_value(value, self, is_size)
        if node.saved_out is not None:
            for sv in node.saved_out:
                if sv is None:  # an output the formula does not read
                    key.append(None)
                else:
                    self.saved(sv, node)
        for m in node.input_meta:
            shape = m.shape
            key.append(("M", m.dtype, len(shape)))
            sizes.extend(shape)

    def tensor(self, t: Tensor) -> Tensor:
        ok = _AVAL_OK.get(type(t))
        aval = array_meta(t) if ok else _aval(t) if ok is None else None
        if aval is None:
            self.key.append(("T", t.dtype, len(t.shape), t.requires_grad))
            self.sizes.extend(t.shape)
        else:  # the same items, read from the aval (as saved() does)
            shape = aval.shape
            self.key.append(("T", aval.dtype, len(shape), t._requires_grad))
            self.sizes.extend(shape)
        self.inputs.append(t)
        return t

    def meta(self, m: TensorMeta) -> TensorMeta:
        self.key.append(("M", m.dtype, len(m.shape)))
        self.sizes.extend(m.shape)
        return m

    def accumulate_node(self, node: AccumulateGrad) -> None:
        """``visit_node`` of a leaf's accumulator, inlined like :meth:`op_node`."""
        t = node.variable
        self.key.append((AccumulateGrad, t.dtype, t._grad is not None))
        self.leaf(t)
        for m in node.input_meta:
            self.key.append(("M", m.dtype, len(m.shape)))
            self.sizes.extend(m.shape)

    def size_arg(self, values: Any) -> Any:
        if isinstance(values, (list, tuple)):
            self.key.append(("Z", len(values)))
            self.sizes.extend(int(x) for x in values)
        else:
            self.key.append("z")
            self.sizes.append(int(values))
        return values

    def scalar(self, value: float) -> float:
        self.key.append("S")
        self.scalars.append(value)
        return value

    def leaf(self, t: Tensor) -> int:
        idx = self._leaf_ids.get(id(t))
        if idx is None:
            idx = self._leaf_ids[id(t)] = len(self.leaves)
            self.leaves.append(t)
        self.key.append(("L", idx))
        return idx
