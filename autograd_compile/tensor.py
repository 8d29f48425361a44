"""Tensor: a ``jax.Array`` (or, for small eager results on the CPU, a numpy array) plus
autograd metadata.

>>> import autograd_compile as acg
>>> x = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]

Every operator method (``+``, ``sum``, ``reshape`` ...) is an op call through
the dispatcher; the methods are installed by ``autograd_compile.kernels``.
This module holds what is not an op: autograd metadata, hooks, conversion,
and the adapter through which Backend kernels (functions on jax arrays) run.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import journal
from ._dtype import of as _dtype_of
from ._types import Size
from .dispatch import dispatcher as _dispatcher
from .dispatch.keys import INFERENCE_OPEN, TLS, DispatchKey

# kernels/_xp.py installs jax's one-copy transfer here (kernels import this module)
TO_JAX: list[Callable[[np.ndarray], jax.Array]] = [jnp.asarray]

# autograd/engine.py installs its ``backward`` here: the engine imports this module, so
# this module never imports the engine (no import circle)
ENGINE_BACKWARD: list[Callable[..., None]] = []

# _legacy.py installs PyTorch's legacy constructor here (``torch.Tensor(2, 3)``, ``([1, 2])``)
LEGACY_NEW: list[Callable[..., "Tensor"]] = []

_FLOATING = frozenset(map(jnp.dtype, (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64,
                                      jnp.complex64, jnp.complex128)))


_IS_FLOATING: dict[Any, bool] = {}  # by the dtype object given: no jnp.dtype() per op call


def is_floating(dtype: Any) -> bool:
    """True for dtypes that can require gradients."""
    try:
        return _IS_FLOATING[dtype]
    except (KeyError, TypeError):  # TypeError: an unhashable dtype-like
        floating = jnp.dtype(dtype) in _FLOATING
    try:
        _IS_FLOATING[dtype] = floating
    except TypeError:
        pass
    return floating


class RemovableHandle:
    """Returned by every ``register_*``; ``remove()`` unregisters the hook."""

    _next_id = 0
    __slots__ = ("_dicts", "id")

    def __init__(self, *dicts: dict, extra_dict: Any = None) -> None:
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        if extra_dict is not None:  # PyTorch's keyword: more dicts the id is removed from
            dicts += tuple(extra_dict) if isinstance(extra_dict, list) else (extra_dict,)
        self._dicts = tuple(weakref.ref(d) if hasattr(d, "__weakref__") else d for d in dicts)

    def remove(self) -> None:
        for d in self._dicts:
            d = d() if isinstance(d, weakref.ref) else d
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class UntypedStorage:
    """``t.untyped_storage()``: the storage's identity and size (``data_ptr()``, ``nbytes()``),
    which code reads to find tensors that share memory."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: "Tensor") -> None:
        self._tensor = tensor

    def data_ptr(self) -> int:
        return self._tensor.data_ptr()

    def nbytes(self) -> int:
        return self._tensor.nbytes

    def size(self) -> int:
        return self._tensor.nbytes

    __len__ = size

    @property
    def device(self) -> Any:
        return self._tensor.device


class HookDict(OrderedDict):
    """An ordered id -> hook map that can be referenced weakly by handles."""


def DATA_ALIAS(base: "Tensor", new: "Tensor") -> "Tensor":
    """The write-back of ``t.data``: the base takes the new value outside autograd (see
    ``Tensor.data``); kernels/views.py knows it by identity and sets the value directly."""
    return new


class Tensor:
    """An n-dimensional array on a jax device, with autograd history.

    The value lives in ``_store``: a jax array, or a read-only numpy array when the host
    tier (kernels/_xp.py) computed it, so a chain of small eager ops never crosses into
    jax. ``_data`` is always a jax array: reading it moves a numpy value to the CPU
    device once and keeps the result.
    """

    # __dict__: the user's own attributes (``p._no_weight_decay = True``), made on first set
    __slots__ = ("_store", "_requires_grad", "_grad", "grad_fn", "_output_nr", "_version",
                 "_backward_hooks", "_post_acc_hooks", "_retains_grad", "_acc_ref", "_base_meta",
                 "_inference", "__weakref__", "__dict__")
    _acg_keys = DispatchKey.Backend.bit
    __array_priority__ = 1000  # numpy defers to our operators: ndarray * Tensor -> Tensor

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__acg_dispatch__" in cls.__dict__:  # a subclass that handles its own ops
            cls._acg_keys = cls._acg_keys | DispatchKey.Python.bit

    def __init__(self, *args: Any, requires_grad: bool = False, device: Any = None) -> None:
        """``Tensor(jax_array)`` wraps the array as it is; anything else is PyTorch's legacy
        constructor (``Tensor(2, 3)``, ``Tensor(size)``, ``Tensor([1, 2])``, ``Tensor()``):
        the default dtype, or ``Tensor(t)`` for ``t``'s data."""
        if len(args) == 1 and isinstance(args[0], jax.Array):
            _init(self, args[0])
        else:
            _init(self, LEGACY_NEW[0](args, device)._store)
        if requires_grad:
            self.requires_grad_(True)

    @property
    def _data(self) -> Any:
        """The value as a jax array (a numpy value crosses once, then stays a jax array)."""
        store = self._store
        if type(store) is np.ndarray:
            store = self._store = TO_JAX[0](store)
        return store

    @_data.setter
    def _data(self, array: Any) -> None:
        self._store = array

    # -- autograd metadata -----------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set whether autograd records ops on this leaf tensor; returns self."""
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not is_floating(self.dtype):
            raise RuntimeError("only Tensors of floating point dtype can require gradients, "
                               f"got {self.dtype.name}")
        self._requires_grad = bool(requires_grad)
        return self

    def is_inference(self) -> bool:
        """Whether the tensor was made inside ``inference_mode()``, as PyTorch's.

        >>> import autograd_compile as acg
        >>> with acg.inference_mode():
        ...     y = acg.ones(2) * 2
        >>> y.is_inference(), acg.ones(2).is_inference()
        (True, False)
        """
        return getattr(self, "_inference", False)

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self) -> "Tensor | None":
        return self._grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            _check_assigned_grad(self, value)
        journal.record(self, "_grad")
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> "Tensor":
        """A tensor sharing this one's storage, outside autograd (as PyTorch's ``.data``):
        in-place ops on it change this tensor and are not recorded, nor do they bump the
        version counter that autograd checks.

        >>> import autograd_compile as acg
        >>> p = acg.ones(2, requires_grad=True)
        >>> _ = p.data.add_(1.0)
        >>> p.tolist(), p.requires_grad
        ([2.0, 2.0], True)
        """
        alias = _make(self._store)
        alias._base_meta = (weakref.ref(self), DATA_ALIAS)  # writes on it land in self
        # (held weakly: an alias kept for logging must not keep self and its graph alive)
        return alias

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._set_data(value._data if isinstance(value, Tensor) else jnp.asarray(value), bump=False)

    def _set_data(self, array: Any, bump: bool = True) -> None:
        """Replace the value in place (journaled, so a failed backward can undo it)."""
        if journal.active():
            journal.record(self, "_store")
            journal.record(self, "_version")
        self._store = array
        if bump:
            self._version += 1

    # -- hooks -------------------------------------------------------------------------
    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed.

        A returned tensor replaces the gradient; ``None`` keeps it.

        >>> import autograd_compile as acg
        >>> x = acg.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 3)
        >>> (x * 1).sum().backward(); x.grad.tolist()
        [3.0, 3.0]
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self.grad_fn._tensor_hooks_for(self._output_nr) if self.grad_fn is not None \
            else self._leaf_hooks()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def _leaf_hooks(self) -> HookDict:
        if self._backward_hooks is None:
            self._backward_hooks = HookDict()
        return self._backward_hooks

    def register_post_accumulate_grad_hook(self, hook: Callable[["Tensor"], None]
                                           ) -> RemovableHandle:
        """Call ``hook(tensor)`` after a backward has written this leaf's ``.grad``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = HookDict()
        handle = RemovableHandle(self._post_acc_hooks)
        self._post_acc_hooks[handle.id] = hook
        return handle

    def retain_grad(self) -> None:
        """Fill ``.grad`` of this non-leaf tensor during backward (it accumulates)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self.grad_fn._retain_grad_for(self._output_nr, self)
        self._retains_grad = True

    # -- backward ----------------------------------------------------------------------
    def backward(self, gradient: "Tensor | None" = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see autograd.backward)."""
        ENGINE_BACKWARD[0](self, gradient, retain_graph, create_graph, inputs)

    def detach(self) -> "Tensor":
        """A new tensor with the same value and no autograd history, sharing this one's
        storage as in PyTorch: in-place ops on it change this tensor too (an EMA's
        ``ema_p.detach().mul_(d)``, ``state_dict()`` values), outside autograd as ``.data``.
        (A later in-place op on this tensor is not seen by the detached one.)

        >>> import autograd_compile as acg
        >>> p = acg.nn.Parameter(acg.ones(2))
        >>> _ = p.detach().mul_(3.0)
        >>> p.tolist()
        [3.0, 3.0]
        """
        if self._acg_keys == _PLAIN_KEYS and not TLS.mode_stack:  # (Parameters too)
            out = _make(self._store)
        else:
            from .dispatch.library import ops
            out = ops.acg.detach(self)  # an op, so modes and subclasses see it
        if out is not self and isinstance(out, Tensor) and (type(out) is Tensor or
                                                            self._store is not None):
            # in-place writes on it land in self (a trace's fake of a real tensor keeps
            # the mark too: the trace then runs such a write eagerly, see aot/trace.py)
            out._base_meta = (weakref.ref(self), DATA_ALIAS)  # (weakly, as .data's)
        return out

    def __getstate__(self) -> Any:
        """Copies and pickles of a view or alias are tensors of their own (no base)."""
        state = object.__getstate__(self)
        slots = state[1] if isinstance(state, tuple) else None
        if slots and slots.get("_base_meta") is not None:
            slots = dict(slots, _base_meta=None)
            state = (state[0], slots)
        return state

    def _shallow_alias(self) -> "Tensor":
        """A new plain tensor object over the same value (subclasses keep their extras)."""
        return _make(self._store, type(self))

    def detach_(self) -> "Tensor":
        """Cut this tensor out of the graph in place; it becomes a leaf."""
        self.grad_fn, self._requires_grad, self._output_nr = None, False, 0
        return self

    # -- conversion --------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The sizes, an ``acg.Size`` (a tuple, as ``torch.Size``)."""
        return Size(self._store.shape)

    @property
    def _sizes(self) -> tuple:
        """The sizes as the plain tuple: what the library's own hot paths read (no Size)."""
        return self._store.shape

    @property
    def dtype(self) -> Any:
        """An ``acg.dtype`` (``acg.float32`` ...), as ``torch.dtype``."""
        return _dtype_of(self._store.dtype)

    @property
    def device(self) -> Any:
        """An ``acg.device`` ("cpu", or "cuda:N" for JAX's N-th GPU)."""
        from .devices import of_jax
        devices = getattr(self._store, "devices", None)  # (a numpy value is on the CPU)
        if devices is not None:
            try:
                return of_jax(next(iter(devices())))
            except jax.errors.ConcretizationTypeError:  # traced (a whole step's body): where
                pass                                     # its program runs, the default
        return of_jax(jax.local_devices()[0])

    @property
    def ndim(self) -> int:
        return len(self._sizes)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or one dimension's size (``dim`` out of range: IndexError, as in PyTorch)."""
        if dim is None:
            return self.shape
        sizes = self._sizes
        if not sizes:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        from .kernels._shapes import wrap_dim
        return sizes[wrap_dim(dim, len(sizes))]

    def dim(self) -> int:
        return len(self._sizes)

    def numel(self) -> int:
        n = 1
        for s in self._sizes:
            n = n * s
        return n

    def element_size(self) -> int:
        """Bytes per element (``t.element_size() * t.numel()`` is ``t.nbytes``)."""
        return np.dtype(self.dtype).itemsize

    def data_ptr(self) -> int:
        """An int naming this tensor's storage: equal for tensors sharing it (tied weights,
        ``detach()``), as PyTorch's address is; an in-place op may give a new one."""
        return id(self._store)

    const_data_ptr = data_ptr  # PyTorch's read-only twin (the same address)
    mutable_data_ptr = data_ptr

    def storage_offset(self) -> int:
        return 0  # (a view is its own value here: it starts its storage)

    def untyped_storage(self) -> "UntypedStorage":
        return UntypedStorage(self)

    def share_memory_(self) -> "Tensor":
        """A no-op: workers receive tensors by value (see acg.multiprocessing)."""
        return self

    def is_shared(self) -> bool:
        return False

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * np.dtype(self.dtype).itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __jax_array__(self) -> jax.Array:
        return self._data

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(_host_read(self._store, "convert to numpy"), dtype=dtype)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The value as a numpy array. As PyTorch, a tensor that requires grad is refused
        (its value would leave the graph silently) unless ``force=True``. A global tensor
        split over processes raises unless replicated (see ``kernels/_host.py``).

        >>> import autograd_compile as acg
        >>> acg.ones(2, requires_grad=True).detach().numpy()
        array([1., 1.], dtype=float32)
        """
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return _host_read(self._store, "call numpy() on")

    def item(self) -> Any:
        store = self._store
        if type(store) is np.ndarray and store.size == 1:  # a host value: numpy's own item
            return store.item()
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                               "Scalar")
        return _host_read(self._store, "call item() on").reshape(()).item()

    def tolist(self) -> Any:
        store = self._store
        if type(store) is np.ndarray:
            return store.tolist()
        return _host_read(store, "call tolist() on").tolist()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if is_floating(self.dtype):
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    __hash__ = object.__hash__

    def __format__(self, spec: str) -> str:
        # as PyTorch: a 0-d tensor formats like its Python number (f"{loss:.4f}")
        if self.dim() == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self) -> str:
        values = _host_read(self._store, "print")
        if values.dtype.kind == "V":  # bfloat16, float8: numpy prints them as integers
            values = values.astype(np.float32)
        from ._printing import array2string_options
        body = np.array2string(values, separator=", ", prefix="tensor(",
                               **array2string_options())
        # as PyTorch: the dtype is shown unless it is the default float, int64 or bool
        implied = self.dtype in (_default_float(), _INT64, _BOOL)
        extra = "" if implied else f", dtype={self.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self._requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"


_INT64, _BOOL = np.dtype("int64"), np.dtype("bool")
_PLAIN_KEYS = Tensor._acg_keys  # a subclass with these keys adds no op handling of its own


def _default_float() -> Any:
    from .kernels._dtypes import default_float  # kernels import this module: import late
    return default_float()


def _init(t: Tensor, array: Any) -> None:
    t._store = array
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._version = 0
    t._backward_hooks = None
    t._post_acc_hooks = None
    t._retains_grad = False
    t._acc_ref = None
    t._base_meta = None
    if INFERENCE_OPEN[0] and TLS.inference:  # (unset otherwise: is_inference reads False)
        t._inference = True


def _make(array: Any, cls: type = Tensor) -> Tensor:
    """Wrap a jax array (or a host result's read-only numpy array) without copying (the
    hot path of every op)."""
    t = object.__new__(cls)
    _init(t, array)
    return t


def _check_assigned_grad(t: Tensor, g: Any) -> None:
    if not isinstance(g, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(g).__name__}")
    if tuple(g.shape) != tuple(t.shape):
        raise RuntimeError(f"assigned grad has data of a different size: got {list(g.shape)}, "
                           f"expected {list(t.shape)}")
    if jnp.dtype(g.dtype) != jnp.dtype(t.dtype):
        raise RuntimeError(f"assigned grad has data of a different type: got {g.dtype.name}, "
                           f"expected {t.dtype.name}")


# -- the Backend adapter: Tensors in, jax arrays to the kernel, Tensors out -------------

def _unwrap(v: Any) -> Any:
    """Tensors (also inside lists, tuples, dicts) to their jax arrays."""
    if isinstance(v, Tensor):
        return v._data
    if type(v) in (list, tuple):  # a list of tensors (cat, stack) inline, not a call each
        out = [x._data if isinstance(x, Tensor) else _unwrap(x) for x in v]
        return out if type(v) is list else tuple(out)
    if type(v) is dict:
        return {k: _unwrap(x) for k, x in v.items()}
    return v


class WantsDeviceValues(Exception):
    """A host-aware kernel asks the adapter to call it again with every tensor's jax array
    (kernels/_jit.py raises it; a numpy value crosses once and stays on its tensor)."""


class HostValueInTrace(WantsDeviceValues):
    """Host (numpy) values next to a jax tracer: the trace must see each tensor's own value."""


# A numpy value larger than this goes to a host-aware kernel as a jax array, moved once
# and kept on the tensor: no op runs that size on the host, and an XLA program would
# otherwise copy it in on every call (kernels/_xp.py's HOST_MAX_ELEMENTS, the most a
# "stream" kernel such as an elementwise op runs on numpy).
HOST_ELEMENTS = 95_000


def _stored(t: Tensor) -> Any:
    """``t``'s value as a host-aware kernel takes it: numpy stays numpy while small."""
    store = t._store
    if type(store) is np.ndarray and store.size > HOST_ELEMENTS:
        return t._data
    return store


def _unwrap_stored(v: Any) -> Any:
    """``_unwrap`` for a host-aware kernel: small numpy values are passed as they are."""
    if isinstance(v, Tensor):
        return _stored(v)
    if type(v) in (list, tuple):
        out = [_stored(x) if isinstance(x, Tensor) else _unwrap_stored(x) for x in v]
        return out if type(v) is list else tuple(out)
    if type(v) is dict:
        return {k: _unwrap_stored(x) for k, x in v.items()}
    return v


def _wrap(v: Any) -> Any:
    """jax arrays, tracers and host results (also inside lists, tuples, dicts) to Tensors."""
    if isinstance(v, (jax.Array, jax.core.Tracer, np.ndarray)):
        return _make(v)
    if type(v) in (list, tuple):  # a list comprehension: no generator per output list
        out = [_wrap(x) for x in v]
        return out if type(v) is list else tuple(out)
    if type(v) is dict:
        return {k: _wrap(x) for k, x in v.items()}
    return v


def _backend_call(op: Any, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run a Backend kernel (a function on jax arrays) for Tensor arguments. A host-aware
    kernel (kernels/_jit.py's) has an entry ``_acg_host`` that also takes and returns numpy
    arrays (the host tier's results, kept as they are)."""
    host = getattr(fn, "_acg_host", None)
    try:
        if host is not None:
            try:
                out = host(*[_stored(a) if type(a) is Tensor else _unwrap_stored(a) for a in args],
                           **({k: _unwrap_stored(v) for k, v in kwargs.items()} if kwargs else {}))
            except WantsDeviceValues:  # next to tracers (a trace sees and may guard each
                host = None  # captured tensor's value), or big host values into a program
        if host is None:
            out = fn(*[a._data if type(a) is Tensor else _unwrap(a) for a in args],
                     **({k: _unwrap(v) for k, v in kwargs.items()} if kwargs else {}))
    except Exception as e:  # name the op, shapes and dtypes, not only jax's message
        from .errors import op_error
        raise op_error(op, args, kwargs, e) from e
    if op.schema.is_mutable:
        return _write_back(op, args, kwargs, out)
    return _make(out) if isinstance(out, (jax.Array, np.ndarray)) else _wrap(out)


def _write_back(op: Any, args: tuple, kwargs: dict, out: Any) -> Any:
    """Mutating kernels are functional: they return the new value of each Tensor(a!)."""
    bound = op.schema.bind(args, kwargs)
    targets = [v for a, v in zip(op.schema.arguments, bound) if a.mutable]
    news = out if isinstance(out, (tuple, list)) else (out,)
    for t, new in zip(targets, news):
        if new.shape != t._store.shape:
            raise RuntimeError(f"{op}: in-place result has shape {list(new.shape)} but the "
                               f"tensor written to has shape {list(t.shape)}")
        dtype = t._store.dtype  # astype of the same dtype still costs jax's Python
        t._set_data(_keep_placement(new if new.dtype == dtype else new.astype(dtype), t._store))
    return targets[0] if len(targets) == 1 else tuple(targets)


def _keep_placement(new: Any, old: Any) -> Any:
    """An in-place op keeps the tensor where it lives: a result that ignores the old value
    (copy_, fill_) would otherwise land on one device instead of the old value's mesh."""
    if isinstance(old, jax.core.Tracer) or isinstance(new, jax.core.Tracer):
        return new
    sharding = getattr(old, "sharding", None)
    if isinstance(sharding, jax.sharding.NamedSharding) and \
            getattr(new, "sharding", None) != sharding:
        return jax.device_put(new, sharding)
    return new


_dispatcher.set_tensor_type(Tensor, _backend_call)


def _host_read(array: Any, what: str) -> np.ndarray:
    """A user's host read of ``array``: its global value, also across processes."""
    if getattr(array, "is_fully_addressable", True):  # the usual case (and numpy, tracers)
        return np.asarray(array)
    from .kernels._host import read  # kernels import this module: import late
    return read(array, what)
