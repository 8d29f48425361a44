"""How one graph node's op runs on arrays, and which way a graph runs at a new shape.

Graphs (a compiled region's forward and backward, compiled autograd's backward segments)
run either as XLA programs, where each node lowers to its op's own JAX kernel
(:func:`call_op`), or op by op on the host tier (:func:`call_op_host`: numpy for CPU
values light enough, kernels/_xp.py), with no compile at all. :class:`Tiered` decides,
per input shape, between the two (ski rental against XLA's per-shape compile).

>>> import numpy as np
>>> from autograd_compile.kernels import elementwise as E
>>> call_op_host(E.mul, (np.ones(3, np.float32), np.full(3, 2.0, np.float32)), {})
array([2., 2., 2.], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..dispatch.dispatcher import OpOverload
from ..dispatch.keys import TLS, DispatchKey
from ..fx import Node as FxNode
from ..kernels import _xp
from ..tensor import WantsDeviceValues, _unwrap, _unwrap_stored, _wrap


def load(value: Any, env: dict) -> Any:
    if isinstance(value, FxNode):
        return env[value]
    if type(value) in (list, tuple):
        return type(value)(load(v, env) for v in value)
    if type(value) is dict:
        return {k: load(v, env) for k, v in value.items()}
    return value


def call_op(op: OpOverload, args: tuple, kwargs: dict, unwrap: Callable = _unwrap) -> Any:
    """The op's own JAX kernel; composite ops run on Tensors wrapping tracers (or arrays),
    their results read by ``unwrap`` (a graph run op by op keeps host values on the host)."""
    kernel = op.kernels.get(DispatchKey.Backend)
    if kernel is not None:
        return kernel.fn(*args, **kwargs)
    wrapped = _wrap(args)
    prev, TLS.grad_enabled = TLS.grad_enabled, False
    try:
        out = op(*wrapped, **_wrap(kwargs))
    finally:
        TLS.grad_enabled = prev
    return unwrap(out)


def arg_loader(value: Any) -> Callable[[dict], Any]:
    """``lambda env: load(value, env)``, faster for the usual flat argument tuple."""
    if type(value) is tuple and not any(type(v) in (list, tuple, dict) for v in value):
        template = list(value)
        slots = [(i, v) for i, v in enumerate(value) if isinstance(v, FxNode)]

        def flat(env: dict) -> tuple:
            vals = template.copy()
            for i, v in slots:
                vals[i] = env[v]
            return tuple(vals)
        return flat
    return lambda env: load(value, env)


def _moves() -> frozenset:
    """Ops that only move data (views, splits, slices): numpy gives XLA's bits at any size,
    so op by op they run their kernel on numpy directly, without choosing a tier (~10 of a
    ~13 us call). Indexing that checks bounds (select, gather...) is not among them."""
    from ..kernels import indexing as I, shape as S
    return frozenset({S.view, S.reshape, S.expand, S.permute, S.transpose, S.unsqueeze,
                      S.squeeze, S.squeeze_dim, S.squeeze_dims, S.split_with_sizes, I.slice_op})


def _exact() -> dict:
    """Operators numpy and XLA round alike: op by op, eager's fast path (``exact_binary``:
    the same dtypes, a host-tier size), so the op's bits without its dispatch."""
    from ..kernels import elementwise as E
    return {E.add: np.add, E.sub: np.subtract, E.mul: np.multiply}


_MOVES: frozenset = frozenset()
_EXACT: dict = {}


def call_op_host(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """One op of a graph run op by op: a host-aware kernel takes and gives numpy arrays
    as eager tensors do (no copy to a jax array and back between ops); it asks for jax
    values where a program is worth it (:class:`WantsDeviceValues`)."""
    global _MOVES, _EXACT
    if not _MOVES:  # (built at first use: the kernels import this package)
        _MOVES, _EXACT = _moves(), _exact()
    kernel = op.kernels.get(DispatchKey.Backend)
    if op in _MOVES and args and type(args[0]) is np.ndarray:
        try:  # (the graph's shapes were checked when it was traced)
            return _xp.host_call(kernel.fn.__wrapped__, args, kwargs, keep=True)
        except Exception:  # numpy disagrees: the op's own path gives the answer or error
            pass
    np_fn = _EXACT.get(op)
    if np_fn is not None and len(args) == 2 and not kwargs:
        out = _xp.exact_binary(np_fn, *args)
        if out is not None:
            out.setflags(write=False)
            return out
    host = None if kernel is None else getattr(kernel.fn, "_acg_host", None)
    if host is not None:
        try:
            return host(*args, **kwargs)
        except WantsDeviceValues:
            args, kwargs = _as_jax(args), _as_jax(kwargs)
    elif kernel is None:  # a composite (split.Tensor...): its ops on the host tier too
        return call_op(op, args, kwargs, _unwrap_stored)
    return call_op(op, args, kwargs)


def _as_jax(v: Any) -> Any:
    if type(v) is np.ndarray:
        return _xp._to_jax(v)
    if type(v) in (list, tuple):
        return type(v)(_as_jax(x) for x in v)
    if type(v) is dict:
        return {k: _as_jax(x) for k, x in v.items()}
    return v


def _heavy(sig: tuple) -> bool:
    """Some input too big for the host tier: run eagerly, its ops would compile singly."""
    return any(_heavy(a) if type(a) is tuple else _xp.host_cost((a,)) > _xp.HOST_LIMIT
               for a in sig if type(a) is tuple or hasattr(a, "shape"))


class Tiered:
    """XLA's per-shape compile, rationed: the first input shapes a program sees compile
    at once (a fixed-shape training step pays no eager warm-up), as do shapes with an
    input too big for the host tier; any other shapes run the
    graph eagerly, op by op (CPU ops on the host tier, kernels/_xp.py), until the time spent
    so on those shapes reaches an estimate of their compile cost, and then compile (ski
    rental: never more than twice the cheaper choice). So a generation loop whose length
    grows every step never stalls, and a shape that keeps coming back gets its program.

    ``counters[counter]`` counts the calls run op by op. :meth:`call` takes a caller's key
    of the shapes (compiled autograd's size list) so that a compiled shape costs one set
    lookup; ``tiered(*arrays)`` keys by the arrays' avals."""

    __slots__ = ("program", "body", "price", "compiled", "rent", "n_ops", "counters",
                 "counter")

    def __init__(self, program: Callable, body: Callable, n_ops: int, counters: dict,
                 counter: str = "eager_shapes") -> None:
        self.program, self.body, self.n_ops = program, body, n_ops
        self.price = _xp.COMPILE_COST * (1 + n_ops / 8)  # a graph compiles slower than an op
        self.compiled: set = set()
        self.rent: dict[Any, float] = {}
        self.counters, self.counter = counters, counter

    def __call__(self, *arrays: Any) -> Any:
        if _xp.ENABLED and _xp.FORCE != "xla":
            sig = _xp.host_sig(arrays)
            if sig is not None and sig not in self.compiled:
                return self._new(sig, sig, arrays)
        return self.program(*arrays)

    def call(self, key: Any, *arrays: Any) -> Any:
        """``self(*arrays)``, where ``key`` tells the arrays' shapes apart."""
        if key not in self.compiled and _xp.ENABLED and _xp.FORCE != "xla":
            sig = _xp.host_sig(arrays)
            if sig is not None:
                return self._new(key, sig, arrays)
            self.compiled.add(key)  # (not on the host's CPU: XLA's place)
        return self.program(*arrays)

    def _new(self, key: Any, sig: tuple, arrays: tuple) -> Any:
        """A call at shapes without a program: compile or run op by op."""
        if not self.compiled or _heavy(sig):  # the first shapes, or ops too big for the host
            self.compiled.add(key)  # (they would compile one by one): now
            return self.program(*arrays)
        spent = self.rent.get(key, 0.0)
        if spent < self.price or _xp.FORCE == "host":
            out = self.body(*arrays)
            self.rent[key] = spent + self.n_ops * _xp.host_cost(sig)
            self.counters[self.counter] += 1
            return out
        self.compiled.add(key)
        self.rent.pop(key, None)
        return self.program(*arrays)
