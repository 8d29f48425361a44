"""Lazy modules: a layer whose input size is read from its first input (PyTorch's
``LazyLinear``, ``LazyConv1d/2d``, ``LazyBatchNorm1-3d``, ``LazyInstanceNorm1-3d``).

Until the first call the parameters are ``UninitializedParameter`` placeholders (no
values, shape ``(0,)``); the first forward materialises them with the inferred shape,
initialises them as the eager layer would, and turns the module into that layer
(``cls_to_become``). Loading a state_dict into a lazy module materialises from the
checkpoint's shapes.

>>> import autograd_compile as acg
>>> m = acg.nn.LazyLinear(3)
>>> m(acg.randn(2, 5)).shape, type(m).__name__, m.weight.shape
((2, 3), 'Linear', (3, 5))
"""
from __future__ import annotations

from typing import Any, Mapping

import jax.numpy as jnp

from ..autograd.grad_mode import no_grad
from ..kernels import api as A
from ..kernels._dtypes import default_float
from ..tensor import Tensor
from .conv import Conv1d, Conv2d
from .linear import Linear
from .module import Module
from .norm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                   InstanceNorm3d)
from .parameter import Parameter

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear",
           "LazyConv1d", "LazyConv2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class _Uninitialized:
    """``materialize(shape)``: take a value of that shape (zeros, the module initialises it)
    and become the plain class."""

    __slots__ = ()
    cls_to_become: type = Tensor
    _lazy_dtype: Any = None

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._set_data(jnp.zeros(shape, dtype or self._data.dtype), bump=False)  # type: ignore
        self.__class__ = self.cls_to_become


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet (see the module doc)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None
                 ) -> None:
        super().__init__(A.zeros(0, dtype=dtype or default_float()), requires_grad)

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None
                 ) -> None:
        from ..tensor import _init
        _init(self, A.zeros(0, dtype=dtype or default_float())._data)

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"


def _is_lazy(t: Any) -> bool:
    return isinstance(t, _Uninitialized)


def _infer_parameters(module: "LazyModuleMixin", args: tuple) -> None:
    """The forward pre-hook: materialise from the first input, then drop the hook."""
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._lazy_hook.remove()
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyModuleMixin:
    """Mixed in before a layer class: registers the hook that infers its shapes."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._lazy_hook = self.register_forward_pre_hook(_infer_parameters)  # type: ignore

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())  # type: ignore
        return any(_is_lazy(t) for t in tensors)

    def initialize_parameters(self, *args: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def _plan_load(self, state_dict: Mapping, prefix: str, *rest: Any) -> None:
        # a checkpoint's shapes materialise the placeholders before the usual checks
        for table in (self._parameters, self._buffers):  # type: ignore[attr-defined]
            for name, t in table.items():
                value = state_dict.get(prefix + name)
                if _is_lazy(t) and isinstance(value, Tensor):
                    t.materialize(value.shape)
        super()._plan_load(state_dict, prefix, *rest)  # type: ignore[misc]

    def _finish_if_initialized(self) -> None:
        if not self.has_uninitialized_params():
            self._lazy_hook.remove()
            if self.cls_to_become is not None:
                self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` with ``in_features`` taken from the first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """``in_channels`` from the first input's channel dimension (dim 1, or 0 unbatched)."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any) -> None:
        if self.has_uninitialized_params():
            batched = input.dim() == self._n + 2  # type: ignore[attr-defined]
            self.in_channels = input.shape[1 if batched else 0]
            if self.in_channels % self.groups != 0:  # type: ignore[attr-defined]
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                         *self.kernel_size))  # type: ignore[attr-defined]
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


class LazyConv1d(_LazyConvMixin, Conv1d):
    """``Conv1d`` with ``in_channels`` inferred from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvMixin, Conv2d):
    """``Conv2d`` with ``in_channels`` inferred from the first input."""
    cls_to_become = Conv2d


class _LazyNormMixin(LazyModuleMixin):
    """``num_features`` from the first input's channel dimension (dim 1; dim 0 for an
    unbatched instance-norm input, which PyTorch's lazy instance norms reject)."""

    _no_batch_dim: int | None = None  # instance norms accept unbatched input

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None,
                 *, bias: bool = True) -> None:
        # PyTorch's defaults (affine and running statistics on) for the instance norms too
        super().__init__(0, eps, momentum, False, False, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = A.tensor(0, dtype="int64")

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any) -> None:
        if self.has_uninitialized_params():
            dim = 0 if input.dim() == self._no_batch_dim else 1
            self.num_features = input.shape[dim]
            with no_grad():
                tables = (self._parameters, self._buffers)  # type: ignore[attr-defined]
                for t in (v for table in tables for v in table.values()):
                    if _is_lazy(t):
                        t.materialize((self.num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormMixin, BatchNorm1d):
    """``BatchNorm1d`` with ``num_features`` inferred from the first input."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormMixin, BatchNorm2d):
    """``BatchNorm2d`` with ``num_features`` inferred from the first input."""
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormMixin, BatchNorm3d):
    """``BatchNorm3d`` with ``num_features`` inferred from the first input."""
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormMixin, InstanceNorm1d):
    """``InstanceNorm1d`` with ``num_features`` inferred from the first input."""
    cls_to_become = InstanceNorm1d
    _no_batch_dim = 2


class LazyInstanceNorm2d(_LazyNormMixin, InstanceNorm2d):
    """``InstanceNorm2d`` with ``num_features`` inferred from the first input."""
    cls_to_become = InstanceNorm2d
    _no_batch_dim = 3


class LazyInstanceNorm3d(_LazyNormMixin, InstanceNorm3d):
    """``InstanceNorm3d`` with ``num_features`` inferred from the first input."""
    cls_to_become = InstanceNorm3d
    _no_batch_dim = 4
