"""One call per op: schema, JAX kernel, shape rule and backward formula together.

Each layer owns the table it reads (the dispatcher its kernels, the fake layer
its shape rules, autograd its derivatives); :func:`defop` fills all of them::

    exp = defop("exp(Tensor self) -> Tensor", jnp.exp,
                shape=same_shape,
                backward=lambda g, x, out: g * out, save=("out",))

Helpers for the recurring shapes (:func:`unary`, :func:`binary`, ...) keep
most ops to one line.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from autograd_compile.autograd.derivatives import alias_for_inplace, register_derivative
from autograd_compile.dispatch import COMPOSITE, DISPATCHER, Library, OpOverload, parse_schema
from autograd_compile.fake import TensorMeta, register_shape_rule

LIB = Library("acg", "DEF")
NONDIFF = object()  # backward=NONDIFF: outputs never require grad (comparisons, argmax)
_UNSET = object()


def defop(schema: str, jax: Callable | None = None, *, shape: Callable | None = None,
          backward: Any = _UNSET, save: Iterable[str] | None = None,
          composite: Callable | None = None) -> OpOverload:
    """Define op ``acg::<name>`` and register every rule given; returns the op.

    jax:       kernel on jax arrays (Tensor args arrive as arrays)
    shape:     rule on fake tensors -> TensorMeta (or a tuple of them); None: eval_shape
    backward:  fn(grad, *args, out) -> one grad per Tensor arg; NONDIFF; unset: missing
    save:      names of args (and "out") the formula reads; others arrive as TensorMeta
    composite: a kernel written in other ops (CompositeImplicitAutograd) instead of jax
    """
    parsed = parse_schema(schema, default_namespace="acg")
    name = parsed.qualified_name.split("::")[1]
    LIB.define(schema)
    op = DISPATCHER.ops[parsed.qualified_name]
    if composite is not None:
        LIB.impl(name, composite, COMPOSITE)
    if jax is not None:
        LIB.impl(name, jax, "Backend")
    if shape is not None:
        register_shape_rule(op, shape)
    if backward is NONDIFF:
        register_derivative(op, None)
    elif backward is not _UNSET:
        register_derivative(op, backward, save)
    return op


def inplace(name: str, functional: OpOverload) -> OpOverload:
    """``x.add_(y)`` as ``x.copy_(add(x, y))``: one in-place primitive (copy_) to get right."""
    schema = str(functional.schema).split("::", 1)[1]
    head, _, rest = schema.partition("(")
    base, _, overload = head.partition(".")
    assert rest.startswith("Tensor self"), f"{functional}: in-place needs 'Tensor self' first"
    new_head = f"{name}.{overload}" if overload else name
    new_schema = f"{new_head}(Tensor(a!) self{rest[len('Tensor self'):]}".rsplit("->", 1)[0]
    copy_ = DISPATCHER.ops["acg::copy_"]

    def kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        return copy_(self, functional(alias_for_inplace(self), *args, **kwargs))
    kernel.__name__ = kernel.__qualname__ = f"{name}_as_copy"
    return defop(new_schema + "-> Tensor(a!)", composite=kernel)


# -- shape rules for the recurring cases ------------------------------------------------

def same_shape(x: Any, *args: Any, **kwargs: Any) -> TensorMeta:
    """Elementwise unary: output like the first input."""
    return TensorMeta(tuple(x.shape), x.dtype)
