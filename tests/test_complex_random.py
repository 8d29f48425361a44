"""Random factories with a complex dtype, as PyTorch draws them: ``rand`` and ``uniform_``
give real and imaginary parts each uniform on [from, to); ``randn`` and ``normal_`` a complex
normal of variance 1 in all (each part variance 1/2), a real mean shifting both parts.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg

N = 20000
DRAWS: dict[str, tuple[Callable[[Any], Any], tuple]] = {
    # name: (draw(lib), (low, high) of each part for a uniform, or (mean, std of each part))
    "rand": (lambda L: L.rand(N, dtype=L.cfloat), ("uniform", 0.0, 1.0)),
    "rand_like": (lambda L: L.rand_like(L.zeros(N, dtype=L.cdouble)), ("uniform", 0.0, 1.0)),
    "uniform_": (lambda L: L.zeros(N, dtype=L.cfloat).uniform_(2, 3), ("uniform", 2.0, 3.0)),
    "randn": (lambda L: L.randn(N, dtype=L.cdouble), ("normal", 0.0, 0.5 ** 0.5)),
    "randn_like": (lambda L: L.randn_like(L.zeros(N, dtype=L.cfloat)), ("normal", 0.0, 0.5 ** 0.5)),
    "normal_": (lambda L: L.zeros(N, dtype=L.cfloat).normal_(2, 3),
                ("normal", 2.0, 3 * 0.5 ** 0.5)),
    "normal": (lambda L: L.normal(2.0, 3.0, size=(N,), dtype=L.cdouble),
               ("normal", 2.0, 3 * 0.5 ** 0.5)),
}


def _check(z: np.ndarray, law: tuple) -> None:
    kind, a, b = law
    for part in (z.real, z.imag):
        if kind == "uniform":
            assert a <= part.min() and part.max() < b
            np.testing.assert_allclose([part.mean(), part.std()],
                                       [(a + b) / 2, (b - a) / 12 ** 0.5], atol=0.02 * (b - a))
        else:
            np.testing.assert_allclose([part.mean(), part.std()], [a, b], atol=0.05 * b)
    assert np.corrcoef(z.real, z.imag)[0, 1] < 0.05  # the two parts are independent draws


@pytest.mark.parametrize("name", DRAWS)
def test_complex_draw_has_pytorchs_law(name: str) -> None:
    draw, law = DRAWS[name]
    acg.manual_seed(0)
    z = draw(acg)
    assert z.dtype in (acg.complex64, acg.complex128)
    _check(z.numpy(), law)


@pytest.mark.parametrize("name", DRAWS)
def test_torch_draws_the_same_law(name: str) -> None:
    """The oracle for the laws above: PyTorch's own draws pass the same checks."""
    torch = pytest.importorskip("torch")
    draw, law = DRAWS[name]
    torch.manual_seed(0)
    ours, theirs = draw(acg), draw(torch)
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1]
    _check(theirs.numpy(), law)


def test_repro_rand_complex_dtype() -> None:
    w = acg.rand(2, 3, dtype=acg.cfloat)
    assert w.dtype == acg.complex64 and tuple(w.shape) == (2, 3)


@pytest.mark.parametrize("shape", [(3,), (7, 5)])
def test_compiled_complex_rand_draws_what_eager_draws(shape: tuple) -> None:
    """The eager host draw and the jitted kernel give the same numbers for one seed."""
    def f() -> Any:
        return acg.rand(*shape, dtype=acg.cfloat) + acg.randn(*shape, dtype=acg.cfloat)
    acg.manual_seed(7)
    eager = f().numpy()
    acg.manual_seed(7)
    compiled = acg.compile(f, fullgraph=True)().numpy()
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)
