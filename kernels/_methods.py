"""Tensor methods and Python operators, installed once on ``Tensor`` by
:func:`install_tensor_methods` (called from ``autograd_compile/__init__.py``).

Most methods *are* the ``acg.*`` functions (``x.sum(1)`` is ``acg.sum(x, 1)``); the rest
take PyTorch's method-only spellings (``x.view(2, 3)``, ``x.to(acg.float64)``, ``x.T``).
Operators return ``NotImplemented`` for operands they do not understand, so ``t == None``
is False and ``__hash__`` stays identity.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile._dtype import dtype as AcgDtype, scalar_type_name
from autograd_compile.devices import device
from autograd_compile.dispatch.keys import TLS
from autograd_compile.tensor import Tensor

from . import _xp
from . import api as A
from . import api_select
from . import elementwise as E
from . import indexing as I
from . import random as R
from . import shape as S
from ._dtypes import as_dtype, is_float
from .views import inplace_method

# methods that are exactly the acg function of the same name (input first)
_SAME = (
    "exp log sin cos tan tanh sigmoid sqrt rsqrt reciprocal log1p expm1 erf neg negative abs "
    "square relu sign floor ceil round trunc logical_not bitwise_not isnan isinf isfinite add "
    "sub mul div true_divide divide multiply subtract floor_divide remainder pow maximum "
    "minimum clamp clip clamp_min clamp_max eq ne lt le gt ge greater less greater_equal "
    "less_equal not_equal logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
    "equal allclose sum mean prod cumsum max min amax amin argmax argmin var std var_mean "
    "std_mean logsumexp all any norm transpose swapaxes swapdims t unsqueeze squeeze flatten "
    "unflatten split chunk unbind select narrow flip clone index_select gather scatter_add "
    "masked_fill nonzero matmul mm bmm dot outer softmax log_softmax is_floating_point"
).split()

# in-place methods: the op of the same name
_INPLACE = {
    "add_": E.add_, "sub_": E.sub_, "mul_": E.mul_, "div_": E.div_, "neg_": E.neg_,
    "exp_": E.exp_, "sqrt_": E.sqrt_, "relu_": E.relu_, "sigmoid_": E.sigmoid_,
    "tanh_": E.tanh_, "abs_": E.abs_, "copy_": S.copy_, "zero_": S.zero_, "fill_": S.fill_,
    "masked_fill_": A.masked_fill_,
}


def _is_device(a: Any) -> bool:
    """A ``to()`` argument naming a device: a device, a string, a jax Device or an index."""
    return isinstance(a, (str, device, jax.Device)) or (
        isinstance(a, builtins.int) and not isinstance(a, builtins.bool))


def to(self: Tensor, *args: Any, dtype: Any = None, device: Any = None,
       non_blocking: bool = False, copy: bool = False, **kwargs: Any) -> Tensor:
    """``to(dtype)``, ``to(other)`` (its dtype and device), ``to(device[, dtype])``; "cuda" is
    JAX's GPU. Nothing to change returns ``self``, as in PyTorch.

    >>> import autograd_compile as acg
    >>> x = acg.ones(2)
    >>> x.to("cpu") is x, x.to("cpu", acg.float64).dtype, x.to(acg.zeros(1).long()).dtype
    (True, torch.float64, torch.int64)
    """
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif _is_device(a):
            device = a
        else:
            dtype = a
    out = self if device is None else A._placed(self, device)
    dtype = as_dtype(dtype)
    out = out if dtype is None or dtype == out.dtype else S.to(out, dtype)
    return S.clone(out) if copy and out is self else out


def _cuda(self: Tensor, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Tensor:
    """This tensor on a GPU ("cuda" or "cuda:N"); RuntimeError when JAX has none."""
    if isinstance(device, builtins.int):
        device = f"cuda:{device}"
    return to(self, device if device is not None else "cuda")


def _caster(dtype: Any) -> Callable[[Tensor], Tensor]:
    return lambda self: to(self, dtype)


def _pow_(self: Tensor, e: Any) -> Tensor:
    """In-place pow with the overload ``acg.pow`` would pick."""
    if isinstance(e, Tensor):
        return E.pow_tensor_(self, e)
    if isinstance(e, builtins.int) and not isinstance(e, builtins.bool):
        return E.pow_int_(self, e)
    return E.pow_(self, e)


def _new(factory: Callable) -> Callable:
    """``x.new_zeros(size)`` and friends: ``x``'s dtype unless told otherwise."""
    def method(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
               requires_grad: builtins.bool = False, **kwargs: Any) -> Tensor:
        return factory(*size, dtype=dtype or self.dtype, device=device,
                       requires_grad=requires_grad)
    return method


def _bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 0/1 draws: 1 with probability ``p`` (a number or a broadcastable tensor)."""
    key = R.key_of(generator)
    if isinstance(p, Tensor):
        draws = R.bernoulli(S.expand(p.to(self.dtype) if is_float(self.dtype) else p,
                                     list(self.shape)), key)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_: Expected p_in >= 0 && p_in <= 1 to be true, but "
                               f"got p={p}")
        draws = R.bernoulli_p(self, builtins.float(p), key)
    return S.copy_(self, draws)


# ``Tensor.type("torch.FloatTensor")``: the dtypes by PyTorch's legacy type names
_TYPE_DTYPES = {f"{scalar_type_name(jnp.dtype(n))}Tensor": jnp.dtype(n) for n in (
    "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
    "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")}


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """No argument: the legacy type name ("torch.FloatTensor", "torch.cuda.LongTensor");
    a dtype or such a name: the tensor cast to it."""
    if dtype is None:
        cuda = ".cuda" if self.device.type == "cuda" else ""
        return f"torch{cuda}.{scalar_type_name(self.dtype)}Tensor"
    if isinstance(dtype, str) and dtype.rsplit(".", 1)[-1] in _TYPE_DTYPES:
        dtype = _TYPE_DTYPES[dtype.rsplit(".", 1)[-1]]
    return to(self, dtype=dtype)


def _shape_args(args: tuple) -> list:
    """``x.view(2, 3)`` and ``x.view((2, 3))`` both mean [2, 3]."""
    return A._sizes(args)


def _view(self: Tensor, *shape: Any) -> Tensor:
    """``x.view(2, 3)``, ``x.view((2, 3))``, or ``x.view(acg.int32)``: its bytes as another
    dtype (the last size scaled by the item sizes' ratio), as PyTorch's.

    >>> import autograd_compile as acg
    >>> acg.tensor([1.0]).view(acg.int32).tolist(), acg.zeros(2, 4).view(acg.float64).shape
    ([1065353216], (2, 2))
    """
    if len(shape) == 1 and _is_dtype(shape[0]):
        return S.view_dtype(self, shape[0])
    return A._reshaped(self, S.view, _shape_args(shape))


def _is_dtype(value: Any) -> bool:
    """acg.float32, a numpy dtype, or a numpy/jnp scalar type (not a size, nor a tensor)."""
    return isinstance(value, (AcgDtype, np.dtype)) or type(value).__name__ == "_ScalarMeta" \
        or (isinstance(value, type) and issubclass(value, np.generic))


def _methods() -> dict[str, Any]:
    m: dict[str, Any] = {name: getattr(A, name) for name in _SAME}
    m.update({
        "view": _view,
        "reshape": lambda self, *shape: A._reshaped(self, S.reshape, _shape_args(shape)),
        "view_as": lambda self, other: A._reshaped(self, S.view, list(other.shape)),
        "reshape_as": lambda self, other: A._reshaped(self, S.reshape, list(other.shape)),
        "expand": lambda self, *size: S.expand(self, _shape_args(size)),
        "expand_as": lambda self, other: S.expand(self, list(other.shape)),
        "repeat": lambda self, *sizes: S.repeat(self, _shape_args(sizes)),
        "permute": lambda self, *dims: A.permute(self, _shape_args(dims)),
        "sum_to_size": lambda self, *size: S.sum_to_size(self, _shape_args(size)),
        "contiguous": lambda self, *a, **k: self,  # always contiguous
        "pin_memory": lambda self, *a, **k: self,  # JAX stages host-to-device copies itself
        "is_pinned": lambda self, *a, **k: False,
        "type": _type,
        "is_contiguous": lambda self, *a, **k: True,
        "where": lambda self, condition, other: E.where(condition, self, other),
        "type_as": lambda self, other: to(self, other.dtype),
        "to": to, "cpu": lambda self, *a, **k: to(self, "cpu"), "cuda": _cuda,
        "float": _caster(jnp.float32), "double": _caster(jnp.float64),
        "half": _caster(jnp.float16), "bfloat16": _caster(jnp.bfloat16),
        "int": _caster(jnp.int32), "long": _caster(jnp.int64), "bool": _caster(jnp.bool_),
        "short": _caster(jnp.int16), "byte": _caster(jnp.uint8), "char": _caster(jnp.int8),
        "new_zeros": _new(A.zeros), "new_ones": _new(A.ones), "new_empty": _new(A.zeros),
        "new_full": lambda self, size, fill_value, *, dtype=None, device=None,
        requires_grad=False: A.full(size, fill_value, dtype=dtype or self.dtype,
                                    device=device, requires_grad=requires_grad),
        "new_tensor": lambda self, data, dtype=None, device=None, requires_grad=False: A.tensor(
            data, dtype or self.dtype, requires_grad, device),
        "normal_": inplace_method(lambda self, mean=0.0, std=1.0, *, generator=None: R.normal_(
            self, builtins.float(mean), builtins.float(std), key=R.key_of(generator))),
        "uniform_": inplace_method(lambda self, from_=0.0, to=1.0, *, generator=None: R.uniform_(
            self, builtins.float(from_), builtins.float(to), key=R.key_of(generator))),
        "bernoulli_": inplace_method(_bernoulli_),
        "index_put": lambda self, indices, values, accumulate=False: I.index_put(
            self, list(indices), values, accumulate),
        "index_put_": inplace_method(lambda self, indices, values, accumulate=False:
                                     I.index_put_(self, list(indices), values, accumulate)),
        "pow_": inplace_method(_pow_),
        "clamp_": inplace_method(lambda self, min=None, max=None: (
            E.clamp_tensor_ if isinstance(min, Tensor) or isinstance(max, Tensor) else E.clamp_)(
                self, min, max)),
        "__getitem__": I.getitem, "__setitem__": I.setitem,
    })
    m.update(api_select.tensor_methods())
    # an op object is not a descriptor: the wrapper passes ``self`` (and writes through views)
    m.update({name: inplace_method(op) for name, op in _INPLACE.items()})
    return m


# -- operators -------------------------------------------------------------------------------
def _forward(fn: Callable) -> Callable:
    def op(self: Tensor, other: Any) -> Any:
        other = A._operand(other)
        return NotImplemented if other is None else fn(self, other)
    return op


def _reflected(fn: Callable) -> Callable:
    def op(self: Tensor, other: Any) -> Any:
        other = A._operand(other)
        return NotImplemented if other is None else fn(other, self)
    return op


def _plain_binary(np_fn: Callable, name: str, x: Any, y: Any, op: Any = None,
                  reflected: bool = False) -> Any:
    """``np_fn(x, y)`` for an exact elementwise operator (+, -, *, comparisons) on plain host
    tensors, without the dispatcher; None when the op path must run it.

    Plain: a tensor holding a numpy value, and another such tensor of the same dtype (no
    promotion question) or a Python number of the tensor's kind (numpy keeps the array's
    dtype for it, as PyTorch does); no mode, the tier not forced, a size the op path also
    runs on the host. These operators round exactly alike in numpy and XLA, so the result
    has the op path's bits. With autograd history (``op`` given: +, -, *), the result's node
    is the one the op's Autograd kernel records (``derivatives.record``), so gradients, hooks
    and saved values are the op path's; ``reflected``: the op is ``op(y, x)``."""
    if not A._plain(x):
        return None
    grad, b = x._requires_grad, y
    if isinstance(y, Tensor):
        if y._acg_keys != A._PLAIN_KEYS:
            return None
        b, grad = y._store, grad or y._requires_grad
    if grad and (op is None or TLS.excluded):  # (an excluded key: the dispatcher decides)
        return None
    out = _xp.exact_binary(np_fn, x._store, b)
    if out is None:
        return None
    bound = op.schema.bind((y, x) if reflected else (x, y), {}) if grad else None
    return A._host_result(out, name, op, bound, grad)


def _fast(np_fn: Callable, name: str, fn: Callable, reflected: bool = False,
          op: Any = None) -> Callable:
    """An operator that tries :func:`_plain_binary` before the op."""
    slow = _reflected(fn) if reflected else _forward(fn)
    flipped = (lambda a, b: np_fn(b, a)) if reflected else np_fn

    def method(self: Tensor, other: Any) -> Any:
        out = _plain_binary(flipped, name, self, other, op, reflected)
        return slow(self, other) if out is None else out
    return method


_PLAIN = {"add": (np.add, "add_Tensor"), "sub": (np.subtract, "sub_Tensor"),
          "mul": (np.multiply, "mul_Tensor"), "eq": (np.equal, "eq_Tensor"),
          "ne": (np.not_equal, "ne_Tensor"), "lt": (np.less, "lt_Tensor"),
          "le": (np.less_equal, "le_Tensor"), "gt": (np.greater, "gt_Tensor"),
          "ge": (np.greater_equal, "ge_Tensor")}


# the operators whose fast path also records autograd history (differentiable, alpha=1)
_RECORDED = {"add": E.add, "sub": E.sub, "mul": E.mul}


def _operators() -> dict[str, Any]:
    ops = {
        "add": A.add, "sub": A.sub, "mul": A.mul, "truediv": A.div, "floordiv": A.floor_divide,
        "mod": A.remainder, "pow": A.pow, "matmul": A.matmul, "and": A.bitwise_and,
        "or": A.bitwise_or, "xor": A.bitwise_xor,
    }
    m: dict[str, Any] = {}
    for name, fn in ops.items():
        plain = _PLAIN.get(name)
        op = _RECORDED.get(name)
        m[f"__{name}__"] = _fast(*plain, fn, op=op) if plain else _forward(fn)
        m[f"__r{name}__"] = _fast(*plain, fn, True, op) if plain else _reflected(fn)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        m[f"__{name}__"] = _fast(*_PLAIN[name], getattr(A, name))
    inplace = {"add": E.add_, "sub": E.sub_, "mul": E.mul_, "truediv": E.div_, "pow": _pow_}
    for name, fn in inplace.items():
        m[f"__i{name}__"] = _forward(inplace_method(fn))
    m.update({"__neg__": A.neg, "__pos__": lambda self: self, "__abs__": A.abs,
              "__invert__": A.bitwise_not})
    return m


def install_tensor_methods(cls: type) -> None:
    """Put every method, property and operator on ``cls`` (the Tensor class), once."""
    for name, fn in {**_methods(), **_operators()}.items():
        setattr(cls, name, fn)
    cls.is_cuda = property(lambda self: self.device.type == "cuda")
    cls.is_cpu = property(lambda self: self.device.type == "cpu")
    # the other device kinds and layouts PyTorch asks about (``input.is_cuda or input.is_xpu``)
    for kind in ("xpu", "mps", "meta", "ipu", "xla", "mtia", "maia", "vulkan"):
        setattr(cls, f"is_{kind}", property(lambda self, k=kind: self.device.type == k))
    for layout in ("mkldnn", "quantized", "sparse", "sparse_csr", "nested"):
        setattr(cls, f"is_{layout}", property(lambda self: False))
    cls.get_device = lambda self: -1 if self.device.index is None else self.device.index
    cls.T = property(lambda self: A.permute(self, list(builtins.range(self.ndim))[::-1]))
    cls.mT = property(lambda self: A.transpose(self, -2, -1))
    cls.mH = property(lambda self: A.transpose(self, -2, -1).conj())  # conj() of a real: itself
    cls.__hash__ = object.__hash__  # defining __eq__ must not make tensors unhashable

