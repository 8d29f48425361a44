"""The second batch of ops real programs call (index_add/copy/fill, scatter_reduce, roll,
repeat_interleave, cumprod, take_along_dim, nan_to_num, diff, searchsorted, bucketize, bincount,
where(condition)) beyond the op table (op_cases_more.py): each family under compiled autograd
in every mode against jax.grad of an independent jnp program, PyTorch's tie rule, in-place
writes through views, and the behaviour at the edges (traced data-dependent sizes, bad input).
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from op_cases_more import _index_add_cols, _index_copy_rows, _scatter_reduce_ref


def _grads(f: Callable, *xs: np.ndarray) -> tuple:
    return jax.grad(f, argnums=tuple(range(len(xs))))(*xs)


def _leaves(*arrays: np.ndarray) -> list:
    return [acg.tensor(a, requires_grad=True) for a in arrays]


def _check(leaves: list, want: tuple) -> None:
    for t, w in zip(leaves, want):
        np.testing.assert_allclose(t.grad.numpy(), np.asarray(w), rtol=1e-10, atol=1e-12)


# -- index_add / index_copy / index_fill -------------------------------------------------------
def test_index_writes_in_every_mode(mode) -> None:
    rng = np.random.default_rng(0)
    x0, s0, c0, v0 = (rng.standard_normal(s) for s in ((3, 4), (3, 2), (2, 4), ()))
    x, s, c, v = _leaves(x0, s0, c0, v0)
    i = acg.tensor([3, 3])
    y = x.index_add(1, i, s, alpha=0.5) * 2
    y.index_copy_(0, acg.tensor([2, 0]), c)
    z = y.index_fill(1, acg.tensor([1]), v)
    with mode():
        (z * z).sum().backward()

    def ref(x, s, c, v):
        y = _index_add_cols(x, jnp.array([3, 3]), s, 0.5) * 2
        y = _index_copy_rows(y, jnp.array([2, 0]), c)
        z = y.at[:, 1].set(v)
        return (z * z).sum()
    _check([x, s, c, v], _grads(ref, x0, s0, c0, v0))


def test_index_add_inplace_on_a_view_writes_through() -> None:
    base = acg.zeros(3, 4, dtype=acg.float64)
    base[:, 1:].index_add_(1, acg.tensor([0, 0, 2]), acg.ones(3, 3, dtype=acg.float64))
    want = np.zeros((3, 4))
    want[:, 1] = 2
    want[:, 3] = 1
    np.testing.assert_array_equal(base.detach().numpy(), want)
    assert base._version > 0


def test_inplace_index_write_to_a_saved_tensor_raises_in_backward(mode) -> None:
    x = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = (x * 1).exp()  # exp saves its output
    z.index_fill_(0, acg.tensor([1]), 0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with mode():
            z.sum().backward()
    assert x.grad is None

# -- scatter_reduce ------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce,include_self", [("prod", True), ("prod", False),
                                                 ("mean", False), ("amax", True),
                                                 ("amin", False), ("sum", True)])
def test_scatter_reduce_in_every_mode(mode, reduce: str, include_self: bool) -> None:
    x0 = np.array([[1.5, 0.0, -2.0, 0.5], [0.7, -1.2, 0.9, 2.0]])
    s0 = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, -0.5]])  # zeros: prod's hard cases
    idx = np.array([[0, 0, 1], [3, 3, 2]])
    x, s = _leaves(x0, s0)
    out = x.scatter_reduce(1, acg.tensor(idx), s, reduce, include_self=include_self)
    w = np.arange(8.0).reshape(2, 4) - 3
    with mode():
        (out * acg.tensor(w)).sum().backward()
    _check([x, s], _grads(lambda x, s: (_scatter_reduce_ref(x, jnp.array(idx), s, reduce,
                                                             include_self) * w).sum(), x0, s0))


def test_scatter_reduce_ties_share_the_gradient_evenly(mode) -> None:
    """PyTorch's rule: every entry equal to the result (self included) gets grad / count."""
    x = acg.tensor([1.0, 3.0], requires_grad=True)
    s = acg.tensor([1.0, 1.0, 2.0, 3.0], requires_grad=True)
    out = x.scatter_reduce(0, acg.tensor([0, 0, 1, 1]), s, "amax")
    with mode():
        (out * acg.tensor([2.0, 5.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 / 3, 5 / 2])
    np.testing.assert_allclose(s.grad.numpy(), [2 / 3, 2 / 3, 0.0, 5 / 2])


def test_scatter_reduce_prod_of_a_larger_src_grads_only_the_read_block(mode) -> None:
    x = acg.tensor([[2.0, 3.0]], requires_grad=True)
    s = acg.tensor([[4.0, 5.0, 7.0]], requires_grad=True)  # index reads only s[:, :2]
    out = x.scatter_reduce(1, acg.tensor([[1, 1]]), s, "prod")
    with mode():
        out.sum().backward()
    assert out.tolist() == [[2.0, 60.0]]
    assert x.grad.tolist() == [[1.0, 20.0]] and s.grad.tolist() == [[15.0, 12.0, 0.0]]


def test_scatter_with_reduce_checks_the_mode() -> None:
    x, i = acg.zeros(3), acg.tensor([0, 1])
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        x.scatter(0, i, 1.0, reduce="max")
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean"):
        x.scatter_reduce(0, i, acg.ones(2), "max")
    assert x.scatter_(0, i, acg.tensor([2.0, 3.0]), reduce="add").tolist() == [2.0, 3.0, 0.0]


# -- roll, repeat_interleave, cumprod, take_along_dim, nan_to_num, diff -------------------------
def test_rearrangements_in_every_mode(mode) -> None:
    rng = np.random.default_rng(3)
    x0, p0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 1))
    x0[1, 2] = x0[2, 0] = 0.0  # cumprod's zeros
    x, p = _leaves(x0, p0)
    reps, idx = np.array([2, 0, 1, 3]), np.array([[3, 0], [1, 1], [2, 3]])
    y = x.roll(1, 1).cumprod(1)
    y = acg.repeat_interleave(y, acg.tensor(reps), dim=1)  # the length read from the repeats
    y = y.diff(dim=1, prepend=p) * acg.take_along_dim(x, acg.tensor(idx), 1).sum(1, keepdim=True)
    z = (y.repeat_interleave(2, dim=0) / x.sum()).nan_to_num()
    with mode():
        (z * z).sum().backward()

    def ref(x, p):
        y = jnp.repeat(jnp.cumprod(jnp.roll(x, 1, 1), 1), reps, 1)
        y = jnp.diff(y, axis=1, prepend=p) * jnp.take_along_axis(x, idx, 1).sum(1, keepdims=True)
        z = jnp.nan_to_num(jnp.repeat(y, 2, 0) / x.sum())
        return (z * z).sum()
    _check([x, p], _grads(ref, x0, p0))


def test_repeat_interleave_with_tensor_repeats_needs_output_size_when_traced() -> None:
    from autograd_compile.tracing.fake import FakeTensorMode
    x, r = acg.ones(3, 2), acg.tensor([1, 0, 2])
    assert x.repeat_interleave(r, dim=0).shape == (3, 2)  # eager: read from the values
    with FakeTensorMode() as m:
        fx, fr = m.from_tensor(x), m.from_tensor(r)
        assert fx.repeat_interleave(fr, dim=0, output_size=3).shape == (3, 2)
        with pytest.raises(RuntimeError, match="pass output_size="):
            fx.repeat_interleave(fr, dim=0)
    with pytest.raises(RuntimeError, match="Invalid output_size, expected 3 but got 4"):
        x.repeat_interleave(r, dim=0, output_size=4)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(acg.tensor([1, -1, 2]), dim=0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(-1)


def test_repeat_interleave_gradient_sums_the_copies_in_every_mode(mode) -> None:
    x = acg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.repeat_interleave(acg.tensor([3, 1]), dim=1)
    with mode():
        (y * acg.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])).sum().backward()
    assert y.tolist() == [[1.0, 1.0, 1.0, 2.0], [3.0, 3.0, 3.0, 4.0]]
    assert x.grad.tolist() == [[6.0, 4.0], [18.0, 8.0]]


def test_nan_to_num_defaults_are_the_dtype_extremes() -> None:
    for dtype in (acg.float32, acg.float64):
        x = acg.tensor([float("nan"), float("inf"), -float("inf"), 1.5], dtype=dtype)
        info = np.finfo(np.dtype(dtype))
        assert x.nan_to_num().tolist() == [0.0, float(info.max), float(info.min), 1.5]
    ints = acg.tensor([1, 2])
    assert ints.nan_to_num().tolist() == [1, 2] and ints.nan_to_num().dtype == acg.int64


def test_cumprod_gradient_at_zeros_is_the_product_of_the_others(mode) -> None:
    x = acg.tensor([2.0, 0.0, 3.0, 0.0, 5.0], requires_grad=True)
    with mode():
        x.cumprod(0).sum().backward()
    # d/dx_k sum_j prod_{i<=j} x_i, written out by hand
    assert x.grad.tolist() == [1.0, 2.0 + 2 * 3.0, 0.0, 0.0, 0.0]


# -- searchsorted, bucketize, bincount, where(condition): no gradient of their own ---------------
def test_positions_by_value_feed_differentiable_ops_in_every_mode(mode) -> None:
    x0 = np.array([0.5, -1.0, 2.0, 3.0])
    x = acg.tensor(x0, requires_grad=True)
    b = acg.tensor([0.0, 1.0, 2.5])
    buckets = acg.bucketize(x.detach(), b)  # [1, 0, 2, 3]
    slot = acg.searchsorted(b, acg.tensor([0.5, 2.0]), side="right")  # [1, 2]
    counts = acg.bincount(buckets, minlength=4).to(acg.float64)  # [1, 1, 1, 1]
    rows = acg.where(x.detach() > 0)[0]  # [0, 2, 3]
    y = acg.zeros(4, dtype=acg.float64).index_add(0, buckets, x * x) * counts
    loss = y.sum() + x[rows].sum() + x.take_along_dim(slot).sum()
    with mode():
        loss.backward()
    assert buckets.tolist() == [1, 0, 2, 3] and slot.tolist() == [1, 2]
    assert counts.tolist() == [1.0] * 4 and rows.tolist() == [0, 2, 3]
    np.testing.assert_allclose(x.grad.numpy(), 2 * x0 + [1, 1, 2, 1])
    assert buckets.grad_fn is None and slot.requires_grad is False


def test_data_dependent_lengths_under_fake_tensors() -> None:
    from autograd_compile.tracing.fake import FakeTensorMode
    with FakeTensorMode() as m:
        i, b = m.from_tensor(acg.tensor([0, 2])), m.from_tensor(acg.tensor([1.0, 2.0]))
        assert acg.bucketize(i, b).shape == (2,)  # shape known: fine
        with pytest.raises(RuntimeError, match="bincount.*concrete tensors"):
            acg.bincount(i)
        with pytest.raises(RuntimeError, match="nonzero.*depends on the tensor's values"):
            acg.where(i > 0)


def test_one_capture_serves_new_alphas_and_batch_sizes() -> None:
    """alpha is lifted and sizes (repeat_interleave's output_size too) are symbolic: a new
    value or batch size reuses the captured graph, with the right gradients."""
    acg.compiled_autograd.reset()
    for alpha, n in ((2.0, 4), (-3.0, 6)):  # (not 3: a size equal to another is specialised)
        x = acg.tensor(np.linspace(0.5, 2.0, n * 3).reshape(n, 3), requires_grad=True)
        y = x.index_add(0, acg.tensor([1, 1]), x[:2] * 1, alpha=alpha).cumprod(1).roll(1, 0)
        y = y.repeat_interleave(acg.tensor([2] * n), dim=0)
        with acg.compiled_autograd.enable("jax"):
            y.sum().backward()

        def ref(x):
            z = x.at[1].add(alpha * (x[0] + x[1]))
            return jnp.repeat(jnp.roll(jnp.cumprod(z, 1), 1, 0), 2, 0).sum()
        _check([x], _grads(ref, np.asarray(x.detach())))
    assert acg.compiled_autograd.counters["captures"] == 1
    assert acg.compiled_autograd.counters["cache_hits"] == 1

# -- the fuzzer's menu entries for these ops, as fixed programs in every mode ------------------
FUZZ_PROGRAMS = {
    "roll_cumprod_diff": ([(3, 4)], [("roll", (0,), (-1,)), ("cumprod", (1,), (0,)),
                                     ("diff", (2,), (1,))]),
}


@pytest.mark.parametrize("name", FUZZ_PROGRAMS)
def test_fuzz_menu_entries_match_jax_in_every_mode(name: str) -> None:
    from test_fuzz import program, run_all_modes
    leaves, ops = FUZZ_PROGRAMS[name]
    run_all_modes(program(leaves, ops, hooks=[("tensor", len(leaves), 2.0, False)]), seed=1)

def test_docstring_examples_run() -> None:
    import doctest
    from autograd_compile.kernels import api, api_select, index_reduce, rearrange, search
    for module in (index_reduce, rearrange, search):
        assert doctest.testmod(module).failed == 0, module.__name__
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for name in DOCUMENTED:
        tests = finder.find(getattr(api_select, name), globs={})
        assert tests and all(runner.run(t).failed == 0 for t in tests), name
    assert all(runner.run(t).failed == 0 for t in finder.find(api.where, globs={}))


DOCUMENTED = ["scatter", "scatter_reduce", "index_add", "index_copy", "index_fill", "roll",
              "repeat_interleave", "take_along_dim", "diff", "cumprod", "nan_to_num",
              "searchsorted", "bucketize", "bincount"]
