"""PyTorch's ``torch.distributed.fsdp.wrap``: auto-wrap policies, ``enable_wrap`` and
``wrap``, with PyTorch's signatures (so ``functools.partial(transformer_auto_wrap_policy,
transformer_layer_cls={Block})`` works as in PyTorch's tutorials).

A policy picks the submodules that become FSDP units of their own. PyTorch shards each
unit separately; here the root's DDP shards every parameter, and the inner units are
transparent wrappers (they keep PyTorch's module tree: ``isinstance(model.layers[0], FSDP)``,
their own mixed precision), so wrapping more or fewer of them changes no result.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Callable, Iterable, Iterator

from ...nn import ModuleDict, ModuleList, MultiheadAttention
from ...nn.module import Module


def always_wrap_policy(*args: Any, **kwargs: Any) -> bool:
    """Wrap every submodule."""
    return True


def _module_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                        module_classes: set[type]) -> bool:
    """Recurse everywhere; wrap the instances of ``module_classes``."""
    return True if recurse else isinstance(module, tuple(module_classes))


def lambda_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                            lambda_fn: Callable[[Module], bool]) -> bool:
    """Recurse everywhere; wrap where ``lambda_fn(module)`` is true."""
    return True if recurse else bool(lambda_fn(module))


def transformer_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: set[type]) -> bool:
    """Recurse everywhere; wrap the instances of ``transformer_layer_cls`` (the blocks).

    >>> import functools, autograd_compile as acg
    >>> policy = functools.partial(transformer_auto_wrap_policy,
    ...                            transformer_layer_cls={acg.nn.Linear})
    >>> policy(module=acg.nn.Linear(2, 2), recurse=False, nonwrapped_numel=6)
    True
    """
    return _module_wrap_policy(module, recurse, nonwrapped_numel, transformer_layer_cls)


def size_based_auto_wrap_policy(module: Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8),
                                force_leaf_modules: set[type] | None = None,
                                exclude_wrap_modules: set[type] | None = None) -> bool:
    """Wrap a module once at least ``min_num_params`` of its parameters are not yet in a
    wrapped child; never below ``force_leaf_modules``, never an ``exclude_wrap_modules``."""
    if force_leaf_modules is None:
        force_leaf_modules = size_based_auto_wrap_policy.FORCE_LEAF_MODULES  # type: ignore
    if exclude_wrap_modules is None:
        exclude_wrap_modules = size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES  # type: ignore
    large = nonwrapped_numel >= min_num_params
    skip = force_leaf_modules if recurse else exclude_wrap_modules
    return large and not isinstance(module, tuple(skip))


size_based_auto_wrap_policy.EXCLUDE_WRAP_MODULES = {ModuleList, ModuleDict}  # type: ignore
size_based_auto_wrap_policy.FORCE_LEAF_MODULES = {MultiheadAttention}  # type: ignore


def _or_policy(module: Module, recurse: bool, nonwrapped_numel: int,
               policies: Iterable[Callable]) -> bool:
    return any(p(module=module, recurse=recurse, nonwrapped_numel=nonwrapped_numel)
               for p in policies)


class _Policy:
    """PyTorch's policy objects are also callables with the functions' signature."""

    def __call__(self, module: Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        raise NotImplementedError


class ModuleWrapPolicy(_Policy):
    """Wrap every instance of the given module classes."""

    def __init__(self, module_classes: Iterable[type]) -> None:
        self._module_classes = set(module_classes)

    def __call__(self, module: Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return _module_wrap_policy(module, recurse, -1, self._module_classes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._module_classes})"


class CustomPolicy(_Policy):
    """Wrap where ``lambda_fn(module)`` returns True or a dict of keyword arguments (the
    unit's own FSDP arguments)."""

    def __init__(self, lambda_fn: Callable[[Module], bool | dict]) -> None:
        self._lambda_fn = lambda_fn

    def __call__(self, module: Module, recurse: bool, *args: Any, **kwargs: Any) -> bool:
        return True if recurse else bool(self._lambda_fn(module))

    def overrides(self, module: Module) -> dict:
        result = self._lambda_fn(module)
        return result if isinstance(result, dict) else {}


# -- wrapping ---------------------------------------------------------------------------

def _numel(module: Module) -> int:
    return sum(math.prod(p.shape) for p in module.parameters())


def _auto_wrap(root: Module, policy: Callable, ignored_modules: Iterable[Module] | None,
               wrapper_cls: type, kwargs: dict) -> None:
    """Replace each submodule of ``root`` the policy picks by ``wrapper_cls(submodule,
    **kwargs)`` (children first, as PyTorch's recursive wrap: a unit's size counts only
    what its wrapped children left)."""
    ignored = {id(m) for top in ignored_modules or () for m in top.modules()}

    def wrap_one(module: Module) -> Module:
        extra = policy.overrides(module) if isinstance(policy, CustomPolicy) else {}
        return wrapper_cls(module, **{**kwargs, **getattr(module, "_wrap_overrides", {}), **extra})

    def visit(module: Module, only_children: bool) -> tuple[Module, int]:
        numel = _numel(module)
        if not policy(module=module, recurse=True, nonwrapped_numel=numel):
            return module, 0
        done = 0
        for name, child in list(module.named_children()):
            if isinstance(child, wrapper_cls) or id(child) in ignored:
                continue
            new, n = visit(child, False)
            if new is not child:
                setattr(module, name, new)
            done += n
        if not only_children and policy(module=module, recurse=False,
                                         nonwrapped_numel=numel - done):
            return wrap_one(module), numel
        return module, done
    visit(root, True)


class _WrapContext:
    active = False
    wrapper_cls: Any = None
    kwargs: dict = {}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Any, **wrapper_kwargs: Any) -> Iterator[None]:
    """Inside, :func:`wrap` wraps with ``wrapper_cls(module, **wrapper_kwargs)``.

    >>> import autograd_compile as acg
    >>> from autograd_compile.distributed.fsdp import FullyShardedDataParallel as FSDP
    >>> with enable_wrap(wrapper_cls=FSDP):
    ...     layer = wrap(acg.nn.Linear(2, 2))
    >>> type(layer).__name__, type(wrap(acg.nn.Linear(2, 2))).__name__
    ('FullyShardedDataParallel', 'Linear')
    """
    if _WrapContext.active:
        raise NotImplementedError("You are already within an autowrap context and we "
                                  "currently do not supported nested autowrap.")
    _WrapContext.active, _WrapContext.wrapper_cls = True, wrapper_cls
    _WrapContext.kwargs = dict(wrapper_kwargs)
    try:
        yield
    finally:
        _WrapContext.active, _WrapContext.wrapper_cls, _WrapContext.kwargs = False, None, {}


def wrap(module: Module, **wrap_overrides: Any) -> Module:
    """``module`` wrapped by the :func:`enable_wrap` context's wrapper (``module`` itself
    outside one)."""
    if not _WrapContext.active:
        return module
    kwargs = {**_WrapContext.kwargs, **wrap_overrides,
              **getattr(module, "_wrap_overrides", {})}
    return _WrapContext.wrapper_cls(module, **kwargs)


__all__ = ["always_wrap_policy", "lambda_auto_wrap_policy", "transformer_auto_wrap_policy",
           "size_based_auto_wrap_policy", "enable_wrap", "wrap", "CustomPolicy",
           "ModuleWrapPolicy"]
