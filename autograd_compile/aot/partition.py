"""Cut the joint graph into a forward graph and a backward graph.

A joint-graph node that (transitively) reads a tangent belongs to the backward;
every other node can run in the forward. The backward reads some forward values:

- primals (inputs) it needs are *saved primals*: held from the call itself;
- forward results it needs are *saved intermediates*: extra outputs of the
  forward program (or one of the region's own outputs, when it is one);
- sizes it needs (``sym_size`` and arithmetic on them) are recomputed in the
  backward from the shapes of tensors it has, so the backward graph stays
  symbolic and serves every batch size.

Cheap elementwise and shape ops whose inputs the backward has anyway are
recomputed there instead of saved (fewer forward outputs, less memory), the
simple end of the recompute-versus-save choice PyTorch's min-cut partitioner makes.

Every gradient the backward returns goes through ``aot::once_differentiable``
(an identity whose derivative raises) together with the inputs that require grad
and the tangents, so differentiating the compiled backward again fails clearly
instead of silently missing the terms that flow through saved intermediates.
"""
from __future__ import annotations

from typing import Any

from ..dispatch.dispatcher import OpOverload
from ..fx import Graph, Node, map_arg
from ..tracing.proxy_tensor import sym_size
from ..tensor import Tensor
from .ops import once_differentiable
from .trace import Joint, NotTraceable

# views: the backward recomputes them from their input (saving either costs the same)
_VIEWS = frozenset({"view", "reshape", "expand", "permute", "transpose", "unsqueeze", "squeeze",
                    "detach", "clone"})
# recomputed in the backward when their inputs are there anyway (cheaper than saving)
_CHEAP = _VIEWS | {"add", "sub", "mul", "div", "neg", "relu", "abs", "square", "reciprocal",
                   "to", "maximum", "minimum", "where", "gt", "ge", "lt", "le", "eq", "ne"}


class Parts:
    """The two graphs and how the backward's inputs are found at run time."""

    def __init__(self, forward: Graph, backward: Graph | None, saved: list[tuple[str, int]],
                 n_saved_fw: int) -> None:
        # saved[i]: ("primal", primal index) | ("out", region output index) |
        #           ("fw", index among the forward program's extra outputs) |
        #           ("guard", primal index): an input only once_differentiable reads
        self.forward, self.backward, self.saved, self.n_saved_fw = forward, backward, saved, \
            n_saved_fw


def is_size(n: Node) -> bool:
    """Integer size arithmetic (``sym_size`` and operators on its results)."""
    return n.op == "call_function" and not isinstance(n.target, OpOverload) and \
        not isinstance(n.meta.get("val"), Tensor) and n.target is not _getitem_target(n)


def _getitem_target(n: Node) -> Any:
    import operator  # a getitem of a multi-output op is a tensor, not a size
    return operator.getitem if n.args and isinstance(n.args[0], Node) and \
        isinstance(n.args[0].target, OpOverload) else None


def _ancestors(roots: list[Node]) -> set[Node]:
    seen: set[Node] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return seen


def _op_in(n: Node, names: frozenset[str]) -> bool:
    return isinstance(n.target, OpOverload) and n.target.name.split(".")[0] in names and \
        not n.target.schema.is_mutable


def partition(joint: Joint) -> Parts:
    """Forward and backward graphs of ``joint`` (the backward is None without grads)."""
    nodes = list(joint.graph.nodes)
    primal_of = {p.node: i for i, p in enumerate(joint.primals)}
    grads = [g for g in joint.grads if g is not None]
    in_bw = _tangent_dependent(nodes, set(joint.tangents)) & _ancestors(grads)
    boundary = {a for n in in_bw for a in n.all_input_nodes if a not in in_bw}
    boundary |= {g for g in grads if g not in in_bw}
    sizes = {n for n in boundary if is_size(n)}
    saved = {n for n in boundary if n not in sizes}
    for n in saved:
        if n.op != "placeholder" and not isinstance(n.meta.get("val"), Tensor):
            raise NotTraceable(f"the backward reads {n.name}, which is not a tensor")
    recompute = _through_views(saved, primal_of, set(joint.outputs))
    saved = (saved - recompute) | {a for r in recompute for a in r.all_input_nodes
                                   if not is_size(a)}
    recompute |= _recompute(saved, primal_of, set(joint.outputs))
    recompute |= _checkpointed(nodes, saved - recompute, primal_of, set(joint.outputs))
    saved -= recompute
    saved |= {a for r in recompute for a in r.all_input_nodes
              if not is_size(a) and a not in recompute}
    bw_nodes = in_bw | recompute
    size_nodes, subst = _backward_sizes(bw_nodes, sizes, saved, joint)
    saved |= {src for src, _ in subst.values() if src not in joint.tangents}
    # in primal order (grad_primals follows eager's backward order): stable placeholders
    guards = [joint.primals[i].node for i in sorted(joint.grad_primals)] if grads else []
    order = {n: i for i, n in enumerate(nodes)}
    saved_list = sorted(saved, key=order.__getitem__)
    saved_list += [n for n in guards if n not in saved]  # read only by once_differentiable
    spec, fw_extra = _saved_spec(saved_list, primal_of, joint.outputs, saved)
    forward = _forward_graph(joint, nodes, fw_extra)
    backward = _backward_graph(joint, nodes, saved_list, bw_nodes | size_nodes, subst) \
        if grads else None
    return Parts(forward, backward, spec, len(fw_extra))


def _tangent_dependent(nodes: list[Node], tangents: set[Node]) -> set[Node]:
    dep: set[Node] = set()
    for n in nodes:
        if n in tangents or any(a in dep for a in n.all_input_nodes):
            if n.op != "output":
                dep.add(n)
    return dep


def _through_views(saved: set[Node], primal_of: dict, outputs: set[Node]) -> set[Node]:
    """Saved views (and chains of them): the backward saves their input instead."""
    out: set[Node] = set()
    stack = list(saved)
    while stack:
        n = stack.pop()
        if n in out or n in primal_of or n in outputs or not _op_in(n, _VIEWS):
            continue
        ins = [a for a in n.all_input_nodes if not is_size(a)]
        if len(ins) == 1:
            out.add(n)
            stack.append(ins[0])
    return out


def _recompute(saved: set[Node], primal_of: dict, outputs: set[Node]) -> set[Node]:
    """Saved intermediates that are cheap to recompute from inputs the backward has
    anyway (saved ones, or primals), through a short chain of cheap ops (tanh's
    ``1 - y*y`` from a saved ``y``): nothing saved is added."""
    out: set[Node] = set()
    used: set[Node] = set()
    for n in sorted(saved, key=lambda x: x.name):
        if n in used:
            continue
        chain = _cheap_chain(n, saved, out, primal_of, outputs, _CHAIN_DEPTH)
        if chain is not None:
            out |= chain
            used.update(a for c in chain for a in c.all_input_nodes
                        if not is_size(a) and a not in chain)
    return out


_CHAIN_DEPTH = 3  # cheap ops recomputed in a row (one elementwise fusion in the backward)


def _cheap_chain(n: Node, saved: set[Node], out: set[Node], primal_of: dict,
                 outputs: set[Node], depth: int) -> set[Node] | None:
    """``n`` and the cheap ops between it and values the backward has (primals, saved
    values not recomputed), or None when it cannot be recomputed within ``depth`` ops."""
    if n in primal_of or n in outputs or not _op_in(n, _CHEAP):
        return None
    ins = [a for a in n.all_input_nodes if not is_size(a)]
    if not ins:
        return None
    chain = {n}
    for a in ins:
        if a in primal_of or (a in saved and a not in out):
            continue
        sub = _cheap_chain(a, saved, out, primal_of, outputs, depth - 1) if depth > 1 else None
        if sub is None:
            return None
        chain |= sub
    return chain


def _checkpointed(nodes: list[Node], saved: set[Node], primal_of: dict, outputs: set[Node]
                  ) -> set[Node]:
    """Saved intermediates the backward recomputes because ``utils.checkpoint`` made them
    (``meta["recompute"]``) or they derive only from such nodes and inputs (a checkpointed
    op's backward formula, e.g. tanh's ``1 - y*y``), with the nodes they read of that kind."""
    ok: dict[Node, bool] = {}
    for n in nodes:  # graph order: inputs are judged first
        ins = [a for a in n.all_input_nodes if not is_size(a)]
        ok[n] = n.op == "call_function" and n not in primal_of and n not in outputs and (
            bool(n.meta.get("recompute")) or bool(ins) and any(ok.get(a) for a in ins)
            and all(ok.get(a) or a in primal_of for a in ins))
    out: set[Node] = set()
    stack = [n for n in saved if ok.get(n)]
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(a for a in n.all_input_nodes if ok.get(a) and not is_size(a))
    return out


def _backward_sizes(bw_nodes: set[Node], sizes: set[Node], saved: set[Node], joint: Joint
                    ) -> tuple[set[Node], dict[Node, Node]]:
    """Size nodes the backward recomputes, and for each ``sym_size(t, d)`` among them a
    tensor the backward has whose dim has the same symbolic size (t itself if none)."""
    needed = set(sizes)
    for n in bw_nodes:
        needed |= {a for a in n.all_input_nodes if is_size(a) and a not in bw_nodes}
    closure = set()
    stack = list(needed)
    while stack:
        n = stack.pop()
        if n in closure:
            continue
        closure.add(n)
        stack.extend(a for a in n.all_input_nodes if is_size(a) and a not in bw_nodes)
    have = list(joint.tangents) + [n for n in saved if n.op == "placeholder"] + \
        [n for n in saved if n.op != "placeholder"]
    subst = {n: _same_dim(n, have) or tuple(n.args) for n in closure if n.target is sym_size}
    return closure, subst


def _same_dim(n: Node, have: list[Node]) -> tuple[Node, int] | None:
    src, dim = n.args
    size = src.meta["val"].shape[dim]
    for h in have:
        val = h.meta.get("val")
        for d, s in enumerate(getattr(val, "shape", ())):
            if s is size or (type(s) is type(size) and str(s) == str(size)):
                return (h, d)
    return None


def _saved_spec(saved: list[Node], primal_of: dict, outputs: list[Node], read: set[Node]
                ) -> tuple[list[tuple[str, int]], list[Node]]:
    spec, extra = [], []
    for n in saved:
        if n in primal_of:
            spec.append(("primal" if n in read else "guard", primal_of[n]))
        elif n in outputs:
            spec.append(("out", outputs.index(n)))
        else:
            spec.append(("fw", len(extra)))
            extra.append(n)
    return spec, extra


def _copy(graph: Graph, n: Node, env: dict[Node, Node]) -> Node:
    new = graph.create_node(n.op, n.target, map_arg(n.args, env.__getitem__),
                            map_arg(n.kwargs, env.__getitem__), name=n.name)
    new.meta.update(n.meta)
    return new


def _forward_graph(joint: Joint, nodes: list[Node], extra: list[Node]) -> Graph:
    """Every primal in; the region's outputs, mutated inputs' values and saved
    intermediates out; impure nodes (a distribution's value check) kept though unread."""
    g = Graph()
    env = {p.node: g.placeholder(p.node.name) for p in joint.primals}
    for p in joint.primals:
        env[p.node].meta.update(p.node.meta)
    roots = list(joint.outputs) + [n for _, n in joint.mutations] + extra
    needed = _ancestors(roots + [n for n in nodes if n.op == "call_function" and n.is_impure()])
    for n in nodes:
        if n in needed and n.op != "placeholder":
            env[n] = _copy(g, n, env)
    g.output(tuple(env[n] for n in roots))
    g.eliminate_dead_code()
    return g


def _backward_graph(joint: Joint, nodes: list[Node], saved: list[Node], bw_nodes: set[Node],
                    subst: dict) -> Graph:
    """Saved values and tangents in; one gradient per primal that requires grad out."""
    g = Graph()
    env: dict[Node, Node] = {}
    for n in saved + list(joint.tangents):
        env[n] = g.placeholder(n.name)
        env[n].meta.update(n.meta)
    for n in nodes:
        if n in bw_nodes and n not in env:
            if n in subst:
                src, dim = subst[n]
                env[n] = g.call_function(sym_size, (env[src], dim), name=n.name)
            else:
                env[n] = _copy(g, n, env)
    guard = [env[joint.primals[i].node] for i in joint.grad_primals] + \
        [env[t] for t in joint.tangents]
    g.output(tuple(None if n is None else g.call_function(once_differentiable, (env[n], guard))
                   for n in joint.grads))
    _sizes_from_shapes(g)
    g.eliminate_dead_code()
    return g


_SIZE_TYPES = frozenset({"SymInt", "SymInt[]", "SymInt?", "SymInt[]?"})


def _sizes_from_shapes(g: Graph) -> None:
    """A static size the trace inlined (``reshape(t, [-1, 64])``) is read from an input's
    shape instead (``[-1, sym_size(w, 0)]``): the same value here, but when compiled
    autograd inlines this graph, where every size is symbolic, the relation stays visible
    (``Mod(s0*s1, s1)`` folds; ``Mod(s0*s1, 64)`` would need a guard)."""
    dims: dict[int, tuple[Node, int]] = {}
    for ph in g.find_nodes(op="placeholder"):
        for d, size in enumerate(getattr(ph.meta.get("val"), "shape", ())):
            if type(size) is int and size >= 2:
                dims.setdefault(size, (ph, d))
    made: dict[tuple[Node, int], Node] = {}

    def size_node(c: int) -> Node:
        key = dims[c]
        if key not in made:
            last = list(g.find_nodes(op="placeholder"))[-1]
            with g.inserting_after(last):
                made[key] = g.call_function(sym_size, key)
        return made[key]

    def swap(value: Any) -> Any:
        if type(value) is int and value in dims:
            return size_node(value)
        if type(value) in (list, tuple):
            return type(value)(swap(v) for v in value)
        return value
    for n in list(g.nodes):
        if n.op != "call_function" or not isinstance(n.target, OpOverload):
            continue
        schema = n.target.schema.arguments
        args = [swap(a) if i < len(schema) and schema[i].type in _SIZE_TYPES else a
                for i, a in enumerate(n.args)]
        types = {a.name: a.type for a in schema}
        kwargs = {k: swap(v) if types.get(k) in _SIZE_TYPES else v for k, v in n.kwargs.items()}
        if args != list(n.args) or kwargs != n.kwargs:
            n.args, n.kwargs = tuple(args), kwargs
