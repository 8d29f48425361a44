"""One call per op: schema, JAX kernel, shape rule and backward formula together.

Each layer owns the table it reads (the dispatcher its kernels, the fake layer
its shape rules, autograd its derivatives); :func:`defop` fills all of them::

    exp = defop("exp(Tensor self) -> Tensor", jnp.exp,
                shape=same_shape,
                backward=lambda g, x, out: g * out, save=("out",))

``save`` may also say, per input, what that input's gradient reads: the op then
saves only what the gradients actually needed read (``x * w`` with only ``w``
requiring grad saves ``x``, not ``w``), and the formula computes only those
gradients (:func:`wants` is False for the others)::

    mul = binary("mul.Tensor", jnp.multiply, _mul_backward, save=PRODUCT)

Helpers for the recurring shapes (:func:`unary`, :func:`binary`, :func:`inplace`)
keep most ops to a line or two. Backward formulas are written in our own ops
(Tensor methods), never jnp, so they are traced, compiled and differentiable again.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable

from autograd_compile._dtype import of as dtype_of
from autograd_compile.autograd.derivatives import (SaveSpec, alias_for_inplace,
                                                   needs_input_grad, register_derivative)
from autograd_compile.dispatch import COMPOSITE, DISPATCHER, Library, OpOverload, parse_schema
from autograd_compile.errors import op_error
from autograd_compile.tracing.fake import TensorMeta, register_shape_rule

from ._jit import jitted
from ._xp import host_first, numpy_twin
from ._dtypes import BOOL, can_cast, cast, is_float, result_type, to_float
from ._shapes import broadcast_shapes, is_tensor_like, shape_of, shapes_equal

LIB = Library("acg", "DEF")
NONDIFF = object()  # backward=NONDIFF: outputs never require grad (comparisons, argmax)
_UNSET = object()
# save= for a product rule: each side's gradient reads only the other side
PRODUCT = {"self": ("other",), "other": ("self",)}


def defop(schema: str, jax: Callable | None = None, *, shape: Callable | None = None,
          backward: Any = _UNSET, save: SaveSpec = None,
          composite: Callable | None = None, check: bool = False, jit: bool = True,
          static: Iterable[str] = (), dynamic: Iterable[str] = (),
          pre: Callable | None = None, host: Callable | bool = False,
          cost: str = "fused") -> OpOverload:
    """Define op ``acg::<name>`` and register every rule given; returns the op.

    jax:       kernel on jax arrays (Tensor args arrive as arrays)
    shape:     rule on fake tensors -> TensorMeta (or a tuple of them); None: eval_shape
    backward:  fn(grad, *args, out) -> one grad per Tensor arg; NONDIFF; unset: missing
    save:      names of args (and "out") the formula reads; others arrive as TensorMeta.
               Or a dict {input: names its gradient reads}: saved only when needed
    composite: a kernel written in other ops (CompositeImplicitAutograd) instead of jax
    check:     run the shape rule before the kernel too (for errors jax would not raise,
               e.g. a dtype mismatch it would silently promote)
    jit:       run the kernel as one jax.jit program (see _jit.py); static/dynamic/pre
               adjust which arguments are traced and add an eager check
    host:      True: the kernel is written against ``_xp``'s namespaces, so it also runs
               on numpy arrays (eager shapes without a program run there, see _xp.py);
               or a numpy twin of the kernel
    cost:      the host tier's cost model for the kernel (``_xp.RATES``): "fused" (several
               passes or a contraction: XLA's fused loop wins from ~50k elements), "stream"
               (each element touched once: numpy wins up to far larger sizes) or "part"
               (reads only what it returns, a slice or looked-up rows: a stream kernel
               sized by its output, so a slice of a big array is numpy's view, copied)
               or "contract" (matmul: by its multiply-adds, ``_xp.contraction_cost``)
    """
    parsed = parse_schema(schema, default_namespace="acg")
    name = parsed.qualified_name.split("::")[1]
    LIB.define(schema)
    op = DISPATCHER.ops[parsed.qualified_name]
    if composite is not None:
        LIB.impl(name, composite, COMPOSITE)
    if jax is not None:
        # jitted: the shape check runs once per new program (shapes, dtypes), not per call
        traced_check = shape if check and jit else None
        if host is True:  # a jax.numpy function as the kernel: its numpy twin on the host
            host = numpy_twin(jax) or True
        kernel = (jitted(jax, parsed, static, dynamic, pre, traced_check, host, cost, shape)
                  if jit
                  else host_first(jax, host) if host else jax)
        LIB.impl(name, _diagnosed(kernel, jax, shape, check and not jit, name), "Backend")
    if shape is not None:
        register_shape_rule(op, shape)
    if backward is NONDIFF:
        register_derivative(op, None)
    elif backward is not _UNSET:
        register_derivative(op, backward, save)
    return op


def _diagnosed(kernel: Callable, raw: Callable, rule: Callable | None, check: bool,
               name: str) -> Callable:
    """The kernel, with the shape rule explaining a failure in PyTorch's words
    ("The size of tensor a (3) must match ...") instead of only jax's."""
    def run(*args: Any, **kwargs: Any) -> Any:
        if check and rule is not None:
            rule(*args, **kwargs)
        try:
            return kernel(*args, **kwargs)
        except Exception:
            _explain(rule, args, kwargs)
            raise
    run.__name__ = run.__qualname__ = f"{name}_kernel"
    run.__wrapped__ = raw  # the JAX backend may trace the raw kernel into its own program
    host = getattr(kernel, "_acg_host", None)
    if host is not None:  # the eager adapter's entry: numpy values in and out
        run._acg_host = _diagnosed(host, raw, rule, check, name)
    return run


def _explain(rule: Callable | None, args: tuple, kwargs: dict) -> None:
    """Re-run the shape rule on inputs the kernel failed on: its RuntimeError wins."""
    if rule is None:
        return
    try:
        rule(*args, **kwargs)
    except RuntimeError:
        raise
    except Exception:  # the rule cannot judge these inputs either: keep jax's error
        return


def inplace(name: str, functional: OpOverload) -> OpOverload:
    """``x.add_(y)`` as ``x.copy_(add(x, y))``: one in-place primitive (copy_) to get right."""
    schema = str(functional.schema).split("::", 1)[1]
    head, _, rest = schema.partition("(")
    _, _, overload = head.partition(".")
    assert rest.startswith("Tensor self"), f"{functional}: in-place needs 'Tensor self' first"
    new_head = f"{name}.{overload}" if overload else name
    new_schema = f"{new_head}(Tensor(a!) self{rest[len('Tensor self'):]}".rsplit("->", 1)[0]

    def kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        copy_ = DISPATCHER.ops["acg::copy_"]  # looked up late: shape.py defines it
        new = functional(alias_for_inplace(self), *args, **kwargs)
        if not can_cast(new.dtype, self.dtype):
            cause = RuntimeError(f"result type {new.dtype.name} can't be cast to the desired "
                                 f"output type {self.dtype.name}")
            raise op_error(DISPATCHER.ops[f"acg::{new_head}"], (self, *args), kwargs, cause)
        out = copy_(self, new)
        _saved_as(new, self)
        return out
    kernel.__name__ = kernel.__qualname__ = f"{name}_as_copy"
    return defop(new_schema + "-> Tensor(a!)", composite=kernel)


def _saved_as(new: Any, target: Any) -> None:
    """``relu_``'s backward reads relu's result, which is now ``target`` itself: its saved
    output refers to the written tensor, so a later in-place write to it raises PyTorch's
    version error, and a trace maps it to the in-place op's result (``new`` is an
    intermediate a trace never sees)."""
    for sv in getattr(new.grad_fn, "saved_out", None) or ():
        if sv is not None and sv.ref() is new and new.dtype == target.dtype:
            sv.ref, sv.version = weakref.ref(target), target._version


# -- shape rules for the recurring cases ------------------------------------------------

def same_shape(x: Any, *args: Any, **kwargs: Any) -> TensorMeta:
    """Elementwise unary: output like the first input."""
    return TensorMeta(tuple(x.shape), x.dtype)


def float_like(x: Any, *args: Any, **kwargs: Any) -> TensorMeta:
    """Elementwise unary computed in floating point (integer inputs give float32)."""
    return TensorMeta(tuple(x.shape), to_float(x.dtype))


def real_like(x: Any, *args: Any, **kwargs: Any) -> TensorMeta:
    """Elementwise unary whose complex inputs give their real dtype (abs: complex64 -> float32)."""
    return TensorMeta(tuple(x.shape), dtype_of(x.dtype).to_real().dtype)


# -- op builders ------------------------------------------------------------------------

# op -> the numpy kernel its host tier runs, for the elementwise unary ops: the Python
# function of each (kernels/api.py) calls it directly on a plain host value
HOST_UNARY: dict[OpOverload, Callable] = {}


def unary(name: str, fn: Callable, backward: Any = _UNSET, save: SaveSpec = ("self",),
          *, floating: bool = True, analytic: bool = True, shape: Callable | None = None
          ) -> OpOverload:
    """``name(Tensor self) -> Tensor``; ``floating``: integer inputs compute in float32.
    ``analytic``: ``backward`` is ``g * f'(x)``, made PyTorch's complex rule by
    :func:`holomorphic`; False for a formula already written for complex (abs).
    ``shape``: the shape rule when the dtype rule is neither of those (abs: ``real_like``)."""
    if analytic and callable(backward):
        backward = holomorphic(backward)
    twin = numpy_twin(fn)
    kernel = (lambda x: fn(cast(x, to_float(x.dtype)))) if floating else fn
    host = (None if twin is None else
            (lambda x: twin(cast(x, to_float(x.dtype)))) if floating else twin)
    op = defop(f"{name}(Tensor self) -> Tensor", kernel,
               shape=shape or (float_like if floating else same_shape), backward=backward,
               save=save,
               host=host or False, cost="stream")
    if host is not None:
        HOST_UNARY[op] = host
    return op


def binary(name: str, fn: Callable, backward: Any = _UNSET, save: SaveSpec = None,
           *, out: str = "promote", extra: str = "", other: str = "other",
           host: bool = False) -> OpOverload:
    """``name(Tensor self, Tensor other<extra>) -> Tensor`` with broadcasting and PyTorch
    promotion; either side may be a Python scalar. ``out``: "promote" (the common dtype),
    "float" (true division: integers give float32) or "bool" (comparisons).
    ``host``: ``fn`` is written with operators only, so numpy runs it as it is (a
    ``jax.numpy`` function finds its numpy twin by itself)."""
    def build(fn: Callable) -> Callable:
        def kernel(x: Any, y: Any, *rest: Any, **kw: Any) -> Any:
            dtype = result_type(x, y)
            if out == "float":
                dtype = to_float(dtype)
            return fn(cast(x, dtype), cast(y, dtype), *rest, **kw)
        return kernel
    twin = fn if host else numpy_twin(fn)

    def rule(x: Any, y: Any, *rest: Any, **kw: Any) -> TensorMeta:
        dtype = result_type(x, y)
        dtype = BOOL if out == "bool" else to_float(dtype) if out == "float" else dtype
        return TensorMeta(broadcast_shapes(shape_of(x), shape_of(y)), dtype)
    return defop(f"{name}(Tensor self, Tensor {other}{extra}) -> Tensor", build(fn), shape=rule,
                 backward=backward, save=save, host=False if twin is None else build(twin),
                 cost="stream")


# -- pieces of backward formulas ----------------------------------------------------------

def _is_complex(t: Any) -> bool:
    return getattr(getattr(t, "dtype", None), "kind", "") == "c"


def holomorphic(formula: Callable) -> Callable:
    """A formula written as for real inputs (``g`` times the derivative, linear in ``g``)
    turned into PyTorch's complex convention, ``grad = g * conj(f'(z))`` for an analytic
    ``f`` (matmul: ``g @ b.mH``): ``conj(formula(conj(g)))``. Real gradients pass through
    untouched, so a real program runs the formula exactly as written."""
    def run(g: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_complex(g):
            return formula(g, *args, **kwargs)
        got = formula(g.conj(), *args, **kwargs)
        if isinstance(got, (tuple, list)):
            return type(got)(x.conj() if _is_complex(x) else x for x in got)
        return got.conj() if _is_complex(got) else got
    run.__name__ = run.__qualname__ = getattr(formula, "__name__", "formula")
    run.__wrapped__ = formula
    return run


def wants(v: Any) -> bool:
    """Whether a formula should compute a gradient for this argument: a floating tensor
    whose gradient is needed (PyTorch's ``needs_input_grad``)."""
    return is_tensor_like(v) and is_float(v.dtype) and needs_input_grad(v)


def reduce_grad(g: Any, like: Any) -> Any:
    """``g`` summed to ``like``'s shape (undoing broadcasting) and cast to its dtype;
    None for a Python scalar, a non-float input or one whose gradient is not needed."""
    if g is None or not wants(like):
        return None
    if not shapes_equal(g.shape, like.shape):
        g = g.sum_to_size(like.shape)
    if _is_complex(g) and not _is_complex(like):  # a real input of a complex result
        g = g.real
    return g.to(like.dtype) if g.dtype != like.dtype else g


def scaled(g: Any, alpha: Any) -> Any:
    """``g * alpha``, skipping the multiply for a literal 1 (a lifted scalar always multiplies)."""
    return g if type(alpha) in (int, float) and alpha == 1 else g * alpha
