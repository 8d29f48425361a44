"""Fake tensors: shape/dtype-only execution, the Fake dispatch key.

A :class:`FakeTensor` has a shape (ints or SymInts) and a dtype but no data.
Ops on fake tensors run only their shape rule, looked up in this layer's
:data:`SHAPE_RULES` table (filled by ``kernels/``); an op without a rule falls
back to ``jax.eval_shape`` of its JAX kernel when every size is concrete.

>>> import autograd_compile as acg
>>> with acg.fake.FakeTensorMode() as mode:
...     x = acg.ones(8, 3)
...     y = (x @ acg.ones(3, 5)).sum(0)
>>> type(y).__name__, y.shape
('FakeTensor', acg.Size([5]))
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from ..dispatch.dispatcher import OpOverload, boxed
from ..dispatch.keys import DispatchKey, include_keys
from .._dtype import of as _dtype_of
from .._types import Size
from ..errors import op_error
from .lifted import plain
from ..modes import DispatchMode
from .symbolic_shapes import _WeakIdKeyDict
from ..devices.model import device as _Device
from ..tensor import Tensor, _init


class TensorMeta(NamedTuple):
    """What a shape rule returns for each output."""

    shape: tuple
    dtype: Any


SHAPE_RULES: dict[OpOverload, Callable[..., Any]] = {}
# alias -> the fake it was made from (``x[i] = v`` reads an alias of x made above the dispatcher)
ALIAS_OF: "_WeakIdKeyDict[Tensor, Tensor]" = _WeakIdKeyDict()


def register_shape_rule(op: OpOverload, rule: Callable[..., Any]) -> Callable[[], None]:
    """Set ``op``'s shape rule (args like the op's, tensors fake); returns an undo."""
    if op in SHAPE_RULES:
        raise RuntimeError(f"{op.qualname} already has a shape rule")
    SHAPE_RULES[op] = rule
    return lambda: SHAPE_RULES.pop(op, None)


class FakeTensor(Tensor):
    """A tensor with shape and dtype only; every op on it runs a shape rule."""

    __slots__ = ("_fake_shape", "_fake_dtype", "fake_mode", "_fake_device")
    _acg_keys = DispatchKey.Backend.bit | DispatchKey.Fake.bit

    def __init__(self, shape: tuple, dtype: Any, fake_mode: "FakeTensorMode | None" = None,
                 device: Any = None, requires_grad: bool = False) -> None:
        _init(self, None)
        self._fake_shape, self._fake_dtype = tuple(shape), jnp.dtype(dtype)
        self.fake_mode, self._fake_device = fake_mode, device
        if requires_grad:
            self.requires_grad_(True)

    @property
    def shape(self) -> Size:
        return Size(self._fake_shape)

    @property
    def _sizes(self) -> tuple:
        return self._fake_shape

    @property
    def dtype(self) -> Any:
        return _dtype_of(self._fake_dtype)

    @property
    def device(self) -> Any:
        from ..devices import device, of_jax
        d = self._fake_device if self._fake_device is not None else jax.devices()[0]
        return d if isinstance(d, device) else of_jax(d)  # an acg.device, as a real tensor's

    def _shallow_alias(self) -> "FakeTensor":
        alias = FakeTensor(self._fake_shape, self._fake_dtype, self.fake_mode, self._fake_device)
        ALIAS_OF[alias] = self  # tracing maps it to self's proxy when it is first used
        return alias

    def _set_data(self, array: Any, bump: bool = True) -> None:
        if bump:
            self._version += 1

    def __jax_array__(self) -> Any:
        raise RuntimeError("a FakeTensor has no data: it cannot become a jax array")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise RuntimeError("a FakeTensor has no data: it cannot become a numpy array")

    def item(self) -> Any:
        raise RuntimeError("item() on a FakeTensor: the value depends on data that tracing does "
                           "not have (data-dependent control flow cannot be captured)")

    tolist = numpy = item

    def __repr__(self) -> str:
        return f"FakeTensor(shape={list(self.shape)}, dtype={self.dtype})"


# -- the meta device: a FakeTensor whose device is "meta" -----------------------------------
_NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaTensor(FakeTensor):
    """A tensor on PyTorch's ``"meta"`` device: a shape and a dtype, no data. Programs build
    a model without memory with it (``model.to("meta")``, torch.func's ensembling base;
    ``Module.to_empty`` then gives it storage). Every op on it runs its shape rule and gives
    meta tensors; reading values raises PyTorch's errors.

    >>> import autograd_compile as acg
    >>> x = acg.ones(2, 3).to("meta")
    >>> x, (x @ x.T).shape, x.is_meta, x.device
    (tensor(..., device='meta', size=(2, 3)), acg.Size([2, 2]), True, device(type='meta'))
    >>> m = acg.nn.Linear(2, 3).to("meta").to_empty(device="cpu")
    >>> m.weight.device, m.weight.is_meta
    (device(type='cpu'), False)
    """

    __slots__ = ()

    def __init__(self, shape: tuple, dtype: Any, requires_grad: bool = False) -> None:
        super().__init__(shape, dtype, None, _Device("meta"), requires_grad)

    @property
    def device(self) -> _Device:
        return _Device("meta")

    @property
    def is_meta(self) -> bool:
        return True

    def item(self) -> Any:
        raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to "
                           "Scalar" if self.numel() != 1 else
                           "Tensor.item() cannot be called on meta tensors")

    def tolist(self) -> Any:
        raise NotImplementedError(_NO_DATA)

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() to "
                        "copy the tensor to host memory first.")

    __array__ = __jax_array__ = tolist

    def _shallow_alias(self) -> "MetaTensor":
        return MetaTensor(self.shape, self.dtype)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor(..., device='meta', size={tuple(self.shape)}{grad})"


def to_meta(t: Tensor) -> Tensor:
    """``t.to("meta")``: its shape and dtype (and requires_grad), no data."""
    if isinstance(t, MetaTensor):
        return t
    return MetaTensor(tuple(t.shape), t.dtype, t.requires_grad)


def no_data() -> NotImplementedError:
    """The error of moving a meta tensor to a device with data."""
    return NotImplementedError(_NO_DATA)


def _metas(result: Any) -> list[TensorMeta]:
    return list(result) if isinstance(result, (list, tuple)) and not \
        isinstance(result, TensorMeta) else [result]


def _fake_mode_of(args: tuple, kwargs: dict) -> "FakeTensorMode | None":
    for v in (*args, *kwargs.values()):
        for t in (v if type(v) in (list, tuple) else (v,)):
            if isinstance(t, FakeTensor) and t.fake_mode is not None:
                return t.fake_mode
    return FakeTensorMode.current


def _eval_shape(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """No shape rule: trace the JAX kernel abstractly (concrete sizes only)."""
    kernel = op.kernels.get(DispatchKey.Backend)
    if kernel is None:
        raise NotImplementedError(f"{op.qualname} has neither a shape rule nor a JAX kernel")

    def spec(v: Any) -> Any:
        if isinstance(v, Tensor):
            if not all(isinstance(s, int) for s in v.shape):
                raise NotImplementedError(f"{op.qualname} has no shape rule for symbolic sizes "
                                          f"{v.shape}; register one with register_shape_rule")
            return jax.ShapeDtypeStruct(tuple(v.shape), v.dtype)
        return type(v)(spec(x) for x in v) if type(v) in (list, tuple) else v
    tensors = [(i, spec(a)) for i, a in enumerate(args) if _has_tensor(a)]
    fixed = list(args)

    def run(*arrays: Any) -> Any:
        for (i, _), arr in zip(tensors, arrays):
            fixed[i] = arr
        return kernel.fn(*fixed, **kwargs)
    out = jax.eval_shape(run, *[s for _, s in tensors])
    return jax.tree_util.tree_map(lambda s: TensorMeta(tuple(s.shape), s.dtype), out)


def _on_meta(args: tuple, kwargs: dict) -> bool:
    return any(isinstance(t, MetaTensor) for v in (*args, *kwargs.values())
               for t in (v if type(v) in (list, tuple) else (v,)))


def _has_tensor(v: Any) -> bool:
    return isinstance(v, Tensor) or (type(v) in (list, tuple) and any(_has_tensor(x) for x in v))


@boxed
def fake_fallback(op: OpOverload, args: tuple, kwargs: dict) -> Any:
    """The Fake-key kernel of every op: run the shape rule, return FakeTensors."""
    rule = SHAPE_RULES.get(op)
    args = tuple(plain(a) for a in args)  # a lifted scalar types like the float it stands for
    try:
        result = rule(*args, **kwargs) if rule is not None else _eval_shape(op, args, kwargs)
    except (NotImplementedError, TypeError):
        raise  # already name the op (no rule) or are the caller's own mistake: keep as is
    except Exception as e:
        raise op_error(op, args, kwargs, e) from e
    if op.schema.is_mutable:
        bound = op.schema.bind(args, kwargs)
        targets = [v for a, v in zip(op.schema.arguments, bound) if a.mutable]
        for t in targets:
            t._set_data(None)
        return targets[0] if len(targets) == 1 else tuple(targets)
    mode = _fake_mode_of(args, kwargs)
    if mode is None and _on_meta(args, kwargs):  # ops on the meta device stay there
        outs = [MetaTensor(m.shape, m.dtype) for m in _metas(result)]
    else:
        outs = [FakeTensor(m.shape, m.dtype, mode) for m in _metas(result)]
    multi = isinstance(result, (list, tuple)) and not isinstance(result, TensorMeta)
    return tuple(outs) if multi else outs[0]


class FakeTensorMode(DispatchMode):
    """Inside the block every op (factories too) produces FakeTensors.

    ``shape_env`` (a symbolic_shapes.ShapeEnv) makes :meth:`from_tensor` give
    symbolic sizes.
    """

    current: "FakeTensorMode | None" = None

    def __init__(self, shape_env: Any = None) -> None:
        self.shape_env = shape_env
        self._prev: list = []

    def __enter__(self) -> "FakeTensorMode":
        self._prev.append(FakeTensorMode.current)
        FakeTensorMode.current = self
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        FakeTensorMode.current = self._prev.pop()

    def __acg_dispatch__(self, func: OpOverload, types: tuple[type, ...], args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        with include_keys(DispatchKey.Fake.bit):
            return func(*args, **(kwargs or {}))

    def from_tensor(self, t: Tensor, sizes: tuple | None = None) -> FakeTensor:
        """A FakeTensor like ``t`` (optionally with the given, e.g. symbolic, sizes)."""
        shape = tuple(t.shape) if sizes is None else tuple(sizes)
        if sizes is None and self.shape_env is not None:
            shape = tuple(self.shape_env.create_symint(int(s)) for s in t.shape)
        fake = FakeTensor(shape, t.dtype, self, None)
        fake._requires_grad = t.requires_grad
        return fake
