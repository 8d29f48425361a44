"""``WeightedRandomSampler``: indices drawn with probability proportional to ``weights``
(``acg.multinomial`` on the sampler's generator, as PyTorch draws with ``torch.multinomial``).

>>> import autograd_compile as acg
>>> _ = acg.manual_seed(0)
>>> draws = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 6))
>>> len(draws), set(draws) <= {1, 3}
(6, True)
>>> sorted(WeightedRandomSampler([0.9, 0.4, 0.05, 0.2, 0.3, 0.1], 6, replacement=False))
[0, 1, 2, 3, 4, 5]
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from .sampler import Sampler

__all__ = ["WeightedRandomSampler"]

_CHUNK = 1 << 16  # draws per multinomial call with replacement (num_samples may be huge)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))``, each with probability
    ``weights[i] / sum(weights)``; without ``replacement`` no index repeats."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        from ...kernels.api import float64, tensor
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) \
                or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        values = np.asarray(weights.detach().numpy() if hasattr(weights, "numpy") else weights,
                            dtype=np.float64)
        if values.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(values.shape)}")
        self.weights = tensor(values, dtype=float64)
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self) -> Iterator[int]:
        from ...kernels.api_select import multinomial
        if not self.replacement:
            yield from multinomial(self.weights, self.num_samples, False,
                                   generator=self.generator).tolist()
            return
        for start in range(0, self.num_samples, _CHUNK):
            n = min(_CHUNK, self.num_samples - start)
            yield from multinomial(self.weights, n, True, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples
