"""Op-table cases for the tensor ops (selection, sorting, scatter/gather, masks, indexing assignment); test_ops.py runs them through every check."""
from __future__ import annotations

from _op_spec import Arg, B, C, Case, I, P, T, U, V  # noqa: F401

TENSOR_CASES: list[Case] = []
