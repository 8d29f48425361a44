"""``nn.utils.rnn``: variable-length batches for recurrent layers, as PyTorch's.

A :class:`PackedSequence` holds the valid steps of every sequence, time step by time step
(``data [sum(lengths), *]``), with ``batch_sizes[t]`` the number of sequences still running at
step t (sequences sorted longest first; ``sorted_indices`` / ``unsorted_indices`` remember the
caller's order). Packing and padding are each one gather (``index_select``) with indices
computed on the host from the lengths, so gradients flow through them.

>>> import autograd_compile as acg
>>> from autograd_compile.nn.utils.rnn import pack_sequence, pad_packed_sequence
>>> packed = pack_sequence([acg.ones(3, 2), acg.ones(1, 2)])
>>> packed.batch_sizes.tolist(), packed.data.shape
([2, 1, 1], acg.Size([4, 2]))
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
>>> padded.shape, lengths.tolist()
(acg.Size([2, 3, 2]), [3, 1])
"""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np

from ...kernels import api as A
from ...tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpack_sequence", "unpad_sequence", "invert_permutation"]

_UNSORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
             "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
             "pack_sequence to sidestep this requirement if you do not need ONNX exportability.")


def _long(values: Any) -> Tensor:
    return A.tensor(np.asarray(values, dtype=np.int64))


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.numpy())
    inverse = np.empty_like(p)
    inverse[p] = np.arange(p.size)
    return _long(inverse)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """The packed steps of a batch of sequences (see the module docstring); a named tuple
    ``(data, batch_sizes, sorted_indices, unsorted_indices)``. Build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence`, not directly."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence(data_and_batch_sizes_tuple), as PyTorch
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> "PackedSequence":
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """``data`` moved or cast like ``Tensor.to``; the index tensors stay integer."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self) -> "PackedSequence":
        return self._with_data(self.data.cpu())

    def cuda(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        return self._with_data(self.data.cuda(*args, **kwargs))

    def double(self) -> "PackedSequence":
        return self.to(dtype=jnp.float64)

    def float(self) -> "PackedSequence":
        return self.to(dtype=jnp.float32)

    def half(self) -> "PackedSequence":
        return self.to(dtype=jnp.float16)

    def long(self) -> "PackedSequence":
        return self.to(dtype=jnp.int64)

    def int(self) -> "PackedSequence":
        return self.to(dtype=jnp.int32)

    @property
    def is_cuda(self) -> bool:
        return bool(getattr(self.data, "is_cuda", False))

    def is_pinned(self) -> bool:
        return False


# -- index plans (host side, from the lengths) ------------------------------------------------
def batch_sizes_of(lengths: Sequence[int]) -> np.ndarray:
    """How many of the (sorted, longest first) sequences run at each step."""
    lengths = np.asarray(lengths)
    return np.array([(lengths > t).sum() for t in range(int(lengths.max()))], np.int64)


def pack_index(batch_sizes: np.ndarray, steps: int, batch: int, batch_first: bool
               ) -> np.ndarray:
    """Rows of a flattened padded [T, B] (or [B, T]) batch, in packed order."""
    t = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    b = np.concatenate([np.arange(n) for n in batch_sizes])
    return b * steps + t if batch_first else t * batch + b


def pad_index(batch_sizes: np.ndarray, order: np.ndarray, steps: int, batch_first: bool
              ) -> np.ndarray:
    """Rows of ``data`` (or ``len(data)``: the padding row) for each padded slot; output
    column j holds sorted sequence ``order[j]``."""
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)])
    total = int(offsets[-1])
    idx = np.full((steps, len(order)), total, np.int64)
    for t, n in enumerate(batch_sizes):
        inside = order < n
        idx[t, inside] = offsets[t] + order[inside]
    return (idx.T if batch_first else idx).reshape(-1)


def _host_lengths(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        return np.asarray(lengths.numpy()).astype(np.int64).reshape(-1)
    return np.asarray([int(n) for n in lengths], np.int64)


# -- public functions -------------------------------------------------------------------------
def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``[T, B, *]`` (``[B, T, *]`` with ``batch_first``) whose sequence
    b has ``lengths[b]`` valid steps. ``enforce_sorted=False`` sorts them (longest first)
    and records the permutation."""
    n = _host_lengths(lengths)
    batch_dim = 0 if batch_first else 1
    if len(n) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(n)} (batch_size={input.shape[batch_dim]})")
    sorted_indices = None
    if enforce_sorted:
        if np.any(n[:-1] < n[1:]):
            raise RuntimeError(_UNSORTED)
        order = np.arange(len(n))
    else:
        order = np.argsort(-n, kind="stable")
        sorted_indices = _long(order)
    if len(n) == 0 or n.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    steps = input.shape[1 - batch_dim]
    if n.max() > steps:
        raise RuntimeError(f"pack_padded_sequence: a length ({n.max()}) exceeds the padded "
                           f"sequence length ({steps})")
    sizes = batch_sizes_of(n[order])
    rows = pack_index(sizes, steps, len(n), batch_first)
    rows = _reorder_rows(rows, order, steps, len(n), batch_first)
    flat = input.reshape(steps * len(n), *input.shape[2:])
    data = A.index_select(flat, 0, _long(rows))
    return PackedSequence(data, _long(sizes), sorted_indices, None)


def _reorder_rows(rows: np.ndarray, order: np.ndarray, steps: int, batch: int,
                  batch_first: bool) -> np.ndarray:
    """Rows that address sorted column s mapped onto the caller's column order[s]."""
    if batch_first:
        b, t = np.divmod(rows, steps)
        return order[b] * steps + t
    t, b = np.divmod(rows, batch)
    return t * batch + order[b]


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)`` in the caller's
    original order; ``total_length`` pads the time dim further."""
    sizes = np.asarray(sequence.batch_sizes.numpy()).astype(np.int64)
    batch, max_len = int(sizes[0]), len(sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    unsorted = sequence.unsorted_indices
    order = np.arange(batch) if unsorted is None else np.asarray(unsorted.numpy())
    data = sequence.data
    pad_row = A.full([1, *data.shape[1:]], padding_value, dtype=data.dtype)
    rows = pad_index(sizes, order, max_len, batch_first)
    padded = A.index_select(A.cat([data, pad_row]), 0, _long(rows))
    shape = (batch, max_len) if batch_first else (max_len, batch)
    lengths = np.array([(sizes > s).sum() for s in order], np.int64)
    return padded.reshape(*shape, *data.shape[1:]), _long(lengths)


def pad_sequence(sequences: Tensor | Iterable[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors ``[L_i, *]`` into ``[max L, B, *]`` (``[B, max L, *]`` with
    ``batch_first``), padding each with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        short = longest - s.shape[0]
        if short:
            fill = A.full([short, *s.shape[1:]], padding_value, dtype=s.dtype)
            s = A.cat([s, fill] if padding_side == "right" else [fill, s])
        rows.append(s)
    return A.stack(rows, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors ``[L_i, *]`` (longest first unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor | Sequence[int],
                   batch_first: bool = False) -> list[Tensor]:
    """The list of tensors ``[L_i, *]`` inside a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, _host_lengths(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors ``[L_i, *]`` inside a :class:`PackedSequence`."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
