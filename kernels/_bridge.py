"""A JAX function as an op in one line: forward is the function, backward is ``jax.vjp``.

The long tail (``linalg``, ``fft``, ``special``) has its numerics in JAX already; :func:`jaxop`
registers such a function like every other op (:func:`._defop.defop`), so it runs eagerly,
under compiled autograd and ``acg.compile``, and on fake tensors::

    det = jaxop("linalg_det(Tensor A) -> Tensor", jnp.linalg.det)

- shape rule: ``jax.eval_shape`` on the inputs' sizes (symbolic sizes by their hints, each
  output size mapped back to the input symbol it equals);
- backward: the op ``<name>_backward(grads..., <args>)``, whose kernel is ``jax.vjp`` of the
  function. It is itself a :func:`jaxop`, defined when first needed, so double backward works
  (its backward is the vjp of the vjp).

Complex numbers follow PyTorch's convention (the gradient is the conjugate of JAX's): the
cotangent is conjugated on the way in and the input gradients on the way out.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.autograd.derivatives import needs_input_grad
from autograd_compile.dispatch import parse_schema
from autograd_compile.tracing.fake import TensorMeta
from autograd_compile.tracing.symbolic_shapes import SymInt, hint_int

from ._defop import NONDIFF, defop
from ._dtypes import category

_BACKWARDS: dict[str, Any] = {}  # op name -> its backward op (made on first use)


def jaxop(schema: str, fn: Callable, *, diff: Iterable[str] | None = None,
          static: Iterable[str] = (), differentiable: bool = True, check: Callable | None = None
          ) -> Any:
    """Define op ``acg::<name>`` from ``schema`` with kernel ``fn`` (called like the schema,
    tensors as jax arrays); gradients for the Tensor arguments named in ``diff`` (default:
    every Tensor argument) by ``jax.vjp``. ``differentiable=False``: outputs never require
    grad. ``check``: a rule run on the (fake or real) arguments first, for PyTorch's errors.

    >>> import autograd_compile as acg
    >>> from autograd_compile.kernels._bridge import jaxop
    >>> cube = jaxop("bridge_doc_cube(Tensor self) -> Tensor", lambda x: x ** 3)
    >>> x = acg.tensor([2.0], requires_grad=True)
    >>> cube(x).sum().backward(); x.grad.tolist()
    [12.0]
    """
    parsed = parse_schema(schema, default_namespace="acg")
    name = parsed.qualified_name.split("::")[1]
    tensor_names = [a.name for a in parsed.arguments if a.type.startswith("Tensor")]
    wrt = tuple(tensor_names if diff is None else diff)
    rule = _shape_rule(fn, parsed, check)
    if not differentiable:
        backward: Any = NONDIFF
    else:
        backward = _formula(name, schema, fn, parsed, wrt, tuple(static))
    return defop(schema, fn, shape=rule, backward=backward, static=static,
                 check=check is not None)


# -- shape rule by eval_shape --------------------------------------------------------------------

def _spec(v: Any, symbols: dict[int, Any]) -> Any:
    """A tensor as a ShapeDtypeStruct of its (hinted) sizes; symbols remembers each size's SymInt."""
    if type(v) in (list, tuple):
        return type(v)(_spec(x, symbols) for x in v)
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, (np.ndarray,)):
        shape = []
        for s in v.shape:
            if isinstance(s, SymInt):
                symbols.setdefault(hint_int(s), s)
            shape.append(hint_int(s))
        return jax.ShapeDtypeStruct(tuple(shape), v.dtype)
    return v


def _shape_rule(fn: Callable, parsed: Any, check: Callable | None) -> Callable:
    names = [a.name for a in parsed.arguments]
    kwonly = [a.kwarg_only for a in parsed.arguments]

    def rule(*args: Any, **kwargs: Any) -> Any:
        if check is not None:
            check(*args, **kwargs)
        bound = parsed.bind(args, kwargs)
        symbols: dict[int, Any] = {}
        specs = [_spec(v, symbols) for v in bound]
        traced = [i for i, v in enumerate(specs) if _is_struct(v)]

        def run(*arrays: Any) -> Any:
            full = list(specs)
            for i, a in zip(traced, arrays):
                full[i] = a
            return _call(fn, full, names, kwonly)
        out = jax.eval_shape(run, *[specs[i] for i in traced])
        metas = [TensorMeta(tuple(symbols.get(int(s), int(s)) for s in o.shape), o.dtype)
                 for o in jax.tree_util.tree_leaves(out)]
        return tuple(metas) if isinstance(out, (tuple, list)) else metas[0]
    return rule


def _is_struct(v: Any) -> bool:
    if type(v) in (list, tuple):
        return bool(v) and all(_is_struct(x) for x in v)
    return isinstance(v, jax.ShapeDtypeStruct)


def _call(fn: Callable, values: list, names: list, kwonly: list) -> Any:
    pos = [v for v, k in zip(values, kwonly) if not k]
    kw = {n: v for n, v, k in zip(names, values, kwonly) if k}
    return fn(*pos, **kw)


# -- backward by jax.vjp -----------------------------------------------------------------------

def vjp_formula(schema: str, fn: Callable, diff: Iterable[str], static: Iterable[str] = ()
                ) -> Callable:
    """The backward formula :func:`jaxop` gives its ops, for an op defined with
    :func:`._defop.defop` itself (say, a fused backward kernel that also runs on the host):
    gradients for the Tensor arguments named in ``diff`` by ``jax.vjp`` of ``fn``.

    >>> import autograd_compile as acg
    >>> from autograd_compile.kernels._defop import defop
    >>> s = "bridge_doc_square(Tensor self) -> Tensor"
    >>> sq = defop(s, lambda x: x * x, backward=vjp_formula(s, lambda x: x * x, ["self"]))
    >>> x = acg.tensor([3.0], requires_grad=True)
    >>> sq(x).sum().backward(); x.grad.tolist()
    [6.0]
    """
    parsed = parse_schema(schema, default_namespace="acg")
    name = parsed.qualified_name.split("::")[1]
    return _formula(name, schema, fn, parsed, tuple(diff), tuple(static))


def _formula(name: str, schema: str, fn: Callable, parsed: Any, wrt: tuple, static: tuple
             ) -> Callable:
    """The forward op's backward formula: calls ``<name>_backward`` (made on first use)."""
    names = [a.name for a in parsed.arguments]
    tensor_names = [a.name for a in parsed.arguments if a.type.startswith("Tensor")]
    n_out = len(parsed.returns)

    def formula(grads: Any, *args: Any) -> Any:
        *args, _out = args
        grads = grads if n_out > 1 else (grads,)
        by_name = dict(zip(names, args))
        wanted = tuple(w for w in wrt if _wants(by_name[w]))
        if not wanted:
            return tuple(None for _ in tensor_names) if len(tensor_names) > 1 else None
        op = _backward_op(name, schema, fn, parsed, wanted, static)
        got = op(*grads, *args)
        got = got if len(wanted) > 1 else (got,)
        result = dict(zip(wanted, got))
        out = tuple(result.get(t) for t in tensor_names)
        return out if len(tensor_names) > 1 else out[0]
    # an output without a gradient arrives as None (not zeros): the vjp leaves it out
    formula.takes_undefined = True  # type: ignore[attr-defined]
    return formula


def _wants(v: Any) -> bool:
    return hasattr(v, "dtype") and hasattr(v, "requires_grad") and category(v.dtype) >= 2 \
        and needs_input_grad(v)


def _backward_op(name: str, schema: str, fn: Callable, parsed: Any, wanted: tuple,
                 static: tuple) -> Any:
    """``<name>_backward[_<inputs>](Tensor? grad_0, ..., <args>) -> one grad per wanted input``."""
    tensor_names = [a.name for a in parsed.arguments if a.type.startswith("Tensor")]
    suffix = "" if len(wanted) == len(tensor_names) else "_" + "_".join(wanted)
    bname = f"{name}_backward{suffix}"
    op = _BACKWARDS.get(bname)
    if op is not None:
        return op
    n_out = len(parsed.returns)
    args_text = schema[schema.index("(") + 1:schema.rindex(")", 0, schema.index("->"))]
    level = bname.count("_backward")  # grads of each order get their own names
    gnames = [f"grad{level}_{i}" for i in range(n_out)]
    grads_text = ", ".join(f"Tensor? {g}" for g in gnames)
    outs = "Tensor" if len(wanted) == 1 else "(" + ", ".join("Tensor" for _ in wanted) + ")"
    bschema = f"{bname}({grads_text}, {args_text}) -> {outs}"
    names = [a.name for a in parsed.arguments]
    kwonly = [a.kwarg_only for a in parsed.arguments]
    positions = [names.index(w) for w in wanted]
    bparsed = parse_schema(bschema, default_namespace="acg")

    def vjp_kernel(*args: Any, **kwargs: Any) -> Any:
        bound = list(bparsed.bind(args, kwargs))
        grads, values = bound[:n_out], bound[n_out:]

        # only the outputs that received a gradient: JAX then never forms the others'
        # terms (eigh's 1/(w_i - w_j) at repeated eigenvalues when only w is used: 0 * inf)
        live = [i for i, g in enumerate(grads) if g is not None]

        def f(*primals: Any) -> Any:
            full = list(values)
            for i, p in zip(positions, primals):
                full[i] = p
            leaves = jax.tree_util.tree_leaves(_call(fn, full, names, kwonly))
            return [leaves[i] for i in live]
        outs, pullback = jax.vjp(f, *[values[i] for i in positions])
        got = pullback([_cotangent(grads[i], o) for i, o in zip(live, outs)])
        got = [jnp.conj(g) if category(g.dtype) == 3 else g for g in got]
        return tuple(got) if len(got) > 1 else got[0]
    op = _BACKWARDS[bname] = jaxop(bschema, vjp_kernel,
                                   diff=gnames + [w for w in wanted], static=static)
    return op


def _cotangent(g: Any, out: Any) -> Any:
    """A gradient in PyTorch's convention as JAX's cotangent for ``out`` (zeros when absent;
    float0 for integer outputs, which have no gradient)."""
    if category(out.dtype) < 2:
        return np.zeros(out.shape, jax.dtypes.float0)
    if g is None:
        return jnp.zeros(out.shape, out.dtype)
    g = jnp.asarray(g, out.dtype)
    return jnp.conj(g) if category(out.dtype) == 3 else g
