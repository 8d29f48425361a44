"""Bad input gets PyTorch's error class and a message naming the op, the shapes and the dtypes.

One table drives the checks, in eager mode (the kernel) and under FakeTensorMode (the
shape rule), which must agree.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.errors import OpError
from autograd_compile.tracing.fake import FakeTensorMode


def t(*shape: int, dtype: Any = acg.float32) -> acg.Tensor:
    return acg.ones(*shape, dtype=dtype)


def ints(*values: int) -> acg.Tensor:
    return acg.tensor(list(values))


# (name, inputs, call, substrings the message must contain)
ERRORS: list[tuple[str, Callable[[], tuple], Callable[..., Any], list[str]]] = [
    ("add_shapes", lambda: (t(2, 3), t(4)), lambda a, b: a + b,
     ["acg::add.Tensor", "The size of tensor a (3) must match the size of tensor b (4) at "
      "non-singleton dimension 1", "Tensor[2, 3] float32", "Tensor[4] float32"]),
    ("mul_shapes_3d", lambda: (t(2, 3, 4), t(5, 1)), lambda a, b: a * b,
     ["acg::mul.Tensor", "tensor a (3) must match the size of tensor b (5) at non-singleton "
      "dimension 1", "Tensor[2, 3, 4]"]),
    ("where_shapes", lambda: (t(3, dtype=acg.bool), t(2, 3), t(4)), acg.where,
     ["acg::where.self", "must match", "Tensor[4] float32"]),
    ("where_condition_dtype", lambda: (t(3), t(3), t(3)), acg.where,
     ["acg::where.self", "boolean", "float32"]),
    ("matmul_shapes", lambda: (t(2, 3), t(4, 5)), lambda a, b: a @ b,
     ["acg::matmul", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)", "Tensor[2, 3]",
      "Tensor[4, 5] float32"]),
    ("matmul_batched_shapes", lambda: (t(7, 2, 3), t(7, 4, 5)), acg.matmul,
     ["acg::matmul", "(2x3 and 4x5)", "Tensor[7, 2, 3]"]),
    ("matmul_batch_broadcast", lambda: (t(2, 2, 3), t(3, 3, 5)), acg.matmul,
     ["acg::matmul", "must match", "Tensor[3, 3, 5]"]),
    ("matmul_dtypes", lambda: (t(2, 3), t(3, 4, dtype=acg.float64)), acg.matmul,
     ["acg::matmul", "same dtype", "float32", "float64", "Tensor[3, 4] float64"]),
    ("matmul_scalar", lambda: (t(), t(3)), acg.matmul, ["acg::matmul", "at least 1D"]),
    ("dot_sizes", lambda: (t(3), t(4)), acg.matmul, ["acg::matmul", "inconsistent tensor size"]),
    ("mm_not_matrix", lambda: (t(2, 3, 4), t(4, 5)), acg.mm,
     ["acg::mm", "matrix", "Tensor[2, 3, 4]"]),
    ("bmm_batch", lambda: (t(2, 3, 4), t(3, 4, 5)), acg.bmm,
     ["acg::bmm", "Expected size for first two dimensions of batch2 tensor to be: [2, 4]"]),
    ("linear_shapes", lambda: (t(2, 3), t(5, 4)), F.linear,
     ["acg::linear", "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
      "Tensor[2, 3] float32", "Tensor[5, 4] float32"]),
    ("linear_bias_dtype", lambda: (t(2, 4), t(5, 4), t(5).double()), F.linear,
     ["acg::linear", "expected bias to have the input's dtype float32, got float64"]),
    ("sum_bad_dim", lambda: (t(2, 3),), lambda x: x.sum(3),
     ["acg::sum.dim_IntList", "Dimension out of range (expected to be in range of [-2, 1], but "
      "got 3)", "Tensor[2, 3] float32"]),
    ("softmax_bad_dim", lambda: (t(2, 3),), lambda x: F.softmax(x, -3),
     ["acg::softmax.int", "Dimension out of range", "got -3"]),
    ("transpose_bad_dim", lambda: (t(2, 3),), lambda x: x.transpose(0, 2),
     ["acg::transpose.int", "Dimension out of range"]),
    ("duplicate_dims", lambda: (t(2, 3),), lambda x: x.sum((0, -2)),
     ["acg::sum.dim_IntList", "dim 0 appears multiple times"]),
    ("mean_of_ints", lambda: (ints(1, 2),), lambda x: x.mean(),
     ["acg::mean", "floating point", "int64"]),
    ("var_of_ints", lambda: (ints(1, 2),), lambda x: x.var(), ["acg::var.correction", "int64"]),
    ("reshape_numel", lambda: (t(2, 3),), lambda x: x.reshape(4, 2),
     ["acg::reshape", "shape '[4, 2]' is invalid for input of size 6", "Tensor[2, 3]"]),
    ("view_two_holes", lambda: (t(2, 3),), lambda x: x.view(-1, -1),
     ["acg::view", "only one dimension can be inferred"]),
    ("expand_bad", lambda: (t(2, 3),), lambda x: x.expand(2, 4),
     ["acg::expand", "The expanded size of the tensor (4) must match the existing size (3)"]),
    ("cat_shapes", lambda: (t(2, 3), t(3, 4)), lambda a, b: acg.cat([a, b], 1),
     ["acg::cat", "Sizes of tensors must match except in dimension 1", "Tensor[3, 4]"]),
    ("cat_empty", lambda: (), lambda: acg.cat([]), ["acg::cat", "non-empty list"]),
    ("stack_shapes", lambda: (t(2, 3), t(2, 4)), lambda a, b: acg.stack([a, b]),
     ["acg::stack", "equal size", "[2, 3] at entry 0 and [2, 4] at entry 1"]),
    ("split_sizes", lambda: (t(3, 2),), lambda x: x.split([1, 1]),
     ["acg::split_with_sizes", "sum exactly to 3"]),
    ("permute_len", lambda: (t(2, 3),), lambda x: x.permute(1, 0, 2),
     ["acg::permute", "input.dim() = 2 is not equal to len(dims) = 3"]),
    ("index_tensor_bounds", lambda: (t(3, 2), ints(0, 5)), lambda x, i: x[i],
     ["acg::index.Tensor", "index 5 is out of bounds for dimension 0 with size 3"]),
    ("index_float_index", lambda: (t(3, 2), t(2)), lambda x, i: x[i],
     ["acg::index.Tensor", "must be long or int", "float32"]),
    ("gather_ndim", lambda: (t(3, 2), ints(0, 1)), lambda x, i: x.gather(1, i),
     ["acg::gather", "same number of dimensions"]),
    ("masked_fill_mask_dtype", lambda: (t(3), t(3)), lambda x, m: x.masked_fill(m, 0.0),
     ["acg::masked_fill.Scalar", "boolean", "float32"]),
    ("clamp_no_bounds", lambda: (t(3),), lambda x: acg.clamp(x), ["acg::clamp", "At least one"]),
    ("gelu_approximate", lambda: (t(3),), lambda x: F.gelu(x, approximate="fast"),
     ["acg::gelu", "none or tanh"]),
    ("layer_norm_shape", lambda: (t(2, 3),), lambda x: F.layer_norm(x, (4,)),
     ["acg::layer_norm", "normalized_shape=[4]", "[*, 4]", "[2, 3]"]),
    ("layer_norm_weight", lambda: (t(2, 3), t(4)), lambda x, w: F.layer_norm(x, 3, w),
     ["acg::layer_norm", "weight", "[4]"]),
    ("layer_norm_weight_dtype", lambda: (t(2, 3), t(3, dtype=acg.float64)),
     lambda x, w: F.layer_norm(x, 3, w), ["acg::layer_norm", "float64", "float32"]),
    ("rms_norm_shape", lambda: (t(2, 3),), lambda x: F.rms_norm(x, (4,)),
     ["acg::rms_norm", "normalized_shape=[4]", "[*, 4]", "[2, 3]"]),
    ("rms_norm_weight_dtype", lambda: (t(2, 3), t(3, dtype=acg.float64)),
     lambda x, w: F.rms_norm(x, 3, w), ["acg::rms_norm", "weight", "float64", "float32"]),
    ("cross_entropy_batch", lambda: (t(3, 5), ints(1, 2)), F.cross_entropy,
     ["acg::cross_entropy", "batch_size (3)", "batch_size (2)", "Tensor[3, 5] float32",
      "Tensor[2] int64"]),
    ("cross_entropy_target_dtype", lambda: (t(3, 5), t(3)), F.cross_entropy,
     ["acg::cross_entropy", "integer", "float32"]),
    ("cross_entropy_target_range", lambda: (t(2, 5), ints(1, 7)), F.cross_entropy,
     ["acg::cross_entropy", "Target 7 is out of bounds"]),
    ("mse_shapes", lambda: (t(2, 3), t(4)), F.mse_loss, ["acg::mse_loss", "must match"]),
    # index writes and scatter_reduce (PyTorch's types: see ERROR_TYPES below)
    ("index_add_index_dtype", lambda: (t(3, 2), t(2), t(2, 2)),
     lambda x, i, s: x.index_add(0, i, s),
     ["acg::index_add", "int32/int64 for index", "float32", "Tensor[3, 2] float32"]),
    ("index_add_source_shape", lambda: (t(3, 2), ints(0, 1), t(2, 3)),
     lambda x, i, s: x.index_add(0, i, s),
     ["acg::index_add", "source tensor shape must match self tensor shape", "[3, 2]",
      "Tensor[2, 3] float32"]),
    ("index_add_count", lambda: (t(3, 2), ints(0, 1, 2), t(2, 2)),
     lambda x, i, s: x.index_add(0, i, s),
     ["acg::index_add", "Number of indices (3) should be equal to source.size(dim) (2)"]),
    ("index_add_source_dtype", lambda: (t(3, 2), ints(0), t(1, 2, dtype=acg.float64)),
     lambda x, i, s: acg.index_add(x, 0, i, s),
     ["acg::index_add", "self (float32) and source (float64) must have the same scalar type"]),
    ("index_add_bad_dim", lambda: (t(3, 2), ints(0), t(1, 2)),
     lambda x, i, s: x.index_add(2, i, s), ["acg::index_add", "Dimension out of range"]),
    ("index_copy_index_dtype", lambda: (t(3, 2), t(1), t(1, 2)),
     lambda x, i, s: x.index_copy(0, i, s),
     ["acg::index_copy", "Expected a long tensor for index, but got float32"]),
    ("index_fill_index_ndim", lambda: (t(3, 2), acg.tensor([[0]])),
     lambda x, i: x.index_fill(0, i, 1.0),
     ["acg::index_fill.int_Scalar", "vector/scalar", "Tensor[1, 1] int64"]),
    ("index_fill_value_ndim", lambda: (t(3, 2), ints(0), t(2)),
     lambda x, i, v: x.index_fill(0, i, v),
     ["acg::index_fill.int_Tensor", "0-dimensional value tensor", "Tensor[2] float32"]),
    ("scatter_reduce_index_dtype", lambda: (t(3, 4), t(3, 2), t(3, 2)),
     lambda x, i, s: x.scatter_reduce(1, i, s, "sum"),
     ["acg::scatter_reduce.two", "int64 for index", "float32"]),
    ("scatter_reduce_ndim", lambda: (t(3, 4), ints(0, 1), t(2)),
     lambda x, i, s: x.scatter_reduce(1, i, s, "amax"),
     ["acg::scatter_reduce.two", "same number of dimensions", "Tensor[3, 4] float32"]),
    ("scatter_reduce_sizes", lambda: (t(3, 4), acg.zeros(3, 5, dtype=acg.int64), t(3, 4)),
     lambda x, i, s: x.scatter_reduce(1, i, s, "mean"),
     ["acg::scatter_reduce.two", "Expected index [3, 5] to be smaller than self [3, 4] apart "
      "from dimension 1 and to be smaller size than src [3, 4]"]),
    ("scatter_reduce_src_dtype", lambda: (t(3), ints(0), t(1, dtype=acg.float64)),
     lambda x, i, s: x.scatter_reduce(0, i, s, "prod"),
     ["acg::scatter_reduce.two", "self.dtype to be equal to src.dtype", "float64"]),
    ("scatter_reduce_mode", lambda: (t(3), ints(0), t(1)),
     lambda x, i, s: x.scatter_reduce(0, i, s, "max"),
     ["acg::scatter_reduce.two", "must be either sum, prod, mean, amax or amin, got max"]),
    ("index_add_out_of_range", lambda: (t(3, 2), ints(0, 5), t(2, 2)),
     lambda x, i, s: x.index_add(0, i, s),
     ["acg::index_add", "index 5 is out of bounds for dimension 0 with size 3"]),
    ("index_fill_out_of_range", lambda: (t(3, 2), ints(-4)), lambda x, i: x.index_fill(0, i, 1.0),
     ["acg::index_fill", "index -4 is out of bounds for dimension 0 with size 3"]),
    ("scatter_reduce_out_of_range", lambda: (t(2, 3), acg.tensor([[0, 3]]), t(1, 2)),
     lambda x, i, s: x.scatter_reduce(1, i, s, "sum"),
     ["acg::scatter_reduce.two", "index 3 is out of bounds for dimension 1 with size 3"]),
    # rearrangements
    ("roll_shifts_dims", lambda: (t(2, 3),), lambda x: x.roll((1, 2), 0),
     ["acg::roll", "shifts and dimensions must align. shifts: 2, dims:1", "Tensor[2, 3] float32"]),
    ("roll_bad_dim", lambda: (t(2, 3),), lambda x: x.roll(1, 2),
     ["acg::roll", "Dimension out of range"]),
    ("cumprod_bad_dim", lambda: (t(2, 3),), lambda x: x.cumprod(-3),
     ["acg::cumprod", "Dimension out of range", "got -3"]),
    ("repeat_interleave_repeats_ndim", lambda: (t(2, 3), acg.ones(2, 2, dtype=acg.int64)),
     lambda x, r: x.repeat_interleave(r, dim=0, output_size=4),
     ["acg::repeat_interleave.self_Tensor", "0-dim or 1-dim", "Tensor[2, 2] int64"]),
    ("repeat_interleave_repeats_size", lambda: (t(2, 3), ints(1, 2)),
     lambda x, r: x.repeat_interleave(r, dim=1, output_size=3),
     ["acg::repeat_interleave.self_Tensor", "repeats.size(0) = 2 and input.size(1) = 3"]),
    ("repeat_interleave_repeats_dtype", lambda: (t(2, 3), t(2)),
     lambda x, r: x.repeat_interleave(r, dim=0, output_size=2),
     ["acg::repeat_interleave.self_Tensor", "Long or Int", "float32"]),
    ("take_along_dim_ndim", lambda: (t(2, 3), ints(0, 1)),
     lambda x, i: acg.take_along_dim(x, i, 1),
     ["acg::take_along_dim", "same number of dimensions", "2 dimensions for input, and 1"]),
    ("take_along_dim_dtype", lambda: (t(2, 3), t(2, 1)),
     lambda x, i: acg.take_along_dim(x, i, 1),
     ["acg::take_along_dim", "dtype of indices should be int64", "float32"]),
    ("diff_zero_dim", lambda: (t(),), lambda x: x.diff(),
     ["acg::diff", "at least one-dimensional", "Tensor[] float32"]),
    ("diff_prepend_ndim", lambda: (t(2, 3), t(3)), lambda x, p: x.diff(prepend=p),
     ["acg::diff", "prepend", "same number of dimensions"]),
    # positions by value
    ("searchsorted_rows", lambda: (t(2, 3), t(3, 1)), acg.searchsorted,
     ["acg::searchsorted.Tensor", "boundaries tensor [2, 3] and input value tensor [3, 1]"]),
    ("searchsorted_side", lambda: (t(3), t(2)),
     lambda s, v: acg.searchsorted(s, v, right=True, side="left"),
     ["acg::searchsorted.Tensor", "side and right can't be set to opposites"]),
    ("searchsorted_sorter", lambda: (t(3), t(2), t(3)),
     lambda s, v, o: acg.searchsorted(s, v, sorter=o),
     ["acg::searchsorted.Tensor", "sorter", "float32"]),
    ("bucketize_boundaries_ndim", lambda: (t(2), t(2, 2)), acg.bucketize,
     ["acg::bucketize.Tensor", "boundaries tensor must be 1 dimension, but got dim(2)"]),
    ("bincount_negative", lambda: (ints(1, -2),), acg.bincount,
     ["acg::bincount", "1-d non-negative integral inputs", "Tensor[2] int64"]),
    ("bincount_weights", lambda: (ints(1, 2), t(3)), acg.bincount,
     ["acg::bincount", "same length as input", "Tensor[3] float32"]),
]
# PyTorch's exception class where it is not a plain RuntimeError (ours is also an OpError)
ERROR_TYPES = {"index_add_count": IndexError, "index_add_bad_dim": IndexError,
               "index_copy_index_dtype": IndexError, "index_fill_index_ndim": IndexError,
               "index_add_out_of_range": IndexError, "index_fill_out_of_range": IndexError,
               "scatter_reduce_out_of_range": IndexError, "roll_bad_dim": IndexError,
               "cumprod_bad_dim": IndexError, "cross_entropy_target_range": IndexError}
EAGER_ONLY = ("index_tensor_bounds", "cross_entropy_target_range", "index_add_out_of_range",
              "index_fill_out_of_range", "scatter_reduce_out_of_range", "bincount_negative",
              "bincount_weights")  # need the values
FAKEABLE = [e for e in ERRORS if e[0] not in EAGER_ONLY]


@pytest.mark.parametrize("name,make,call,needles", ERRORS, ids=[e[0] for e in ERRORS])
def test_eager_error_names_op_shapes_dtypes(name: str, make: Callable, call: Callable,
                                            needles: list[str]) -> None:
    with pytest.raises(RuntimeError) as info:
        call(*make())
    assert isinstance(info.value, OpError)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


@pytest.mark.parametrize("name", sorted(ERROR_TYPES))
def test_error_has_pytorchs_exception_type(name: str) -> None:
    _, make, call, _ = next(e for e in ERRORS if e[0] == name)
    with pytest.raises(ERROR_TYPES[name]) as info:
        call(*make())
    assert isinstance(info.value, OpError)


@pytest.mark.parametrize("name,make,call,needles", FAKEABLE, ids=[e[0] for e in FAKEABLE])
def test_fake_error_matches_eager(name: str, make: Callable, call: Callable,
                                  needles: list[str]) -> None:
    real = make()
    with FakeTensorMode() as mode:
        fakes = [mode.from_tensor(a) for a in real]
        with pytest.raises(RuntimeError) as info:
            call(*fakes)
    assert isinstance(info.value, OpError)
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))


# -- errors that are not about one op's inputs ----------------------------------------------------
def test_getitem_out_of_range_is_index_error() -> None:
    x = t(3, 2)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    assert [row.tolist() for row in x] == [[1.0, 1.0]] * 3  # iteration stops at the end


def test_setitem_value_that_does_not_fit_the_selection() -> None:
    """PyTorch's text; the tensor is left as it was (the mask's 3 places, a value of 2)."""
    x, mask = acg.zeros(4), acg.tensor([True, False, True, True])
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] "
                       r"cannot be broadcast to indexing result of shape \[3\]"):
        x[mask] = acg.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"value tensor of shape \[2, 3\] cannot be broadcast "
                       r"to indexing result of shape \[3\]"):
        x[mask] = acg.ones(2, 3)
    assert x.tolist() == [0.0] * 4
    x[mask] = acg.tensor([7.0])  # one value fills every place
    assert x.tolist() == [7.0, 0.0, 7.0, 7.0]


def test_inplace_on_leaf_requiring_grad() -> None:
    x = acg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 2.0
    with acg.no_grad():  # what an optimizer does
        x.sub_(0.5)
    assert x.tolist() == [0.5, 0.5, 0.5] and x.grad_fn is None


def test_inplace_on_a_saved_tensor_breaks_its_backward() -> None:
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.exp()  # exp saves its output
    v = z._version
    z.add_(1)
    assert z._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_a_view_of_a_leaf_requiring_grad() -> None:
    p = acg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable that requires grad"):
        p[0].zero_()
    assert p.tolist() == [1.0, 1.0, 1.0]  # refused before anything was written
    with acg.no_grad():  # initialisation code does this
        p[0].zero_()
    assert p.tolist() == [0.0, 1.0, 1.0] and p.grad_fn is None


def test_inplace_cannot_change_dtype_category() -> None:
    x = ints(1, 2, 3)
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired "
                                           "output type int64"):
        x.mul_(0.5)
    assert x.tolist() == [1, 2, 3] and x._version == 0


def test_data_dependent_shape_under_fake_mode() -> None:
    x, m = t(3), acg.tensor([True, False, True])
    assert x[m].shape == (2,)
    with FakeTensorMode() as mode:
        fx, fm = mode.from_tensor(x), mode.from_tensor(m)
        with pytest.raises(RuntimeError, match="nonzero.*depends on the tensor's values"):
            fx[fm]
        fx[fm] = 0.0  # a full-shape mask assignment needs no data: it is a where()


def test_bad_reduction_and_probabilities() -> None:
    with pytest.raises(ValueError, match="mean_all is not a valid value for reduction"):
        F.cross_entropy(t(2, 3), ints(0, 1), reduction="mean_all")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(t(3), 1.5)


def test_cross_entropy_weight_gradient_not_silently_wrong() -> None:
    w = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = F.cross_entropy(acg.tensor(np.zeros((2, 3)), dtype=acg.float32), ints(0, 2), w)
    with pytest.raises(RuntimeError, match="derivative for 'weight'"):
        loss.backward()


def test_kernel_failure_without_rule_message_still_names_op() -> None:
    with pytest.raises(RuntimeError) as info:
        ints(1, 2).bitwise_not().exp().bitwise_not()  # invert of a float: jax's own error
    assert isinstance(info.value, OpError)
    assert "acg::bitwise_not" in str(info.value) and "Tensor[2] float32" in str(info.value)


DIM_ERRORS = [  # PyTorch raises IndexError for a dim out of range; ours is also an OpError
    ("sum", lambda x: x.sum(3)), ("softmax", lambda x: F.softmax(x, -3)),
    ("transpose", lambda x: x.transpose(0, 2)), ("cat", lambda x: acg.cat([x, x], 2)),
    ("unsqueeze", lambda x: x.unsqueeze(4)), ("max_dim", lambda x: x.max(2)),
]


@pytest.mark.parametrize("fake", [False, True], ids=["eager", "fake"])
@pytest.mark.parametrize("name,call", DIM_ERRORS, ids=[d[0] for d in DIM_ERRORS])
def test_dimension_out_of_range_is_an_index_error(name: str, call: Callable, fake: bool) -> None:
    x = t(2, 3)
    with FakeTensorMode() if fake else contextlib.nullcontext() as mode:
        with pytest.raises(IndexError, match="Dimension out of range") as info:
            call(mode.from_tensor(x) if fake else x)
    assert isinstance(info.value, OpError) and "Tensor[2, 3] float32" in str(info.value)


def test_size_of_a_missing_dim_is_an_index_error() -> None:
    assert t(2, 3).size(-1) == 3
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        t(2, 3).size(2)
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        t().size(0)
