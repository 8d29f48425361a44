"""``torch.signal.windows``: every window against a float64 numpy formula (symmetric and
periodic, lengths 0 to 9) and, when torch is installed, against torch itself, with
torch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import outcome

W = acg.signal.windows
PARAMS = {"exponential": {"tau": 2.5}, "gaussian": {"std": 1.7}, "kaiser": {"beta": 6.0},
          "general_cosine": {"a": [0.5, 0.3, 0.2]}, "general_hamming": {"alpha": 0.6}}


def _oracle(name: str, M: int, sym: bool) -> np.ndarray:
    """The textbook definitions (scipy.signal.windows'), periodic = symmetric of M + 1."""
    if M == 0:
        return np.zeros(0)
    L = M if sym or M == 1 else M + 1
    n = np.arange(L, dtype=np.float64)
    d = max(L - 1, 1)
    cos = lambda a: sum((-1) ** k * c * np.cos(2 * np.pi * k * n / d)  # noqa: E731
                        for k, c in enumerate(a))
    w = {"bartlett": lambda: 1 - np.abs(2 * n / d - 1),
         "cosine": lambda: np.sin(np.pi * (n + 0.5) / L),
         "exponential": lambda: np.exp(-np.abs(n - (L - 1) / 2) / 2.5),
         "gaussian": lambda: np.exp(-0.5 * ((n - (L - 1) / 2) / 1.7) ** 2),
         "kaiser": lambda: np.i0(6.0 * np.sqrt(np.clip(1 - (2 * n / d - 1) ** 2, 0, 1)))
         / np.i0(6.0),
         "general_cosine": lambda: cos([0.5, 0.3, 0.2]),
         "general_hamming": lambda: cos([0.6, 0.4]),
         "hamming": lambda: cos([0.54, 0.46]), "hann": lambda: cos([0.5, 0.5]),
         "blackman": lambda: cos([0.42, 0.5, 0.08]),
         "nuttall": lambda: cos([0.3635819, 0.4891775, 0.1365995, 0.0106411])}[name]()
    if L == 1 and name not in ("cosine", "exponential", "gaussian"):
        w = np.ones(1)
    return w[:M]


@pytest.mark.parametrize("name", W.__all__)
@pytest.mark.parametrize("sym", [True, False])
def test_windows_follow_their_formulas(name, sym):
    for M in range(10):
        got = getattr(W, name)(M, sym=sym, dtype=acg.float64, **PARAMS.get(name, {}))
        assert got.dtype == acg.float64 and tuple(got.shape) == (M,)
        np.testing.assert_allclose(got.numpy(), _oracle(name, M, sym), atol=1e-12)


@pytest.mark.parametrize("name", W.__all__)
def test_windows_equal_torchs(name):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.signal.windows, name)
    for M in (0, 1, 2, 5, 16):
        for sym in (True, False):
            for dt, tdt in ((acg.float32, torch.float32), (acg.float64, torch.float64)):
                got = getattr(W, name)(M, sym=sym, dtype=dt, **PARAMS.get(name, {}))
                want = theirs(M, sym=sym, dtype=tdt, **PARAMS.get(name, {}))
                np.testing.assert_allclose(got.numpy(), want.numpy(), atol=2e-6)
    default = getattr(W, name)(4, requires_grad=True, **PARAMS.get(name, {}))
    assert default.dtype == acg.float32 and default.requires_grad


def test_errors_as_torch():
    W64 = {"dtype": acg.int64}
    want = [(("hann", -1), {}, ("ValueError",
                                "general_cosine requires non-negative window length, got M=-1")),
            (("exponential", 5), {"center": 1.0},
             ("ValueError", "Center must be None for symmetric windows")),
            (("gaussian", 5), {"std": 0},
             ("ValueError", "Standard deviation must be positive, got: 0 instead.")),
            (("exponential", 5), {"tau": 0}, ("ValueError", "Tau must be positive, got: 0 "
                                                            "instead.")),
            (("kaiser", 5), {"beta": -1},
             ("ValueError", "beta must be non-negative, got: -1 instead.")),
            (("general_cosine", 5), {"a": 1.0}, ("TypeError", "Coefficients must be a list/tuple")),
            (("general_cosine", 5), {"a": []}, ("ValueError", "Coefficients cannot be empty")),
            (("bartlett", 3), W64, ("ValueError", "bartlett expects float32 or float64 dtypes, "
                                                  "got: torch.int64"))]
    for (name, M), kw, expected in want:
        got = outcome(getattr(W, name), M, **kw)
        assert got is not None and got[0] == expected[0], (name, got)
        assert got[1].replace("acg.", "torch.") == expected[1], (name, got)
    torch = pytest.importorskip("torch")
    for (name, M), kw, expected in want:
        tkw = {"dtype": torch.int64} if kw is W64 else kw
        assert outcome(getattr(torch.signal.windows, name), M, **tkw) == expected
