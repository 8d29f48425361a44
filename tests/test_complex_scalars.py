"""A real tensor meeting a complex Python number or 0-d complex tensor becomes complex, as in
PyTorch (``mag * (cos + 1j * sin)``, ``exp(2j * pi * f)``): it once stayed real and dropped
the imaginary part without a word."""
import cmath

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

REAL = ["float16", "bfloat16", "float32", "float64", "int32", "bool"]
OTHERS = {"python": lambda: 1j, "0-d default": lambda: acg.tensor(1j),
          "0-d complex128": lambda: acg.tensor(1j, dtype=acg.complex128),
          "0-d complex64": lambda: acg.tensor(1j, dtype=acg.complex64)}
# PyTorch 2.13's result dtypes (float16 gives complex32 there, which JAX lacks: complex64)
WANT = {"float16": ["complex64"] * 4, "bfloat16": ["complex64"] * 4,
        "float32": ["complex64"] * 4, "float64": ["complex128"] * 4,
        "int32": ["complex64", "complex64", "complex128", "complex64"],
        "bool": ["complex64", "complex64", "complex128", "complex64"]}


@pytest.mark.parametrize("real", REAL)
def test_result_dtype_of_real_times_complex(real):
    p = acg.ones(3, dtype=getattr(acg, real))
    got = [str((p * other()).dtype).split(".")[-1] for other in OTHERS.values()]
    assert got == WANT[real]


def test_result_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    for real in REAL:
        if real == "float16":
            continue  # complex32 in PyTorch
        for (name, ours), theirs in zip(OTHERS.items(), [
                lambda: 1j, lambda: torch.tensor(1j),
                lambda: torch.tensor(1j, dtype=torch.complex128),
                lambda: torch.tensor(1j, dtype=torch.complex64)]):
            a = (acg.ones(3, dtype=getattr(acg, real)) * ours()).dtype
            b = (torch.ones(3, dtype=getattr(torch, real)) * theirs()).dtype
            assert str(a).split(".")[-1] == str(b).split(".")[-1], (real, name)


def test_tensor_of_a_complex_number_is_complex64():
    assert acg.tensor(1j).dtype == acg.complex64
    assert acg.tensor([1j, 2]).dtype == acg.complex64
    assert acg.result_type(acg.ones(2), 1j) == acg.complex64
    acg.set_default_dtype(acg.float64)
    try:
        assert acg.tensor(1j).dtype == acg.complex128
    finally:
        acg.set_default_dtype(acg.float32)


def test_phase_rebuild_values_and_gradients(mode):
    rng = np.random.default_rng(0)
    mag_np, ph_np = rng.random((4, 5), np.float32), rng.random((4, 5), np.float32)
    mag = acg.tensor(mag_np, requires_grad=True)
    ph = acg.tensor(ph_np, requires_grad=True)
    with mode():
        spec = mag * (acg.cos(ph) + 1j * acg.sin(ph))
        rot = spec * acg.exp(2j * cmath.pi * mag)
        loss = (rot.real * 2.0 + rot.imag).sum()
        loss.backward()
    assert spec.dtype == acg.complex64
    z = mag_np * np.exp(1j * ph_np) * np.exp(2j * np.pi * mag_np)
    assert_close(rot, z, rtol=1e-5, atol=1e-5)
    # d/dmag and d/dph of sum(2 Re z + Im z), z = mag exp(i (ph + 2 pi mag))
    theta = ph_np + 2 * np.pi * mag_np
    dz_dmag = np.exp(1j * theta) * (1 + 2j * np.pi * mag_np)
    dz_dph = 1j * mag_np * np.exp(1j * theta)
    assert_close(mag.grad, 2 * dz_dmag.real + dz_dmag.imag, rtol=1e-4, atol=1e-4)
    assert_close(ph.grad, 2 * dz_dph.real + dz_dph.imag, rtol=1e-4, atol=1e-4)


def test_istft_of_a_phase_rebuilt_spectrogram():
    acg.manual_seed(0)
    mag, ph = acg.rand(33, 10), acg.rand(33, 10)
    spec = mag * (acg.cos(ph) + 1j * acg.sin(ph))
    wave = acg.istft(spec, 64, 16, window=acg.hann_window(64))
    assert wave.dtype == acg.float32 and wave.shape == (144,)
    assert_close(spec, np.asarray(acg.polar(mag, ph)), rtol=1e-6, atol=1e-6)
