"""``acg.autocast``: the context manager, its thread-local state and its dispatch-key kernel.

Entering an enabled ``autocast`` turns the ``Autocast`` dispatch key on for the thread.
That key is the highest, so every op reaches :func:`autocast_fallback` first: an op in
the device's table (:mod:`.policy`) gets its floating inputs cast (each cast an ordinary
``to`` op, recorded by autograd and seen by every mode and tracer below), then runs with
the key off, so its own decomposition is not autocast again. Every other op goes on
down unchanged.

Backward formulas are never autocast: the state remembers the autograd engine's depth
at ``__enter__``, and a backward (engine depth + 1) runs its formulas in the dtypes the
forward recorded, as PyTorch's dedicated backward kernels do. An ``autocast`` entered
inside a backward (``custom_bwd``) applies there.
"""
from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from ..autograd.engine import STATE as _ENGINE
from ..devices import as_device, gpu_count
from ..dispatch.dispatcher import DISPATCHER, OpOverload
from ..dispatch.keys import TLS, DispatchKey
from ..dispatch.library import Library
from .._dtype import of as dtype_of
from ..tensor import Tensor
from .policy import (BANNED, BANNED_MESSAGES, DEFAULT_DTYPES, FP32, FP32_SET_OPT_DTYPE, FUSED,
                     LOWER, PROMOTE, TABLES)

_KEY = DispatchKey.Autocast
_BIT = _KEY.bit
_DEVICES = ("cpu", "cuda")
_F32, _F64 = np.dtype("float32"), np.dtype("float64")
_TO = DISPATCHER.op("acg::to")


class _State(threading.local):
    """Per thread and device: enabled, the dtype, and the engine depth it applies at."""

    def __init__(self) -> None:
        self.enabled = dict.fromkeys(_DEVICES, False)
        self.dtype = {d: np.dtype(jnp.dtype(DEFAULT_DTYPES[d])) for d in _DEVICES}
        self.depth = dict.fromkeys(_DEVICES, 0)
        self.cache_enabled = True
        self.nesting = 0


_STATE = _State()


def _sync_key() -> None:
    """The Autocast key is on exactly while some device's autocast is enabled."""
    if any(_STATE.enabled.values()):
        TLS.included |= _BIT
    else:
        TLS.included &= ~_BIT


# -- public state queries (PyTorch's torch.is_autocast_enabled & co.) ---------------------
def _check_device(device_type: str) -> str:
    if device_type not in _DEVICES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ``device_type`` has an autocast ("cpu" and "cuda")."""
    return device_type in _DEVICES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Is autocast on for ``device_type`` (no argument: "cuda", as PyTorch's)?

    >>> import autograd_compile as acg
    >>> with acg.autocast("cpu"):
    ...     acg.is_autocast_enabled("cpu")
    True
    """
    return _STATE.enabled[_check_device(device_type or "cuda")]


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype ``device_type``'s autocast casts to (default bfloat16 on "cpu", float16 on
    "cuda").

    >>> import autograd_compile as acg
    >>> acg.get_autocast_dtype("cpu"), acg.get_autocast_dtype("cuda")
    (torch.bfloat16, torch.float16)
    """
    return dtype_of(_STATE.dtype[_check_device(device_type)])


def is_autocast_cache_enabled() -> bool:
    """Accepted for PyTorch's API; casts are not cached here (see ``autocast``)."""
    return _STATE.cache_enabled


def active_state() -> tuple:
    """What autocast does to ops at this point: ``((device, dtype), ...)`` of the devices
    whose autocast applies here (``acg.compile`` guards on it)."""
    st = _STATE
    if not TLS.included & _BIT:
        return ()
    return tuple((d, st.dtype[d]) for d in _DEVICES
                 if st.enabled[d] and st.depth[d] == _ENGINE.depth)


# -- the context manager --------------------------------------------------------------------
class autocast:  # noqa: N801  (PyTorch's name)
    """Run the ops of a region in mixed precision (PyTorch's ``torch.autocast``).

    Inside, ops on the device's lower-precision list (matmul, linear, conv, attention, ...)
    cast their floating inputs to ``dtype`` (default bfloat16 for "cpu", float16 for
    "cuda"); ops on its float32 list (losses, ...; on "cuda" also softmax, layer_norm, exp,
    sum, ...) run in float32; others run in their inputs' types. Casts are recorded ops, so
    gradients reach float32 parameters as float32. ``enabled=False`` turns it off inside
    an enclosing autocast. Works as a decorator too. ``"cuda"`` on a machine without a GPU
    warns and disables itself, as PyTorch. ``cache_enabled`` is accepted; casts are not
    cached (each use of a weight casts it again; values are the same).

    >>> import autograd_compile as acg
    >>> a, b = acg.ones(2, 2), acg.ones(2, 2)
    >>> with acg.autocast("cpu"):
    ...     c = a @ b
    ...     with acg.autocast("cpu", enabled=False):
    ...         d = a @ b
    >>> str(c.dtype), str(d.dtype)
    ('torch.bfloat16', 'torch.float32')
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = _check_device(device_type)
        self.fast_dtype = dtype_of(dtype) if dtype is not None else \
            get_autocast_dtype(device_type)
        self._cache_enabled = _STATE.cache_enabled if cache_enabled is None else cache_enabled
        self._enabled = _checked_enabled(device_type, self.fast_dtype, bool(enabled))
        self._saved: list[tuple] = []  # a stack: the same instance may be entered re-entrantly

    def __enter__(self) -> "autocast":
        st, dev = _STATE, self.device
        self._saved.append((st.enabled[dev], st.dtype[dev], st.depth[dev], st.cache_enabled))
        st.enabled[dev], st.dtype[dev] = self._enabled, self.fast_dtype
        st.depth[dev], st.cache_enabled = _ENGINE.depth, self._cache_enabled
        st.nesting += 1
        _sync_key()
        return self

    def __exit__(self, *exc: object) -> bool:
        st, dev = _STATE, self.device
        st.enabled[dev], st.dtype[dev], st.depth[dev], st.cache_enabled = self._saved.pop()
        st.nesting -= 1
        _sync_key()
        return False

    def __call__(self, func: Callable) -> Callable:
        """Decorator form: ``func`` runs inside this autocast at every call."""
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return decorate_autocast

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


def _checked_enabled(device_type: str, dtype: np.dtype, enabled: bool) -> bool:
    """PyTorch's checks at construction: they warn and disable rather than raise."""
    if enabled and device_type == "cuda" and gpu_count() == 0:
        warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                      "Disabling", UserWarning, stacklevel=3)
        return False
    supported = (np.dtype(jnp.bfloat16), np.dtype(jnp.float16))
    if enabled and device_type == "cpu" and dtype not in supported:
        warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                      "autocast.\nCPU Autocast only supports dtype of torch.bfloat16, "
                      "torch.float16 currently.", UserWarning, stacklevel=3)
        return False
    return enabled


# -- the dispatch-key kernel -----------------------------------------------------------------
_NO_POLICY: dict = {}
_BY_ARGS = ("by arguments", None)  # a fused op: its PyTorch name comes from the call (FUSED)
_POLICIES: dict[OpOverload, dict[str, tuple[str, int | None]]] = {}


def _policies(op: OpOverload) -> dict[str, tuple[str, int | None]]:
    """``{device: (policy, index of a dtype argument or None)}`` for ``op`` (cached); a fused
    op gets ``_BY_ARGS`` for every device."""
    found = _POLICIES.get(op)
    if found is None:
        found = _NO_POLICY
        if op.qualname.startswith("acg::"):  # only our operator library, as PyTorch's aten
            base = op.name.partition(".")[0]
            if base in FUSED:
                found = dict.fromkeys(_DEVICES, _BY_ARGS)
            else:
                found = {d: (TABLES[d][base], _dtype_arg(op)) for d in _DEVICES
                         if base in TABLES[d]} or _NO_POLICY
        _POLICIES[op] = found
    return found


def _dtype_arg(op: OpOverload) -> int | None:
    names = [a.name for a in op.schema.arguments] if op.schema is not None else []
    return names.index("dtype") if "dtype" in names else None


def _active(dev: str | None) -> bool:
    """Whether ``dev``'s autocast applies here (on, and not inside a backward it is not in)."""
    st = _STATE
    return dev is not None and st.enabled[dev] and st.depth[dev] == _ENGINE.depth


def autocast_fallback(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """The Autocast key's kernel for every op: cast by the table, or go on down."""
    policies = _policies(op)
    if policies:
        dev = _device_of(args, kwargs)
        if dev in policies and _active(dev):
            entry: tuple | None = policies[dev]
            if entry is _BY_ARGS:
                name = FUSED[op.name.partition(".")[0]](op.schema.bind(args, kwargs))
                policy = TABLES[dev].get(name) if name is not None else None
                entry = (policy, _dtype_arg(op)) if policy is not None else None
            if entry is not None:
                return _apply(op, op.name, entry, dev, _STATE.dtype[dev], args, kwargs)
    return op.redispatch(_KEY, *args, **kwargs)


def autocast_op(name: str) -> Callable[[Callable], Callable]:
    """Decorate a Python-level op that PyTorch runs as its one aten op ``name`` (``addmm``,
    ``prelu``, ``kl_div``: compositions of other ops here). Inside an autocast its tensor
    arguments are cast by ``name``'s policy (:mod:`.policy`; a ``dtype=`` keyword counts as
    an explicit dtype), and its body runs with autocast off, as PyTorch's kernel does: the
    ops it is built of are not cast again, and an op in no table runs in its inputs' types
    (``dot`` on CPU stays float32 although it is a matmul here). Outside an autocast it
    costs one flag test.

    >>> import autograd_compile as acg
    >>> with acg.autocast("cpu"):
    ...     str(acg.addmm(acg.zeros(2, 2), acg.ones(2, 3), acg.ones(3, 2)).dtype)
    'torch.bfloat16'
    """
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if not TLS.included & _BIT or TLS.excluded & _BIT:
                return fn(*args, **kwargs)
            dev = _device_of(args, kwargs)
            if not _active(dev):
                return fn(*args, **kwargs)
            policy = TABLES[dev].get(name)
            entry = (policy, None) if policy is not None else None
            return _apply(fn, name, entry, dev, _STATE.dtype[dev], args, kwargs)
        return op
    return decorate


def _apply(fn: Callable, name: str, entry: tuple[str, int | None] | None, dev: str,
           low: np.dtype, args: tuple, kwargs: dict) -> Any:
    """Cast by ``entry`` (None: no cast), then run ``fn`` with the Autocast key off."""
    policy, dtype_at = entry if entry is not None else (None, None)
    if policy == BANNED:
        raise RuntimeError(BANNED_MESSAGES[name.partition(".")[0]])
    if policy is None or (policy == FP32_SET_OPT_DTYPE and
                          _explicit_dtype(args, kwargs, dtype_at)):
        target = None  # no policy, or an explicit dtype= (respected)
    elif policy == LOWER:
        target = low
    elif policy == PROMOTE:
        target = _widest(args, kwargs, dev, low)
    else:
        assert policy in (FP32, FP32_SET_OPT_DTYPE), policy
        target = _F32
    if target is not None:
        args = tuple([_cast(a, dev, target) for a in args])
        kwargs = {k: _cast(v, dev, target) for k, v in kwargs.items()}
    old = TLS.excluded
    TLS.excluded = old | _BIT  # the op's own decomposition is not autocast again (PyTorch)
    try:
        return fn(*args, **kwargs)
    finally:
        TLS.excluded = old


def _explicit_dtype(args: tuple, kwargs: dict, at: int | None) -> bool:
    if "dtype" in kwargs:
        return kwargs["dtype"] is not None
    return at is not None and at < len(args) and args[at] is not None


def _tensors(values: Any) -> list[Tensor]:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif type(v) in (list, tuple):
            out.extend(x for x in v if isinstance(x, Tensor))
    return out


def _tensor_device_type(t: Tensor) -> str:
    """"cpu" or "cuda" (without a GPU every tensor is on the CPU: no device query)."""
    return "cpu" if gpu_count() == 0 else as_device(t.device).type


def _device_of(args: tuple, kwargs: dict) -> str | None:
    """The device type the op's tensors are on (the first tensor's)."""
    found = _tensors(args) or _tensors(kwargs.values())
    return _tensor_device_type(found[0]) if found else None


_FLOATING: dict[np.dtype, bool] = {}


def _eligible(t: Tensor, dev: str) -> bool:
    """PyTorch's rule: a floating tensor, not float64, on the autocast's device."""
    dt = t.dtype
    ok = _FLOATING.get(dt)
    if ok is None:
        ok = _FLOATING[dt] = bool(jnp.issubdtype(dt, jnp.floating)) and dt != _F64
    return ok and _tensor_device_type(t) == dev


def _cast(value: Any, dev: str, target: np.dtype) -> Any:
    if isinstance(value, Tensor):
        if value.dtype != target and _eligible(value, dev):
            return _TO.redispatch(_KEY, value, target)  # a recorded op: autograd casts back
        return value
    if type(value) in (list, tuple):
        return type(value)(_cast(v, dev, target) for v in value)
    return value


def _widest(args: tuple, kwargs: dict, dev: str, low: np.dtype) -> np.dtype:
    """``promote``: float32 if any eligible input is not in the lower precision."""
    ts = [t for t in _tensors(args) + _tensors(kwargs.values()) if _eligible(t, dev)]
    return low if all(t.dtype == low for t in ts) else _F32


_LIB = Library("_", "FRAGMENT")
_LIB.fallback(autocast_fallback, _KEY, debug="amp.autocast_fallback")


# -- custom autograd Functions under autocast ----------------------------------------------
def _cast_tree(value: Any, device_type: str, dtype: np.dtype) -> Any:
    if isinstance(value, Tensor):
        return value.to(dtype) if _eligible(value, device_type) else value
    if type(value) in (list, tuple):
        return type(value)(_cast_tree(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_tree(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None
               ) -> Callable:
    """Decorate a custom Function's ``forward``: with ``cast_inputs``, inside an autocast its
    floating inputs are cast to that dtype and it runs with autocast off; ``custom_bwd``
    then runs ``backward`` under the forward's autocast state (PyTorch's torch.amp.custom_fwd).
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        active = is_autocast_enabled(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = active
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not active:
            return fwd(*args, **kwargs)
        dtype = np.dtype(jnp.dtype(cast_inputs))
        with autocast(device_type, enabled=False):
            return fwd(*_cast_tree(args, device_type, dtype),
                       **_cast_tree(kwargs, device_type, dtype))
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorate a custom Function's ``backward`` to run under its forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
