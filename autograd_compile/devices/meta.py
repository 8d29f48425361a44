"""The ``"meta"`` device: tensors with a shape and a dtype and no data.

PyTorch programs use it to build a model without memory (``model.to("meta")``, the
torch.func ensembling tutorial's base model; ``nn.Module.to_empty(device=...)`` then gives
it storage). A meta tensor is a :class:`~autograd_compile.tracing.fake.FakeTensor` whose
device is ``meta``: every op on it runs the op's shape rule and gives meta tensors, and
reading its values raises PyTorch's errors.

>>> import autograd_compile as acg
>>> x = acg.ones(2, 3).to("meta")
>>> x, (x @ x.T).shape, x.is_meta, x.device
(tensor(..., device='meta', size=(2, 3)), (2, 2), True, device(type='meta'))
>>> m = acg.nn.Linear(2, 3).to("meta").to_empty(device="cpu")
>>> m.weight.device, m.weight.is_meta
(device(type='cpu'), False)
"""
from __future__ import annotations

from typing import Any

from ..nn.parameter import Parameter
from ..tensor import Tensor
from ..tracing.fake import FakeTensor
from .model import device

_NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaTensor(FakeTensor):
    """A tensor on the meta device (see the module docstring)."""

    __slots__ = ()

    def __init__(self, shape: tuple, dtype: Any, requires_grad: bool = False) -> None:
        super().__init__(shape, dtype, None, device("meta"), requires_grad)

    @property
    def device(self) -> device:
        return device("meta")

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
        return type(self)(self.shape, self.dtype)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"tensor(..., device='meta', size={tuple(self.shape)}{grad})"


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


def to_meta(t: Tensor) -> Tensor:
    """``t.to("meta")``: its shape and dtype (and requires_grad), no data."""
    if isinstance(t, MetaTensor):
        return t
    return MetaTensor(tuple(t.shape), t.dtype, t.requires_grad and t.grad_fn is None)


def no_data(target: Any) -> NotImplementedError:
    """The error of moving a meta tensor to a device with data."""
    return NotImplementedError(_NO_DATA)
