"""Samplers (``torch.utils.data.sampler``): which indices, in which order, in which batches.

Shuffling draws one seed from an ``acg`` generator (the global one unless given), so
``acg.manual_seed`` makes every epoch's order reproducible.

>>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
[[0, 1], [2, 3], [4]]
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Sized

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "BatchSampler"]


def _draw_seed(generator: Any = None) -> int:
    """A 64-bit seed from an acg Generator (its next PRNG key), the global one by default."""
    if generator is None:
        from ...kernels.factories import default_generator as generator
    hi, lo = np.asarray(generator.next_key()).astype(np.uint64).tolist()
    return (hi << 32) | lo


class Sampler:
    """Base class: an iterable of indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


_CHUNK = 4096  # draws per refill of a sampler with replacement


class RandomSampler(Sampler):
    """A random permutation each epoch (or ``num_samples`` draws with ``replacement``).

    >>> import autograd_compile as acg
    >>> _ = acg.manual_seed(1); a = list(RandomSampler(range(6)))
    >>> _ = acg.manual_seed(1); a == list(RandomSampler(range(6))), sorted(a)
    (True, [0, 1, 2, 3, 4, 5])
    """

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Any = None) -> None:
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng = len(self.data_source), np.random.default_rng(_draw_seed(self.generator))
        if self.replacement:  # in chunks: num_samples may be huge (minGPT asks for 1e10)
            for start in range(0, self.num_samples, _CHUNK):
                yield from rng.integers(0, n, size=min(_CHUNK, self.num_samples - start)).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: Iterable[int], generator: Any = None) -> None:
        self.indices, self.generator = list(indices), generator

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng(_draw_seed(self.generator))
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Group another sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
