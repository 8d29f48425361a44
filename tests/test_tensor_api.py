"""The Python surface of tensors: factories, dtype inference and promotion, autograd
node names, casts, multi-output ops and dropout (the op table is in test_ops.py)."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.tracing.fake import FakeTensor, FakeTensorMode


def test_tensor_infers_pytorch_dtypes() -> None:
    assert acg.tensor([1.5, 2]).dtype == acg.float32  # Python floats: the default float32
    assert acg.tensor([[1, 2]]).dtype == acg.int64
    assert acg.tensor(True).dtype == acg.bool and acg.tensor(True).shape == ()
    assert acg.tensor(np.ones(2, np.float64)).dtype == acg.float64  # numpy keeps its dtype
    assert acg.tensor(jnp.ones(2, jnp.int32)).dtype == acg.int32
    x = acg.tensor([1, 2], dtype=acg.float64, requires_grad=True)
    assert x.dtype == acg.float64 and x.requires_grad and x.is_leaf
    y = acg.tensor(x)  # a copy without history
    assert y.tolist() == [1.0, 2.0] and not y.requires_grad


def test_factories_shapes_dtypes_and_seed() -> None:
    assert acg.zeros(2, 3).shape == acg.ones((2, 3)).shape == acg.empty([2, 3]).shape == (2, 3)
    assert acg.zeros(2).dtype == acg.float32 and acg.ones(2, dtype=acg.int64).dtype == acg.int64
    assert acg.full((2,), 7).dtype == acg.int64 and acg.full((2,), 0.5).tolist() == [0.5, 0.5]
    assert acg.arange(4).tolist() == [0, 1, 2, 3] and acg.arange(4).dtype == acg.int64
    assert acg.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert acg.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    x = acg.zeros(2, 3, dtype=acg.float64)
    assert acg.ones_like(x).dtype == acg.float64 and acg.full_like(x, 2).tolist()[0] == [2] * 3
    assert acg.zeros(3, requires_grad=True).requires_grad
    acg.manual_seed(0)
    a, b, c = acg.rand(1000), acg.randn(2, 3), acg.randint(0, 5, (4,))
    acg.manual_seed(0)
    assert np.array_equal(acg.rand(1000).detach().numpy(), a.detach().numpy())  # reproducible
    assert np.array_equal(acg.randn(2, 3).detach().numpy(), b.detach().numpy())
    assert np.array_equal(acg.randint(0, 5, (4,)).detach().numpy(), c.detach().numpy())
    assert not np.array_equal(acg.rand(1000).detach().numpy(), a.detach().numpy())  # a fresh key per call
    assert 0 <= float(a.min()) and float(a.max()) < 1 and abs(float(a.mean()) - 0.5) < 0.05
    assert b.dtype == acg.float32 and c.dtype == acg.int64


def test_factories_under_fake_mode_are_fake() -> None:
    with FakeTensorMode():
        for t in (acg.zeros(2, 3), acg.rand(2, 3), acg.randn(2, 3), acg.arange(6),
                  acg.tensor([1.0, 2.0, 3.0]), acg.full((2, 3), 1.5)):
            assert isinstance(t, FakeTensor)
    assert t.shape == (2, 3)


@pytest.mark.parametrize("a,b,want", [
    (np.int64, 2.5, np.float32),  # an int tensor with a float scalar: the default float
    (np.float16, 2.5, np.float16),  # a scalar does not widen a float tensor
    (np.int32, 7, np.int32),
    (np.bool_, 1, np.int64),
    (np.float32, np.float64, np.float32),  # a zero-dim float64 tensor does not widen float32
    (np.int64, np.float64, np.float64),  # ... but lifts the category of an int tensor
], ids=["int*float", "half*float", "int32*int", "bool*int", "f32*f64_0d", "i64*f64_0d"])
def test_type_promotion_is_pytorchs(a: Any, b: Any, want: Any) -> None:
    x = acg.tensor(np.ones(3, a))
    y = acg.tensor(np.ones((), b)) if isinstance(b, type) else b
    assert (x * y).dtype == want and (y * x).dtype == want  # the symmetric rule


def test_comparisons_return_tensors_and_hash_stays_identity() -> None:
    x = acg.tensor([1.0, 2.0])
    assert (x == 1).tolist() == [True, False] and (x != x).tolist() == [False, False]
    assert (x == None) is False and x != "a"  # noqa: E711  (unknown operands: identity)
    assert {x: 1}[x] == 1 and len({x, acg.tensor([1.0, 2.0])}) == 2


def test_grad_fn_names_follow_pytorch() -> None:
    x = acg.tensor(np.ones((2, 3)), requires_grad=True)
    w = acg.tensor(np.ones((3, 3)), requires_grad=True)
    names = {
        "SumBackward0": x.sum(1), "MeanBackward0": x.mean(), "MaxBackward0": x.max(1).values,
        "SelectBackward0": x[0], "SliceBackward0": x[:, 1:], "IndexBackward0": x[[0]],
        "MatmulBackward0": x @ w, "SoftmaxBackward0": F.softmax(x, 1),
        "LayerNormBackward0": F.layer_norm(x, 3), "PowBackward0": x ** 2,
        "CrossEntropyBackward0": F.cross_entropy(x, acg.tensor([0, 2])),
        "ViewBackward0": x.view(6), "TransposeBackward0": x.t(), "CatBackward0": acg.cat([x, x]),
    }
    for name, t in names.items():
        assert t.grad_fn.name() == name


def test_to_and_casts() -> None:
    x = acg.tensor([1.5, -2.5], requires_grad=True)
    assert x.to(acg.float32) is x and x.to("cpu") is x  # nothing to do: self, as in PyTorch
    y = x.double()
    assert y.dtype == acg.float64 and x.float() is x and x.long().tolist() == [1, -2]
    assert x.type_as(acg.zeros(1, dtype=acg.float16)).dtype == acg.float16
    (y * y).sum().backward()
    assert x.grad.dtype == acg.float32 and x.grad.tolist() == [3.0, -5.0]


def test_max_dim_returns_values_and_indices() -> None:
    x = acg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    out = x.max(dim=1)
    assert out.values.tolist() == [5.0, 7.0] and out.indices.tolist() == [1, 0]
    values, indices = acg.min(x, 0, keepdim=True)
    assert values.shape == indices.shape == (1, 3) and indices.dtype == acg.int64
    assert acg.max(x, -x).tolist() == abs(x).tolist()  # max(other) is maximum


def test_dropout_masks_scales_and_is_reproducible() -> None:
    x = acg.tensor(np.ones((50, 40)), requires_grad=True)
    acg.manual_seed(3)
    y = F.dropout(x, 0.25)
    acg.manual_seed(3)
    assert np.array_equal(F.dropout(x, 0.25).detach().numpy(), y.detach().numpy())
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.05 and np.allclose(y.detach().numpy()[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())  # d/dx of mask * x / (1-p)
    assert F.dropout(x, 0.25, training=False) is x and F.dropout(x, 0.0) is x
