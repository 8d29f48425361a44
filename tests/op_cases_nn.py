"""Op-table cases for the neural-network ops (attention, convolution, pooling, normalisation, losses, activations); test_ops.py runs them through every check."""
from __future__ import annotations

from _op_spec import Arg, B, C, Case, I, P, T, U, V  # noqa: F401

NN_CASES: list[Case] = []
