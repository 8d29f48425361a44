"""``nn.utils.parametrize``: a tensor of a module computed from other tensors on access.

``register_parametrization(module, "weight", P)`` moves the parameter to
``module.parametrizations.weight.original`` (state_dict key
``parametrizations.weight.original``, as PyTorch's) and makes ``module.weight`` a
property returning ``P(original)``; assigning to ``module.weight`` stores
``P.right_inverse(value)``. The module's class becomes a subclass
``Parametrized<Class>`` holding the property, so other instances are untouched.

>>> import autograd_compile as acg
>>> class Symmetric(acg.nn.Module):
...     def forward(self, X):
...         return X.triu() + X.triu(1).transpose(-1, -2)
>>> m = acg.nn.Linear(3, 3)
>>> _ = register_parametrization(m, "weight", Symmetric())
>>> bool((m.weight == m.weight.T).all()), sorted(m.state_dict())
(True, ['bias', 'parametrizations.weight.original'])
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "transfer_parametrizations_and_params",
           "ParametrizationList"]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Inside, each parametrized tensor is computed once and reused (for example across
    the time steps of an RNN); the cache is dropped on exit."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_value(target: Tensor, value: Tensor) -> None:
    """``target.set_(value)``: the parameter object stays, its value (and shape) changes."""
    target._set_data(value.detach()._data.astype(value.dtype))


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor and its unconstrained ``original``
    (``original0``, ``original1``, ... when ``right_inverse`` returns several tensors)."""

    def __init__(self, modules: list, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and new.dtype != original_dtype:
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original_dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype.name}")
            _set_value(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of type "
                                     f"{type(value).__name__}")
                if isinstance(original, Parameter):
                    value = Parameter(value.detach(), original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", value)
        if not unsafe:
            self._check_consistent(original_shape, original_dtype)

    def _check_consistent(self, shape: tuple, dtype: Any) -> None:
        z = self()
        if not isinstance(z, Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got "
                             f"{type(z).__name__}.")
        if z.dtype != dtype:
            raise ValueError(f"Registering a parametrization may not change the dtype of the "
                             f"tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: "
                             f"{dtype}\nparametrized dtype: {z.dtype.name}")
        if tuple(z.shape) != shape:
            raise ValueError(f"Registering a parametrization may not change the shape of the "
                             f"tensor, unless `unsafe` flag is enabled.\nunparametrized shape: "
                             f"{shape}\nparametrized shape: {tuple(z.shape)}")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` (through each ``right_inverse``, last first) as the original(s)."""
        with no_grad():
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not self.unsafe:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                _set_value(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, v in enumerate(value):
                    _set_value(getattr(self, f"original{i}"), v)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own (a subclass) to hold the parametrized properties."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        chain = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return chain()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = chain()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)`` (see the module doc);
    a second registration on the same name chains after the first. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor) or x.dtype != y.dtype or x.shape != y.shape:
                raise ValueError("Registering a parametrization may not change the shape or "
                                 "dtype of the tensor, unless `unsafe` flag is enabled.")
        chain.append(parametrization)
        chain.unsafe |= unsafe
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = chain
        _inject_property(module, tensor_name)
        return module
    raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
                     f"element with name '{tensor_name}'")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    chains = module.__dict__.get("_modules", {}).get("parametrizations")
    if chains is None or not isinstance(chains, ModuleDict):
        return False
    return len(chains) > 0 if tensor_name is None else tensor_name in chains


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True
                            ) -> Module:
    """Undo the parametrizations of ``tensor_name``: it becomes a plain parameter (or buffer)
    holding the parametrized value (``leave_parametrized=True``) or the original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            if value.dtype != original.dtype:
                raise ValueError("The parametrization changes the dtype of the tensor; "
                                 "leave_parametrized=True is not supported then.")
            _set_value(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            value = getattr(module, tensor_name)
        first = chain.original0
        original = Parameter(value.detach(), first.requires_grad) \
            if isinstance(first, Parameter) else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class as it was before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (of ``tensor_name``, or all) on
    ``to_module`` and copy their originals into it."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in from_module.parametrizations[name]:
            register_parametrization(to_module, name, p)
        src, dst = from_module.parametrizations[name], to_module.parametrizations[name]
        if src.is_tensor:
            _set_value(dst.original, src.original)
        else:
            for i in range(src.ntensors):
                _set_value(getattr(dst, f"original{i}"), getattr(src, f"original{i}"))
    return to_module
