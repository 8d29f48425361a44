"""numpy scalars (``np.log(2)``, ``np.float32(0.5)``, ``np.int64(1)`` from array maths) are
the Python numbers they hold wherever an op takes a number, as in PyTorch: weakly typed,
never a 0-d tensor that needs a gradient; ``acg.tensor`` of sequences holding numpy values
takes their dtypes, as ``torch.tensor`` does."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

SCALARS = [np.float64(2.0), np.float32(2.0), np.float16(2.0), np.int64(2), np.int32(2)]


@pytest.mark.parametrize("s", SCALARS, ids=lambda s: type(s).__name__)
@pytest.mark.parametrize("op", ["mul", "rmul", "div", "rdiv", "add", "sub", "pow"])
def test_numpy_scalar_operands_differentiate_as_numbers(mode, op, s):
    fns = {"mul": lambda x: x * s, "rmul": lambda x: s * x, "div": lambda x: x / s,
           "rdiv": lambda x: s / x, "add": lambda x: x + s, "sub": lambda x: x - s,
           "pow": lambda x: x ** s}
    grads = {"mul": lambda x: 2 + 0 * x, "rmul": lambda x: 2 + 0 * x, "div": lambda x: 0.5 + 0 * x,
             "rdiv": lambda x: -2 / x ** 2, "add": lambda x: 1 + 0 * x, "sub": lambda x: 1 + 0 * x,
             "pow": lambda x: 2 * x}
    x0 = np.array([1.0, 3.0], np.float32)
    x = acg.tensor(x0, requires_grad=True)
    y = fns[op](x)
    assert y.dtype == acg.float32  # weakly typed, as a Python number
    with mode():
        y.sum().backward()
    assert_close(x.grad, grads[op](x0), rtol=1e-6)


def test_numpy_scalars_as_dims_fill_values_and_where():
    x = acg.ones(2, 3)
    assert x.sum(dim=np.int64(1)).tolist() == [3.0, 3.0]
    assert x.mean(np.int64(0)).shape == (3,)
    assert acg.cat([x, x], dim=np.int64(1)).shape == (2, 6)
    full = acg.full((2,), np.float64(0.5))
    assert full.dtype == acg.float32 and full.tolist() == [0.5, 0.5]
    assert x.new_full((2,), np.float64(0.5)).tolist() == [0.5, 0.5]
    assert acg.where(x > 0, np.float64(0.5), 0.0).dtype == acg.float32


def test_numpy_scalars_inside_compiled_regions():
    scale = np.float64(0.5)

    @acg.compile
    def f(x):
        return (x * scale).sum() / np.float32(2)
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    out = f(x)
    out.backward()
    assert_close(out, 0.75)
    assert_close(x.grad, [0.25, 0.25])


@pytest.mark.parametrize("data, want", [
    ([np.float64(1.5), np.float64(2)], "float64"), ([np.float32(1.5), 2.0], "float32"),
    ([1.0, np.float64(2)], "float64"), ([np.int32(1), 2], "int64"),
    ([np.int64(1), 2.5], "float32"), ([np.float16(1), 1], "float16"),
    ([np.zeros(2), np.ones(2)], "float64"), ([np.zeros(2, np.int32)], "int32"),
    ([[1.0, 2.0], np.zeros(2)], "float64"), ([True, np.bool_(False)], "bool"),
    ([[1.0, 2.0], [3.0, 4.0]], "float32"), ([1, 2], "int64")])
def test_tensor_of_sequences_with_numpy_values_takes_torchs_dtype(data, want):
    """The table is torch 2.13's own answers (torch.tensor on the same data)."""
    t = acg.tensor(data)
    assert t.dtype == getattr(acg, want)
    assert_close(t.numpy().astype(np.float64), np.asarray(data, dtype=np.float64))


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
def test_tensor_dtypes_match_torch():
    torch = pytest.importorskip("torch")
    for data in ([np.float64(1.5), 2.0], [np.zeros(2, np.float32), np.ones(2, np.float32)],
                 [np.int16(3), np.int8(1)], [np.uint8(3), 1.5]):
        assert str(acg.tensor(data).dtype) == str(torch.tensor(data).dtype)
