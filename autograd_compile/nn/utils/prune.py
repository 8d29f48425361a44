"""``nn.utils.prune``: PyTorch's pruning reparametrisation.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, registers a 0/1 buffer
``<name>_mask`` and recomputes ``module.<name> = <name>_mask * <name>_orig`` in a forward
pre-hook, so the state_dict keys are PyTorch's (``weight_orig``, ``weight_mask``) and the
gradient reaches ``<name>_orig`` masked. Pruning the same tensor again folds the methods
into a :class:`PruningContainer`, which prunes only what is still unpruned; :func:`remove`
makes the pruning permanent.

Masks are chosen on the host (numpy). Ties among importance scores go the way PyTorch's CPU
``topk`` sends them: :func:`_topk_set` replays the libstdc++ selection (``nth_element`` or
``partial_sort``) that ``topk`` runs on CPU. The random methods draw from our generator
(``acg.manual_seed``), so their masks differ from PyTorch's for the same seed.

>>> import autograd_compile as acg
>>> m = acg.nn.Linear(4, 3)
>>> _ = l1_unstructured(m, "weight", amount=0.5)
>>> sorted(m.state_dict()), int(m.weight_mask.sum())
(['bias', 'weight_mask', 'weight_orig'], 6)
>>> _ = remove(m, "weight"); sorted(m.state_dict())
['bias', 'weight']
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Iterator

import numpy as np

from ...kernels import api as A
from ...tensor import Tensor
from ..module import Module

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


# -- host arrays ---------------------------------------------------------------------------------
def _host(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _like(arr: np.ndarray, ref: Tensor) -> Tensor:
    """``arr`` as a tensor with ``ref``'s dtype and device."""
    return A.tensor(np.ascontiguousarray(arr), dtype=ref.dtype, device=ref.device)


def _size(shape: Any) -> str:
    return f"torch.Size({list(shape)})"


# -- PyTorch's CPU topk, ties included -----------------------------------------------------------
class _Select:
    """libstdc++'s ``nth_element`` (introselect) and ``__heap_select`` over (key, index) pairs
    that compare by key alone: the index set they leave in front is the one ``topk`` returns."""

    def __init__(self, keys: list[int]) -> None:
        self.k, self.i = keys, list(range(len(keys)))

    def swap(self, a: int, b: int) -> None:
        k, i = self.k, self.i
        k[a], k[b], i[a], i[b] = k[b], k[a], i[b], i[a]

    def median_to_first(self, res: int, a: int, b: int, c: int) -> None:
        k = self.k
        if k[a] < k[b]:
            pick = b if k[b] < k[c] else (c if k[a] < k[c] else a)
        else:
            pick = a if k[a] < k[c] else (c if k[b] < k[c] else b)
        self.swap(res, pick)

    def partition(self, first: int, last: int) -> int:
        """``__unguarded_partition_pivot``: median of three to the front, Hoare partition."""
        self.median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
        k, pivot = self.k, self.k[first]
        lo, hi = first + 1, last
        while True:
            while k[lo] < pivot:
                lo += 1
            hi -= 1
            while pivot < k[hi]:
                hi -= 1
            if not lo < hi:
                return lo
            self.swap(lo, hi)
            lo += 1

    def insertion_sort(self, first: int, last: int) -> None:
        k, i = self.k, self.i
        for p in range(first + 1, last):
            vk, vi = k[p], i[p]
            if vk < k[first]:
                k[first + 1:p + 1], i[first + 1:p + 1] = k[first:p], i[first:p]
                k[first], i[first] = vk, vi
                continue
            q = p
            while vk < k[q - 1]:
                k[q], i[q] = k[q - 1], i[q - 1]
                q -= 1
            k[q], i[q] = vk, vi

    def adjust_heap(self, hole: int, n: int, vk: int, vi: int) -> None:
        k, i = self.k, self.i
        top = child = hole
        while child < (n - 1) // 2:
            child = 2 * (child + 1)
            if k[child] < k[child - 1]:
                child -= 1
            k[hole], i[hole], hole = k[child], i[child], child
        if n % 2 == 0 and child == (n - 2) // 2:
            child = 2 * (child + 1)
            k[hole], i[hole], hole = k[child - 1], i[child - 1], child - 1
        parent = (hole - 1) // 2
        while hole > top and k[parent] < vk:  # __push_heap
            k[hole], i[hole], hole = k[parent], i[parent], parent
            parent = (hole - 1) // 2
        k[hole], i[hole] = vk, vi

    def heap_select(self, middle: int) -> None:
        k, i = self.k, self.i
        for parent in range((middle - 2) // 2, -1, -1) if middle >= 2 else ():
            self.adjust_heap(parent, middle, k[parent], i[parent])
        for p in range(middle, len(k)):
            if k[p] < k[0]:
                vk, vi = k[p], i[p]
                k[p], i[p] = k[0], i[0]
                self.adjust_heap(0, middle, vk, vi)

    def nth_element(self, nth: int) -> None:
        first, last = 0, len(self.k)
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:  # introselect gives up on partitioning (never at the front here)
                self.heap_select(nth + 1)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition(first, last)
            first, last = (cut, last) if cut <= nth else (first, cut)
        self.insertion_sort(first, last)


def _topk_set(values: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The (sorted) indices ``torch.topk(values.view(-1), k, largest=largest)`` picks on CPU."""
    flat = values.reshape(-1)
    n = flat.size
    if k == 0:
        return np.zeros(0, np.int64)
    nan = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(n, bool)
    if not nan.any():  # the set is unique unless a tie straddles the k-th place
        order = np.argpartition(-flat if largest else flat, k - 1)
        kth = flat[order[k - 1]]
        beyond = (flat > kth) if largest else (flat < kth)
        if int(beyond.sum()) + int((flat == kth).sum()) == k:
            return np.sort(order[:k]).astype(np.int64)
    # dense ranks (ties equal, NaN greatest) turn topk's comparator into `<` on integers
    _, rank = np.unique(flat, return_inverse=True, equal_nan=True)
    sel = _Select((-rank if largest else rank).astype(np.int64).tolist())
    if k * 64 <= n:
        sel.heap_select(k)  # topk's partial_sort: the set is fixed once the heap is
    else:
        sel.nth_element(k - 1)
    return np.sort(np.asarray(sel.i[:k], dtype=np.int64))


# -- validation (PyTorch's types and messages) ---------------------------------------------------
def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_pruning_amount(amount: Any, tensor_size: int) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t: Tensor) -> None:
    if len(t.shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {_size(t.shape)} with {len(t.shape)} dims")


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {_size(t.shape)}")


def _compute_nparams_toprune(amount: Any, tensor_size: int) -> int:
    """An int is a count; a float a fraction, rounded half to even as Python's ``round``."""
    return int(amount) if isinstance(amount, numbers.Integral) else round(amount * tensor_size)


def _compute_norm(t: Tensor, n: Any, dim: int) -> Tensor:
    """The ``n``-norm of each slice along ``dim`` (over every other dim)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return A.norm(t.detach(), p=n, dim=dims)


def _channel_mask(shape: tuple, dim: int, keep: np.ndarray, dtype: Any) -> np.ndarray:
    """Ones on the channels ``keep`` (indices or booleans) along ``dim``, zeros elsewhere."""
    mask = np.zeros(shape, dtype)
    slc = [slice(None)] * len(shape)
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


# -- the methods ---------------------------------------------------------------------------------
class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` chooses the mask; ``apply`` reparametrises a
    module's tensor with it, and the instance stays on as the module's forward pre-hook."""

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t`` (same shape), starting from ``default_mask``'s pruning."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_mask * <name>_orig``: the pruned tensor, differentiable in the original."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
              **kwargs: Any) -> "BasePruningMethod":
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (joined with earlier pruning
        of the same tensor in a :class:`PruningContainer`) and register the hook."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter "
                                 f"{name} of {module}, got {_size(importance_scores.shape)} vs "
                                 f"{_size(orig.shape)}")
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = A.ones_like(orig.detach())
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # put the parameter back as it was
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` times its mask (computed from ``importance_scores``, default ``t``)."""
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                 f"got {_size(importance_scores.shape)} vs {_size(t.shape)}")
        default_mask = A.ones_like(t.detach()) if default_mask is None else default_mask
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes a parameter holding the pruned
        values (the same Parameter object as ``<name>_orig``); mask and original go."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _composite_method(cls: type, module: Module, name: str, *args: Any, **kwargs: Any
                      ) -> BasePruningMethod:
    """The new method, or the container that holds it after the tensor's earlier ones (their
    hook is taken off the module; ``apply`` registers the result)."""
    found = [(k, h) for k, h in module._forward_pre_hooks.items()
             if isinstance(h, BasePruningMethod) and h._tensor_name == name]
    if len(found) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of "
                             f"module {module}. Use a PruningContainer.")
    for k, _ in found:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not found:
        return method
    old = found[0][1]
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods on one tensor: the newest prunes what the earlier ones
    left (the unpruned entries, or the unpruned channels for structured methods)."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if args:  # PyTorch takes the name from a single method only (then AttributeError)
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Iterator[BasePruningMethod]:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: Any) -> Any:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The newest method's mask computed on the still-unpruned part of ``t`` and written
        back into ``default_mask`` (cast to ``t``'s dtype, as PyTorch does)."""
        method = self._pruning_methods[-1]
        arr, mask = _host(t), _host(default_mask)
        new_mask = mask.astype(arr.dtype)
        slc = _unpruned(method, arr.ndim, mask)
        part = method.compute_mask(_like(arr[slc], t), default_mask=_like(mask[slc], default_mask))
        new_mask[slc] = _host(part).astype(new_mask.dtype)
        return _like(new_mask, t)


def _unpruned(method: BasePruningMethod, ndim: int, mask: np.ndarray) -> Any:
    """The index of what ``method`` may still prune, by its ``PRUNING_TYPE``."""
    kind = method.PRUNING_TYPE
    if kind == "unstructured":
        return mask == 1
    if kind == "global":
        return (slice(None),) * ndim
    if kind != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the '
                             "attribute `dim` defined.")
    dim = method.dim + ndim if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {ndim}")
    slc: list[Any] = [slice(None)] * ndim
    slc[dim] = mask.sum(axis=tuple(d for d in range(ndim) if d != dim)) != 0
    return tuple(slc)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (the reparametrisation alone)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Zero the ``amount`` entries ``_drop`` picks (an int: a count; a float: a fraction)."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: int | float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _drop(self, t: Tensor, k: int) -> np.ndarray:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.numel()
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        mask = _host(default_mask).copy()
        if k != 0:
            np.put(mask, self._drop(t, k), 0)
        return _like(mask, default_mask)


class RandomUnstructured(_Unstructured):
    """Zero ``amount`` entries chosen uniformly at random (our generator, not PyTorch's)."""

    def _drop(self, t: Tensor, k: int) -> np.ndarray:
        return _topk_set(_host(A.rand_like(t.detach())), k, largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float  # type: ignore[override]
              ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Zero the ``amount`` entries of smallest absolute value (ties as PyTorch's CPU topk)."""

    def _drop(self, t: Tensor, k: int) -> np.ndarray:
        return _topk_set(np.abs(_host(t)), k, largest=False)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Zero ``amount`` whole channels along ``dim``, those ``_keep`` leaves out."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount, self.dim = amount, dim

    def _keep(self, t: Tensor, size: int, k: int) -> np.ndarray:
        raise NotImplementedError

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        keep = self._keep(t, size, k)
        if k == 0:
            return default_mask
        mask = _channel_mask(tuple(t.shape), self.dim, keep, _host(t).dtype)
        mask *= _host(default_mask).astype(mask.dtype)
        return _like(mask, t)


class RandomStructured(_Structured):
    """Zero ``amount`` channels along ``dim`` chosen at random (our generator)."""

    def _keep(self, t: Tensor, size: int, k: int) -> np.ndarray:
        if k == 0:
            return np.ones(size, bool)
        prob = _host(A.rand(size))
        return prob > np.sort(prob)[k - 1]  # above the k-th smallest, as PyTorch's kthvalue

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,  # type: ignore[override]
              dim: int = -1) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Zero the ``amount`` channels along ``dim`` of smallest ``n``-norm (``n`` as
    ``torch.norm``'s ``p``: a number, ``inf``, ``-inf`` or ``'fro'``)."""

    def __init__(self, amount: int | float, n: Any, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _keep(self, t: Tensor, size: int, k: int) -> np.ndarray:
        return _topk_set(_host(_compute_norm(t, self.n, self.dim)), size - k, largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n: Any,  # type: ignore
              dim: int, importance_scores: Tensor | None = None) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with any earlier pruning)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {_size(default_mask.shape)} must match "
                                 f"self.mask shape {_size(self.mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor  # type: ignore[override]
              ) -> BasePruningMethod:
        return super().apply(module, name, mask=mask)


# -- the functions -------------------------------------------------------------------------------
def identity(module: Module, name: str) -> Module:
    """Reparametrise ``module.<name>`` with an all-ones mask (prunes nothing)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random entries of ``module.<name>``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float,
                    importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of least ``|importance_scores|``.

    >>> import autograd_compile as acg
    >>> m = l1_unstructured(acg.nn.Linear(2, 1), "weight", 1,
    ...                     importance_scores=acg.tensor([[3.0, -1.0]]))
    >>> m.weight_mask.tolist()
    [[1.0, 0.0]]
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n: Any, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels along ``dim`` of least ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable[tuple[Module, str]], pruning_method: type,
                        importance_scores: dict | None = None, **kwargs: Any) -> None:
    """Prune the ``(module, name)`` tensors together, as one vector: ``pruning_method``
    (an unstructured method class, built with ``kwargs``) picks across all of them.

    >>> import autograd_compile as acg
    >>> a, b = acg.nn.Linear(3, 2), acg.nn.Linear(2, 2)
    >>> global_unstructured([(a, "weight"), (b, "weight")], L1Unstructured, amount=5)
    >>> int(a.weight_mask.sum() + b.weight_mask.sum())
    5
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = A.cat([importance_scores.get((m, n), getattr(m, n)).detach().reshape(-1)
                    for m, n in parameters])
    default_mask = A.cat([_mask_or_ones(m, n).reshape(-1) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + n].view_as(param))
        pointer += n


def _mask_or_ones(module: Module, name: str) -> Tensor:
    mask = getattr(module, name + "_mask", None)
    return A.ones_like(getattr(module, name).detach()) if mask is None else mask.detach()


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` is a parameter again,
    holding the pruned values; ``<name>_orig``, ``<name>_mask`` and the hook go."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or any submodule carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod) for _, sub in module.named_modules()
               for hook in sub._forward_pre_hooks.values())
