"""A cached backward's walk, written out as straight-line Python: the fast path's fast path.

A training loop builds a new autograd graph every step, of the same structure as the
last one. :mod:`.fastpath` walks it generically: per node a type switch, per saved
tensor a key item, then the whole key compared with the last one. Once an exact key
has hit, :func:`build` writes a function for that one structure: it follows the same
edges in the same discovery order and checks, where the key has an item, that the new
graph has the very same thing (node type and op, hooks absent, each saved argument's
kind, constant, dtype, shape and requires_grad, saved tensors' versions, each leaf's
dtype and whether its ``.grad`` exists, the compiler and grad mode), reading the runtime
inputs, lifted scalars and leaves in the order the program expects. It returns None at
the first difference, and the generic walk decides as before; a plan only ever serves
a graph whose exact key equals the one it was written from (``ACG_CHECK=1`` verifies
every served graph against the generic walk).

Only graphs of op nodes and accumulators whose saved arguments are tensors, metadata,
plain constants, lifted numbers or size lists get a plan; others keep the generic walk.

>>> import autograd_compile as acg
>>> w = acg.ones(3, requires_grad=True)
>>> with acg.compiled_autograd.enable("jax"):
...     for _ in range(4):
...         w.grad = None
...         (w * w).sum().backward()
>>> w.grad.tolist(), acg.compiled_autograd.counters["captures"]
([2.0, 2.0, 2.0], 1)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd.derivatives import OpNode
from ..autograd.node import AccumulateGrad, Node, TensorMeta, gradient_edge
from ..autograd.saved import UNPACK_OVERRIDE, SavedVariable
from ..fx.graph_module import compile_forward
from ..kernels._xp import _ARRAY
from ..tensor import Tensor
from .collect import _CONSTS, _arg_flags, _lifts_int, array_meta

# a node other than an accumulator has hooks: the generic walk hands the graph over
HOOKED = "n._tensor_hooks or n._retained or n._pre_hooks or n._post_hooks"
_LEAF_HOOKED = "t._backward_hooks or t._post_acc_hooks or n._pre_hooks or n._post_hooks"


class Unsupported(Exception):
    """The graph holds something the plan writer does not handle (the generic walk does)."""


class Plan:
    """``fn(roots, grads, header) -> (inputs, scalars, leaves, held) | None`` for one exact
    key; ``sizes`` are that key's sizes (the plan checks every one); ``source`` its code."""

    __slots__ = ("fn", "sizes", "source")

    def __init__(self, fn: Callable, sizes: list[int], source: str) -> None:
        self.fn, self.sizes, self.source = fn, sizes, source


class Writer:
    """The generated lines and the constants they name."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {"OpNode": OpNode, "AccumulateGrad": AccumulateGrad,
                                       "TensorMeta": TensorMeta, "SavedVariable": SavedVariable,
                                       "UNPACK_OVERRIDE": UNPACK_OVERRIDE,
                                       "gradient_edge": gradient_edge, "lifts_int": _lifts_int}
        self._ids: dict[int, str] = {}

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def const(self, value: Any) -> str:
        """A name for ``value`` in the generated function's globals."""
        name = self._ids.get(id(value))
        if name is None:
            name = self._ids[id(value)] = f"c{len(self._ids)}"
            self.consts[name] = value
        return name

    def fail_if(self, cond: str) -> None:
        self.emit(f"if {cond}: return None")


def _plain_shape(shape: Any) -> Any:
    """``shape`` as a constant the generated code compares with ``!=``; plain ints only."""
    if type(shape) not in (tuple, list) or any(type(s) is not int for s in shape):
        raise Unsupported(f"shape {shape!r}")
    return type(shape)(shape)


def write_tensor(c: Writer, t: Tensor, var: str) -> None:
    """``var`` (a tensor) has ``t``'s class, dtype, shape and requires_grad: Collector's
    aval branch, so only classes that keep Tensor's shape and dtype."""
    cls = type(t)
    aval = array_meta(t)
    if cls.shape is not Tensor.shape or cls.dtype is not Tensor.dtype or aval is None:
        raise Unsupported(f"tensor class {cls.__name__}")
    c.fail_if(f"type({var}) is not {c.const(cls)}")
    c.emit(f"a = {var}._store")  # ``_data`` without the property call where it is jax's
    c.emit(f"a = a if type(a) is {c.const(np.ndarray)} else "  # array_meta, inlined
           f"(a if type(a) is {c.const(_ARRAY)} else {var}._data).aval")
    c.fail_if(f"a.shape != {c.const(_plain_shape(aval.shape))} or a.dtype != "
              f"{c.const(aval.dtype)} or {var}._requires_grad is not {t._requires_grad!r}")
    c.emit(f"inputs.append({var})")


def write_saved(c: Writer, sv: SavedVariable, var: str) -> None:
    """A saved tensor, unpacked as ``Collector.saved`` does (a stale version hands over
    to the generic walk, which raises PyTorch's error)."""
    if type(sv) is not SavedVariable or sv.unpack_hook is not None or sv.freed:
        raise Unsupported("saved tensor with an unpack hook")
    c.emit(f"x = {var}")
    c.fail_if(f"type(x) is not SavedVariable or x.unpack_hook is not None or x.freed or "
              f"x.is_output is not {sv.is_output!r}")
    if sv.is_output:  # a dead output is rebuilt from its alias, as unpack does
        c.emit("t = x.ref()")
        c.emit("if t is None: t = x.unpack(n)")
        c.emit("elif t._version != x.version: return None")
        t = sv.unpack(None) if sv.ref() is None else sv.ref()
    else:
        c.emit("t = x.value")
        c.fail_if("t._version != x.version")
        t = sv.value
    write_tensor(c, t, "t")


def write_meta(c: Writer, m: TensorMeta, var: str) -> None:
    c.emit(f"x = {var}")
    c.fail_if(f"type(x) is not TensorMeta or x.shape != {c.const(_plain_shape(m.shape))} or "
              f"x.dtype != {c.const(m.dtype)}")


def write_metas(c: Writer, metas: list) -> None:
    c.emit("im = n.input_meta")
    c.fail_if(f"len(im) != {len(metas)}")
    for k, m in enumerate(metas):
        if type(m) is not TensorMeta:
            raise Unsupported("input metadata")
        write_meta(c, m, f"im[{k}]")


def _argument(c: Writer, value: Any, var: str, is_size: bool, lift: Any) -> None:
    """One saved argument of an op node, by the branch ``Collector.op_node`` takes."""
    kind = type(value)
    if kind is int and _lifts_int(value, lift):
        c.emit(f"x = {var}")
        c.fail_if(f"type(x) is not int or not lifts_int(x, {c.const(lift)})")
        c.emit("scalars.append(x)")
    elif kind is SavedVariable:
        write_saved(c, value, var)
    elif kind is TensorMeta:
        write_meta(c, value, var)
    elif kind is list and value and type(value[0]) in (SavedVariable, TensorMeta):
        c.emit(f"v2 = {var}")
        c.fail_if(f"type(v2) is not list or len(v2) != {len(value)}")
        for k, x in enumerate(value):
            if type(x) is SavedVariable:
                write_saved(c, x, f"v2[{k}]")
            elif type(x) is TensorMeta:
                write_meta(c, x, f"v2[{k}]")
            else:
                raise Unsupported(f"list item {type(x).__name__}")
    elif value is None:
        c.fail_if(f"{var} is not None")
    elif kind in _CONSTS and not is_size:
        c.fail_if(f"type({var}) is not {kind.__name__} or {var} != {value!r}")
    elif kind is float and not is_size:
        c.emit(f"x = {var}")
        c.fail_if("type(x) is not float")
        c.emit("scalars.append(x)")
    elif is_size and (kind is int or kind in (list, tuple) and
                      all(type(s) is int for s in value)):
        c.fail_if(f"type({var}) is not {kind.__name__} or {var} != {c.const(value)}")
    else:
        raise Unsupported(f"argument {kind.__name__}")


def _op_node(c: Writer, node: OpNode) -> bool:
    c.fail_if(f"type(n) is not OpNode or n.op is not {c.const(node.op)} or {HOOKED}")
    c.fail_if(f"n.arg_kinds != {c.const(node.arg_kinds)}")
    c.emit("if n._ca_memo is None: n._ca_memo = 0")  # as the generic walk marks it
    c.emit("held.append(n)")
    c.emit("v = n.saved")
    c.fail_if(f"len(v) != {len(node.saved)}")
    for j, (value, (is_size, lift)) in enumerate(zip(node.saved, _arg_flags(node.op))):
        _argument(c, value, f"v[{j}]", is_size, lift)
    if node.saved_out is None:
        c.fail_if("n.saved_out is not None")
    else:
        c.emit("so = n.saved_out")
        c.fail_if(f"so is None or len(so) != {len(node.saved_out)}")
        for k, sv in enumerate(node.saved_out):
            if sv is None:
                c.fail_if(f"so[{k}] is not None")
            else:
                write_saved(c, sv, f"so[{k}]")
    write_metas(c, node.input_meta)
    return True


def _accumulator(c: Writer, node: AccumulateGrad) -> bool:
    v = node.variable
    c.fail_if("type(n) is not AccumulateGrad")
    c.emit("t = n.variable")
    c.fail_if(_LEAF_HOOKED)
    c.fail_if(f"t.dtype != {c.const(v.dtype)} or (t._grad is None) is not {v._grad is None!r}")
    c.emit("leaves.append(t)")
    write_metas(c, node.input_meta)
    return False


# per node type: write the checks of one newly discovered node (bound to ``n``); True if
# the walk follows its edges (accumulators have none). Other packages add their node
# types (aot/program.py: a compiled region's backward node), as they add VISITORS.
PLANNERS: dict[type, Callable[[Writer, Any], bool]] = {
    OpNode: _op_node, AccumulateGrad: _accumulator,
}


def _node(c: Writer, node: Node) -> bool:
    planner = PLANNERS.get(type(node))
    if planner is None:
        raise Unsupported(f"node type {type(node).__name__}")
    return planner(c, node)


def _edges(c: Writer, pid: int, edges: Any, ids: dict[Node, int],
           stack: list[tuple[int, Any]]) -> None:
    """One pop of the walk's stack: each edge to nothing, to a node seen before, or to a
    new node (numbered in discovery order and checked at once, as the walk visits it)."""
    c.emit(f"e = {'e0' if pid == 0 else f'n{pid}.next_edges'}")
    c.fail_if(f"len(e) != {len(edges)}")
    for k, (nxt, slot) in enumerate(edges):
        c.emit(f"m, s = e[{k}]")
        if nxt is None:
            c.fail_if("m is not None")
            continue
        i = ids.get(nxt)
        if i is not None:
            c.fail_if(f"m is not n{i} or s != {slot}")
            continue
        i = ids[nxt] = len(ids) + 1
        c.fail_if(f"s != {slot}")
        c.emit(f"n = n{i} = m")
        if _node(c, nxt):
            stack.append((i, nxt.next_edges))


def build(roots: list[Tensor], grads: list[Tensor], header: tuple, sizes: list[int]) -> Plan:
    """The plan of the graph under ``roots`` (just walked by the fast path, whose exact
    key had a cache entry); raises :class:`Unsupported` for graphs it does not handle."""
    c = Writer()
    c.fail_if(f"UNPACK_OVERRIDE or header != {c.const(header)} or len(roots) != "
              f"{len(roots)} or len(grads) != {len(grads)}")
    c.emit("inputs = []; scalars = []; leaves = []; held = []")
    for k, g in enumerate(grads):
        c.emit(f"g = grads[{k}]")
        write_tensor(c, g, "g")
    c.emit("e0 = [gradient_edge(r) for r in roots]")
    ids: dict[Node, int] = {}
    stack: list[tuple[int, Any]] = [(0, [gradient_edge(t) for t in roots])]
    while stack:
        _edges(c, *stack.pop(), ids, stack)
    if ids:  # every node numbered as new is a distinct node (as the walk's dict sees them)
        c.fail_if(f"len({{{', '.join(f'n{i}' for i in ids.values())}}}) != {len(ids)}")
    c.emit("return inputs, scalars, leaves, held")
    src = "def forward(roots, grads, header):\n" + "\n".join(c.lines) + "\n"
    fn = compile_forward(_Source(src, c.consts))
    return Plan(fn, list(sizes), src)


class _Source:
    """What ``compile_forward`` reads: the source and its globals."""

    def __init__(self, src: str, globals_: dict[str, Any]) -> None:
        self.src, self.globals = src, globals_
