"""The Python surface of sorting, selection, sampling and the other tensor ops real
programs call (``acg.topk``, ``acg.multinomial``, ``acg.einsum`` ...), PyTorch's signatures.

>>> import autograd_compile as acg
>>> v, i = acg.sort(acg.tensor([3.0, 1.0, 2.0]), descending=True)
>>> v.tolist(), i.tolist()
([3.0, 2.0, 1.0], [0, 2, 1])
"""
from __future__ import annotations

import builtins
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile.tracing.symbolic_shapes import SymInt
from autograd_compile.tensor import Tensor

from . import factories as F
from . import index_reduce as X
from . import indexing as I
from . import random as R
from . import rearrange as RA
from . import reductions as RD
from . import shape as S
from . import search as SE
from . import sorting as O
from .elementwise import nan_to_num as _nan_to_num_op, nan_to_num_ as _nan_to_num_op_
from ._dtypes import BOOL, as_dtype, category, result_type
from ._host import reduced
from ._shapes import broadcast_shapes, shapes_equal
from .api import _leaf, _sizes, return_types, tensor
from .views import inplace_method


class _topk(NamedTuple):
    values: Tensor
    indices: Tensor


class _sort(NamedTuple):
    values: Tensor
    indices: Tensor


_topk.__name__ = _topk.__qualname__ = "topk"
_sort.__name__ = _sort.__qualname__ = "sort"
return_types.topk, return_types.sort = _topk, _sort  # torch.return_types.topk / .sort


# -- triangles, one-hot, comparisons, contraction ------------------------------------------------
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return S.tril(input, diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (the rest zero); ``diagonal`` shifts it."""
    return S.triu(input, diagonal)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot vectors along a new last dim; ``num_classes=-1``: max value + 1
    (read from the data, so eager only).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.one_hot(acg.tensor([0, 2])).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    if num_classes == -1 and isinstance(tensor, Tensor) and type(tensor) is Tensor:
        if category(tensor.dtype) != 1:
            raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor, "
                               f"got {tensor.dtype.name}")
        num_classes = builtins.int(reduced(tensor._data, jnp.max)) + 1 if tensor.numel() else 0
    return I.one_hot(tensor, num_classes)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: builtins.bool = False) -> Tensor:
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (same dtypes, broadcast)."""
    return O.isclose(input, other, builtins.float(rtol), builtins.float(atol), equal_nan)


def einsum(equation: str, *operands: Any) -> Tensor:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)``, with "..." and the implicit
    output form; differentiable in every operand.

    >>> import autograd_compile as acg
    >>> acg.einsum("ij,j->i", acg.ones(2, 3), acg.ones(3)).tolist()
    [3.0, 3.0]
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return O.einsum(equation, list(operands))


# -- sorting and selection by value ----------------------------------------------------------------
def topk(input: Tensor, k: int, dim: int = -1, largest: builtins.bool = True,
         sorted: builtins.bool = True) -> _topk:
    """The ``k`` largest (or smallest) entries along ``dim`` as (values, indices)."""
    return _topk(*O.topk(input, k, dim, largest, sorted))


def sort(input: Tensor, dim: int = -1, descending: builtins.bool = False,
         stable: builtins.bool = False) -> _sort:
    """Sorted values and their original positions along ``dim`` (always stable here)."""
    return _sort(*O.sort(input, dim, descending, stable))


def argsort(input: Tensor, dim: int = -1, descending: builtins.bool = False,
            stable: builtins.bool = False) -> Tensor:
    """The positions that sort ``input`` along ``dim``."""
    return O.sort(input, dim, descending, stable)[1]


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The entries where ``mask`` holds (both broadcast), as a 1-D tensor; eager only (its
    length is data)."""
    if mask.dtype != BOOL:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype.name}")
    shape = list(broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    x = input if shapes_equal(input.shape, shape) else S.expand(input, shape)
    m = mask if shapes_equal(mask.shape, shape) else S.expand(mask, shape)
    return I.getitem(x, m).reshape(-1)


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor or number) written at ``index`` along
    ``dim``; ``reduce="add"|"multiply"`` combines instead (as ``scatter_reduce``'s "sum"/"prod",
    gradients included).

    >>> import autograd_compile as acg
    >>> acg.ones(3).scatter(0, acg.tensor([2, 2]), 3.0, reduce="multiply").tolist()
    [1.0, 1.0, 9.0]
    """
    src = value if src is None else src
    if reduce is not None:
        return X.scatter_reduce(input, dim, index, *_legacy_reduce(input, index, src, reduce))
    if isinstance(src, Tensor):
        return I.scatter(input, dim, index, src)
    return I.scatter_value(input, dim, index, src)


def _scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
              reduce: str | None = None) -> Tensor:
    src = value if src is None else src
    if reduce is not None:
        return X.scatter_reduce_(self, dim, index, *_legacy_reduce(self, index, src, reduce))
    if isinstance(src, Tensor):
        return I.scatter_(self, dim, index, src)
    return I.scatter_value_(self, dim, index, src)


_LEGACY_REDUCE = {"add": "sum", "multiply": "prod"}


def _legacy_reduce(input: Tensor, index: Tensor, src: Any, reduce: str) -> tuple[Tensor, str]:
    """scatter(reduce=) as scatter_reduce's (src, reduction); a number fills index's shape."""
    if reduce not in _LEGACY_REDUCE:
        raise RuntimeError(f"reduce argument must be either add or multiply., got {reduce!r}")
    if not isinstance(src, Tensor):
        src = F.full(list(index.shape), src, dtype=input.dtype)
    return src, _LEGACY_REDUCE[reduce]


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: builtins.bool = True) -> Tensor:
    """``input`` with each ``src`` entry combined into the entry ``index`` names along ``dim``
    (as in ``gather``), by ``reduce``: "sum", "prod", "mean", "amax" or "amin";
    ``include_self=False`` leaves ``input``'s own values out wherever something lands.

    >>> import autograd_compile as acg
    >>> x = acg.tensor([1.0, 2.0, 3.0])
    >>> x.scatter_reduce(0, acg.tensor([0, 0, 2]), acg.tensor([5.0, 6.0, 7.0]), "mean",
    ...                  include_self=False).tolist()
    [5.5, 2.0, 7.0]
    """
    return X.scatter_reduce(input, dim, index, src, reduce, include_self=include_self)


def _scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                     include_self: builtins.bool = True) -> Tensor:
    return X.scatter_reduce_(self, dim, index, src, reduce, include_self=include_self)


# -- writes of whole slices along a dim -----------------------------------------------------------
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: Any = 1) -> Tensor:
    """``input`` with ``alpha * source[i]`` added to slice ``index[i]`` along ``dim``
    (repeated indices accumulate).

    >>> import autograd_compile as acg
    >>> acg.zeros(3, 2).index_add(0, acg.tensor([2, 0, 2]), acg.ones(3, 2), alpha=2).tolist()
    [[2.0, 2.0], [0.0, 0.0], [4.0, 4.0]]
    """
    return X.index_add(input, dim, index, source, alpha=alpha)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``input`` with slice ``index[i]`` along ``dim`` replaced by ``source[i]``.

    >>> import autograd_compile as acg
    >>> acg.zeros(3).index_copy(0, acg.tensor([2, 0]), acg.tensor([5.0, 6.0])).tolist()
    [6.0, 0.0, 5.0]
    """
    return X.index_copy(input, dim, index, source)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number, or a 0-d
    tensor, which then gets a gradient).

    >>> import autograd_compile as acg
    >>> acg.zeros(2, 3).index_fill(1, acg.tensor([0, 2]), -1.0).tolist()
    [[-1.0, 0.0, -1.0], [-1.0, 0.0, -1.0]]
    """
    if isinstance(value, Tensor):
        return X.index_fill_tensor(input, dim, index, value)
    return X.index_fill(input, dim, index, value)


def _index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    if isinstance(value, Tensor):
        return X.index_fill_tensor_(self, dim, index, value)
    return X.index_fill_(self, dim, index, value)


# -- rearranging along a dim ---------------------------------------------------------------------
def _ints(v: Any) -> list:
    return [v] if isinstance(v, (builtins.int, SymInt)) else list(v)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Entries shifted by ``shifts`` along ``dims`` (wrapping around); no ``dims``: the
    flattened tensor is rolled, then reshaped back.

    >>> import autograd_compile as acg
    >>> acg.tensor([[1, 2], [3, 4]]).roll(1, 0).tolist(), acg.tensor([1, 2, 3]).roll(-1).tolist()
    ([[3, 4], [1, 2]], [2, 3, 1])
    """
    return RA.roll(input, _ints(shifts), [] if dims is None else _ints(dims))


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: Any = None) -> Tensor:
    """Each entry repeated ``repeats`` times along ``dim`` (None: of the flattened tensor);
    ``repeats`` is an int or a tensor (one count per entry, or one for all). A tensor of
    repeats makes the output length data: read from it eagerly; under fake or traced tensors
    pass ``output_size`` (the total) or get a RuntimeError saying so.
    ``repeat_interleave(repeats)`` alone repeats the positions 0, 1, ...

    >>> import autograd_compile as acg
    >>> acg.repeat_interleave(acg.tensor([[1, 2], [3, 4]]), acg.tensor([1, 2]), dim=0).tolist()
    [[1, 2], [3, 4], [3, 4]]
    >>> acg.repeat_interleave(acg.tensor([2, 0, 1])).tolist()
    [0, 0, 2]
    """
    if repeats is None:
        repeats, dim = input, 0
        input = F.arange(0, input.shape[0] if input.ndim else 1, 1, dtype=np.dtype("int64"))
    if not isinstance(repeats, Tensor):
        return RA.repeat_interleave_int(input, repeats, dim, output_size=output_size)
    if output_size is None and type(repeats) is Tensor and not isinstance(
            repeats.__jax_array__(), jax.core.Tracer):  # concrete: the total is readable
        output_size = _repeat_total(input, repeats, dim)
    return RA.repeat_interleave(input, repeats, dim, output_size=output_size)


def _repeat_total(input: Tensor, repeats: Tensor, dim: int | None) -> int:
    counts = np.asarray(repeats)
    if dim is None:
        n = input.numel()
    else:
        n = input.shape[RA.wrap_dim(dim, input.ndim)] if input.ndim else 1
    return builtins.int(counts.sum()) * (n if counts.size == 1 else 1)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """``gather`` along ``dim`` after broadcasting ``input`` and ``indices`` outside it
    (no ``dim``: both flattened).

    >>> import autograd_compile as acg
    >>> x = acg.tensor([[10, 30, 20], [60, 40, 50]])
    >>> acg.take_along_dim(x, x.argmax(1, keepdim=True), 1).tolist()
    [[30], [60]]
    """
    return RA.take_along_dim(input, indices, dim)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``, after joining ``prepend``/``append``
    (bool tensors: logical xor).

    >>> import autograd_compile as acg
    >>> acg.diff(acg.tensor([1, 3, 6]), prepend=acg.tensor([0])).tolist()
    [1, 2, 3]
    """
    return RA.diff(input, n, dim, prepend, append)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim`` (integers accumulate in int64); its gradient is exact
    where the input has zeros.

    >>> import autograd_compile as acg
    >>> acg.tensor([2.0, 3.0, 0.0, 4.0]).cumprod(0).tolist()
    [2.0, 6.0, 0.0, 0.0]
    """
    return RD.cumprod(input, dim, dtype=as_dtype(dtype))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (by default 0 and the
    dtype's largest and lowest finite values).

    >>> import autograd_compile as acg
    >>> acg.tensor([float("nan"), float("inf"), 1.0]).nan_to_num(posinf=9.0).tolist()
    [0.0, 9.0, 1.0]
    """
    return _nan_to_num_op(input, *_nan_args(nan, posinf, neginf))


def _nan_args(nan: Any, posinf: Any, neginf: Any) -> tuple:
    return tuple(None if v is None else builtins.float(v) for v in (nan, posinf, neginf))


# -- positions by value (no gradient) ------------------------------------------------------------
def _as_values(values: Any, like: Tensor) -> Tensor:
    """A Python number searched for: a 0-d tensor of the dtype it promotes to with ``like``."""
    if isinstance(values, Tensor):
        return values
    return F.full([], values, dtype=result_type(like, values))


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: builtins.bool = False,
                 right: builtins.bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """Where each value would be inserted into the innermost dim of ``sorted_sequence`` to
    keep it sorted (first such place; ``right=True`` or ``side="right"``: last); an N-D
    sequence searches each row with the values of the matching row. int64 (``out_int32``:
    int32), no gradient.

    >>> import autograd_compile as acg
    >>> acg.searchsorted(acg.tensor([1, 3, 5]), acg.tensor([3, 6]), right=True).tolist()
    [2, 3]
    """
    return SE.searchsorted(sorted_sequence, _as_values(values, sorted_sequence),
                           out_int32=out_int32, right=right, side=side, sorter=sorter)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: builtins.bool = False,
              right: builtins.bool = False) -> Tensor:
    """The bucket of each entry: i with boundaries[i-1] < x <= boundaries[i] (``right=True``:
    boundaries[i-1] <= x < boundaries[i]); ``boundaries`` 1-D and sorted.

    >>> import autograd_compile as acg
    >>> acg.bucketize(acg.tensor([0.5, 2.0, 9.0]), acg.tensor([1.0, 2.0, 3.0])).tolist()
    [0, 1, 3]
    """
    return SE.bucketize(_as_values(input, boundaries), boundaries, out_int32=out_int32,
                        right=right)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0..max occurs in a 1-D non-negative integer tensor (with
    ``weights``: their sums); at least ``minlength`` long. Eager only: the length is data.

    >>> import autograd_compile as acg
    >>> acg.tensor([1, 1, 3]).bincount(acg.tensor([0.5, 1.0, 2.0]), minlength=5).tolist()
    [0.0, 1.5, 0.0, 2.0, 0.0]
    """
    return SE.bincount(input, weights, minlength)


# -- sampling -------------------------------------------------------------------------------------
def multinomial(input: Tensor, num_samples: int, replacement: builtins.bool = False, *,
                generator: Any = None) -> Tensor:
    """Category indices drawn from each row of (unnormalised) probabilities ``input``.

    >>> import autograd_compile as acg
    >>> acg.multinomial(acg.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    return R.multinomial(input, num_samples, builtins.bool(replacement), R.key_of(generator))


def bernoulli(input: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 draws, 1 with probability ``input`` (or with the number ``p``), in input's dtype."""
    key = R.key_of(generator)
    if p is None:
        return R.bernoulli(input, key)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got "
                           f"p={p}")
    return R.bernoulli_p(input, builtins.float(p), key)


def randperm(n: int, *, generator: Any = None, dtype: Any = None,
             requires_grad: builtins.bool = False, device: Any = None) -> Tensor:
    """A random permutation of 0..n-1 (int64)."""
    return _leaf(R.randperm(n, R.key_of(generator), dtype=as_dtype(dtype)), requires_grad,
                 device)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Sequence[Any] | None = None, *,
           generator: Any = None, dtype: Any = None, requires_grad: builtins.bool = False,
           device: Any = None) -> Tensor:
    """Normal samples: ``normal(mean_tensor, std_tensor)`` (broadcast) or
    ``normal(mean, std, size)``. Like PyTorch, no gradient flows to ``mean``/``std``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        shape = broadcast_shapes(*(tuple(v.shape) for v in (mean, std) if isinstance(v, Tensor)))
        like = mean if isinstance(mean, Tensor) else std
        noise = R.normal_sample(F.zeros(list(shape), dtype=like.dtype), R.key_of(generator))
        return noise * _detached(std) + _detached(mean)
    if size is None:
        raise TypeError("normal() with float mean and std needs a size")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    out = F.randn(_sizes((size,)), R.key_of(generator), dtype=as_dtype(dtype))
    out = out * std + R.both_parts(mean, out)
    return _leaf(out, requires_grad, device)


def _detached(v: Any) -> Any:
    return v.detach() if isinstance(v, Tensor) else v


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None,
             requires_grad: builtins.bool = False, device: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (float32)."""
    return _leaf(F.linspace(start, end, steps, dtype=as_dtype(dtype)), requires_grad, device)


# -- random state and numpy -----------------------------------------------------------------------
def seed() -> int:
    """Seed the global generator from the operating system; returns the seed."""
    return R.default_generator.seed()


def get_rng_state() -> Tensor:
    """The global generator's state (a uint8 tensor)."""
    return R.default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the global generator's state from :func:`get_rng_state`."""
    R.default_generator.set_state(new_state)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor with the array's values and dtype (a copy: jax arrays are immutable)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return tensor(ndarray)


# -- Tensor methods of these functions ------------------------------------------------------------
def tensor_methods() -> dict[str, Any]:
    """Methods for ``Tensor`` (installed by _methods.install_tensor_methods)."""
    m: dict[str, Any] = {n: globals()[n] for n in (
        "tril", "triu", "topk", "sort", "argsort", "isclose", "masked_select", "scatter",
        "multinomial", "bernoulli", "scatter_reduce", "index_add", "index_copy",
        "index_fill", "roll", "repeat_interleave", "take_along_dim", "diff", "cumprod",
        "nan_to_num", "bincount")}
    m.update({
        "tril_": inplace_method(S.tril_), "triu_": inplace_method(S.triu_),
        "scatter_": inplace_method(_scatter_),
        "scatter_add_": inplace_method(I.scatter_add_),
        "scatter_reduce_": inplace_method(_scatter_reduce_),
        "index_add_": inplace_method(lambda self, dim, index, source, *, alpha=1: X.index_add_(
            self, dim, index, source, alpha=alpha)),
        "index_copy_": inplace_method(X.index_copy_),
        "index_fill_": inplace_method(_index_fill_),
        "cumprod_": inplace_method(lambda self, dim, *, dtype=None: RD.cumprod_(
            self, dim, dtype=as_dtype(dtype))),
        "nan_to_num_": inplace_method(lambda self, nan=0.0, posinf=None, neginf=None:
                                      _nan_to_num_op_(self, *_nan_args(nan, posinf, neginf))),
        "msort": lambda self: sort(self, 0).values,
    })
    return m


__all__ = ["tril", "triu", "isclose", "einsum", "topk", "sort", "argsort", "masked_select",
           "scatter", "multinomial", "bernoulli", "randperm", "normal", "linspace", "seed",
           "get_rng_state", "set_rng_state", "from_numpy", "scatter_reduce", "index_add",
           "index_copy", "index_fill", "roll", "repeat_interleave", "take_along_dim", "diff",
           "cumprod", "nan_to_num", "searchsorted", "bucketize", "bincount"]
