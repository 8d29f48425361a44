"""``acg.func``: PyTorch's ``torch.func`` transforms (vmap, grad, vjp, jvp, jacrev, jacfwd,
hessian, linearize) and ``functional_call`` / ``stack_module_state``.

A function of Tensors is made a pure JAX function (its Tensors wrap JAX arrays, or JAX tracers
while a transform traces it; every op runs its JAX kernel on them), and the transform is JAX's
own: ``vmap(grad(f))`` is one batched program (``jax.vmap(jax.grad(...))``), not a loop over
samples. Transforms nest. Results of grad/vjp/jac* are new tensors, detached from the caller's
autograd graph. ``vmap`` whose inputs require grad gives a result in that graph: the batched
program becomes one op of our autograd (backward by ``jax.vjp``); only when a tensor the
function captures requires grad (JAX cannot see it) does it run sample by sample.

>>> import autograd_compile as acg
>>> x = acg.tensor([1.0, 2.0, 3.0])
>>> acg.func.grad(lambda t: (t ** 3).sum())(x).tolist()
[3.0, 12.0, 27.0]
>>> acg.func.vmap(lambda r: r.sum(), in_dims=0)(acg.ones(4, 2)).tolist()
[2.0, 2.0, 2.0, 2.0]
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, Iterator, Sequence

import jax

from autograd_compile.autograd.grad_mode import is_grad_enabled, no_grad
from autograd_compile.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]


# -- pytrees whose dicts keep their key order ---------------------------------------------------

class _Dict(dict):
    """A dict flattened in insertion order (JAX sorts a dict's keys, so ``grad`` of a params
    dict came back sorted: code zipping ``grads.values()`` with ``params`` paired them wrong)."""


jax.tree_util.register_pytree_node(_Dict, lambda d: (list(d.values()), list(d)),
                                   lambda keys, values: _Dict(zip(keys, values)))


def _ordered(tree: Any) -> Any:
    """Plain dicts (also inside lists and tuples) as :class:`_Dict`."""
    if type(tree) is dict:
        return _Dict({k: _ordered(v) for k, v in tree.items()})
    if type(tree) in (list, tuple):
        return type(tree)(_ordered(v) for v in tree)
    return tree


def _plain(tree: Any) -> Any:
    """:class:`_Dict` back to the plain dicts they were."""
    if type(tree) is _Dict:
        return {k: _plain(v) for k, v in tree.items()}
    if type(tree) in (list, tuple):
        return type(tree)(_plain(v) for v in tree)
    return tree


def _tree_map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable | None = None) -> Any:
    return _plain(jax.tree_util.tree_map(f, _ordered(tree), *map(_ordered, rest),
                                         is_leaf=is_leaf))


def _tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple:
    return jax.tree_util.tree_flatten(_ordered(tree), is_leaf=is_leaf)


def _tree_unflatten(treedef: Any, leaves: Any) -> Any:
    return _plain(jax.tree_util.tree_unflatten(treedef, leaves))


def _tree_leaves(tree: Any, is_leaf: Callable | None = None) -> list:
    return jax.tree_util.tree_leaves(_ordered(tree), is_leaf=is_leaf)


# -- Tensors <-> JAX arrays ---------------------------------------------------------------------

def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _to_jax(tree: Any) -> Any:
    """Every Tensor of a pytree as its JAX array (a tracer inside a transform); its dicts
    keep their order through JAX's transforms (:class:`_Dict`)."""
    return jax.tree_util.tree_map(lambda t: t.__jax_array__() if _is_tensor(t) else t,
                                  _ordered(tree), is_leaf=_is_tensor)


def _to_tensor(tree: Any) -> Any:
    """Every JAX array (or tracer) of a pytree as a Tensor."""
    return _tree_map(
        lambda a: Tensor(a) if isinstance(a, (jax.Array, jax.core.Tracer)) else a, tree)


def _pure(func: Callable, kwargs: dict | None = None) -> Callable:
    """``func`` as a function of JAX arrays: arguments wrapped as Tensors, results unwrapped.
    No autograd graph is recorded: JAX differentiates."""
    kwargs = kwargs or {}

    def pure(*arrays: Any) -> Any:
        with no_grad():
            return _to_jax(func(*_to_tensor(arrays), **kwargs))
    return pure


def _argnums(argnums: Any, n: int) -> None:
    for a in (argnums,) if isinstance(argnums, int) else argnums:
        if not isinstance(a, int) or not -n <= a < n:
            raise RuntimeError(f"Got argnums={argnums}, but only {n} positional inputs")


# -- the transforms ------------------------------------------------------------------------------

def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` over a batch dimension of its inputs (``in_dims``: an int, None, or one entry
    per argument), the batch stacked at ``out_dims`` of each output; JAX's vmap, so the kernels
    run batched. ``randomness`` (PyTorch's): 'error' (a random op inside raises), 'different'
    (each sample draws its own numbers) or 'same' (every sample sees one draw); each call draws
    afresh from the global generator.

    >>> import autograd_compile as acg
    >>> f = acg.func.vmap(lambda r: r + acg.rand(2), randomness="same")
    >>> out = f(acg.zeros(3, 2)); bool((out[0] == out[2]).all())
    True
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError("vmap: chunk_size should be None or greater than 0.")
    axis = f"acg_vmap_{next(_AXES)}"  # names this vmap's batch for per-sample keys

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dims = tuple(in_dims) if isinstance(in_dims, list) else in_dims
        if isinstance(dims, tuple) and len(dims) != len(args):
            raise ValueError(f"vmap(func, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             f"compatible with the structure of `inputs`. in_dims has structure "
                             f"{len(dims)} but inputs has {len(args)}.")
        if _records((args, kwargs)):  # the result must join the caller's autograd graph
            out = _vmap_as_op(ops, func, args, kwargs, dims, out_dims, randomness, axis)
            if out is not _RECORDS:
                return out
            return _vmap_by_samples(func, args, kwargs, dims, out_dims, randomness)
        recorded, draws = [False], [0]

        def build() -> Callable:
            def traced(base: Any, *arrays: Any) -> Any:
                with _random_keys(randomness, base, axis, draws):
                    out = func(*_to_tensor(arrays), **_to_tensor(_to_jax(kwargs)))
                recorded[0] = recorded[0] or _records(out)
                return _to_jax(out)
            per_arg = dims if isinstance(dims, tuple) else (dims,) * len(args)
            return jax.vmap(traced, in_axes=(None, *per_arg), out_axes=out_dims,
                            axis_name=axis)
        key = _call_key(cache, args, kwargs, randomness)
        out = _cached_call(cache, build, (key, *args), kwargs, recorded, draws)
        if out is _RECORDS:  # a captured tensor requires grad: sample by sample
            return _vmap_by_samples(func, args, kwargs, dims, out_dims, randomness)
        return _to_tensor(out)
    cache: dict = {}
    ops: dict = {}
    return wrapper


_AXES = itertools.count()
_OPS = itertools.count()


class _Captured(Exception):
    """Raised inside a trace: a tensor the function captured requires grad."""


def _vmap_as_op(ops: dict, func: Callable, args: tuple, kwargs: dict, dims: Any, out_dims: Any,
                randomness: str, axis: str) -> Any:
    """vmap whose inputs require grad, as ONE op of our autograd: its kernel is the batched JAX
    program, its backward ``jax.vjp`` of it (an op again, so it differentiates twice and is
    captured by compiled autograd). _RECORDS when this cannot serve: a captured tensor requires
    grad (JAX would not see it), or in_dims nest below an argument."""
    from autograd_compile.kernels._bridge import jaxop
    per_arg = dims if isinstance(dims, tuple) else (dims,) * len(args)
    if any(d is not None and not isinstance(d, int) for d in per_arg) or kwargs or \
            not isinstance(out_dims, int):
        return _RECORDS
    leaves, tree = _tree_flatten(args, is_leaf=_is_tensor)
    arg_of = [i for i, a in enumerate(args)
              for _ in _tree_leaves(a, is_leaf=_is_tensor)]
    pos = [i for i, v in enumerate(leaves) if _is_tensor(v)]
    key = (tree, tuple((tuple(leaves[i].shape), str(leaves[i].dtype)) for i in pos),
           tuple(v for i, v in enumerate(leaves) if i not in pos), per_arg, out_dims)
    try:
        entry = ops.get(key)
    except TypeError:  # unhashable static values
        return _RECORDS
    if entry is None:
        entry = ops[key] = _batched_op(jaxop, func, leaves, tree, pos,
                                       [per_arg[arg_of[i]] for i in pos], out_dims,
                                       randomness, axis)
    op, out_tree = entry
    if op is None:
        return _RECORDS
    base = Tensor(_call_key({}, args, kwargs, randomness))
    try:
        out = op(base, *[leaves[i] for i in pos])
    except _Captured:
        ops[key] = (None, None)
        return _RECORDS
    out = out if isinstance(out, tuple) else (out,)
    return _tree_unflatten(out_tree[0], list(out))


@contextlib.contextmanager
def _without_modes() -> Iterator[None]:
    """The function runs on JAX tracers: the caller's dispatch modes (fake tensors, proxy
    tracing of a compiled backward) must not see its ops, only the one op around it."""
    from autograd_compile.dispatch.keys import TLS
    saved = TLS.mode_stack, TLS.included, TLS.excluded
    TLS.mode_stack, TLS.included, TLS.excluded = [], 0, 0
    try:
        yield
    finally:
        TLS.mode_stack, TLS.included, TLS.excluded = saved


def _batched_op(jaxop: Callable, func: Callable, leaves: list, tree: Any, pos: list,
                in_axes: list, out_dims: int, randomness: str, axis: str) -> tuple:
    """(the op running ``jax.vmap(func)`` over the tensor leaves, [output tree])."""
    out_tree: list = []

    def one(base: Any, *arrays: Any) -> tuple:
        full = list(leaves)
        for i, a in zip(pos, arrays):
            full[i] = Tensor(a)
        with _random_keys(randomness, base, axis, [0]), _without_modes():
            out = func(*_tree_unflatten(tree, full))
        if _records(out):
            raise _Captured
        flat, struct = _tree_flatten(out, is_leaf=_is_tensor)
        out_tree[:] = [struct]
        return tuple(t.__jax_array__() if _is_tensor(t) else t for t in flat)

    def kernel(base: Any, *arrays: Any) -> Any:
        out = jax.vmap(one, in_axes=(None, *in_axes), out_axes=out_dims,
                       axis_name=axis)(base, *arrays)
        return out if len(out) > 1 else out[0]
    from autograd_compile.kernels._bridge import _spec
    try:  # the output count, and whether a captured tensor requires grad
        n_out = len(jax.eval_shape(lambda b, *a: jax.vmap(
            one, in_axes=(None, *in_axes), out_axes=out_dims, axis_name=axis)(b, *a),
            _no_key(), *[_spec(leaves[i], {}) for i in pos]))  # fakes have no values
    except _Captured:
        return None, None
    names = [f"x{i}" for i in range(len(pos))]
    outs = "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    schema = f"vmap_{next(_OPS)}(Tensor key, {', '.join(f'Tensor {n}' for n in names)}) -> {outs}"
    return jaxop(schema, kernel, diff=names), out_tree

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either "
                 "use the 'same' or 'different' randomness flags on vmap or perform the "
                 "randomness operation out of vmap")
_NO_KEYS: list = []  # the key argument of a function that draws none (made on first use:
# importing must not start JAX's backend, which distributed.init has to come before)


def _no_key() -> Any:
    if not _NO_KEYS:
        _NO_KEYS.append(jax.numpy.zeros(2, jax.numpy.uint32))
    return _NO_KEYS[0]


def _call_key(cache: dict, args: tuple, kwargs: dict, randomness: str) -> Any:
    """This call's base PRNG key (uint32[2]) from the global generator; a function traced once
    and found to draw nothing gets a constant, so the global stream does not move."""
    from autograd_compile.kernels.random import default_generator
    if randomness == "error" or cache.get(_DRAWS_NONE_KEY(args, kwargs)) is True:
        return _no_key()
    return default_generator.next_key().__jax_array__()


def _DRAWS_NONE_KEY(args: tuple, kwargs: dict) -> Any:  # noqa: N802
    leaves, tree = _tree_flatten(_to_jax((args, kwargs)))
    try:
        key = ("draws-none", tree, tuple((v.shape, str(v.dtype)) if hasattr(v, "shape") else v
                                         for v in leaves))
        hash(key)
        return key
    except TypeError:
        return None


@contextlib.contextmanager
def _random_keys(randomness: str, base: Any, axis: str | None, draws: list) -> Iterator[None]:
    """Random ops inside a vmap trace take keys derived from ``base`` (per sample: folded with
    the batch index for 'different'), or raise in 'error' mode."""
    from autograd_compile.kernels.random import Generator
    original = Generator.next_key

    def next_key(gen: Any) -> Tensor:
        if randomness == "error":
            raise RuntimeError(_RANDOM_ERROR)
        draws[0] += 1
        key = jax.random.fold_in(jax.random.wrap_key_data(base), draws[0])
        if randomness == "different" and axis is not None:
            key = jax.random.fold_in(key, jax.lax.axis_index(axis))
        return Tensor(jax.random.key_data(key))
    Generator.next_key = next_key  # type: ignore[method-assign]
    try:
        yield
    finally:
        Generator.next_key = original  # type: ignore[method-assign]


_RECORDS = object()  # a cache entry: the function's result needs our autograd, not JAX


def _cached_call(cache: dict, build: Callable, args: tuple, kwargs: dict, recorded: list,
                 draws: list | None = None) -> Any:
    """``build()(*args)`` compiled once per argument structure, shapes and dtypes (jax.jit), as
    long as the traced function reads no tensor but its arguments (a captured tensor could
    change between calls, so such functions are traced every call). Inside another transform
    (tracer arguments) it just runs; inside ``acg.compile``'s trace it is one op of the graph."""
    if _has_fake((args, kwargs)):
        return _traced_op(cache, build, args)
    arrays = _to_jax(args)
    leaves, tree = _tree_flatten(arrays)
    kw_leaves = _tree_leaves(_to_jax(kwargs))
    if any(isinstance(v, jax.core.Tracer) for v in leaves + kw_leaves) or any(
            isinstance(v, jax.Array) for v in kw_leaves):
        return build()(*arrays)
    try:
        key = (tree, tuple((v.shape, str(v.dtype)) if isinstance(v, jax.Array) else v
                           for v in leaves), tuple(sorted(kwargs.items())))
        hash(key)
    except TypeError:  # unhashable static values: no caching
        return build()(*arrays)
    fn = cache.get(key)
    if fn is None:
        f = build()
        traced = jax.jit(f).trace(*arrays)  # traced once: consts tell what it captured
        none_key = _DRAWS_NONE_KEY(args[1:], kwargs) if draws is not None else None
        if none_key is not None and draws[0] == 0:
            cache[none_key] = True  # later calls pass a constant key: the stream stays put
        if recorded[0]:
            fn = _RECORDS
        elif _reads_tensors(traced.jaxpr.consts):
            fn = f  # traced on every call, so captured tensors are read afresh
        else:
            fn = traced.lower().compile()
        cache[key] = fn
    return fn if fn is _RECORDS else fn(*arrays)


def _has_fake(tree: Any) -> bool:
    from autograd_compile.tracing.fake import FakeTensor
    return any(isinstance(t, FakeTensor)
               for t in _tree_leaves(tree, is_leaf=_is_tensor))


def _traced_op(cache: dict, build: Callable, args: tuple) -> Any:
    """``build()(*args)`` on fake tensors (``acg.compile``'s trace, no values): one op of the
    graph whose kernel is the JAX program, lowered into the region's program. Its results do
    not require grad, as eager's do not. A function reading a tensor it captured is refused
    (the program would keep the value the trace saw): the region then runs eagerly."""
    from autograd_compile.kernels._bridge import _spec, jaxop
    leaves, tree = _tree_flatten(args, is_leaf=_is_tensor)
    pos = [i for i, v in enumerate(leaves) if _is_tensor(v) or isinstance(v, jax.Array)]
    static = {i: v for i, v in enumerate(leaves) if i not in pos}
    key = ("traced-op", tree, tuple(static.items()),
           tuple((len(leaves[i].shape), str(leaves[i].dtype)) for i in pos))
    entry = cache.get(key)
    if entry is None:
        entry = cache[key] = _program_op(jaxop, build(), static, tree, len(leaves),
                                         [_spec(leaves[i], {}) for i in pos])
    op, out_tree = entry
    out = op(*[leaves[i] if _is_tensor(leaves[i]) else Tensor(leaves[i]) for i in pos])
    return _tree_unflatten(out_tree[0], list(out if isinstance(out, tuple)
                                                          else (out,)))


def _program_op(jaxop: Callable, f: Callable, static: dict, tree: Any, n: int,
                specs: list) -> tuple:
    """(a non-differentiable op running ``f`` on the array leaves, [output tree])."""
    out_tree: list = []

    def flat(*arrays: Any) -> tuple:
        it = iter(arrays)
        full = [static[i] if i in static else next(it) for i in range(n)]
        with _without_modes():
            out = f(*_tree_unflatten(tree, full))
        leaves, struct = _tree_flatten(out)
        out_tree[:] = [struct]
        return tuple(leaves)
    closed = jax.make_jaxpr(flat)(*specs)
    if _reads_tensors(closed.consts):
        raise RuntimeError("acg.func: a transformed function reads a tensor it captured; "
                           "inside acg.compile pass it as an argument instead")
    names = [f"x{i}" for i in range(len(specs))]
    n_out = len(closed.out_avals)
    outs = "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    schema = f"func_{next(_OPS)}({', '.join(f'Tensor {x}' for x in names)}) -> {outs}"
    return jaxop(schema, lambda *a: flat(*a) if n_out > 1 else flat(*a)[0],
                 differentiable=False), out_tree


def _reads_tensors(consts: list) -> bool:
    """Whether any constant of a traced program is the value of a live Tensor (a captured
    tensor, not a constant the kernels made)."""
    import gc
    return any(isinstance(c, jax.Array) and any(isinstance(r, Tensor) for r in
                                                gc.get_referrers(c)) for c in consts)


def _records(tree: Any) -> bool:
    """Whether autograd records through these tensors (so the result must be differentiable)."""
    return is_grad_enabled() and any(
        _is_tensor(t) and t.requires_grad
        for t in _tree_leaves(tree, is_leaf=_is_tensor))


def _vmap_by_samples(func: Callable, args: tuple, kwargs: dict, dims: Any, out_dims: Any,
                     randomness: str = "error") -> Any:
    """vmap's result through our own autograd (each sample by ops, outputs stacked): used only
    when tensors that require grad flow into the result. Random ops: 'different' draws per
    sample, 'same' replays the first sample's keys, 'error' raises."""
    import autograd_compile as acg
    per_arg = dims if isinstance(dims, tuple) else (dims,) * len(args)
    sizes = [_batch_size(a, d) for a, d in zip(args, per_arg)]
    n = next(s for s in sizes if s is not None)
    outs: list = []
    base = None if randomness == "different" else _call_key({}, args, kwargs, randomness)
    for i in range(n):
        sample = [a if d is None else _tree_map(
            lambda t, d=d: t.select(d, i) if _is_tensor(t) else t, a, is_leaf=_is_tensor)
            for a, d in zip(args, per_arg)]
        if base is None:
            outs.append(func(*sample, **kwargs))
            continue
        with _random_keys(randomness, base, None, [0]):  # the same keys for every sample
            outs.append(func(*sample, **kwargs))
    leaves = [_tree_leaves(o, is_leaf=_is_tensor) for o in outs]
    tree = jax.tree_util.tree_structure(outs[0], is_leaf=_is_tensor)
    od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(leaves[0])
    stacked = [acg.stack([ls[j] for ls in leaves], od[j]) for j in range(len(leaves[0]))]
    return _tree_unflatten(tree, stacked)


def _batch_size(arg: Any, dim: Any) -> int | None:
    if dim is None:
        return None
    ts = [t for t in _tree_leaves(arg, is_leaf=_is_tensor) if _is_tensor(t)]
    return int(ts[0].shape[dim]) if ts else None  # an empty dict (no buffers) has no batch


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar-valued ``func`` with respect to the arguments ``argnums``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """(gradient, value) of ``func``; with ``has_aux`` the value is ``(output, aux)``."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args))
        value, g = _cached_call(cache, lambda: jax.value_and_grad(
            _pure(func, _to_jax(kwargs)), argnums, has_aux=has_aux), args, kwargs, [False])
        return _to_tensor(g), _to_tensor(value)
    cache: dict = {}
    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """(output, vjp_fn[, aux]): vjp_fn(cotangents) gives one gradient per primal."""
    res = jax.vjp(_pure(func), *_to_jax(primals), has_aux=has_aux)
    out, pull = res[0], res[1]

    def vjp_fn(*cotangents: Any, retain_graph: bool = True, create_graph: bool = False) -> tuple:
        ct = cotangents[0] if len(cotangents) == 1 else cotangents
        return _to_tensor(tuple(pull(_to_jax(ct))))
    return (_to_tensor(out), vjp_fn, _to_tensor(res[2])) if has_aux else \
        (_to_tensor(out), vjp_fn)


def jvp(func: Callable, primals: Sequence, tangents: Sequence, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """(output, jvp_out[, aux]): the forward-mode derivative along ``tangents``."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    res = jax.jvp(_pure(func), _to_jax(primals), _to_jax(tangents), has_aux=has_aux)
    return tuple(_to_tensor(r) for r in res)


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """The Jacobian of ``func`` by reverse mode (vmap over vjp)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args))
        fn = jax.jacrev(_pure(func, _to_jax(kwargs)), argnums, has_aux=has_aux)
        return _to_tensor(fn(*_to_jax(args)))
    return wrapper


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` by forward mode (vmap over jvp)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _argnums(argnums, len(args))
        fn = jax.jacfwd(_pure(func, _to_jax(kwargs)), argnums, has_aux=has_aux)
        return _to_tensor(fn(*_to_jax(args)))
    return wrapper


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """jacfwd(jacrev(func)), as PyTorch computes it."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func: Callable, *primals: Any) -> tuple:
    """(output, jvp_fn): jvp_fn(*tangents) is the jvp at ``primals`` (evaluated once)."""
    out, lin = jax.linearize(_pure(func), *_to_jax(primals))

    def jvp_fn(*tangents: Any) -> Any:
        return _to_tensor(lin(*_to_jax(tangents)))
    return _to_tensor(out), jvp_fn


# -- modules as functions --------------------------------------------------------------------------

@contextlib.contextmanager
def _swapped(module: Any, values: dict, strict: bool) -> Iterator[None]:
    """Parameters and buffers of ``module`` (dotted names) replaced by ``values`` for a while."""
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = sorted(set(known) - set(values))
        unexpected = sorted(set(values) - set(known))
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: "
                               f"missing keys {missing}, unexpected keys {unexpected}")
    saved = []
    try:
        for name, value in values.items():
            *path, leaf = name.split(".")
            owner = module.get_submodule(".".join(path)) if path else module
            table = owner._parameters if leaf in owner._parameters else owner._buffers
            saved.append((table, leaf, table.get(leaf)))
            table[leaf] = value
        yield
    finally:
        for table, leaf, old in reversed(saved):
            table[leaf] = old


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module`` with its parameters and buffers replaced by the given tensors (one dict
    or a sequence of dicts); gradients flow to those tensors."""
    dicts = [parameter_and_buffer_dicts] if isinstance(parameter_and_buffer_dicts, dict) \
        else list(parameter_and_buffer_dicts)
    values: dict = {}
    for d in dicts:
        clash = set(values) & set(d)
        if clash:
            raise ValueError(f"{sorted(clash)[0]} appeared in multiple dictionaries; behavior "
                             f"of functional call is ambiguous")
        values.update(d)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, values, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models: Sequence[Any]) -> tuple:
    """(params, buffers): each name's tensors of ``models`` stacked on a new first dim (new
    leaves, requiring grad as the originals), for ``vmap`` over an ensemble."""
    import autograd_compile as acg
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if any(m.training != models[0].training for m in models):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/"
                           "eval mode.")

    def stack(named: Callable) -> dict:
        out = {}
        for name, first in named(models[0]):
            t = acg.stack([dict(named(m))[name].detach() for m in models])
            out[name] = t.requires_grad_(first.requires_grad) if first.requires_grad else t
        return out
    return (stack(lambda m: m.named_parameters()), stack(lambda m: m.named_buffers()))
