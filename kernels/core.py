"""Bootstrap ops the engine itself relies on (zeros, copy_, to, sum_to_size) and a few
elementwise ops. (The kernels owner reorganises this file into the full op library.)"""
from __future__ import annotations

import jax.numpy as jnp

from autograd_compile.fake import TensorMeta
from ._defop import NONDIFF, defop, inplace, same_shape


def broadcast_shape(a: tuple, b: tuple, op: str = "op") -> tuple:
    """PyTorch broadcasting on ints or SymInts, with PyTorch's error."""
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        else:
            dim = max(len(a), len(b)) - 1 - i
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {dim}")
    return tuple(reversed(out))


def _shape_of(v):
    return tuple(v.shape) if hasattr(v, "shape") else ()


def _binary_shape(x, y, *args, **kwargs):
    dtype = jnp.result_type(*(v.dtype if hasattr(v, "dtype") else v for v in (x, y)))
    return TensorMeta(broadcast_shape(_shape_of(x), _shape_of(y)), dtype)


def _factory_shape(size, *, dtype=None, **kwargs):
    return TensorMeta(tuple(size), jnp.dtype(dtype or jnp.float32))


zeros = defop("zeros(SymInt[] size, *, ScalarType? dtype=None) -> Tensor",
              lambda size, dtype=None: jnp.zeros(tuple(size), dtype or jnp.float32),
              shape=_factory_shape)
ones = defop("ones(SymInt[] size, *, ScalarType? dtype=None) -> Tensor",
             lambda size, dtype=None: jnp.ones(tuple(size), dtype or jnp.float32),
             shape=_factory_shape)
copy_ = defop("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)",
              lambda self, src: jnp.broadcast_to(jnp.asarray(src, self.dtype), self.shape),
              shape=same_shape,
              backward=lambda g, self, src, out: (None, g.sum_to_size(src.shape).to(src.dtype)))
to = defop("to(Tensor self, ScalarType dtype) -> Tensor",
           lambda x, dtype: x.astype(dtype),
           shape=lambda x, dtype: TensorMeta(tuple(x.shape), jnp.dtype(dtype)),
           backward=lambda g, x, dtype, out: g.to(x.dtype), save=())


def _sum_to(x, size):
    lead = x.ndim - len(size)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size)
                                      if s == 1 and x.shape[i + lead] != 1)
    return jnp.sum(x, axis=axes, keepdims=True).reshape(tuple(size)) if axes else x


sum_to_size = defop("sum_to_size(Tensor self, SymInt[] size) -> Tensor", _sum_to,
                    shape=lambda x, size: TensorMeta(tuple(size), x.dtype),
                    backward=lambda g, x, size, out: g.expand(x.shape), save=())
expand = defop("expand(Tensor self, SymInt[] size) -> Tensor",
               lambda x, size: jnp.broadcast_to(x, tuple(size)),
               shape=lambda x, size: TensorMeta(tuple(size), x.dtype),
               backward=lambda g, x, size, out: g.sum_to_size(x.shape), save=())
add = defop("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
            lambda x, y, alpha=1: x + y * alpha if alpha != 1 else x + y, shape=_binary_shape,
            backward=lambda g, x, y, alpha, out: (g, g * alpha if alpha != 1 else g), save=())
mul = defop("mul.Tensor(Tensor self, Tensor other) -> Tensor", jnp.multiply,
            shape=_binary_shape, backward=lambda g, x, y, out: (g * y, g * x))
neg = defop("neg(Tensor self) -> Tensor", jnp.negative, shape=same_shape,
            backward=lambda g, x, out: -g, save=())
sin = defop("sin(Tensor self) -> Tensor", jnp.sin, shape=same_shape,
            backward=lambda g, x, out: g * x.cos())
cos = defop("cos(Tensor self) -> Tensor", jnp.cos, shape=same_shape,
            backward=lambda g, x, out: -(g * x.sin()))
exp = defop("exp(Tensor self) -> Tensor", jnp.exp, shape=same_shape,
            backward=lambda g, x, out: g * out, save=("out",))
sum_ = defop("sum(Tensor self) -> Tensor", jnp.sum,
             shape=lambda x: TensorMeta((), x.dtype),
             backward=lambda g, x, out: g.expand(x.shape), save=())
eq = defop("eq.Tensor(Tensor self, Tensor other) -> Tensor", jnp.equal,
           shape=lambda x, y: TensorMeta(broadcast_shape(_shape_of(x), _shape_of(y)), jnp.bool_),
           backward=NONDIFF)
add_ = inplace("add_", add)
mul_ = inplace("mul_", mul)
