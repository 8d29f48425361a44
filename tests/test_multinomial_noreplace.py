"""``multinomial(p, n, replacement=False)`` with fewer non-zero categories than ``n``: as
PyTorch 2.x, no error; the non-zero categories come first, zero-probability ones fill the
rest (no repeats). Errors only where PyTorch raises them."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autograd_compile as acg

PROBS = [[0.0, 1.0, 0.0, 0.0], [0.2, 0.3, 0.5, 0.0]]


def _check_rows(draws: np.ndarray, probs: np.ndarray, n: int) -> None:
    """Each row: n distinct categories, the non-zero ones (all of them, or n of them)
    first, then zero-probability ones."""
    for row, p in zip(draws.reshape(-1, n), probs.reshape(-1, probs.shape[-1])):
        assert len(set(row.tolist())) == n
        k = min(int((p > 0).sum()), n)
        assert (p[row[:k]] > 0).all() and (p[row[k:]] == 0).all()


def test_the_probe_program() -> None:
    draws = acg.multinomial(acg.tensor(PROBS), num_samples=2)
    assert draws.dtype == acg.int64 and tuple(draws.shape) == (2, 2)
    out = draws.numpy()
    assert out[0, 0] == 1 and out[0, 1] != 1  # the one non-zero category, then a zero one
    _check_rows(out, np.asarray(PROBS), 2)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_draw_puts_non_zero_categories_first(n: int) -> None:
    g = acg.Generator().manual_seed(5)
    probs = np.asarray(PROBS)
    for _ in range(50):
        _check_rows(acg.multinomial(acg.tensor(probs), n, generator=g).numpy(), probs, n)
    one = acg.multinomial(acg.tensor(probs[0]), n, generator=g).numpy()  # 1-d
    assert one.shape == (n,)
    _check_rows(one, probs[0], n)


def test_the_non_zero_part_still_follows_the_probabilities() -> None:
    g = acg.Generator().manual_seed(11)
    p = np.array([0.0, 0.2, 0.0, 0.8])
    firsts = np.array([acg.multinomial(acg.tensor(p), 3, generator=g).numpy()[0]
                       for _ in range(1500)])
    assert set(np.unique(firsts).tolist()) <= {1, 3}
    assert abs((firsts == 3).mean() - 0.8) < 0.05


def test_half_precision_probabilities() -> None:
    p = acg.tensor([[0.0, 0.5, 0.0, 0.5, 0.0]], dtype=acg.bfloat16)
    _check_rows(acg.multinomial(p, 5).numpy(), np.asarray([[0, 1, 0, 1, 0]]), 5)


def test_under_acg_compile() -> None:
    probs = acg.tensor(PROBS)
    fn = acg.compile(lambda p: acg.multinomial(p, 3))
    for _ in range(3):
        _check_rows(fn(probs).numpy(), np.asarray(PROBS), 3)


def _cases() -> dict[str, tuple[Any, int, bool]]:
    return {
        "too_many": (PROBS, 5, False),
        "all_zero": ([0.0, 0.0, 0.0], 1, False),
        "all_zero_replacement": ([0.0, 0.0, 0.0], 1, True),
        "a_zero_row": ([[1.0, 0.0], [0.0, 0.0]], 1, False),
        "negative": ([1.0, -1.0, 0.0], 1, False),
        "nan": ([1.0, float("nan"), 0.0], 1, False),
        "inf": ([1.0, float("inf"), 0.0], 1, False),
        "zero_samples": ([1.0, 2.0], 0, False),
        "negative_samples": ([1.0, 2.0], -1, True),
        "three_dims": ([[[1.0, 1.0]]], 1, False),
        "no_categories": ([[], []], 1, False),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_errors_match_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    probs, n, replacement = _cases()[name]
    with pytest.raises(RuntimeError) as theirs:
        torch.multinomial(torch.tensor(probs), n, replacement)
    with pytest.raises(RuntimeError) as ours:
        acg.multinomial(acg.tensor(probs), n, replacement)
    assert str(theirs.value) in str(ours.value)


@pytest.mark.parametrize("probs, n", [(PROBS, 2), (PROBS, 4), ([0.5, 0.0, 0.5], 3),
                                      ([[0.0, 0.0, 3.0]], 3)])
def test_pytorch_accepts_what_we_accept(probs: Any, n: int) -> None:
    torch = pytest.importorskip("torch")
    theirs = torch.multinomial(torch.tensor(probs), n).numpy()
    ours = acg.multinomial(acg.tensor(probs), n).numpy()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    _check_rows(theirs, np.asarray(probs), n)  # the same rule holds for PyTorch's draws
    _check_rows(ours, np.asarray(probs), n)


def test_integer_probabilities_are_an_error() -> None:
    with pytest.raises(RuntimeError, match="floating-point"):
        acg.multinomial(acg.tensor([1, 2]), 1)
