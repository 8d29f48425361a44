"""``acg.dtype`` objects behave as ``torch.dtype``: printing, properties, identity of the
aliases, hashing (dict keys, set members) and use inside programs in every mode."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

NAMES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
         "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
         "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
           "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}


@pytest.mark.parametrize("name", NAMES)
def test_dtype_as_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(acg, name), getattr(torch, name)
    assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
    for prop in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(ours, prop) == getattr(theirs, prop), prop
    for method in ("to_real", "to_complex"):
        try:
            want = str(getattr(theirs, method)())
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=str(e)):
                getattr(ours, method)()
            continue
        if want == "torch.complex32":  # no numpy/JAX equivalent: said, not mapped elsewhere
            with pytest.raises(TypeError, match="complex32"):
                getattr(ours, method)()
            continue
        assert str(getattr(ours, method)()) == want



@pytest.mark.parametrize("name", NAMES)
def test_scalar_type_names_as_torch(name):
    """PyTorch's C++ names (Float, ComplexFloat, Float8_e5m2...) come from one table, which
    ``Tensor.type()`` and the error texts read; ``type(name)`` casts back."""
    torch = pytest.importorskip("torch")
    ours = acg.empty(1, dtype=getattr(acg, name))
    want = torch.empty(1, dtype=getattr(torch, name)).type()
    assert ours.type() == want
    assert acg.zeros(1).type(want).dtype is getattr(acg, name)

def test_aliases_are_the_same_objects_as_in_torch():
    for alias, name in ALIASES.items():
        assert getattr(acg, alias) is getattr(acg, name)
    torch = pytest.importorskip("torch")
    for alias, name in ALIASES.items():
        assert getattr(torch, alias) is getattr(torch, name)


def test_tensor_dtype_is_the_module_object():
    x = acg.ones(2)
    assert x.dtype is acg.float32 and x.long().dtype is acg.int64 and (x > 0).dtype is acg.bool
    assert isinstance(x.dtype, acg.dtype) and acg.get_default_dtype() is acg.float32
    assert acg.zeros(2, dtype=np.float64).dtype is acg.float64  # numpy spellings still accepted
    # numpy prints bfloat16 values as integers: the repr shows them as floats
    assert repr(x.to(acg.bfloat16) * 1.5) == "tensor([1.5, 1.5], dtype=torch.bfloat16)"
    with pytest.raises(TypeError, match="cannot create 'acg.dtype' instances"):
        acg.dtype()


def test_dict_keys_sets_and_equality():
    table = {acg.float16: "fp16", acg.bfloat16: "bf16", acg.float32: "fp32"}
    assert table[acg.ones(1).dtype] == "fp32" and table[acg.ones(1).half().dtype] == "fp16"
    assert acg.ones(1).bfloat16().dtype in {acg.float16, acg.bfloat16}
    assert acg.ones(1).dtype not in {acg.float16, acg.bfloat16}
    # numpy's dtypes and jnp's scalar types are the same dtype, both ways
    assert acg.float32 == np.dtype("float32") and np.dtype("float32") == acg.float32
    assert acg.float32 == np.float32 and {np.dtype("float32"): 1}[acg.float32] == 1
    assert acg.float32 != acg.float64 and acg.float64 != None  # noqa: E711 (numpy says equal)
    assert acg.float32 != "float32"  # as PyTorch: a string is not a dtype
    assert pickle.loads(pickle.dumps(acg.bfloat16)) is acg.bfloat16


def test_numpy_and_jax_read_them():
    import jax.numpy as jnp
    assert np.zeros(2, acg.float16).dtype == np.float16
    assert jnp.zeros(2, acg.bfloat16).dtype == jnp.bfloat16
    assert acg.finfo(acg.float16).eps == np.finfo(np.float16).eps
    assert acg.ones(2).numpy().dtype == acg.float32


SCALE = {acg.float32: 2.0, acg.float64: 3.0}


def _scaled_loss(x):
    # a program that looks its constant up by dtype, as mixed-precision code does
    return (x * SCALE[x.dtype]).sum() * (1.0 if x.dtype.is_floating_point else 0.0)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_dtype_lookup_inside_programs(mode, dt):
    x = acg.ones(3, dtype=getattr(acg, dt), requires_grad=True)
    with mode():
        _scaled_loss(x).backward()
    assert x.grad.dtype is getattr(acg, dt)
    assert_close(x.grad.numpy(), np.full(3, SCALE[getattr(acg, dt)]))


def test_dtype_lookup_under_acg_compile():
    compiled = acg.compile(_scaled_loss, fullgraph=True)
    for dt in (acg.float32, acg.float64):
        x = acg.ones(3, dtype=dt, requires_grad=True)
        compiled(x).backward()
        assert_close(x.grad.numpy(), np.full(3, SCALE[dt]))
        assert x.grad.dtype is dt


@pytest.mark.parametrize("name", ["int32", "float16", "int16", "uint8", "float64", "int64",
                                  "bfloat16"])
def test_view_as_dtype_reads_the_same_bytes(name):
    """``x.view(dtype)`` reinterprets the bytes, the last size scaled by the item sizes'
    ratio: numpy's ``ndarray.view`` is the oracle, eagerly and under ``acg.compile``."""
    r = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    dt = getattr(acg, name)
    want = r.view(np.dtype(dt))
    for fn in (lambda t: t.view(dt), acg.compile(lambda t: t.view(dt), fullgraph=True)):
        got = fn(acg.tensor(r))
        assert got.dtype is dt and tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))
    assert not acg.tensor(r, requires_grad=True).view(dt).requires_grad


def test_view_as_dtype_errors_and_bool():
    assert acg.tensor([True, False]).view(acg.uint8).tolist() == [1, 0]
    assert acg.tensor([1, 0], dtype=acg.uint8).view(acg.bool).tolist() == [True, False]
    with pytest.raises(RuntimeError, match="self.size\\(-1\\) must be divisible by 2 to view "
                                           "Float as Double"):
        acg.ones(3).view(acg.float64)
    with pytest.raises(RuntimeError, match="self.dim\\(\\) cannot be 0 to view Float as Half"):
        acg.tensor(1.0).view(acg.float16)
    assert tuple(acg.ones(2, 3).view(acg.tensor(6)).shape) == (6,)  # a size, not a dtype
