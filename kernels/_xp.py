"""The host tier: eager kernels on CPU run in numpy until a shape has earned an XLA program.

XLA compiles one program per op per new input shape, tens of milliseconds each on a CPU,
so an eager loop whose shapes keep changing (generation, the last smaller batch, data
pipelines) would spend its time compiling. An op whose kernel is written against the
array namespace shared by numpy and ``jax.numpy`` runs it on numpy arrays instead, at
numpy's cost, for a shape it has not compiled yet:

>>> from autograd_compile.kernels._xp import jnp, host_call
>>> import jax.numpy as real_jnp
>>> host_call(lambda x: jnp.exp(x) * 2, (real_jnp.zeros(3),), {}).tolist()
[2.0, 2.0, 2.0]

``jnp`` (and ``nn``) here are namespaces that answer with numpy's function while the
host tier runs a kernel and with JAX's otherwise, so one kernel serves both: traced into
compiled programs it is pure ``jax.numpy``. A name numpy lacks raises
:class:`HostUnsupported` and the op takes the XLA path. Which tier runs an (op, shape)
is decided once, at first sight, by size (kernels/_jit.py): light calls stay on numpy
for good (no compile, and the same bits every call, as PyTorch's kernels give), heavy
ones get their XLA program at once.
"""
from __future__ import annotations

import collections
import contextlib
import math
import os
import threading
from typing import Any, Callable, Iterator

import jax
import jax.numpy as _jnp
import numpy as np

from autograd_compile.dispatch.keys import TLS

from ._transfer import to_device

_state = threading.local()  # .active: a host kernel is running in this thread
# dtypes numpy computes as XLA does (float16/bfloat16 arithmetic differs: those take XLA)
HOST_DTYPES = frozenset(np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64",
    "complex64", "complex128"))


class HostUnsupported(Exception):
    """The kernel needs something numpy has not: run it as an XLA program instead."""


def host_active() -> bool:
    """Whether a kernel runs on numpy arrays right now (in this thread)."""
    return getattr(_state, "active", False)


class _Namespace:
    """``jax.numpy`` (or a sub-namespace) that is numpy while a host kernel runs."""

    def __init__(self, device: Any, host: Any, overrides: dict[str, Callable] | None = None):
        self._device, self._host, self._overrides = device, host, overrides or {}
        self._pairs: dict[str, tuple[Any, Any]] = {}  # name -> (device's, host's or None)

    def __getattr__(self, name: str) -> Any:
        pair = self._pairs.get(name)  # looked up once per name: kernels read ~10 per call
        if pair is None:
            host = self._overrides.get(name) or getattr(self._host, name, None)
            pair = self._pairs[name] = (getattr(self._device, name, None), host)
        if not getattr(_state, "active", False):
            if pair[0] is None:
                raise AttributeError(f"{self._device.__name__} has no attribute {name!r}")
            return pair[0]
        if pair[1] is None:
            raise HostUnsupported(name)
        return pair[1]


# -- numpy versions of what jax has and numpy lacks, or spells differently ------------------
def _asarray(x: Any, dtype: Any = None, **kw: Any) -> np.ndarray:
    return np.asarray(x, dtype=dtype)


# numpy reduces a short last axis row by row: a sum over 512 rows of 27 floats takes 17 us
# and a max 50, where a matvec with ones takes 3 and a max over the transposed copy 10. The
# matvec wins up to rows of 256; the transposed max only up to 64 (512 rows of 8: 50 us ->
# 8; of 32: 76 -> 28; of 64: about even; of 128: 83 -> 126, the copy costs more)
_SHORT_ROW, _SHORT_EXTREME = 256, 64


def _short_rows(x: Any, axis: Any, longest: int = _SHORT_ROW) -> bool:
    """``axis`` is exactly the last axis of a float array of many rows of ``longest`` or
    fewer elements."""
    if type(x) is not np.ndarray or x.ndim < 2 or x.dtype.kind != "f" or \
            x.shape[-1] > longest or x.size < 256:
        return False
    if type(axis) is tuple:
        if len(axis) != 1:
            return False
        axis = axis[0]
    return type(axis) is int and (axis == -1 or axis == x.ndim - 1)


_ONES: dict[tuple, np.ndarray] = {}  # (length, dtype) -> read-only ones for _row_sums


def _row_sums(x: np.ndarray, keepdims: bool) -> np.ndarray:
    """Sums over the last axis as one matvec with ones (BLAS)."""
    key = (x.shape[-1], x.dtype)
    ones = _ONES.get(key)
    if ones is None:
        if len(_ONES) > 256:
            _ONES.clear()
        ones = _ONES[key] = np.ones(key[0], key[1])
        ones.flags.writeable = False
    out = x @ ones
    return out[..., None] if keepdims else out


def _sum(x: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
         **kw: Any) -> Any:
    """``np.sum``; over a short last axis, :func:`_row_sums`."""
    if dtype is None and not kw and _short_rows(x, axis):
        return _row_sums(x, keepdims)
    return np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims, **kw)


def _extreme(ufunc: np.ufunc, whole: Callable) -> Callable:
    def reduce(x: Any, axis: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        """``np.max``/``np.min``; over a short last axis, across the rows of the transposed
        copy (NaN propagates as in numpy's own)."""
        if not kw and _short_rows(x, axis, _SHORT_EXTREME):
            rows = x.reshape(-1, x.shape[-1])  # a view where x is contiguous
            out = ufunc.reduce(np.ascontiguousarray(rows.T), axis=0).reshape(x.shape[:-1])
            return out[..., None] if keepdims else out
        return whole(x, axis=axis, keepdims=keepdims, **kw)
    return reduce


_max, _min = _extreme(np.maximum, np.max), _extreme(np.minimum, np.min)


def _mean(x: np.ndarray, axis: Any = None, dtype: Any = None, keepdims: bool = False,
          **kw: Any) -> np.ndarray:
    """``np.mean`` of a float array without its Python wrapper (~3.5 us a call): the sum
    (``add.reduce``, or :func:`_row_sums` over a short last axis), divided by the count in
    the array's dtype, as XLA does."""
    if dtype is not None or x.dtype.kind not in "fc" or kw:
        return np.mean(x, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
    total = _row_sums(x, keepdims) if _short_rows(x, axis) else \
        np.add.reduce(x, axis=axis, keepdims=keepdims)
    return np.divide(total, x.size // total.size if total.size else 1, dtype=total.dtype)


def _power(x: Any, y: Any) -> Any:
    """``jnp.power``: an int exponent of a float array by repeated squaring, as XLA's
    integer_pow (and PyTorch's x*x*x) computes it; numpy calls libm's pow (7.9 ms where
    ``x*x*x`` takes 31 us on 131k floats, and rounds differently)."""
    if type(y) is not int or not isinstance(x, np.ndarray) or x.dtype.kind not in "fc":
        return np.power(x, y)
    if y == 0:
        return np.ones_like(x)
    acc, base, n = None, x, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else acc * base
        n >>= 1
        if n:
            base = base * base
    return np.divide(1, acc, dtype=x.dtype) if y < 0 else acc


def _softmax(x: np.ndarray, axis: int = -1, **kw: Any) -> np.ndarray:
    e = np.exp(x - _max(x, axis=axis, keepdims=True))
    return e / _sum(e, axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int = -1, **kw: Any) -> np.ndarray:
    shifted = x - _max(x, axis=axis, keepdims=True)
    return shifted - np.log(_sum(np.exp(shifted), axis=axis, keepdims=True))


# XLA's float32 erf (the rational approximation x P(x^2) / Q(x^2) on [-4, 4] that jax's erf
# lowers to), evaluated in float32 in place: within 5e-7 of XLA's (which fuses multiply-adds),
# half of all floats bit-equal, in ~20 passes (a float64 formula took 91 us on 5.6k floats)
_ERF_P = tuple(np.float32(c) for c in (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
    -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
    -1.60960333262415e-02))
_ERF_Q = tuple(np.float32(c) for c in (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
    -7.37332916720468e-03, -1.42647390514189e-02))


def _horner(x2: np.ndarray, coeffs: tuple) -> np.ndarray:
    acc = x2 * coeffs[0]
    acc += coeffs[1]
    for c in coeffs[2:]:
        acc *= x2
        acc += c
    return acc


def _erf(x: np.ndarray) -> np.ndarray:
    """erf for float32 only, as XLA computes it; float64 needs a full-precision erf, which
    numpy lacks: that runs on XLA."""
    if x.dtype != np.float32:
        raise HostUnsupported("erf")
    x = np.minimum(np.maximum(x, np.float32(-4)), np.float32(4))  # (NaN stays NaN)
    x2 = x * x
    p = _horner(x2, _ERF_P)
    p *= x
    p /= _horner(x2, _ERF_Q)
    # |erf| <= 1: without fused multiply-adds the formula reaches 1 + 4 ulp near the clamp,
    # which would give gelu(-5) a positive sign (XLA's gives -0, as PyTorch's)
    return np.clip(p, np.float32(-1), np.float32(1), out=p)


def _gelu(x: np.ndarray, approximate: bool = True) -> np.ndarray:
    if approximate:
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * (x * x * x))
        return (0.5 * x * (1 + np.tanh(inner))).astype(x.dtype)
    return (0.5 * x * (1 + _erf((x / math.sqrt(2)).astype(x.dtype)))).astype(x.dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (0.5 * (np.tanh(0.5 * x) + 1)).astype(x.dtype)  # no overflow for large |x|


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.zeros((), x.dtype))


def _silu(x: np.ndarray) -> np.ndarray:
    return x * _sigmoid(x)


jnp = _Namespace(_jnp, np, {"asarray": _asarray, "mean": _mean, "power": _power, "sum": _sum,
                            "max": _max, "min": _min, "amax": _max, "amin": _min})
nn = _Namespace(jax.nn, None, {"softmax": _softmax, "log_softmax": _log_softmax,
                               "gelu": _gelu, "sigmoid": _sigmoid, "relu": _relu,
                               "silu": _silu})
special = _Namespace(jax.scipy.special, None, {"erf": _erf})
def _iota(dtype: Any, shape: tuple, dimension: int) -> np.ndarray:
    line = np.arange(shape[dimension], dtype=dtype)
    return np.broadcast_to(line.reshape([-1 if i == dimension else 1 for i in range(len(shape))]),
                           shape)


lax = _Namespace(jax.lax, None, {"stop_gradient": lambda x: x,  # numpy has no tape to stop
                                 "rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
                                 "broadcasted_iota": _iota})


# -- running a kernel on the host -------------------------------------------------------------
try:  # numpy's error state is a context variable: set a ready-made one
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_STATE, _make_extobj
    _IGNORE_ALL = _make_extobj(all="ignore")
except ImportError:  # pragma: no cover - another numpy: its errstate
    _ERR_STATE = None


class quiet:
    """``np.errstate(all="ignore")`` (IEEE results, as XLA gives, without numpy warnings)
    for the host kernels: numpy's own rebuilds the state on every entry (1.8 us, paid by
    every eager op on the host); this sets one made at import (~0.4 us).

    >>> with quiet():
    ...     float(np.float32(1) / np.float32(0))
    inf
    """
    __slots__ = ("_token",)

    def __enter__(self) -> None:
        if _ERR_STATE is None:  # pragma: no cover
            self._token = np.errstate(all="ignore")
            self._token.__enter__()
        else:
            self._token = _ERR_STATE.set(_IGNORE_ALL)

    def __exit__(self, *exc: Any) -> None:
        if _ERR_STATE is None:  # pragma: no cover
            self._token.__exit__(*exc)
        else:
            _ERR_STATE.reset(self._token)


_to_jax = to_device  # jax's own single-copy transfer: 4 us where jnp.asarray takes 16 us


def _out(v: Any, keep: bool = False) -> Any:
    if isinstance(v, (tuple, list)):
        return type(v)(_out(x, keep) for x in v)
    if v is None:
        return v
    if type(v) in (bool, int, float):  # XLA would give a 0-d array of its own dtype
        raise HostUnsupported("a Python number from a host kernel")
    if isinstance(v, jax.Array):  # the kernel called jax itself: it is not numpy-clean
        raise HostUnsupported("a jax array from a host kernel")
    arr = np.asarray(v)  # numpy reductions return scalars, not 0-d arrays
    if arr.dtype not in HOST_DTYPES:
        raise HostUnsupported(f"result dtype {arr.dtype.name}")
    if not keep:
        return _to_jax(arr)
    if not arr.flags.writeable and not _numpy_owned(arr):  # a view of a jax buffer (which
        arr = arr.copy()  # XLA may reuse once donated): the tensor gets its own copy
    arr.setflags(write=False)  # nobody writes a tensor's value in place (.numpy() too)
    return arr


def _numpy_owned(a: np.ndarray) -> bool:
    """``a``'s memory belongs to a numpy array (a tensor's read-only host value, or the
    user's array), not to a jax buffer: a view of it may be shared, as PyTorch's views are."""
    while type(a.base) is np.ndarray:
        a = a.base
    return a.base is None


_AS_IS = frozenset({int, float, bool, str, type(None), np.ndarray})  # a host kernel's as given


def _in(v: Any) -> Any:
    if type(v) in _AS_IS:  # the common arguments first: one set lookup
        return v
    if type(v) is _ARRAY or isinstance(v, jax.Array):
        return np.asarray(v)  # a read-only view of the CPU buffer: no copy
    if isinstance(v, (tuple, list)):
        return type(v)([_in(x) for x in v])
    return v


try:
    from jax._src.array import ArrayImpl as _ARRAY
except ImportError:  # pragma: no cover
    _ARRAY = jax.Array


def host_sig(values: Any) -> tuple | None:
    """The inputs' avals, when every one can go to numpy (an uncommitted CPU array of a
    dtype numpy computes like XLA, or a Python number); else None."""
    if not _ASKED and not _ask_backend():
        return None
    sig = []
    for v in values:
        if type(v) is _ARRAY:
            if v.dtype not in HOST_DTYPES or (v._committed and v.sharding != _CPU0[0]):
                return None  # (committed elsewhere: the result must stay there, so XLA)
            sig.append(v.aval)
        elif type(v) is np.ndarray:  # a host result: held by a tensor, so a supported dtype
            sig.append(_aval(v.shape, v.dtype))
        elif isinstance(v, (list, tuple)):
            inner = host_sig(v)
            if inner is None:
                return None
            sig.append(inner)
        elif v is None or isinstance(v, (int, float, bool)):
            sig.append(type(v))
        else:
            return None
    return tuple(sig)


_AVALS: dict[tuple, Any] = {}


def _aval(shape: tuple, dtype: Any) -> Any:
    """The aval a jax array of this shape and dtype has (cached: one dict lookup)."""
    key = (shape, dtype)
    aval = _AVALS.get(key)
    if aval is None:
        if len(_AVALS) > 65536:
            _AVALS.clear()
        aval = _AVALS[key] = jax.core.ShapedArray(shape, dtype)
    return aval


def host_call(kernel: Callable, args: tuple, kwargs: dict, keep: bool = False) -> Any:
    """``kernel(*args, **kwargs)`` computed by numpy on host copies of its jax arrays; the
    results come back as jax arrays on the CPU, or (``keep``) as read-only numpy arrays a
    Tensor holds as they are. Raises HostUnsupported (nothing done) when the kernel needs
    something numpy has not."""
    args = [_in(v) for v in args]
    kwargs = {k: _in(v) for k, v in kwargs.items()} if kwargs else kwargs
    _state.active = True
    try:
        with quiet():
            out = kernel(*args, **kwargs)
    finally:
        _state.active = False
    return _out(out, keep)


def exact_binary(np_fn: Callable, a: Any, b: Any) -> np.ndarray | None:
    """``np_fn(a, b)`` for an operator numpy and XLA round alike (+, -, *, comparisons):
    ``a`` a host value of a number dtype, ``b`` another of its dtype (no promotion question)
    or a Python number of its kind (numpy keeps the array's dtype for it, as PyTorch does),
    at a size the host tier runs; so the op's own bits. None: the op decides (promotion,
    broadcasting errors, an int outside the dtype).

    >>> exact_binary(np.add, np.float32([1, 2]), 0.5)
    array([1.5, 2.5], dtype=float32)
    """
    if type(a) is not np.ndarray or a.dtype.kind not in "fiu":
        return None
    if type(b) is np.ndarray:
        if b.dtype != a.dtype or a.size + b.size > HOST_MAX_ELEMENTS:
            return None
    elif (type(b) is float and a.dtype.kind == "f") or type(b) is int:
        if a.size > HOST_MAX_ELEMENTS:
            return None
    else:
        return None
    try:
        with quiet():
            out = np.asarray(np_fn(a, b))  # (0-d inputs give a numpy scalar)
    except Exception:
        return None
    return out if out.dtype == a.dtype or out.dtype == np.bool_ else None


def host_first(kernel: Callable, host: Callable | bool) -> Callable:
    """An un-jitted kernel (``defop(jit=False)``) that runs on numpy when its arrays can:
    jax's op-by-op path would compile a program per new shape all the same."""
    twin = kernel if host is True else host

    def run(*args: Any, **kwargs: Any) -> Any:
        if ENABLED and FORCE != "xla":
            arrays = [a for a in args if isinstance(a, jax.Array)]
            if arrays and host_sig(arrays) is not None:
                try:
                    return host_call(twin, args, kwargs)
                except Exception:  # numpy cannot: jax answers (and raises what it raises)
                    pass
        return kernel(*args, **kwargs)
    return run


def _enabled() -> bool:
    """On unless ACG_HOST_TIER=0, and only where jax's default device is the CPU: on a
    GPU the data lives in device memory, and moving it to numpy would cost more than
    compiling. (Asked on first use: importing must not start JAX's backend, which
    ``distributed.init`` has to come before.)"""
    if os.environ.get("ACG_HOST_TIER", "1") in ("0", "off", "false"):
        return False
    try:
        return jax.default_backend() == "cpu"
    except Exception:  # pragma: no cover
        return False


ENABLED = os.environ.get("ACG_HOST_TIER", "1") not in ("0", "off", "false")
_ASKED = False  # whether ENABLED has been checked against the backend yet


_CPU0: list = [None]  # the first CPU device's sharding: arrays committed there are ours too


def _ask_backend() -> bool:
    global ENABLED, _ASKED
    _ASKED = True
    ENABLED = ENABLED and _enabled()
    if ENABLED:
        _CPU0[0] = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
    return ENABLED
FORCE: str | None = None  # "host" or "xla": every eligible call takes that tier (tests)


def unobserved() -> bool:
    """No mode, no extra dispatch key and no forced tier: an eager op on host values may
    skip the dispatcher (kernels' fast paths for plain host tensors ask this first)."""
    return not TLS.mode_stack and not TLS.included and FORCE is None


def host_enabled() -> bool:
    """Whether eager values may live on the host (numpy) now: the tier is on and not
    forced to XLA."""
    return (_ASKED or _ask_backend()) and ENABLED and FORCE != "xla"
STATS: collections.Counter = collections.Counter()  # host calls per op name


@contextlib.contextmanager
def forced(tier: str | None) -> Iterator[None]:
    """Run every eligible eager op on ``tier`` ("host" or "xla") inside the block.

    >>> with forced("xla"):
    ...     pass
    """
    global FORCE
    if tier not in (None, "host", "xla"):
        raise ValueError(f"tier must be 'host', 'xla' or None, got {tier!r}")
    before, FORCE = FORCE, tier
    try:
        yield
    finally:
        FORCE = before
# What compiling a new program costs on this machine, in seconds: a compiled region's new
# shapes run eagerly until they have cost this much (aot.program.Tiered's ski rental).
COMPILE_COST = float(os.environ.get("ACG_HOST_BUDGET_MS", "20")) / 1000
# An op call estimated to take longer than this on the host compiles at once: a program
# pays for itself within a few calls of that size.
HOST_LIMIT = float(os.environ.get("ACG_HOST_MAX_US", "100")) / 1e6
# numpy's cost an input element, by the kind of kernel (measured on this CPU against one
# jitted call of the same kernel, which costs 20-50 us before it computes anything):
# "stream" kernels touch each element once (elementwise maths, copies, joins, reductions):
# numpy itself takes 0.06-0.4 ns an element and beats the call up to 262k elements, but an
# XLA op runs asynchronously, beside the Python that dispatches the next one, and on more
# than one core: a makemore Transformer whose 131k-element activations ran on numpy was
# 5-8 % slower in wall time (while using less CPU), its MLP with 32k-element ones 5-8 %
# faster. 1 ns puts the line at ~95k elements, between the two. "fused" kernels make several
# passes or contract (softmax, layer_norm, losses: 1-2.4 ns, where XLA's one fused loop wins
# past ~50k elements). "part" kernels read only what they return (a slice, a row, looked-up
# rows): a copy the size of their output.
RATES = {"stream": 1e-9, "part": 2.5e-10, "fused": 2e-9}
# "contract" kernels (matmul) cost by their multiply-adds, not their inputs' size: numpy's
# BLAS takes 0.013-0.038 ns a multiply-add here (a batch of 512 16x16x16 products: 20 us
# where one XLA call takes 77; 128x128x128: 48 against 77), plus its output written once
MAC_RATE = 3e-11
_COSTS: dict[tuple, float] = {}  # (avals, rate) -> one host call's estimated seconds
HOST_MAX_ELEMENTS = int((HOST_LIMIT - 5e-6) / RATES["stream"])  # what a stream op lets through
CROSS_ONCE = 50_000  # a host value this big that an XLA program reads moves to jax for good


def host_cost(sig: tuple, rate: float | Callable[[tuple], float] = RATES["fused"]) -> float:
    """A host call's cost, estimated from its inputs' sizes (5 us plus ``rate`` an element,
    what numpy takes here for that kind of kernel; or ``rate(sig)``, a kind's own model such
    as :func:`contraction_cost`) rather than timed, so that which tier runs a shape depends
    on the program alone: a run repeats bit for bit."""
    key = (sig, rate)
    cost = _COSTS.get(key)
    if cost is None:
        if len(_COSTS) > 65536:
            _COSTS.clear()
        cost = _COSTS[key] = rate(sig) if callable(rate) else 5e-6 + rate * _elements(sig)
    return cost


def contraction_cost(sig: tuple) -> float:
    """A matmul's host cost from its operands' avals (PyTorch's matmul shapes: 1-d operands
    and broadcast batches): 5 us, :data:`MAC_RATE` a multiply-add, a stream rate an output
    element. Shapes that do not multiply cost nothing here: the op raises its error.

    >>> a = jax.core.ShapedArray((512, 16, 16), np.float32)
    >>> round(contraction_cost((a, a)) * 1e6, 1)
    199.0
    """
    a, b = (x.shape for x in sig[:2])
    a, b = ((1,) + a if len(a) == 1 else a), (b + (1,) if len(b) == 1 else b)
    try:
        batch = math.prod(np.broadcast_shapes(a[:-2], b[:-2]))
    except ValueError:
        return 5e-6
    out = batch * a[-2] * b[-1]
    return 5e-6 + MAC_RATE * out * a[-1] + RATES["stream"] * out


def part_cost(result: Any) -> float:
    """The host cost of a kernel that reads only what it returns (a slice of a big array:
    a view, copied once), from its shape rule's result."""
    metas = result if type(result) is tuple else (result,)  # (a TensorMeta is a tuple too)
    return 5e-6 + RATES["part"] * sum(math.prod(m.shape) for m in metas)


def _elements(sig: Any) -> int:
    total = 0
    for a in sig:
        if isinstance(a, tuple):
            total += _elements(a)
        elif hasattr(a, "shape"):
            total += math.prod(a.shape)
    return total


_TWINS: dict[Any, Callable] = {jax.nn.sigmoid: _sigmoid, jax.nn.relu: _relu,
                               jax.scipy.special.erf: _erf,
                               jax.lax.rsqrt: lax._overrides["rsqrt"]}


def numpy_twin(fn: Callable) -> Callable | None:
    """numpy's function for a ``jax.numpy`` one (``jnp.exp`` -> ``np.exp``), or for the few
    ``jax.nn``/``lax``/``scipy`` functions written above; None when there is none."""
    twin = _TWINS.get(fn)
    if twin is not None:
        return twin
    name = getattr(fn, "__name__", "")
    if getattr(fn, "__module__", None) == "jax.numpy" and hasattr(np, name):
        return getattr(np, name)
    return None
