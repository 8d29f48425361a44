"""``nn.Parameter``: a leaf tensor that a Module registers as trainable.

>>> import autograd_compile as acg
>>> p = acg.nn.Parameter(acg.zeros(2))
>>> isinstance(p, acg.Tensor), p.requires_grad, p.is_leaf
(True, True, True)
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor, _init
from ..tracing.fake import MetaTensor


class Parameter(Tensor):
    """A tensor that, assigned to a Module attribute, is registered as a parameter.

    ``Parameter(data=None, requires_grad=True)``: shares ``data``'s value (an empty
    tensor when ``data`` is None) and is always a leaf.
    """

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> "Parameter":
        if cls is Parameter and isinstance(data, MetaTensor):
            return super().__new__(MetaParameter)  # a meta tensor's Parameter is meta
        return super().__new__(cls)

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            from ..kernels.api import zeros
            data = zeros(0)
        array = data._data if isinstance(data, Tensor) else Tensor(data)._data
        _init(self, array)
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: int) -> Any:
        """Pickled with its Python attributes (``p._no_weight_decay``), as PyTorch's."""
        return (_rebuild_parameter, (self.detach(), self.requires_grad, dict(self.__dict__)))

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach(), self.requires_grad)
        return memo[id(self)]


def _rebuild_parameter(data: Tensor, requires_grad: bool, state: dict | None = None
                       ) -> Parameter:
    p = Parameter(data, requires_grad)
    p.__dict__.update(state or {})
    return p


# -- vision area: lazy modules' placeholders (UninitializedParameter, UninitializedBuffer) --
def _zeros(*shape: int, dtype: Any = None) -> Tensor:
    from ..kernels.api import zeros  # the kernels import nn lazily; so must we
    return zeros(*shape, dtype=dtype)


_NO_SHAPE = ("Can't access the shape of an uninitialized parameter or buffer. This error "
             "usually happens in `load_state_dict` when trying to load an uninitialized "
             "parameter into an initialized one. Call `forward` to initialize the parameters "
             "before accessing their attributes.")


class _Uninitialized:
    """What the two placeholders share: no shape yet (an empty array keeps the dtype to
    materialise with) and ``materialize(shape)``, which turns the object itself into its
    ``cls_to_become`` so references held elsewhere (an optimizer's) see the real tensor."""

    __slots__ = ()
    cls_to_become: type = Tensor

    @property
    def shape(self) -> tuple:
        raise RuntimeError(_NO_SHAPE)

    _sizes = shape

    def size(self, dim: Any = None) -> Any:
        raise RuntimeError(_NO_SHAPE)

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Give this placeholder a value of ``shape`` (zeros until an initialiser runs)."""
        value = _zeros(*tuple(shape), dtype=dtype or self.dtype)
        if device is not None:
            value = value.to(device)
        self._data = value._data
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _placeholder(cls: type, requires_grad: bool, device: Any, dtype: Any) -> Any:
    empty = _zeros(0, dtype=dtype)
    if device is not None:
        empty = empty.to(device)
    obj = Tensor.__new__(cls)
    Parameter.__init__(obj, empty, requires_grad)  # Tensor fields, as a Parameter sets them
    return obj


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter with no shape yet; ``materialize(shape)`` makes it a :class:`Parameter`.

    >>> import autograd_compile as acg
    >>> p = acg.nn.parameter.UninitializedParameter()
    >>> p.materialize((2, 3)); type(p).__name__, p.shape
    ('Parameter', acg.Size([2, 3]))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> Any:
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        pass  # __new__ did the work

    def __deepcopy__(self, memo: dict) -> "UninitializedParameter":
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, dtype=self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, proto: int) -> Any:
        return (UninitializedParameter, (self.requires_grad, None, self.dtype))


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer with no shape yet; ``materialize(shape)`` makes it a plain Tensor."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> Any:
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        pass


class MetaParameter(MetaTensor, Parameter):
    """A Parameter on the meta device (``nn.Parameter(meta_tensor)``, ``module.to("meta")``)."""

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        MetaTensor.__init__(self, tuple(data.shape), data.dtype, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + MetaTensor.__repr__(self)

    def __deepcopy__(self, memo: dict) -> "MetaParameter":
        if id(self) not in memo:
            memo[id(self)] = MetaParameter(self, self.requires_grad)
        return memo[id(self)]
