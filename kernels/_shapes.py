"""Size arithmetic shared by shape rules and kernels, with PyTorch's error messages.

Sizes may be ints or SymInts (symbolic sizes of compiled autograd), so everything
here uses only arithmetic and comparisons on sizes: never ``int(size)``, never numpy.

>>> broadcast_shapes((2, 1, 3), (4, 1))
(2, 4, 3)
>>> infer_size([-1, 6], 12), reduced_shape((2, 3, 4), (1,), keepdim=True)
((2, 6), (2, 1, 4))
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

Shape = tuple  # of int | SymInt


def is_tensor_like(v: Any) -> bool:
    """A Tensor, FakeTensor, jax array or TensorMeta (anything with shape and dtype)."""
    return hasattr(v, "shape") and hasattr(v, "dtype")


def shape_of(v: Any) -> Shape:
    """A tensor's shape; a Python scalar broadcasts like a 0-d tensor."""
    return tuple(v.shape) if is_tensor_like(v) else ()


def shapes_equal(a: Iterable[Any], b: Iterable[Any]) -> bool:
    """Shapes equal, ranks compared first: a tuple ``==`` compares elements before lengths,
    which with SymInts would guard on sizes of unrelated dims ((s0, s1) vs (s1,)).

    >>> shapes_equal((2, 3), (3,)), shapes_equal((2, 3), [2, 3])
    (False, True)
    """
    a, b = tuple(a), tuple(b)
    return len(a) == len(b) and a == b


def numel(shape: Iterable[Any]) -> Any:
    n = 1
    for s in shape:
        n = n * s
    return n


def wrap_dim(dim: int, ndim: int) -> int:
    """A dim in ``[-ndim, ndim)`` as a non-negative index (0-d tensors accept -1 and 0)."""
    top = max(ndim, 1)
    if not -top <= dim < top:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-top}, "
                           f"{top - 1}], but got {dim})")
    return dim % top


def wrap_dims(dims: int | Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Reduction dims: None or [] means every dim; duplicates are an error."""
    if dims is None:
        return tuple(range(ndim))
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not dims:
        return tuple(range(ndim))
    out = tuple(wrap_dim(d, ndim) for d in dims)
    for i, d in enumerate(out):
        if d in out[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return tuple(d for d in out if d < ndim)  # a 0-d tensor's dim 0 reduces nothing


def broadcast_shapes(*shapes: Shape) -> Shape:
    """PyTorch broadcasting, with PyTorch's message naming the first mismatch."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-1, -ndim - 1, -1):  # from the last dim, as PyTorch reports mismatches
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(size, int) and size == 1:
                size = d
            elif d != size:
                raise RuntimeError(f"The size of tensor a ({size}) must match the size of "
                                   f"tensor b ({d}) at non-singleton dimension {ndim + i}")
        out.append(size)
    return tuple(reversed(out))


def infer_size(size: Sequence[Any], total: Any) -> Shape:
    """``view``/``reshape`` sizes with at most one -1, checked against the element count."""
    size = tuple(size)
    holes = [i for i, s in enumerate(size) if isinstance(s, int) and s == -1]
    if len(holes) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = numel(s for i, s in enumerate(size) if i not in holes)
    if holes:
        if known == 0 or total % known != 0:
            raise RuntimeError(f"shape '{list(size)}' is invalid for input of size {total}")
        size = size[:holes[0]] + (total // known,) + size[holes[0] + 1:]
    elif known != total:
        raise RuntimeError(f"shape '{list(size)}' is invalid for input of size {total}")
    for s in size:
        if isinstance(s, int) and s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
    return size


def reduced_shape(shape: Shape, dims: Sequence[int], keepdim: bool) -> Shape:
    """The shape left after reducing ``dims`` (already wrapped)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def expand_shape(shape: Shape, size: Sequence[Any]) -> Shape:
    """Target of ``expand``: -1 keeps a size, new leading dims are allowed."""
    size = tuple(size)
    if len(size) < len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(size)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({len(shape)})")
    lead = len(size) - len(shape)
    out = []
    for i, s in enumerate(size):
        old = shape[i - lead] if i >= lead else None
        if isinstance(s, int) and s == -1:
            if old is None:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing "
                                   "dimension")
            s = old
        elif old is not None and not (isinstance(old, int) and old == 1) and old != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({old}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(size)}.  Tensor sizes: {list(shape)}")
        out.append(s)
    return tuple(out)


def slice_length(size: Any, start: Any, end: Any, step: Any) -> tuple[Any, Any, Any]:
    """(start, end, length) of ``x[start:end:step]`` along a dim of ``size`` (step > 0)."""
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start = 0 if start < 0 else (size if start > size else start)
    end = start if end < start else (size if end > size else end)
    return start, end, (end - start + step - 1) // step


def split_sizes(size: Any, split_size: int) -> list[Any]:
    """``split(split_size)``: equal pieces, the last one possibly smaller."""
    if split_size <= 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size="
                           f"{split_size}")
    full, rest = size // split_size, size % split_size
    return [split_size] * full + ([rest] if rest != 0 else []) if size != 0 else [0]
