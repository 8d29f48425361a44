"""The hook-based ``weight_norm``/``spectral_norm`` of older PyTorch programs (PyTorch keeps
them, deprecated in favour of ``nn.utils.parametrizations``): parameters ``weight_g``,
``weight_v`` (or ``weight_orig`` with buffers ``weight_u``, ``weight_v``), the weight
recomputed by a forward pre-hook.

>>> import autograd_compile as acg
>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     m = acg.nn.utils.weight_norm(acg.nn.Linear(4, 3))
>>> sorted(m.state_dict())
['bias', 'weight_g', 'weight_v']
"""
from __future__ import annotations

import warnings
from typing import Any

from ...autograd.grad_mode import no_grad
from ...kernels import api as A
from ..module import Module
from ..parameter import Parameter
from .. import functional as F
from .parametrizations import _is_conv_transpose, _norm_except_dim, _weight_norm

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
           "WeightNorm", "SpectralNorm"]


class WeightNorm:
    """The forward pre-hook: ``module.<name> = v * g / ||v||``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"),
                            self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> "WeightNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim)
                                                         .detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into magnitude ``<name>_g`` and direction ``<name>_v``
    (deprecated in PyTorch: FutureWarning, as there)."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def _pop_hook(module: Module, kind: type, name: str) -> Any:
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, kind) and hook.name == name:
            del module._forward_pre_hooks[k]
            return hook
    return None


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Fold ``<name>_g``/``<name>_v`` back into one parameter ``<name>``."""
    hook = _pop_hook(module, WeightNorm, name)
    if hook is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hook.remove(module)
    return module


class SpectralNorm:
    """The forward pre-hook: ``module.<name> = <name>_orig / sigma`` (power iteration on
    the buffers ``<name>_u``, ``<name>_v`` in training mode)."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = (name, dim,
                                                                  n_power_iterations, eps)

    def reshape_weight_to_matrix(self, weight: Any) -> Any:
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Any:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):  # updates the buffers in place
                    v.copy_(F.normalize(m.transpose(0, 1) @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(m @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = (u * (mat @ v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float
              ) -> "SpectralNorm":
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            mat = fn.reshape_weight_to_matrix(weight.detach())
            h, w = mat.shape
            u = F.normalize(A.randn(h, dtype=weight.dtype), dim=0, eps=eps)
            v = F.normalize(A.randn(w, dtype=weight.dtype), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before every forward (Miyato et al.,
    2018); ``dim`` defaults to 1 for transposed convolutions, else 0."""
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Make ``module.<name>`` a plain parameter again (the normalised value)."""
    hook = _pop_hook(module, SpectralNorm, name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook.remove(module)
    return module
