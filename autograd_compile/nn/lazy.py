"""Lazy modules: ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyLinear``,
``LazyBatchNorm1d/2d/3d`` and ``LazyInstanceNorm1d/2d/3d`` infer their input size (channels,
features) from the first input, as PyTorch's do.

Until then their parameters are :class:`UninitializedParameter` s; the first forward call
materialises them with the inferred shapes, runs ``reset_parameters`` and turns the module
into its eager class (``cls_to_become``: a ``LazyConv2d`` becomes a ``Conv2d``). Loading a
``state_dict`` into a lazy module materialises its parameters with the checkpoint's shapes.

>>> import autograd_compile as acg
>>> m = acg.nn.LazyConv2d(8, 3)
>>> _ = m(acg.randn(1, 3, 5, 5))
>>> m
Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1))
"""
from __future__ import annotations

from typing import Any, Mapping

from ..autograd.grad_mode import no_grad
from ..kernels import api as A
from ..tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .norm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                   InstanceNorm3d)
from .parameter import UninitializedBuffer, UninitializedParameter, _Uninitialized

__all__ = ["LazyModuleMixin", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyLinear", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

def is_lazy(value: Any) -> bool:
    return isinstance(value, _Uninitialized)


class LazyModuleMixin:
    """Infers parameter shapes from the first input (``initialize_parameters``), then becomes
    ``cls_to_become``. Put it first among the bases: ``class LazyConv2d(LazyModuleMixin,
    Conv2d)``."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            _infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer is still a placeholder."""
        tensors = list(self._parameters.values()) + list(self._buffers.values())  # type: ignore
        return any(is_lazy(t) for t in tensors)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialise the parameters from the first input (each lazy class defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def _plan_load(self, state_dict: Mapping, prefix: str, *rest: Any) -> None:
        # a checkpoint's shapes materialise the placeholders before the usual checks
        for table in (self._parameters, self._buffers):  # type: ignore[attr-defined]
            for name, value in table.items():
                given = state_dict.get(prefix + name)
                if is_lazy(value) and isinstance(given, Tensor) and not is_lazy(given):
                    value.materialize(tuple(given.shape))
        super()._plan_load(state_dict, prefix, *rest)  # type: ignore[misc]


def _infer_parameters(module: Any, args: tuple, kwargs: dict) -> None:
    """The forward pre-hook: materialise, check, then drop the hook and change class."""
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


# -- convolutions --------------------------------------------------------------------------------
class _LazyConvMixin(LazyModuleMixin):
    """in_channels from the input's channel dim (dim 1, or 0 when unbatched)."""

    def __init__(self, out_channels: int, kernel_size: Any, *args: Any, bias: bool = True,
                 device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        # built with 0 input channels and no bias, then given placeholders, as PyTorch does
        super().__init__(0, 0, kernel_size, *args, bias=False, **kwargs)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        n = self._n  # type: ignore[attr-defined]
        if input.ndim not in (n + 1, n + 2):
            raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: "
                               f"{tuple(input.shape)}")
        self.in_channels = int(input.shape[1] if input.ndim == n + 2 else input.shape[0])
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        per_group = (self.in_channels, self.out_channels // self.groups) if self.transposed \
            else (self.out_channels, self.in_channels // self.groups)
        self.weight.materialize(per_group + tuple(self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class LazyConv1d(_LazyConvMixin, Conv1d):
    """``Conv1d`` whose ``in_channels`` is the first input's."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups,
                         bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)


class LazyConv2d(_LazyConvMixin, Conv2d):
    """``Conv2d`` whose ``in_channels`` is the first input's.

    >>> import autograd_compile as acg
    >>> acg.nn.LazyConv2d(4, 3)
    LazyConv2d(0, 4, kernel_size=(3, 3), stride=(1, 1))
    """

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups,
                         bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)


class LazyConv3d(_LazyConvMixin, Conv3d):
    """``Conv3d`` whose ``in_channels`` is the first input's."""

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups,
                         bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)


class LazyConvTranspose1d(_LazyConvMixin, ConvTranspose1d):
    """``ConvTranspose1d`` whose ``in_channels`` is the first input's."""

    cls_to_become = ConvTranspose1d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, output_padding, groups,
                         bias=bias, dilation=dilation, padding_mode=padding_mode, device=device,
                         dtype=dtype)


class LazyConvTranspose2d(_LazyConvMixin, ConvTranspose2d):
    """``ConvTranspose2d`` whose ``in_channels`` is the first input's."""

    cls_to_become = ConvTranspose2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, output_padding, groups,
                         bias=bias, dilation=dilation, padding_mode=padding_mode, device=device,
                         dtype=dtype)


class LazyConvTranspose3d(_LazyConvMixin, ConvTranspose3d):
    """``ConvTranspose3d`` whose ``in_channels`` is the first input's."""

    cls_to_become = ConvTranspose3d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride, padding, output_padding, groups,
                         bias=bias, dilation=dilation, padding_mode=padding_mode, device=device,
                         dtype=dtype)


# -- linear --------------------------------------------------------------------------------------
class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the first input's last dim.

    >>> import autograd_compile as acg
    >>> m = acg.nn.LazyLinear(5)
    >>> m(acg.randn(2, 3)).shape, m
    (acg.Size([2, 5]), Linear(in_features=3, out_features=5, bias=True))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        self.in_features = int(input.shape[-1])
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()


# -- norms ---------------------------------------------------------------------------------------
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
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = A.tensor(0, dtype="int64")

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = int(input.shape[0 if input.dim() == self._no_batch_dim else 1])
        with no_grad():
            for table in (self._parameters, self._buffers):  # type: ignore[attr-defined]
                for t in table.values():
                    if is_lazy(t):
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
