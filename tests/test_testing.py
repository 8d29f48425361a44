"""acg.testing: assert_close and make_tensor against torch.testing (the oracle where installed)."""
from __future__ import annotations

import doctest
import importlib
import math
import re
import warnings

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.testing as testing
from autograd_compile.testing import assert_close, make_tensor
from conftest import outcome

DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "uint8",
          "int32", "int64", "bool"]


def _to_torch(x, torch):
    """The same value in PyTorch: tensors by their bits, containers recursively."""
    if isinstance(x, acg.Tensor):
        a = np.asarray(x.detach().numpy())
        if x.dtype == acg.bfloat16:
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(a.copy()).to(getattr(torch, str(x.dtype).split(".")[1]))
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v, torch) for v in x)
    if isinstance(x, dict):
        return {k: _to_torch(v, torch) for k, v in x.items()}
    return x


def _pair(rng, dtype: str, shape: tuple, trial: int):
    """An (actual, expected) pair of ``dtype`` that is close, barely close or far apart."""
    base = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3)
    if dtype == "bool":
        return (rng.integers(0, 2, shape).astype(bool) if trial % 2 else base > 0), base > 0
    if dtype in ("int8", "uint8", "int32", "int64"):
        b = np.abs(base * 10).astype(dtype)
        return b + (rng.integers(0, 2, shape) * (trial % 3 == 0)).astype(dtype), b
    noise = rng.standard_normal(shape) * 10.0 ** rng.integers(-9, 0)
    if "complex" in dtype:
        base = base + 1j * rng.standard_normal(shape)
    other = base * (1 + noise) + noise * rng.integers(0, 2)
    if trial % 7 == 0 and base.size:
        base.reshape(-1)[0] = other.reshape(-1)[0] = np.nan
    if trial % 11 == 0 and base.size > 1:
        base.reshape(-1)[-1], other.reshape(-1)[-1] = np.inf, -np.inf
    return other, base


@pytest.mark.parametrize("dtype", DTYPES)
def test_assert_close_passes_and_fails_with_torchs_message(dtype):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(map(ord, dtype)))
    options = [{}, {"rtol": 1e-3, "atol": 1e-2}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}]
    for trial in range(40):
        shape = [(), (5,), (3, 4), (2, 3, 2)][trial % 4]
        a, e = _pair(rng, dtype, shape, trial)
        a = acg.tensor(a).to(getattr(acg, dtype))
        e = acg.tensor(e).to(getattr(acg, dtype))
        kw = options[trial % len(options)]
        ours = outcome(assert_close, a, e, **kw)
        theirs = outcome(torch.testing.assert_close, _to_torch(a, torch), _to_torch(e, torch),
                          **kw)
        assert ours == theirs, (dtype, shape, kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64"])
def test_closeness_at_the_boundary_matches_torch(dtype):
    """Elements within an ulp of ``atol + rtol * |expected|``: each side of the line as PyTorch."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    e = rng.uniform(-100, 100, 4000)
    step = rng.choice([-2, -1, 0, 1, 2], 4000)
    tol = 1e-5 + 1e-3 * np.abs(e) if dtype != "int64" else 0.5 + 1e-2 * np.abs(e)
    a = e + np.sign(e) * (tol + step * np.spacing(tol) * 64)
    a_t, e_t = (acg.tensor(v).to(getattr(acg, dtype)) for v in (a, e))
    kw = {"rtol": 1e-3, "atol": 1e-5} if dtype != "int64" else {"rtol": 1e-2, "atol": 0.5}
    ours = outcome(assert_close, a_t, e_t, **kw)
    theirs = outcome(torch.testing.assert_close, _to_torch(a_t, torch), _to_torch(e_t, torch),
                      **kw)
    assert ours == theirs


def _cases():
    """(name, actual, expected, kwargs): structure, scalars and attribute checks."""
    t = acg.tensor
    return [
        ("shape", t([1.0, 2.0]), t([1.0, 2.0, 3.0]), {}),
        ("dtype", t([1.0]), t([1.0], dtype=acg.float64), {}),
        ("dtype off", t([1.0, 2.0]), t([1.0, 2.5], dtype=acg.float64), {"check_dtype": False}),
        ("promote int", t([1, 2]), t([1.0, 2.0]), {"check_dtype": False}),
        ("0-d", t(1.0), t(1.5), {}),
        ("0-d int", t(3), t(5), {}),
        ("float scalars", 1.0, 1.0 + 1e-6, {}),
        ("int vs float", 1, 1.0, {}),
        ("int vs float off", 1, 1.5, {"check_dtype": False}),
        ("complex scalar", 1 + 1j, 1 + 2j, {}),
        ("numpy scalar", np.float32(1.0), np.float32(1.1), {}),
        ("bools", True, False, {}),
        ("none", None, 1, {}),
        ("none both", None, None, {}),
        ("sequence length", [t([1.0])], [t([1.0]), t([2.0])], {}),
        ("nested item", [t([1.0]), {"a": t([2.0]), "b": 3}], [t([1.0]), {"a": t([2.5]), "b": 3}],
         {}),
        ("mapping keys", {"a": 1, "b": 2}, {"a": 1, "c": 2}, {}),
        ("tuple vs list", (t([1.0]),), [t([1.0])], {}),
        ("msg", t([1.0]), t([2.0]), {"msg": "custom"}),
        ("msg callable", [t([1.0])], [t([2.0])], {"msg": lambda m: f"Header\n\n{m}\n\nFooter"}),
        ("nan", t([math.nan, 1.0]), t([math.nan, 1.0]), {}),
        ("nan equal", t([math.nan, 1.0]), t([math.nan, 1.0]), {"equal_nan": True}),
        ("inf", t([math.inf]), t([math.inf]), {}),
        ("inf sign", t([math.inf, 1.0]), t([-math.inf, 1.0]), {}),
        ("rtol only", t([1.0]), t([1.0]), {"rtol": 1e-3}),
        ("atol only", t([1.0]), t([1.0]), {"atol": 1e-3}),
        ("empty", t([]), t([]), {}),
        ("bool tensor", t([True, False]), t([True, True]), {}),
        ("ties", t([1.0, 3.0, 1.0]), t([0.0, 2.0, 0.0]), {}),
        ("strings", "a", "a", {}),
        ("numpy arrays", np.ones(3), np.ones(3) * 1.1, {}),
    ]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_assert_close_cases_match_torch(case):
    torch = pytest.importorskip("torch")
    _, actual, expected, kw = case
    ours = outcome(assert_close, actual, expected, **kw)
    theirs = outcome(torch.testing.assert_close, _to_torch(actual, torch),
                      _to_torch(expected, torch), **kw)
    assert ours == theirs


def test_type_mismatches_raise_type_error_naming_both_types():
    with pytest.raises(TypeError, match=r"No comparison pair was able to handle inputs of type "
                                        r"<class 'autograd_compile.tensor.Tensor'> and "
                                        r"<class 'float'>"):
        assert_close(acg.tensor(1.0), 1.0)
    p = acg.nn.Parameter(acg.ones(2))
    assert_close(p, acg.ones(2))  # related types pass by default
    with pytest.raises(TypeError, match="No comparison pair"):
        assert_close(p, acg.ones(2), allow_subclasses=False)
    with pytest.raises(TypeError, match="numpy.ndarray"):
        assert_close(np.ones(2), acg.ones(2))


def test_default_tolerances_per_dtype():
    cases = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
             "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
             "int64": (0.0, 0.0), "bool": (0.0, 0.0)}
    for name, (rtol, atol) in cases.items():
        expected = acg.ones(3, dtype=getattr(acg, name))
        msg = outcome(assert_close, acg.zeros(3, dtype=getattr(acg, name)), expected)[1]
        if rtol == atol == 0:
            assert "are not equal!" in msg and "allowed" not in msg
        else:
            assert f"(up to {atol} allowed)" in msg and f"(up to {rtol} allowed)" in msg


def test_message_lines():
    actual, expected = acg.tensor([[1.0, 2.0], [3.0, 4.0]]), acg.tensor([[1.0, 2.0], [3.0, 5.0]])
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    assert str(info.value).splitlines() == [
        "Tensor-likes are not close!", "",
        "Mismatched elements: 1 / 4 (25.0%)",
        "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-05 allowed)",
        "Greatest relative difference: 0.20000000298023224 at index (1, 1) (up to 1.3e-06 allowed)"]


def test_meta_and_device_checks():
    m = acg.empty(2, 3, device="meta")
    assert_close(m, acg.empty(2, 3, device="meta"))  # attributes only
    with pytest.raises(AssertionError, match="attribute 'shape'"):
        assert_close(m, acg.empty(3, device="meta"))
    with pytest.raises(AssertionError, match="attribute 'device' do not match: meta != cpu"):
        assert_close(m, acg.zeros(2, 3))


def test_float8_is_compared_bitwise():
    torch = pytest.importorskip("torch")
    a = acg.tensor([1.0, 2.0, 3.0]).to(acg.float8_e4m3fn)
    e = acg.tensor([1.0, 2.5, 3.0]).to(acg.float8_e4m3fn)
    t_a, t_e = (torch.tensor([1.0, v, 3.0]).to(torch.float8_e4m3fn) for v in (2.0, 2.5))
    assert outcome(assert_close, a, e) == outcome(torch.testing.assert_close, t_a, t_e)
    kw = {"rtol": 0.1, "atol": 0.1}
    assert outcome(assert_close, a, e, **kw) == outcome(torch.testing.assert_close, t_a, t_e,
                                                          **kw)


def test_assert_allclose_is_deprecated_and_looser():
    torch = pytest.importorskip("torch")
    for actual, expected in [(acg.tensor([1.0]), [1.00005]), (acg.tensor([1.0]), [1.01]),
                             ([1.0, math.nan], [1.0, math.nan]), (acg.tensor([2]), 2.5)]:
        with pytest.warns(FutureWarning, match="assert_allclose"):
            ours = outcome(testing.assert_allclose, actual, expected)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            theirs = outcome(torch.testing.assert_allclose, _to_torch(actual, torch),
                              expected)
        assert ours == theirs


# -- make_tensor ----------------------------------------------------------------------------------
_RANGES = {"bool": (0, 2), "uint8": (0, 10), "int8": (-9, 10), "int32": (-9, 10),
           "int64": (-9, 10), "float16": (-9, 9), "bfloat16": (-9, 9), "float32": (-9, 9),
           "float64": (-9, 9), "complex64": (-9, 9), "complex128": (-9, 9)}


@pytest.mark.parametrize("dtype", list(_RANGES))
def test_make_tensor_default_ranges(dtype):
    torch = pytest.importorskip("torch")
    t = make_tensor(40, 50, dtype=getattr(acg, dtype), device="cpu")
    ref = torch.testing.make_tensor(40, 50, dtype=getattr(torch, dtype), device="cpu")
    assert tuple(t.shape) == tuple(ref.shape) == (40, 50) and str(t.dtype) == str(ref.dtype)
    wide = np.complex128 if "complex" in dtype else np.float64
    values = np.asarray(t.numpy()).astype(wide)
    theirs = (ref.to(torch.complex128) if "complex" in dtype else ref.double()).numpy()
    low, high = _RANGES[dtype]
    for vs in (values, theirs):  # the table is torch's: its draws lie in the same range
        for part in (vs.real, vs.imag) if "complex" in dtype else (vs,):
            assert part.min() >= low and part.max() < high
    if dtype in ("int8", "int32", "int64", "uint8", "bool"):
        assert set(np.unique(values)) == set(range(low, high))  # every value drawn
    else:  # 2000 uniform draws: the extremes land near both ends
        for part in (values.real, values.imag) if "complex" in dtype else (values,):
            assert part.min() < low + (high - low) * 0.05 < high - (high - low) * 0.05 < part.max()
    assert not t.requires_grad


def test_make_tensor_options():
    t = make_tensor((3, 4), dtype=acg.float32, device="cpu", low=-1, high=1, requires_grad=True)
    assert t.requires_grad and t.is_leaf and float(t.abs().max()) < 1
    nc = make_tensor(3, 4, dtype=acg.float64, device="cpu", noncontiguous=True)
    assert tuple(nc.shape) == (3, 4)
    z = make_tensor(2000, dtype=acg.int8, device="cpu", low=-1, high=2, exclude_zero=True)
    assert set(np.unique(z.numpy())) == {-1, 1}
    f = make_tensor(2000, dtype=acg.float16, device="cpu", low=0, high=1e-4, exclude_zero=True)
    assert float(f.float().min()) > 0
    big = make_tensor(1000, dtype=acg.float32, device="cpu", low=-3e38, high=3e38)
    assert bool(acg.isfinite(big).all()) and float(big.abs().max()) > 1e37
    clamped = make_tensor(1000, dtype=acg.uint8, device="cpu", low=-5, high=1000)
    assert int(clamped.min()) >= 0 and int(clamped.max()) <= 255
    f8 = make_tensor(10, dtype=acg.float8_e4m3fn, device="cpu")
    assert f8.dtype == acg.float8_e4m3fn
    cl = make_tensor(2, 3, 4, 5, dtype=acg.float32, device="cpu",
                     memory_format=acg.channels_last)
    assert tuple(cl.shape) == (2, 3, 4, 5)


def test_make_tensor_errors_match_torch():
    torch = pytest.importorskip("torch")
    calls = [((3,), {"dtype": "float32", "low": 2, "high": 1}),
             ((3,), {"dtype": "float32", "low": math.nan}),
             ((3,), {"dtype": "int64", "requires_grad": True}),
             ((3,), {"dtype": "bool", "requires_grad": True}),
             ((3,), {"dtype": "int8", "low": 200, "high": 300}),
             ((3,), {"dtype": "uint8", "low": -10, "high": -5}),
             ((2, 2), {"dtype": "float32", "noncontiguous": True, "memory_format": "contiguous"})]
    for shape, kw in calls:
        kw = dict(kw)
        mf = kw.pop("memory_format", None)
        name = kw.pop("dtype")
        ours = outcome(make_tensor, *shape, dtype=getattr(acg, name), device="cpu", **kw,
                        **({"memory_format": acg.contiguous_format} if mf else {}))
        theirs = outcome(torch.testing.make_tensor, *shape, dtype=getattr(torch, name),
                          device="cpu", **kw,
                          **({"memory_format": torch.contiguous_format} if mf else {}))
        assert ours is not None and ours == theirs, (shape, kw)
    with pytest.warns(FutureWarning, match="low==high"):
        make_tensor(3, dtype=acg.float32, device="cpu", low=1, high=1)


def test_make_tensor_unsupported_dtype():
    with pytest.raises(TypeError, match="not supported by torch.testing.make_tensor"):
        make_tensor(3, dtype="float32", device="cpu")


@pytest.mark.parametrize("name", ["autograd_compile.testing",
                                  "autograd_compile.testing._comparison",
                                  "autograd_compile.testing._creation"])
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and (result.attempted > 0 or re.search(r">>>", module.__doc__ or ""
                                                                      ) is None)
