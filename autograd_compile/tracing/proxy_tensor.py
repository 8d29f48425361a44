"""Proxy tracing: record every op (and every size computation) into an fx Graph.

:class:`ProxyDispatchMode` sits on the mode stack above a fake mode (or real
execution); each op runs for real below it and is recorded as a
``call_function`` node whose inputs are the proxies of its tensor arguments.
Tensor -> proxy and SymInt -> proxy maps are weak and per tracer, so nothing
outlives the trace. :class:`ProxySymDispatchMode` records SymInt arithmetic
(``sym_size(x, 0) * 2``) so sizes stay symbolic in the graph; constants are
inlined as Python ints.

>>> import autograd_compile as acg
>>> from autograd_compile.proxy_tensor import make_fx
>>> gm = make_fx(lambda x: (x * 2).sum(), tracing_mode="fake")(acg.ones(3))
>>> print(gm.code.strip())
def forward(self, arg0):
    mul_tensor = ops.acg.mul.Tensor(arg0, 2);  arg0 = None
    sum_1 = ops.acg.sum(mul_tensor);  mul_tensor = None
    return sum_1
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Iterator

from ..autograd.saved import output_aliases
from ..dispatch.dispatcher import OpOverload
from .fake import ALIAS_OF, FakeTensor, FakeTensorMode
from ..fx import Graph, GraphModule, Proxy, Tracer
from .lifted import LiftedScalar
from ..modes import DispatchMode
from .symbolic_shapes import (ShapeEnv, SymDispatchMode, SymInt, SymProxyTracker,
                              _WeakIdKeyDict, get_proxy, is_symbolic, set_proxy)
from ..tensor import Tensor


def sym_size(t: Any, dim: int) -> Any:
    """``t.shape[dim]``: the graph node a symbolic size is derived from."""
    return t.shape[dim]


class ProxyTracer(Tracer):
    """A Tracer that also tracks which proxy stands for each tensor and SymInt."""

    def __init__(self, graph: Graph | None = None) -> None:
        super().__init__(graph or Graph())
        # by identity: a WeakKeyDictionary would call Tensor.__eq__, which is an op
        self.tensor_proxies: _WeakIdKeyDict[Tensor, Proxy] = _WeakIdKeyDict()
        self.constants: dict[str, Tensor] = {}
        self.sym_tracker = SymProxyTracker()  # owned: proxies point back at this tracer
        self._const_ids = itertools.count()

    def lift_constant(self, t: Tensor) -> Proxy:
        """A tensor from outside the trace becomes a get_attr constant of the module."""
        name = f"_tensor_constant{next(self._const_ids)}"
        self.constants[name] = t
        proxy = self.create_proxy("get_attr", name, (), {})
        self.tensor_proxies[t] = proxy
        return proxy


def track_tensor_tree(value: Any, proxy: Proxy, tracer: ProxyTracer) -> None:
    """Associate each tensor in ``value`` (a tensor or tuple) with its proxy."""
    if isinstance(value, Tensor):
        tracer.tensor_proxies[value] = proxy
        if value.grad_fn is not None:  # what backward will unpack if `value` dies first
            for alias in output_aliases(value):
                tracer.tensor_proxies[alias] = proxy
        proxy.node.meta["val"] = value
        _track_sizes(value, proxy, tracer)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            if isinstance(v, Tensor):
                track_tensor_tree(v, proxy[i], tracer)


def _track_sizes(t: Tensor, proxy: Proxy, tracer: ProxyTracer) -> None:
    """Symbolic sizes first seen on this tensor get a ``sym_size`` proxy."""
    for dim, size in enumerate(t.shape):
        if isinstance(size, SymInt) and get_proxy(tracer, size) is None:
            set_proxy(tracer, size, tracer.create_proxy("call_function", sym_size, (proxy, dim), {}))


def fetch_tensor_proxy(tracer: ProxyTracer, t: Tensor) -> Proxy:
    """The proxy of ``t``; tensors created outside the trace become constants."""
    proxy = tracer.tensor_proxies.get(t)
    if proxy is None and (src := ALIAS_OF.get(t)) is not None:  # an alias made before a write:
        proxy = fetch_tensor_proxy(tracer, src)  # the source's value now, pinned to the alias
        tracer.tensor_proxies[t] = proxy
    return proxy if proxy is not None else tracer.lift_constant(t)


def is_traced_scalar(value: Any) -> bool:
    """SymInts and lifted floats: values whose computation the graph records."""
    return is_symbolic(value) or isinstance(value, LiftedScalar)


def _to_proxy_arg(tracer: ProxyTracer, value: Any) -> Any:
    if isinstance(value, Tensor):
        return fetch_tensor_proxy(tracer, value)
    if is_traced_scalar(value):
        proxy = get_proxy(tracer, value)
        if proxy is None:
            raise RuntimeError(f"symbolic value {value!r} has no proxy in this trace: it was "
                               "created outside it")
        return proxy
    if type(value) in (list, tuple):
        return type(value)(_to_proxy_arg(tracer, v) for v in value)
    return value


_DEFAULTS: dict[OpOverload, dict[str, Any]] = {}


def _defaults(op: OpOverload) -> dict[str, Any]:
    d = _DEFAULTS.get(op)
    if d is None:
        d = _DEFAULTS[op] = {a.name: a.default for a in op.schema.arguments if a.has_default}
    return d


def _same_constant(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if not isinstance(b, Tensor) else False


_NUMERIC_TYPES = frozenset({"Tensor", "Tensor?", "Scalar", "Scalar?", "float", "float?"})


def _specialize_structural(func: OpOverload, args: tuple) -> tuple:
    """A lifted int used as a dim or a size is structural: the graph takes its value (the
    fake kernel's decisions on it already guarded it); as a number it stays an input."""
    schema = func.schema.arguments
    return tuple(a.specialize() if isinstance(a, LiftedScalar) and i < len(schema) and
                 schema[i].type not in _NUMERIC_TYPES else a for i, a in enumerate(args))


class ProxyDispatchMode(DispatchMode):
    """Record each op as a node; the op itself runs below (fake or real)."""

    def __init__(self, tracer: ProxyTracer) -> None:
        self.tracer = tracer

    def __acg_dispatch__(self, func: OpOverload, types: tuple[type, ...], args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if any(isinstance(a, LiftedScalar) for a in args):
            args = _specialize_structural(func, args)
        p_args = _to_proxy_arg(self.tracer, args)
        defaults = _defaults(func)  # omitted when equal to the schema's: the graph reads cleaner
        p_kwargs = {k: _to_proxy_arg(self.tracer, v) for k, v in kwargs.items()
                    if not (k in defaults and _same_constant(defaults[k], v))}
        proxy = self.tracer.create_proxy("call_function", func, p_args, p_kwargs)
        track_tensor_tree(out, proxy, self.tracer)
        return out


class ProxySymDispatchMode(SymDispatchMode):
    """Record size arithmetic on SymInts (results that fold to ints stay constants)."""

    def __init__(self, tracer: ProxyTracer) -> None:
        self.tracer = tracer

    def __sym_dispatch__(self, func: Callable[..., Any], types: tuple[type, ...], args: tuple,
                         kwargs: dict) -> Any:
        out = func(*args, **kwargs)
        if is_traced_scalar(out) and get_proxy(self.tracer, out) is None:
            p_args = tuple(_to_proxy_arg(self.tracer, a) for a in args)
            proxy = self.tracer.create_proxy("call_function", func, p_args, dict(kwargs))
            proxy.node.meta["val"] = out
            set_proxy(self.tracer, out, proxy)
        return out


@contextlib.contextmanager
def tracing(tracer: ProxyTracer, fake_mode: FakeTensorMode | None) -> Iterator[None]:
    """Enter fake (below), proxy (above) and sym modes for the duration of a trace."""
    with contextlib.ExitStack() as stack:
        if fake_mode is not None:
            stack.enter_context(fake_mode)
        stack.enter_context(ProxyDispatchMode(tracer))
        stack.enter_context(ProxySymDispatchMode(tracer))
        yield


def _fakeify(args: tuple, mode: str) -> tuple[tuple, FakeTensorMode | None]:
    if mode == "real":
        return args, None
    fake_mode = FakeTensorMode(ShapeEnv() if mode == "symbolic" else None)
    converted = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and not isinstance(a, FakeTensor):
            sizes = None
            if fake_mode.shape_env is not None:
                sizes = tuple(fake_mode.shape_env.create_symint(int(s), f"arg{i}.size({d})")
                              for d, s in enumerate(a.shape))
            a = fake_mode.from_tensor(a, sizes)
        converted.append(a)
    return tuple(converted), fake_mode


def make_fx(fn: Callable[..., Any], tracing_mode: str = "real") -> Callable[..., GraphModule]:
    """Trace ``fn`` into a GraphModule: ``make_fx(fn, "symbolic")(*example_args)``.

    ``real`` runs ops on the example data, ``fake`` on shapes only, ``symbolic``
    on shapes whose sizes are SymInts (the graph then serves other sizes).
    """
    if tracing_mode not in ("real", "fake", "symbolic"):
        raise ValueError(f"tracing_mode must be 'real', 'fake' or 'symbolic', got "
                         f"{tracing_mode!r}")

    def traced(*args: Any) -> GraphModule:
        tracer = ProxyTracer()
        inputs, fake_mode = _fakeify(args, tracing_mode)
        for i, value in enumerate(inputs):
            proxy = tracer.proxy(tracer.graph.placeholder(f"arg{i}"))
            if isinstance(value, Tensor):
                track_tensor_tree(value, proxy, tracer)
        with tracing(tracer, fake_mode):
            out = fn(*inputs)
        tracer.graph.output(_to_proxy_arg(tracer, out).node if isinstance(out, Tensor)
                            else _output_arg(tracer, out))
        tracer.graph.eliminate_dead_code()
        gm = GraphModule(dict(tracer.constants), tracer.graph)
        gm.shape_env = fake_mode.shape_env if fake_mode is not None else None
        return gm
    return traced


def _output_arg(tracer: ProxyTracer, out: Any) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_output_arg(tracer, v) for v in out)
    if isinstance(out, Tensor) or is_traced_scalar(out):
        return _to_proxy_arg(tracer, out).node
    return out
