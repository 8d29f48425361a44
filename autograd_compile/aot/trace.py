"""The joint trace: a region's forward and its backward recorded into one graph.

The region runs once on fake tensors with symbolic sizes under proxy tracing,
with grad mode as at the call, so our autograd records its nodes on the
fakes; then our own engine runs ``autograd.grad`` over those nodes from
tangent placeholders, still under tracing, so every backward formula's ops
land in the same graph (AOT autograd). :mod:`.partition` later cuts it in two.

Graph inputs (*primals*) are the argument tensors, the module's parameters and
buffers, every other tensor the region reads (lifted on first use, e.g. a
closure's tensor; the caller finds it again at each call where the region read it,
:mod:`.paths`), and one PRNG key per random draw. A mode on top of the
tracing modes swaps each real tensor an op receives for its fake, so nothing
becomes a constant and the module itself is never modified.

What the trace cannot keep faithful raises :class:`NotTraceable` with the
reason (the caller runs the region eagerly, or raises under ``fullgraph``).
"""
from __future__ import annotations

import contextlib
import heapq
import os
import random
import threading
import traceback
from typing import Any, Callable, Iterator

import jax.numpy as jnp
import numpy as np

from ..autograd import engine
from ..autograd.grad_mode import set_grad_enabled
from ..autograd.node import GraphRoot, gradient_edge
from ..tracing.fake import FakeTensor, FakeTensorMode
from ..fx import Graph, Node
from ..fx.naming import sanitize
from ..modes import DispatchMode
from ..tracing.proxy_tensor import ProxyTracer, track_tensor_tree, tracing
from ..tracing.symbolic_shapes import ShapeEnv, is_symbolic
from ..tensor import DATA_ALIAS, Tensor
from .escape import Sink, Sinks
from .guards import SizeGuards
from .tree import flatten, unflatten


class NotTraceable(Exception):
    """The region cannot be traced faithfully; ``str(e)`` says why."""


@contextlib.contextmanager
def python_random_kept() -> Iterator[None]:
    """Around a trace: Python's ``random`` and numpy's global generator are left as they
    were when the trace fails (the eager rerun then draws what eager alone would), and a
    trace that draws from them fails (a program would replay its first draws forever: a
    teacher-forcing coin flip decided once)."""
    py, npy = random.getstate(), np.random.get_state()
    try:
        yield
    except BaseException:
        random.setstate(py)
        np.random.set_state(npy)
        raise
    drew = random.getstate() != py
    now = np.random.get_state()
    if drew or not (now[2:] == npy[2:] and np.array_equal(now[1], npy[1])):
        random.setstate(py)
        np.random.set_state(npy)
        raise NotTraceable(f"it draws from {'Python' if drew else 'numpy'}'s global random "
                           "numbers, which a compiled program would draw once and replay")


class Primal:
    """One graph input: where its value comes from at each call."""

    __slots__ = ("kind", "name", "source", "fake", "node", "requires_grad")

    def __init__(self, kind: str, name: str, source: Any, fake: FakeTensor, node: Node,
                 requires_grad: bool) -> None:
        # kind: "arg" (call argument), "state" (parameter/buffer), "lifted" (another tensor
        # the region read), "key" (a PRNG key drawn from ``source``, a Generator, per call)
        self.kind, self.name, self.source = kind, name, source
        self.fake, self.node, self.requires_grad = fake, node, requires_grad

    def __repr__(self) -> str:
        return f"Primal({self.kind}, {self.name})"


class Joint:
    """The joint graph and the role of each of its inputs and outputs."""

    def __init__(self, graph: Graph, primals: list[Primal], tangents: list[Node],
                 outputs: list[Node], differentiable: list[bool], out_spec: tuple,
                 mutations: list[tuple[int, Node]], grads: list[Node | None],
                 sizes: SizeGuards) -> None:
        self.graph, self.primals, self.tangents = graph, primals, tangents
        self.outputs, self.differentiable, self.out_spec = outputs, differentiable, out_spec
        self.mutations, self.grads, self.sizes = mutations, grads, sizes
        self.sinks: list[Sink] = []  # where the outputs after the returned ones are stored
        self.grad_order: list[int] | None = None  # grad primals, in eager's order (below)

    @property
    def grad_primals(self) -> list[int]:
        """Indices of the primals that get a gradient (the backward node's edges), in the
        order an eager backward reaches their accumulators, so the hooks of parameters run
        in eager's order (``grads`` follows the same order)."""
        if self.grad_order is not None:
            return list(self.grad_order)
        return [i for i, p in enumerate(self.primals) if p.requires_grad]


class _State:
    """Primals of one trace: real tensor -> fake (by identity), created on demand."""

    def __init__(self, tracer: ProxyTracer, fake_mode: FakeTensorMode, grad: bool) -> None:
        self.tracer, self.fake_mode, self.grad = tracer, fake_mode, grad
        self.primals: list[Primal] = []
        self.by_id: dict[int, FakeTensor] = {}
        self.snapshots: list[tuple[Tensor, Any, int, int]] = []
        self.thread = threading.get_ident()

    def add(self, kind: str, name: str, real: Any, shape: tuple, dtype: Any,
            requires_grad: bool) -> FakeTensor:
        fake = FakeTensor(shape, dtype, self.fake_mode)
        fake._requires_grad = requires_grad
        node = self.tracer.graph.placeholder(sanitize(name))
        track_tensor_tree(fake, self.tracer.proxy(node), self.tracer)
        self.primals.append(Primal(kind, node.name, real, fake, node, requires_grad))
        if isinstance(real, Tensor):
            self.by_id[id(real)] = fake
            self.snapshots.append((real, real._data, _hook_count(real), real._version))
        return fake

    def add_tensor(self, kind: str, name: str, real: Tensor, shape: tuple) -> FakeTensor:
        return self.add(kind, name, real, shape, real.dtype, self.grad and real.requires_grad)

    def swap(self, value: Any) -> Any:
        """A real tensor becomes its fake (lifted as a new primal the first time)."""
        if isinstance(value, Tensor) and not isinstance(value, FakeTensor):
            fake = self.by_id.get(id(value))
            if fake is None:
                fake = self.add_tensor("lifted", f"lifted{len(self.primals)}", value,
                                       tuple(value.shape))
            return fake
        if type(value) in (list, tuple):
            return type(value)(self.swap(v) for v in value)
        return value

    def new_key(self, generator: Any) -> FakeTensor:
        n = sum(p.kind == "key" for p in self.primals)
        return self.add("key", f"rng_key{n}", generator, (2,), jnp.uint32, False)


class _SwapMode(DispatchMode):
    """Top of the mode stack while tracing: real tensors reach ops as their fakes."""

    def __init__(self, state: _State) -> None:
        self.state = state

    def __acg_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        schema = func.schema
        if schema is not None and schema.is_mutable and args and _alias_of_real(args[0]):
            raise NotTraceable(f"{func.qualname} writes through .data or .detach() of a tensor "
                               "(storage shared with it); that write runs eagerly")
        swap = self.state.swap
        return func(*swap(args), **{k: swap(v) for k, v in (kwargs or {}).items()})


def _alias_of_real(t: Any) -> bool:
    """``t`` is ``x.data`` or ``x.detach()`` of a real tensor: a write must reach ``x``, which
    the trace (which writes back to the tensors it was given) cannot do."""
    meta = getattr(t, "_base_meta", None)
    return meta is not None and meta[1] is DATA_ALIAS and not isinstance(meta[0](), FakeTensor)


@contextlib.contextmanager
def _fresh_keys(state: _State) -> Iterator[None]:
    """Random draws inside the region become key inputs (drawn anew at every call)."""
    from ..kernels.factories import Generator
    original = Generator.next_key

    def next_key(gen: Any) -> Tensor:
        if threading.get_ident() != state.thread:  # another thread is not being traced
            return original(gen)
        return state.new_key(gen)
    Generator.next_key = next_key  # type: ignore[method-assign]
    try:
        yield
    finally:
        Generator.next_key = original  # type: ignore[method-assign]


def _hook_count(t: Tensor) -> int:
    return len(t._backward_hooks or ()) + len(t._post_acc_hooks or ())


def trace_joint(fn: Callable, in_spec: tuple, args: list[Tensor], arg_names: list[str],
                state: list[tuple[str, Tensor]], dynamic: bool | None | list[bool], grad: bool,
                sinks: Sinks | None = None) -> Joint:
    """Trace ``fn(*args, **kwargs)`` (rebuilt from ``in_spec``) into a joint graph.

    ``dynamic`` may also be one flag per argument size (then parameters' sizes are static);
    ``sinks`` watches where the region may store tensors (they become extra outputs)."""
    tracer = ProxyTracer()
    shape_env = ShapeEnv()
    fake_mode = FakeTensorMode(shape_env)
    st = _State(tracer, fake_mode, grad)
    sized = list(args) + ([t for _, t in state] if dynamic is True else [])
    names = [f"{n}.size({d})" for n, t in zip(arg_names + [n for n, _ in state], sized)
             for d in range(t.ndim)]
    if isinstance(dynamic, list):
        flags, dynamic = dynamic, None
    else:
        flags = [bool(dynamic) or (dynamic is None and d == 0) for t in sized
                 for d in range(t.ndim)]
    sizes = SizeGuards([s for t in sized for s in t.shape], shape_env, flags, names)
    it = iter(sizes.symbolic)
    fakes = [st.add_tensor("arg", n, t, tuple(next(it) for _ in t.shape))
             for n, t in zip(arg_names, args)]
    for name, t in state:
        shape = tuple(next(it) for _ in t.shape) if dynamic else tuple(t.shape)
        st.add_tensor("state", name, t, shape)
    call_args, call_kwargs = unflatten(in_spec, iter(fakes))
    try:
        with tracing(tracer, fake_mode), _SwapMode(st), _fresh_keys(st), _no_ca(), \
                set_grad_enabled(grad):
            out = fn(*call_args, **call_kwargs)
            outs, out_spec = flatten(out, keyed=False)
            stored = sinks.stored() if sinks is not None else []
            outs = [st.swap(o) for o in outs + [t for _, ts in stored for t in ts]]
            _check_constants(tracer)
            _check_outputs(out_spec, tracer, outs)
            out_nodes = [tracer.tensor_proxies.get(o).node for o in outs]
            mutations = _mutations(st)
            _check_hooks(st, outs)
            grads, tangents, order = _backward(st, outs) if grad else ([], [], None)
    except NotTraceable:
        raise
    except Exception as e:  # data-dependent control flow, .item(), missing symbolic rules...
        raise NotTraceable(_describe(e)) from e
    finally:
        if sinks is not None:
            sinks.restore()
        _restore_data(st)
    diff = [o.requires_grad for o in outs]
    tracer.graph.output((*out_nodes, *(n for _, n in mutations), *grads))
    tracer.graph.eliminate_dead_code()
    joint = Joint(tracer.graph, st.primals, tangents, out_nodes, diff, out_spec, mutations,
                  grads, sizes.finalize())
    joint.sinks = [s for s, _ in stored]
    joint.grad_order = order
    return joint


def _check_constants(tracer: ProxyTracer) -> None:
    """Every tensor an op read is an input or was computed in the trace; a fake from
    elsewhere (another trace) has no value the program could hold."""
    if tracer.constants:
        raise NotTraceable(f"the region reads {len(tracer.constants)} tensor(s) from another "
                           "trace (a fake tensor stored outside a region)")


@contextlib.contextmanager
def _no_ca() -> Iterator[None]:
    """The joint backward is traced by our engine itself, never captured by compiled
    autograd (the user may call the region inside ``compiled_autograd.enable``)."""
    from .. import compiled_autograd
    with compiled_autograd.disable():
        yield


def _check_outputs(spec: tuple, tracer: ProxyTracer, outs: list[Tensor]) -> None:
    if _has_symbolic(spec):
        raise NotTraceable("the region returns a size computed from a tensor shape (a SymInt); "
                           "return tensors and constants only")
    for o in outs:
        if o not in tracer.tensor_proxies:
            raise NotTraceable("the region returns a tensor the trace did not produce")
    held = _object_holding_traced(spec)
    if held is not None:  # its tensors would be the trace's fakes after the call
        raise NotTraceable(f"the region returns a {type(held).__name__} object holding traced "
                           "tensors (return its tensors, or build it outside)")


def _object_holding_traced(spec: tuple) -> Any:
    """A returned object (a ``distributions.Normal``...) whose attributes hold fake tensors
    or symbolic sizes, or None."""
    if spec[0] == "C":
        attrs = getattr(spec[1], "__dict__", None)
        if isinstance(attrs, dict) and not isinstance(spec[1], type) and any(
                isinstance(v, FakeTensor) or _has_symbolic(("C", v)) or
                (isinstance(v, tuple) and any(is_symbolic(x) for x in v))
                for v in attrs.values()):
            return spec[1]
        return None
    if spec[0] == "T":
        return None
    keyed = spec[0] in ("dict", "namedtuple")
    for s in (spec[2] if keyed else spec[1]):
        held = _object_holding_traced(s)
        if held is not None:
            return held
    return None


def _has_symbolic(spec: tuple) -> bool:
    if spec[0] == "C":
        return is_symbolic(spec[1])
    if spec[0] == "T":
        return False
    keyed = spec[0] in ("dict", "namedtuple")  # their children follow the keys / the class
    return any(_has_symbolic(s) for s in (spec[2] if keyed else spec[1]))


def _mutations(st: _State) -> list[tuple[int, Node]]:
    """Inputs written in place: their final value is an output, written back per call."""
    found = []
    for i, p in enumerate(st.primals):
        if p.fake._version != 0:
            if p.requires_grad:
                raise NotTraceable(f"the region writes in place to {p.name}, which requires "
                                   "grad")
            found.append((i, st.tracer.tensor_proxies.get(p.fake).node))
    return found


def _check_hooks(st: _State, outs: list[Tensor]) -> None:
    """Hooks registered inside the region would be lost (or stacked up) by a trace."""
    for real, _, hooks, _ in st.snapshots:
        if _hook_count(real) != hooks:
            raise NotTraceable("a hook was registered inside the region (on a tensor it reads)")
    edges = [gradient_edge(o) for o in outs if o.requires_grad]
    if edges and engine._dependencies(GraphRoot(edges, []))[1]:
        raise NotTraceable("a hook (register_hook, retain_grad or a node hook) was registered "
                           "inside the region")


def _backward(st: _State, outs: list[Tensor]
              ) -> tuple[list[Node | None], list[Node], list[int] | None]:
    """Our engine's backward over the traced forward, from tangent placeholders: the
    gradient nodes and the primals they belong to, in eager's order; the tangents."""
    from ..autograd import grad as autograd_grad
    diff = [o for o in outs if o.requires_grad]
    if not diff or not any(p.requires_grad for p in st.primals):
        for p in st.primals:  # nothing to differentiate: no backward node at all
            p.requires_grad = False
        return [], [], None
    tangents, nodes = [], []
    for i, o in enumerate(diff):
        t = st.add("tangent", f"tangent{i}", None, tuple(o.shape), o.dtype, False)
        st.primals.pop()  # a tangent is a backward input, not a primal
        tangents.append(t)
        nodes.append(st.tracer.tensor_proxies.get(t).node)
    which = [i for i, p in enumerate(st.primals) if p.requires_grad]
    inputs = [st.primals[i].fake for i in which]
    order = _eager_order(diff, inputs)
    grads = autograd_grad(diff, inputs, tangents, allow_unused=True)
    return ([None if grads[k] is None else st.tracer.tensor_proxies.get(grads[k]).node
             for k in order], nodes, [which[k] for k in order])


def _eager_order(outs: list[Tensor], inputs: list[Tensor]) -> list[int]:
    """Positions of ``inputs`` in the order an eager backward from ``outs`` reaches their
    accumulators (the engine's walk: later-created nodes first, accumulators in the order
    they became ready). The region's one backward node hands its gradients on in this
    order, so parameter hooks run as they would without the region."""
    root = GraphRoot([gradient_edge(o) for o in outs], [])
    deps = engine._dependencies(root)[0]
    at: dict[Any, list[int]] = {}
    for k, t in enumerate(inputs):
        node = gradient_edge(t)[0]
        if node is not None:
            at.setdefault(node, []).append(k)
    order: list[int] = []
    heap, pushed = [(-root.seq, 0, root)], 0
    while heap:
        node = heapq.heappop(heap)[2]
        order += at.pop(node, [])
        for nxt, _ in node.next_edges:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                pushed += 1
                heapq.heappush(heap, (-nxt.seq, pushed, nxt))
    reached = set(order)
    return order + [k for k in range(len(inputs)) if k not in reached]


def _restore_data(st: _State) -> None:
    """A ``.data =`` assignment inside the trace put a fake's (empty) value into a real
    tensor: undo it, and report it (the region then runs eagerly)."""
    broken = []
    for real, data, _, version in st.snapshots:
        if real._data is not data:
            real._data, real._version = data, version
            broken.append(real)
    if broken:
        raise NotTraceable(f"the region assigns .data of {len(broken)} tensor(s) it reads")


def _ours() -> tuple[str, ...]:
    import jax

    from .. import kernels
    dirs = (_pkg_dir(__package__.split(".")[0]), os.path.dirname(kernels.__file__),
            os.path.dirname(jax.__file__), os.path.dirname(contextlib.__file__))
    return tuple(os.path.join(d, "") for d in dirs)


def _pkg_dir(name: str) -> str:
    import importlib
    return os.path.dirname(importlib.import_module(name).__file__)


def _describe(e: Exception) -> str:
    """The error and the user's line that raised it (the innermost frame outside our
    package, jax and generated graph code)."""
    return f"{type(e).__name__}: {_message(e)}{user_line(traceback.extract_tb(e.__traceback__))}"


def user_line(frames: list) -> str:
    """`` (at file:line: source)`` of the innermost of ``frames`` outside our package, jax
    and generated graph code; empty when there is none."""
    ours = _ours()
    for frame in reversed(frames):
        if not frame.filename.startswith(ours) and not frame.filename.startswith("<"):
            return f" (at {frame.filename}:{frame.lineno}: {frame.line})"
    return ""


def _message(e: BaseException) -> str:
    """The exception's text; one raised without any (a C attribute lookup) gets one built
    from what it carries, so a fallback log never prints an empty reason."""
    text = str(e)
    if text:
        return text
    if isinstance(e, AttributeError) and getattr(e, "name", None):
        return f"{type(getattr(e, 'obj', None)).__name__!r} object has no attribute {e.name!r}"
    return repr(e) if e.args else f"{type(e).__name__} raised without a message"
