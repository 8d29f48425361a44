"""``acg.testing``: PyTorch's ``torch.testing`` (``assert_close``, ``make_tensor``).

Tests written for PyTorch keep their assertions: ``assert_close`` passes and fails on the same
inputs as PyTorch's, with the same per-dtype default tolerances and the same failure text
("Tensor-likes are not close!", the mismatch count, the greatest absolute and relative
differences and where), and ``make_tensor`` draws inputs from PyTorch's default ranges.

>>> import autograd_compile as acg
>>> from autograd_compile.testing import assert_close, make_tensor
>>> x = make_tensor(4, dtype=acg.float32, device="cpu")
>>> assert_close(x * 1.0, x)
>>> assert_close({"loss": 1.0, "steps": [1, 2]}, {"loss": 1.0 + 1e-9, "steps": [1, 2]})
"""
from __future__ import annotations

from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
