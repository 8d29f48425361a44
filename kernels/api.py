"""The Python surface over the ops: ``acg.*`` functions and Tensor methods, with PyTorch's
names and signatures. Each function normalises its arguments (``*size`` or a sequence,
``dim`` as an int or a tuple, Python scalars) and calls one op, or a few.

>>> import autograd_compile as acg
>>> x = acg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
>>> y = (x.relu() * 2 + 1).sum(dim=1)
>>> y.tolist(), y.grad_fn.name()
([4.0, 16.0], 'SumBackward0')

Note: this module defines ``sum``, ``max``, ``min``, ``abs``, ``round``, ``pow``, ``all``,
``any`` and the dtype ``bool``; internal code here spells the builtins ``builtins.<name>``.
"""
from __future__ import annotations

import builtins
import numbers
import operator
from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from autograd_compile.autograd.derivatives import record
from autograd_compile.devices import as_device, to_jax
from autograd_compile.dispatch.keys import TLS
from autograd_compile.tracing.symbolic_shapes import SymFloat, SymInt
from autograd_compile.tracing.fake import MetaTensor, no_data, to_meta
from autograd_compile.tensor import HOST_ELEMENTS, TO_JAX, Tensor, _make

from . import _xp
from . import elementwise as E
from . import factories as F
from . import indexing as I
from . import linalg as L
from . import nn as N
from . import reductions as R
from . import shape as S
from autograd_compile._dtype import of as dtype_of, scalar_type_name
from ._dtypes import (DEFAULT_INT, as_dtype, complex_of, default_float, is_float, promote,
                      result_type, set_default_float)
from ._defop import HOST_UNARY
from ._jit import clear_programs
from ._shapes import infer_size
from ._shapes import numel as _numel
from ._shapes import shapes_equal, split_sizes, wrap_dim
from .views import as_shape_of, view_of
from autograd_compile.amp.autocast_mode import autocast_op
from ._transfer import to_device as _to_device  # [evdata] issue 19: tensors from host data

TO_JAX[0] = _to_device  # how a tensor holding a host value gives its jax array

_Dim = int | Sequence[int] | None


# -- argument helpers ---------------------------------------------------------------------------
def _sizes(size: tuple) -> list:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean sizes [2, 3]."""
    if len(size) == 1:
        if type(size[0]) is int:  # zeros(17): the data path's common call
            return [size[0]]
        if isinstance(size[0], (tuple, list)):
            size = size[0]
    return [s if type(s) is int or isinstance(s, SymInt) else operator.index(s) for s in size]


def _dims(dim: _Dim) -> list[int] | None:
    return None if dim is None else [dim] if isinstance(dim, (int, np.integer)) else list(dim)


DEFAULT_DEVICE: list[Any] = [None]  # set_default_device's, None for the CPU (made there)


def set_default_device(device: Any) -> None:
    """Where factories (``zeros``, ``randn``, ``tensor``...) put new tensors when not told
    (``torch.set_default_device``); None or "cpu" restores the CPU.

    >>> import autograd_compile as acg
    >>> acg.set_default_device("cpu"); acg.get_default_device()
    device(type='cpu')
    """
    d = None if device is None else as_device(device)
    DEFAULT_DEVICE[0] = None if d is None or d.type == "cpu" else d


def _leaf(t: Tensor, requires_grad: bool, device: Any = None) -> Tensor:
    """The new tensor on ``device`` (None: the default device), a leaf if requires_grad."""
    if device is None:
        device = DEFAULT_DEVICE[0]
    if device is not None:
        t = _placed(t, device)
    return t.requires_grad_() if requires_grad else t


def _placed(t: Tensor, device: Any) -> Tensor:
    """``t`` on ``device`` (RuntimeError naming it when JAX has no such device)."""
    d = as_device(device)
    if d.type == "meta" or isinstance(t, MetaTensor):  # shapes without data (tracing/fake.py)
        if d.type != "meta":
            raise no_data()
        return to_meta(t)
    target = to_jax(d)  # validates first, also when nothing moves
    devices = getattr(t._data, "devices", None)
    if devices is not None and not isinstance(t._data, jax.core.Tracer) and \
            target in devices():
        return t
    return S.to_device(t, str(d))


def _is_number(v: Any) -> bool:
    return isinstance(v, (numbers.Number, SymInt, SymFloat)) and not isinstance(v, Tensor)


def _operand(v: Any) -> Any:
    """A Tensor or Python number as is; numpy/jax arrays become tensors; else None."""
    if isinstance(v, Tensor) or _is_number(v):
        return v
    if isinstance(v, (np.ndarray, jax.Array)):
        return tensor(v)
    return None


# -- creation --------------------------------------------------------------------------------
def _plain_dtype(a: np.ndarray) -> np.dtype:
    """Python data: floats become float32 (the default), complex numbers its complex twin
    (complex64), ints int64, bools bool."""
    kind = a.dtype.kind
    return default_float() if kind == "f" else DEFAULT_INT if kind in "iu" else \
        complex_of(default_float()) if kind == "c" else a.dtype


_PY_NUMBERS = frozenset({float, int, bool, complex})


def _holds_only_python_numbers(data: Any) -> bool:
    """Nested lists of Python numbers only (the common case); False when an element is a
    numpy value, a tensor or anything else. Below the top level only the first row is read
    (rows of one list hold the same kinds of values in practice; a full walk in Python
    would cost as much as the conversion itself)."""
    level = data
    while True:
        kinds = set(map(type, level))
        if kinds <= _PY_NUMBERS:
            return True
        if not kinds <= {list, tuple} or not level[0]:
            return False
        level = level[0]


def _sequence_dtype(data: Any) -> np.dtype:
    """PyTorch's dtype of a sequence holding numpy values or tensors: each element's own
    dtype (a Python float the default, an int int64), promoted as PyTorch promotes."""
    out = None
    for e in data:
        if type(e) in (list, tuple):
            d = _sequence_dtype(e)
        elif isinstance(e, (np.ndarray, np.generic, Tensor, jax.Array)):
            d = np.dtype(e.dtype)
        else:
            d = _plain_dtype(np.asarray(e))
        out = d if out is None else promote(out, d)
    return default_float() if out is None else out


def _array(data: Any, dtype: Any) -> Any:
    """A new value for ``tensor(data)``: a read-only numpy array where the host tier holds
    it (small, CPU), else a jax array."""
    if isinstance(data, Tensor):
        data = data.__jax_array__()
    if isinstance(data, jax.Array):
        return data if dtype is None or data.dtype == dtype else data.astype(dtype)
    if dtype is None and type(data) in (list, tuple) and data and \
            not _holds_only_python_numbers(data):
        dtype = _sequence_dtype(data)  # ([np.float64(1.5)], [f64 array, ...]: float64)
    a = np.asarray(data)
    if not isinstance(data, (np.ndarray, np.generic)):
        dtype = dtype if dtype is not None else _plain_dtype(a)
    a = a if dtype is None else a.astype(dtype, copy=False)
    if a.size <= HOST_ELEMENTS and not TLS.mode_stack and a.dtype in _xp.HOST_DTYPES and \
            _xp.host_enabled():
        a = np.array(a, copy=True)  # a host value the tensor owns (never the caller's array)
        a.setflags(write=False)
        return a
    # convert on the host, then transfer: jnp.asarray would compile a program per shape
    return _to_device(a)


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None
           ) -> Tensor:
    """A new leaf tensor from nested lists, numbers, numpy/jax arrays or tensors.

    >>> import autograd_compile as acg
    >>> acg.tensor([1, 2]).dtype, acg.tensor([1.5]).dtype, acg.tensor(True).dtype
    (torch.int64, torch.float32, torch.bool)
    """
    t = _make(_array(data, as_dtype(dtype)))
    if TLS.mode_stack:  # under a mode (fake, tracing) a constant enters through an op
        t = F.lift_fresh(t)
    return _leaf(t, requires_grad, device)


as_tensor = tensor


def _host_filled(shape: list, value: int, dtype: Any) -> Tensor | None:
    """A small tensor of zeros or ones made by numpy as a host value (no kernel call),
    where the host tier holds it; None: the op makes it (and checks the sizes)."""
    if TLS.mode_stack or not _xp.host_enabled():
        return None
    n = 1
    for s in shape:  # (a loop, not all(...): this is the data path's hot call)
        if type(s) is not int or s < 0:
            return None
        n *= s
    dtype = default_float() if dtype is None else np.dtype(dtype)
    if n > HOST_ELEMENTS or dtype not in _xp.HOST_DTYPES:
        return None
    if value:  # numpy's ones/full cast through copyto: a fill is 3x cheaper
        a = np.empty(shape, dtype)
        a.fill(value)
    else:
        a = np.zeros(shape, dtype)
    a.setflags(write=False)
    return _make(a)


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None
          ) -> Tensor:
    """Zeros of the given size (``zeros(2, 3)`` or ``zeros((2, 3))``), float32 by default."""
    shape, dtype = _sizes(size), as_dtype(dtype)
    out = _host_filled(shape, 0, dtype)
    return _leaf(F.zeros(shape, dtype=dtype) if out is None else out, requires_grad, device)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, device: Any = None
         ) -> Tensor:
    """Ones of the given size, float32 by default."""
    shape, dtype = _sizes(size), as_dtype(dtype)
    out = _host_filled(shape, 1, dtype)
    return _leaf(F.ones(shape, dtype=dtype) if out is None else out, requires_grad, device)


empty = zeros


def full(size: Sequence[Any], fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    """``size`` filled with ``fill_value`` (dtype from the value: float32, int64 or bool)."""
    out = F.full(_sizes((size,)), fill_value, dtype=as_dtype(dtype))
    return _leaf(out, requires_grad, device)


def zeros_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False,
               device: Any = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    """Zeros of ``input``'s shape (and dtype). ``memory_format``/``layout`` are accepted and
    ignored throughout: strides are not modelled, every value is one dense array."""
    return _leaf(F.zeros_like(input, dtype=as_dtype(dtype)), requires_grad, device)


def ones_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False,
              device: Any = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    return _leaf(F.ones_like(input, dtype=as_dtype(dtype)), requires_grad, device)


empty_like = zeros_like


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
              device: Any = None, layout: Any = None, memory_format: Any = None) -> Tensor:
    return _leaf(F.full_like(input, fill_value, dtype=as_dtype(dtype)), requires_grad, device)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           requires_grad: bool = False, device: Any = None) -> Tensor:
    """``arange(end)`` or ``arange(start, end, step)``; int64 for ints, float32 otherwise."""
    start, end = (0, start) if end is None else (start, end)
    return _leaf(F.arange(start, end, step, dtype=as_dtype(dtype)), requires_grad, device)


def eye(n: int, m: int | None = None, *, dtype: Any = None, requires_grad: bool = False,
        device: Any = None) -> Tensor:
    return _leaf(F.eye(n, m, dtype=as_dtype(dtype)), requires_grad, device)


def manual_seed(seed: int) -> F.Generator:
    """Reset the global random state: random ops after it are reproducible; returns the
    global generator (``acg.default_generator``)."""
    return F.default_generator.manual_seed(seed)


def initial_seed() -> int:
    return F.default_generator.initial_seed()


def rand(*size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    """Uniform samples in [0, 1), from ``generator`` (the global one by default).

    >>> import autograd_compile as acg
    >>> _ = acg.manual_seed(0); a = acg.rand(3); _ = acg.manual_seed(0)
    >>> (acg.rand(3) == a).all().item()
    True
    """
    key = F.key_of(generator)
    return _leaf(F.rand(_sizes(size), key, dtype=as_dtype(dtype)), requires_grad, device)


def randn(*size: Any, generator: Any = None, dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    """Standard normal samples, from ``generator`` (the global one by default)."""
    key = F.key_of(generator)
    return _leaf(F.randn(_sizes(size), key, dtype=as_dtype(dtype)), requires_grad, device)


def randint(low: int, high: Any = None, size: Sequence[Any] = (), *, generator: Any = None,
            dtype: Any = None, requires_grad: bool = False, device: Any = None) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high)."""
    if high is None or isinstance(high, (tuple, list)):
        low, high, size = 0, low, (size if high is None else high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    key = F.key_of(generator)
    out = F.randint(low, high, _sizes((size,)), key, dtype=as_dtype(dtype))
    return _leaf(out, requires_grad, device)


def rand_like(input: Tensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, memory_format: Any = None
              ) -> Tensor:
    return rand(list(input.shape), dtype=dtype or input.dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input: Tensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None, memory_format: Any = None
               ) -> Tensor:
    return randn(list(input.shape), dtype=dtype or input.dtype, device=device,
                 requires_grad=requires_grad)


def randint_like(input: Tensor, low: int, high: Any = None, *, dtype: Any = None,
                 device: Any = None, requires_grad: bool = False, layout: Any = None,
                 memory_format: Any = None) -> Tensor:
    low, high = (0, low) if high is None else (low, high)
    return randint(low, high, list(input.shape), dtype=dtype or input.dtype, device=device,
                   requires_grad=requires_grad)


# -- elementwise ---------------------------------------------------------------------------------
_PLAIN_KEYS = Tensor._acg_keys  # the Backend key alone: no __acg_dispatch__ of its own


def _plain(x: Any) -> bool:
    """``x`` is a tensor whose op an eager fast path may compute itself: no dispatch of its
    own (a Parameter is plain), no mode, no forced tier."""
    return isinstance(x, Tensor) and x._acg_keys == _PLAIN_KEYS and _xp.unobserved()


def _host_result(out: np.ndarray, stat: str, op: Any, bound: list, grad: bool) -> Tensor:
    """A fast path's numpy result as a tensor; with autograd history (``grad``, grad mode
    on), the node ``op``'s Autograd kernel records for arguments ``bound``."""
    out.setflags(write=False)
    _xp.STATS[stat] += 1
    result = _make(out)
    if grad and TLS.grad_enabled:
        record(op, bound, result)
    return result


def _host_unary(op: Any, twin: Callable, stat: str, x: Any) -> Tensor | None:
    """``op(x)`` for a plain host value of a float dtype: the op's own numpy kernel (the
    one its host tier runs at this size, so the same bits), without the dispatcher; with
    autograd history, the node the op's Autograd kernel records. None: the op runs it."""
    if not _plain(x):
        return None
    a = x._store
    if type(a) is not np.ndarray or a.dtype.kind != "f" or a.size > _xp.HOST_MAX_ELEMENTS or \
            (x._requires_grad and TLS.excluded):
        return None
    try:
        with _xp.quiet():  # IEEE results, as XLA gives, without warnings
            out = np.asarray(twin(a))  # (a 0-d input gives a numpy scalar)
    except Exception:  # numpy cannot: the op path decides (and raises what it raises)
        return None
    if out.dtype != a.dtype:
        return None
    return _host_result(out, stat, op, [x], x._requires_grad)


def _unary(op: Any, name: str) -> Callable[[Tensor], Tensor]:
    twin, stat = HOST_UNARY.get(op), op.name.replace(".", "_")
    if twin is None:
        def fn(input: Tensor) -> Tensor:
            return op(input)
    else:
        def fn(input: Tensor) -> Tensor:
            out = _host_unary(op, twin, stat, input)
            return op(input) if out is None else out
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (op ``{op.qualname}``)."
    return fn


exp, log, sin, cos, tan, tanh = (_unary(getattr(E, n), n) for n in
                                 ("exp", "log", "sin", "cos", "tan", "tanh"))
sigmoid, sqrt, rsqrt, reciprocal, log1p, expm1 = (_unary(getattr(E, n), n) for n in (
    "sigmoid", "sqrt", "rsqrt", "reciprocal", "log1p", "expm1"))
erf, neg, abs, square, relu, sign = (_unary(getattr(E, n), n) for n in (
    "erf", "neg", "abs", "square", "relu", "sign"))
floor, ceil, round, trunc, logical_not, bitwise_not = (_unary(getattr(E, n), n) for n in (
    "floor", "ceil", "round", "trunc", "logical_not", "bitwise_not"))
isnan, isinf, isfinite = (_unary(getattr(E, n), n) for n in ("isnan", "isinf", "isfinite"))
_round_half_even = round


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001  (PyTorch's name)
    """Elementwise rounding, half to even; to ``decimals`` digits after the point
    (negative: before it).

    >>> import autograd_compile as acg
    >>> acg.round(acg.tensor([1.2345, 2.5]), decimals=2).tolist(), acg.tensor([25.0]).round(
    ...     decimals=-1).tolist()
    ([1.2300000190734863, 2.5], [20.0])
    """
    if decimals == 0:
        return _round_half_even(input)
    if not is_float(input.dtype):
        raise NotImplementedError(f"\"round_cpu\" not implemented for "
                                  f"'{scalar_type_name(input.dtype)}'")
    return E.round_decimals(input, decimals=decimals)
negative = neg


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` with broadcasting; either may be a Python number."""
    return E.add(input, other, alpha=alpha) if alpha != 1 else E.add(input, other)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    return E.sub(input, other, alpha=alpha) if alpha != 1 else E.sub(input, other)


def mul(input: Any, other: Any) -> Tensor:
    return E.mul(input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """True division (integers give float32); ``rounding_mode`` "floor" or "trunc"."""
    if rounding_mode is None:
        return E.div(input, other)
    if rounding_mode == "floor":
        return E.floor_divide(input, other)
    if rounding_mode != "trunc":
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                         f"but found '{rounding_mode}'")
    out = E.trunc(E.div(input, other))
    dtype = result_type(input, other)
    return out if is_float(dtype) else out.to(dtype)


true_divide = divide = div
multiply, subtract = mul, sub


def floor_divide(input: Any, other: Any) -> Tensor:
    return E.floor_divide(input, other)


def remainder(input: Any, other: Any) -> Tensor:
    return E.remainder(input, other)


def pow(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent``: an int exponent is structural (specialised), a float one is
    a runtime scalar, a tensor exponent broadcasts."""
    if not isinstance(input, Tensor):
        return E.pow_base(input, exponent)
    if isinstance(exponent, Tensor):
        return E.pow_tensor(input, exponent)
    if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, builtins.bool):
        return E.pow_int(input, builtins.int(exponent))
    if isinstance(exponent, float) and exponent in _MULTIPLIED and is_float(input.dtype):
        return E.pow_int(input, builtins.int(exponent))  # x*x*x, as PyTorch computes it
    return E.pow_scalar(input, exponent)


# float exponents PyTorch computes by multiplying (its pow_tensor_scalar_optimized_kernel):
# XLA's and numpy's general pow (exp of a log) costs ~8x as much, and rounds differently
_MULTIPLIED = frozenset({2.0, 3.0, -1.0, -2.0})


def maximum(input: Any, other: Any) -> Tensor:
    return E.maximum(input, other)


def minimum(input: Any, other: Any) -> Tensor:
    return E.minimum(input, other)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other`` (numbers allowed);
    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)`` (eager only).

    >>> import autograd_compile as acg
    >>> [t.tolist() for t in acg.where(acg.tensor([[True, False], [False, True]]))]
    [[0, 1], [0, 1]]
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return E.where(condition, input, other)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Clamp into [min, max] (numbers or tensors; either bound may be None)."""
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return E.clamp_tensor(input, min, max)
    return E.clamp(input, min, max)


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:
    return clamp(input, min, None)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    return clamp(input, None, max)


def _binop(op: Any, name: str) -> Callable[[Any, Any], Tensor]:
    def fn(input: Any, other: Any) -> Tensor:
        return op(input, other)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` with broadcasting (op ``{op.qualname}``)."
    return fn


eq, ne, lt, le, gt, ge = (_binop(getattr(E, n), n) for n in ("eq", "ne", "lt", "le", "gt", "ge"))
logical_and, logical_or, logical_xor = (_binop(getattr(E, n), n) for n in (
    "logical_and", "logical_or", "logical_xor"))
bitwise_and, bitwise_or, bitwise_xor = (_binop(getattr(E, n), n) for n in (
    "bitwise_and", "bitwise_or", "bitwise_xor"))
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


def equal(input: Tensor, other: Tensor) -> builtins.bool:
    """True when both have the same shape and values."""
    return shapes_equal(input.shape, other.shape) and builtins.bool(E.eq(input, other).all())


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-5, atol: float = 1e-8) -> Any:
    return builtins.bool(np.allclose(np.asarray(input), np.asarray(other), rtol, atol))


# -- reductions ------------------------------------------------------------------------------
class return_types:  # noqa: N801  (PyTorch's torch.return_types namespace)
    class max(NamedTuple):
        values: Tensor
        indices: Tensor

    class min(NamedTuple):
        values: Tensor
        indices: Tensor


def sum(input: Tensor, dim: _Dim = None, keepdim: builtins.bool = False, *,
        dtype: Any = None) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all); int/bool inputs sum in int64."""
    if dim is None and not keepdim:
        return R.sum(input, dtype=as_dtype(dtype))
    return R.sum_dim(input, _dims(dim), keepdim, dtype=as_dtype(dtype))


def mean(input: Tensor, dim: _Dim = None, keepdim: builtins.bool = False, *,
         dtype: Any = None) -> Tensor:
    """Mean over ``dim`` (floating-point input only, as in PyTorch)."""
    if dim is None and not keepdim:
        return R.mean(input, dtype=as_dtype(dtype))
    return R.mean_dim(input, _dims(dim), keepdim, dtype=as_dtype(dtype))


def prod(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False, *,
         dtype: Any = None) -> Tensor:
    if dim is None:
        return R.prod(input, dtype=as_dtype(dtype))
    return R.prod_dim(input, dim, keepdim, dtype=as_dtype(dtype))


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    return R.cumsum(input, dim, dtype=as_dtype(dtype))


def max(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The maximum; ``max(dim)`` gives (values, indices); ``max(other)`` is ``maximum``."""
    if isinstance(dim, Tensor):
        return E.maximum(input, dim)
    if dim is None:
        return R.max(input)
    return return_types.max(*R.max_dim(input, dim, keepdim))


def min(input: Tensor, dim: Any = None, keepdim: builtins.bool = False) -> Any:
    """The minimum; ``min(dim)`` gives (values, indices); ``min(other)`` is ``minimum``."""
    if isinstance(dim, Tensor):
        return E.minimum(input, dim)
    if dim is None:
        return R.min(input)
    return return_types.min(*R.min_dim(input, dim, keepdim))


def amax(input: Tensor, dim: _Dim = (), keepdim: builtins.bool = False) -> Tensor:
    return R.amax(input, _dims(dim) or [], keepdim)


def amin(input: Tensor, dim: _Dim = (), keepdim: builtins.bool = False) -> Tensor:
    return R.amin(input, _dims(dim) or [], keepdim)


def _host_arg(np_arg: Callable, input: Any, dim: Any, keepdim: Any) -> Tensor | None:
    """argmax/argmin of a host value computed by numpy without the dispatcher (the op has
    no gradient, so autograd history does not matter); None: the op runs it (modes, a
    forced tier, big or empty values, bool/complex dtypes, 0-d, a bad dim: its errors)."""
    if type(input) is not Tensor or not _xp.unobserved():
        return None
    a = input._store
    if type(a) is not np.ndarray or not a.ndim or not a.size or a.dtype.kind not in "fiu" \
            or a.size > _xp.HOST_MAX_ELEMENTS or type(keepdim) is not builtins.bool:
        return None
    if dim is None:  # the flattened index, as PyTorch
        out = np.asarray(np_arg(a)).reshape((1,) * a.ndim if keepdim else ())
    elif type(dim) is int and -a.ndim <= dim < a.ndim:
        out = np.asarray(np_arg(a, axis=dim, keepdims=keepdim))  # first of ties/NaNs, as PyTorch
    else:
        return None
    out = out.astype(np.int64)
    out.setflags(write=False)
    return _make(out)


def argmax(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False) -> Tensor:
    out = _host_arg(np.argmax, input, dim, keepdim)
    return R.argmax(input, dim, keepdim) if out is None else out


def argmin(input: Tensor, dim: int | None = None, keepdim: builtins.bool = False) -> Tensor:
    out = _host_arg(np.argmin, input, dim, keepdim)
    return R.argmin(input, dim, keepdim) if out is None else out


def _correction(dim: Any, unbiased: Any, correction: Any) -> tuple[Any, Any]:
    """PyTorch's two spellings: ``var(dim, unbiased, keepdim)`` and ``correction=``."""
    if isinstance(dim, builtins.bool):  # legacy var(unbiased)
        dim, unbiased = None, dim
    if correction is None and unbiased is not None:
        correction = 1 if unbiased else 0
    return _dims(dim), correction


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False,
        *, correction: Any = None) -> Tensor:
    """Variance over ``dim``; Bessel-corrected (``correction=1``) unless told otherwise."""
    dim, correction = _correction(dim, unbiased, correction)
    return R.var(input, dim, correction=correction, keepdim=keepdim)


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: builtins.bool = False,
        *, correction: Any = None) -> Tensor:
    dim, correction = _correction(dim, unbiased, correction)
    return R.std(input, dim, correction=correction, keepdim=keepdim)


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None,
             keepdim: builtins.bool = False, *, correction: Any = None) -> tuple:
    """(variance, mean) over ``dim``."""
    dim, correction = _correction(dim, unbiased, correction)
    return R.var_mean(input, dim, correction=correction, keepdim=keepdim)


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None,
             keepdim: builtins.bool = False, *, correction: Any = None) -> tuple:
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, _correction(dim, unbiased, correction)[0], keepdim))


def logsumexp(input: Tensor, dim: _Dim, keepdim: builtins.bool = False) -> Tensor:
    return R.logsumexp(input, _dims(dim), keepdim)


def all(input: Tensor, dim: _Dim = None, keepdim: builtins.bool = False) -> Tensor:
    return R.all(input, _dims(dim), keepdim)


def any(input: Tensor, dim: _Dim = None, keepdim: builtins.bool = False) -> Tensor:
    return R.any(input, _dims(dim), keepdim)


def norm(input: Tensor, p: Any = "fro", dim: _Dim = None, keepdim: builtins.bool = False,
         dtype: Any = None) -> Tensor:
    """Vector p-norm over ``dim`` (all elements by default; p = 2/"fro", 1, inf or a number),
    or the nuclear norm of the matrices on ``dim``: ``linalg``'s norms, whose gradient at a
    zero input is 0 as PyTorch's (a sqrt of squares would give nan).

    >>> import autograd_compile as acg
    >>> x = acg.zeros(2, 3, requires_grad=True)
    >>> acg.norm(x, dim=1).sum().backward(); x.grad.tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    from autograd_compile import linalg  # (the torch.linalg layer, above the kernels)
    if p == "nuc":
        return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                                  dtype=dtype)
    return linalg.vector_norm(input, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


# -- shape ---------------------------------------------------------------------------------
# views: results remember their base, so in-place ops on them write through (views.py)
def _host_view(op: Any, x: Any, args: tuple, np_view: Callable) -> Tensor | None:
    """``op(x, *args)`` for a view op (reshape, transpose, ...) on a plain host tensor: the
    numpy view, shared as PyTorch's views share storage, without the dispatcher (~15 us of
    a 20 us call); with autograd history, the node the op's Autograd kernel records. None:
    the op path runs it (and raises PyTorch's error for bad arguments)."""
    if not _plain(x):
        return None
    a = x._store
    grad = x._requires_grad
    if type(a) is not np.ndarray or (grad and TLS.excluded):
        return None
    try:
        out = np_view(a)
    except Exception:
        return None
    return _host_result(out, op.name, op, op.schema.bind((x, *args), {}) if grad else None, grad)


def _reshaped(input: Tensor, op: Any, size: list) -> Tensor:
    out = _host_view(op, input, (size,), lambda a: a.reshape(infer_size(size, a.size)))
    return view_of(op(input, size) if out is None else out, input, as_shape_of)


def reshape(input: Tensor, shape: Sequence[Any]) -> Tensor:
    return _reshaped(input, S.reshape, _sizes((shape,)))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    out = _host_view(S.transpose, input, (dim0, dim1),
                     lambda a: np.swapaxes(a, dim0, dim1))
    return view_of(S.transpose(input, dim0, dim1) if out is None else out, input,
                   lambda b, v: S.transpose(v, dim0, dim1))


swapaxes = swapdims = transpose


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    dims = list(dims)
    out = _host_view(S.permute, input, (dims,),
                     lambda a: a.transpose(S.permutation(dims, a.ndim)))
    out = S.permute(input, dims) if out is None else out  # validates the dims
    order = [wrap_dim(d, input.ndim) for d in dims]
    back = sorted(builtins.range(len(order)), key=order.__getitem__)  # the inverse permutation
    return view_of(out, input, lambda b, v: S.permute(v, back))


def t(input: Tensor) -> Tensor:
    """Transpose of a matrix (vectors and scalars unchanged)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    out = _host_view(S.unsqueeze, input, (dim,), lambda a: np.expand_dims(a, dim))
    return view_of(S.unsqueeze(input, dim) if out is None else out, input, as_shape_of)


def squeeze(input: Tensor, dim: _Dim = None) -> Tensor:
    if dim is None:
        out = S.squeeze(input)
    else:
        out = S.squeeze_dim(input, dim) if isinstance(dim, (int, np.integer)) else \
            S.squeeze_dims(input, list(dim))
    return view_of(out, input, as_shape_of)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    if input.ndim == 0:
        return _reshaped(input, S.reshape, [1])
    a, b = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if a > b:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(input.shape)
    return _reshaped(input, S.reshape, list(shape[:a] + (_numel(shape[a:b + 1]),) + shape[b + 1:]))


def unflatten(input: Tensor, dim: int, sizes: Sequence[Any]) -> Tensor:
    d, shape = wrap_dim(dim, input.ndim), tuple(input.shape)
    return _reshaped(input, S.reshape, list(shape[:d]) + list(sizes) + list(shape[d + 1:]))


_NDARRAY_ONLY = {np.ndarray}


def _host_join(np_join: Callable, tensors: Sequence[Any], dim: Any, new_dim: int
               ) -> Tensor | None:
    """``np_join(values, axis=dim)`` when every tensor is a plain host value of one dtype
    (no autograd history, no mode, the tier not forced, a host-tier size): numpy's join,
    without the dispatcher. None: the op joins them (promotion, checks, PyTorch's errors)."""
    if type(tensors) not in (list, tuple) or not tensors or type(dim) is not int or \
            not _xp.unobserved():
        return None
    # set comprehensions, not one loop of checks: a collate stacks dozens of tensors
    arrays = [t._store for t in tensors if type(t) is Tensor and not t._requires_grad]
    if len(arrays) != len(tensors) or len({a.dtype for a in arrays}) != 1:
        return None  # (anything else, a promotion included: the op's answer and errors)
    if {type(a) for a in arrays} != _NDARRAY_ONLY:  # a small CPU result of a program (a
        arrays = _host_arrays(arrays)  # sample beside the prompt): read as numpy views
        if arrays is None:
            return None
    first, shapes = arrays[0], {a.shape for a in arrays}
    if (new_dim and len(shapes) != 1) or (0,) in shapes:  # unequal stacks: the op's error;
        return None  # legacy empty 1-d tensors, which PyTorch's cat skips: the op knows
    ndim = first.ndim + new_dim
    total = first.size * len(arrays) if new_dim else builtins.sum(a.size for a in arrays)
    if total > _xp.HOST_MAX_ELEMENTS or not -ndim <= dim < ndim:
        return None
    try:
        if new_dim and first.ndim and dim in (0, -ndim):  # stack on a new first dim: one
            out = np.concatenate(arrays).reshape((len(arrays),) + first.shape)  # C join
        else:
            out = np_join(arrays, axis=dim)
    except ValueError:  # shapes that do not join: the op raises PyTorch's error
        return None
    out.setflags(write=False)
    return _make(out)


def _host_arrays(arrays: list) -> list | None:
    """numpy views of ``arrays`` where each is numpy or a jax CPU array the host tier reads;
    else None (the join checks their total size)."""
    if _xp.host_sig(arrays) is None:
        return None
    return [a if type(a) is np.ndarray else np.asarray(a) for a in arrays]


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (dtypes promote)."""
    out = _host_join(np.concatenate, tensors, dim, 0)
    return S.cat(list(tensors), dim) if out is None else out


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    out = _host_join(np.stack, tensors, dim, 1)
    return S.stack(list(tensors), dim) if out is None else out


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Pieces of ``split_size`` (the last may be smaller) or of the given sizes."""
    outs = _host_split(tensor, split_size_or_sections, dim)
    if outs is None and isinstance(split_size_or_sections, (list, tuple)):
        outs = S.split_with_sizes(tensor, list(split_size_or_sections), dim)
    elif outs is None:
        outs = S.split(tensor, split_size_or_sections, dim)
    return _pieces(outs, tensor, dim)


def _host_split(x: Any, sizes: Any, dim: Any) -> tuple | None:
    """split of a plain host tensor: numpy slice views of its value, shared as PyTorch's
    pieces share storage, without the dispatcher (a 3-way split of a 1x44x96 activation:
    34 -> ~10 us); with autograd history, the node split_with_sizes records. None: the op
    path splits it (and raises PyTorch's errors)."""
    if not _plain(x) or type(dim) is not int:
        return None
    a, grad = x._store, x._requires_grad
    if type(a) is not np.ndarray or (grad and TLS.excluded) or not -a.ndim <= dim < a.ndim:
        return None
    d = dim % a.ndim
    try:
        sizes = [operator.index(s) for s in sizes] if isinstance(sizes, (list, tuple)) \
            else split_sizes(a.shape[d], operator.index(sizes))
    except Exception:
        return None
    if builtins.sum(sizes) != a.shape[d] or builtins.min(sizes, default=0) < 0:
        return None
    outs = tuple(_make(p) for p in S.split_pieces(a, sizes, d))  # read-only views
    _xp.STATS["split_with_sizes"] += 1
    if grad and TLS.grad_enabled:
        record(S.split_with_sizes, [x, sizes, dim], outs)
    return outs


def _pieces(outs: tuple, base: Tensor, dim: int) -> tuple:
    """split/chunk results are slice views of ``base``."""
    start = 0
    for out in outs:
        end = start + out.shape[wrap_dim(dim, base.ndim)]
        view_of(out, base, lambda b, v, s=start, e=end: I.slice_scatter(b, v, dim, s, e))
        start = end
    return outs


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """At most ``chunks`` pieces of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = input.shape[wrap_dim(dim, input.ndim)]
    return split(input, builtins.max((size + chunks - 1) // chunks, 1), dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    outs = S.unbind(input, dim)
    for i, out in enumerate(outs):
        view_of(out, input, lambda b, v, i=i: I.select_scatter(b, v, dim, i))
    return outs


def _size_at(input: Tensor, dim: int) -> Any:
    return input.shape[wrap_dim(dim, input.ndim)] if input.ndim else 1


def select(input: Tensor, dim: int, index: Any) -> Tensor:
    out = I.select(input, dim, index)  # validates dim and index
    index = I.front(index, _size_at(input, dim))
    return view_of(out, input, lambda b, v: I.select_scatter(b, v, dim, index))


def narrow(input: Tensor, dim: int, start: Any, length: Any) -> Tensor:
    start = I.front(start, _size_at(input, dim))
    return view_of(I.slice_op(input, dim, start, start + length), input,
                   lambda b, v: I.slice_scatter(b, v, dim, start, start + length))


def flip(input: Tensor, dims: _Dim) -> Tensor:
    return S.flip(input, _dims(dims) or [])


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy (``memory_format`` accepted and ignored: strides are not modelled)."""
    return S.clone(input)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries at ``index`` (a 1-D integer tensor) along ``dim``."""
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape "
                         f"{list(index.shape)}")
    d = wrap_dim(dim, input.ndim)
    return I.index(input, [None] * d + [index])


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    return I.gather(input, dim, index)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    return I.scatter_add(input, dim, index, src)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` (a number or a 0-d tensor, which gets a gradient) where ``mask`` holds; the
    mask broadcasts."""
    if isinstance(value, Tensor):
        return I.masked_fill_tensor(input, mask, value)
    return I.masked_fill(input, mask, value)


def masked_fill_(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return I.masked_fill_tensor_(input, mask, value)
    return I.masked_fill_(input, mask, value)


def nonzero(input: Tensor, *, as_tuple: builtins.bool = False) -> Any:
    """The positions of the non-zero entries: one row each ([n, ndim], int64), or with
    ``as_tuple`` one 1-D tensor per dim (a 0-d input counts as 1-d). Eager only: n is data."""
    if not as_tuple:
        return I.nonzero(input)
    positions = I.nonzero(input.reshape(1) if input.ndim == 0 else input)
    return tuple(I.select(positions, 1, k) for k in range(builtins.max(input.ndim, 1)))


# -- linear algebra --------------------------------------------------------------------------
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """torch.matmul: vectors, matrices, and batches broadcast against each other.

    >>> import autograd_compile as acg
    >>> (acg.ones(5, 2, 3) @ acg.ones(3)).shape
    (5, 2)
    """
    sparse = SPARSE_MM.get(type(input)) or SPARSE_MM.get(type(other))
    if sparse is not None:
        return sparse[1](input, other)
    return L.matmul(input, other)


# sparse layout class -> (mm, matmul) for it: autograd_compile.sparse installs itself here (it
# imports this module); a dense call pays two dict misses
SPARSE_MM: dict[type, tuple[Callable, Callable]] = {}


def mm(input: Tensor, mat2: Tensor) -> Tensor:
    sparse = SPARSE_MM.get(type(input)) or SPARSE_MM.get(type(mat2))
    if sparse is not None:
        return sparse[0](input, mat2)
    return L.mm(input, mat2)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    return L.bmm(input, mat2)


@autocast_op("dot")
def dot(input: Tensor, other: Tensor) -> Tensor:
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    return L.matmul(input, other)


def outer(input: Tensor, vec2: Tensor) -> Tensor:
    return E.mul(S.unsqueeze(input, 1), vec2)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return N.softmax(input, dim, as_dtype(dtype))


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    return N.log_softmax(input, dim, as_dtype(dtype))


def is_tensor(obj: Any) -> builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> builtins.bool:
    return is_float(input.dtype)


def numel(input: Tensor) -> int:
    return input.numel()


def get_default_dtype() -> Any:
    """The dtype Python floats and float factories get (float32 unless set).

    >>> import autograd_compile as acg
    >>> acg.get_default_dtype()
    torch.float32
    """
    return dtype_of(default_float())


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (a floating dtype) the default of float factories and Python floats, as
    ``torch.set_default_dtype``; call it before building tensors, as PyTorch programs do.

    >>> import autograd_compile as acg
    >>> acg.set_default_dtype(acg.float64); acg.tensor([1.5]).dtype, acg.ones(2).dtype
    (torch.float64, torch.float64)
    >>> acg.set_default_dtype(acg.float32)
    """
    set_default_float(d)
    clear_programs()  # kernels traced with the old default baked it in


# -- dtypes (last: ``bool`` shadows the builtin in this module) -----------------------------------
float32, float64, float16, bfloat16 = map(dtype_of, ("float32", "float64", "float16", "bfloat16"))
int8, int16, int32, int64 = map(dtype_of, ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = map(dtype_of, ("uint8", "uint16", "uint32", "uint64"))
complex64 = dtype_of("complex64")
half, double, long, short = float16, float64, int64, int16
bool = dtype_of("bool")  # noqa: A001

__all__ = [
    # dtypes
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
    "complex64", "half", "double", "long", "short", "uint16", "uint32", "uint64", "bool",
    "get_default_dtype", "set_default_dtype",
    # creation
    "tensor", "as_tensor", "set_default_device", "zeros", "ones", "empty", "full", "zeros_like",
    "ones_like",
    "empty_like", "full_like", "arange", "eye", "manual_seed", "initial_seed", "rand", "randn",
    "randint", "rand_like", "randn_like", "randint_like",
    # elementwise
    "exp", "log", "sin", "cos", "tan", "tanh", "sigmoid", "sqrt", "rsqrt", "reciprocal", "log1p",
    "expm1", "erf", "neg", "negative", "abs", "square", "relu", "sign", "floor", "ceil", "round",
    "trunc", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "add", "sub", "mul",
    "div", "true_divide", "divide", "multiply", "subtract", "floor_divide", "remainder", "pow",
    "maximum", "minimum", "where", "clamp", "clip", "clamp_min", "clamp_max", "eq", "ne", "lt",
    "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "equal", "allclose",
    # reductions
    "return_types", "sum", "mean", "prod", "cumsum", "max", "min", "amax", "amin", "argmax",
    "argmin", "var", "std", "var_mean", "std_mean", "logsumexp", "all", "any", "norm",
    # shape and indexing
    "reshape", "transpose", "swapaxes", "swapdims", "permute", "t", "unsqueeze", "squeeze",
    "flatten", "unflatten", "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind",
    "select", "narrow", "flip", "clone", "index_select", "gather", "scatter_add", "masked_fill",
    "nonzero",
    # linear algebra and friends
    "matmul", "mm", "bmm", "dot", "outer", "softmax", "log_softmax",
    "is_tensor", "is_floating_point", "numel",
]


# -- [xformer] tensor semantics: factories also take ``size=`` (zeros(size=(2, 3))) ----------------
def _size_keyword(fn: Callable) -> Callable:
    """``fn(*size, ...)`` that also accepts ``size=`` as a keyword, as PyTorch's factories do."""
    def factory(*size: Any, **kwargs: Any) -> Tensor:
        if "size" in kwargs:
            if size:
                raise TypeError(f"{fn.__name__}() got multiple values for argument 'size'")
            size = (kwargs.pop("size"),)
        return fn(*size, **kwargs)
    factory.__name__ = factory.__qualname__ = fn.__name__
    factory.__doc__ = fn.__doc__
    factory.__wrapped__ = fn  # type: ignore[attr-defined]
    return factory


zeros, ones, rand, randn = (_size_keyword(f) for f in (zeros, ones, rand, randn))
empty = _size_keyword(empty.__wrapped__ if hasattr(empty, "__wrapped__") else empty)
