"""In-place writes through ``diagonal()`` and ``as_strided()`` views reach the base tensor
(kernels/views.py): values, PyTorch's errors (overlapping as_strided views), and gradients
through the write-back in every execution mode."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
from conftest import ExecMode, assert_close, numeric_grad

OVERLAP = "more than one element of the written-to tensor refers to a single memory location"


# -- the probe's programs, hand-computed -------------------------------------------------------
def test_fill_add_setitem_through_a_diagonal_and_an_as_strided_view() -> None:
    x = acg.zeros(3, 3)
    x.diagonal().fill_(1.0)
    assert x.sum().item() == 3.0
    x = acg.zeros(3, 3)
    x.diagonal(offset=1).add_(2.0)
    assert x.tolist() == [[0.0, 2.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    x = acg.zeros(3, 3)
    acg.diagonal(x)[:] = 1
    np.testing.assert_array_equal(x.numpy(), np.eye(3))
    x = acg.zeros(4)
    x.as_strided((2,), (2,)).fill_(1.0)
    assert x.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_diagonal_of_a_batch_along_chosen_dims() -> None:
    x = acg.arange(24.0).reshape(2, 3, 4)
    d = acg.diagonal(x, -1, 2, 1)  # rows along dim 2, columns along dim 1, below by one
    d += 100
    expected = np.arange(24.0).reshape(2, 3, 4)
    for b in range(2):
        for i in range(3):  # the plane is 4 (dim 2) x 3 (dim 1): 3 elements below the diagonal
            expected[b, i, i + 1] += 100
    np.testing.assert_array_equal(x.numpy(), expected)


def test_diag_of_a_matrix_is_a_copy_not_a_view() -> None:
    x = acg.zeros(2, 2)
    acg.diag(x).fill_(1.0)  # PyTorch's diag returns a new tensor
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    d = acg.diagonal_copy(x)
    d.fill_(2.0)
    assert x.sum().item() == 0.0


# -- values against PyTorch --------------------------------------------------------------------
def _programs(T: Any) -> dict[str, Callable[[], Any]]:
    def ar(*shape: int) -> Any:
        return T.arange(float(np.prod(shape))).reshape(*shape)

    def run(fn: Callable[[Any], Any], base: Any) -> Any:
        fn(base)
        return base
    return {
        "copy_offset": lambda: run(lambda x: x.diagonal(offset=1).copy_(T.tensor([1.0, 2, 3])),
                                   T.zeros(3, 4)),
        "mul_dims": lambda: run(lambda x: T.diagonal(x, -1, 2, 1).mul_(10), ar(2, 3, 4)),
        "iadd_neg_dims": lambda: run(lambda x: x.diagonal(0, -1, 0).__iadd__(100), ar(2, 3, 4)),
        "setitem_element": lambda: run(lambda x: x.diagonal().__setitem__(1, -1.0), ar(3, 3)),
        "of_transpose": lambda: run(lambda x: x.t().diagonal(1).zero_(), ar(3, 3)),
        "of_slice": lambda: run(lambda x: x[1:].diagonal().fill_(-5), ar(3, 4)),
        "int_below": lambda: run(lambda x: x.diagonal(-2).fill_(3), T.zeros(4, 4, dtype=T.int64)),
        "clamp_": lambda: run(lambda x: x.diagonal().clamp_(min=2), T.zeros(3, 3)),
        "empty_diagonal": lambda: run(lambda x: x.diagonal(5).fill_(1), T.zeros(2, 3)),
        "strided_mul_": lambda: run(lambda x: x.as_strided((2, 2), (3, 1), 1).mul_(-1), ar(10)),
        "strided_of_matrix": lambda: run(lambda x: x.as_strided((3,), (5,)).fill_(0), ar(3, 4)),
        "strided_setitem": lambda: run(lambda x: x.as_strided((2,), (2,)).__setitem__(1, 50.0),
                                       ar(6)),
        "strided_copy_": lambda: run(lambda x: x.as_strided((3,), (2,)).copy_(
            T.tensor([7.0, 8, 9])), ar(6)),
        "overlap_fill": lambda: run(lambda x: x.as_strided((3,), (0,), 2).fill_(9), ar(6)),
        "overlap_zero": lambda: run(lambda x: x.as_strided((2, 2), (1, 1)).zero_(), ar(6)),
        "diagonal_scatter": lambda: T.diagonal_scatter(T.zeros(3, 4), T.ones(3), 1),
        "diagonal_scatter_dims": lambda: T.diagonal_scatter(ar(2, 3, 3), -ar(2, 3), 0, 1, 2),
        "as_strided_scatter": lambda: T.as_strided_scatter(T.zeros(6), T.ones(2, 2), (2, 2),
                                                           (1, 2)),
    }


@pytest.mark.parametrize("name", sorted(_programs(acg)))
def test_writes_match_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    expected = _programs(torch)[name]().numpy()
    got = _programs(acg)[name]().numpy()
    np.testing.assert_array_equal(got, expected)


# -- errors ------------------------------------------------------------------------------------
def _error_cases(T: Any) -> dict[str, Callable[[], Any]]:
    return {
        "overlap_add_": lambda: T.arange(6.0).as_strided((3,), (0,)).add_(1),
        "overlap_copy_": lambda: T.arange(6.0).as_strided((3,), (0,)).copy_(T.ones(3)),
        "overlap_setitem": lambda: T.arange(6.0).as_strided((3,), (0,)).__setitem__(
            slice(None), 3.0),
        "out_of_bounds": lambda: T.arange(4.0).as_strided((2,), (2,), 3),
        "negative_stride": lambda: T.arange(4.0).as_strided((3,), (-1,)),
        "negative_offset": lambda: T.arange(4.0).as_strided((3,), (1,), -1),
        "length_mismatch": lambda: T.arange(4.0).as_strided((3,), (1, 1)),
        "scatter_size": lambda: T.as_strided_scatter(T.zeros(6), T.ones(3), (2, 2), (1, 2)),
        "same_dims": lambda: T.zeros(3, 3).diagonal(0, 0, 0),
        "diagonal_scatter_size": lambda: T.diagonal_scatter(T.zeros(3, 4), T.ones(2), 1),
        "leaf_view": lambda: T.zeros(3, 3, requires_grad=True).diagonal().zero_(),
    }


@pytest.mark.parametrize("name", sorted(_error_cases(acg)))
def test_errors_match_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        _error_cases(torch)[name]()
    with pytest.raises(type(theirs.value)) as ours:
        _error_cases(acg)[name]()
    assert str(theirs.value).split("\n")[0] in str(ours.value)


def test_dimension_out_of_range_is_an_index_error() -> None:
    with pytest.raises(IndexError, match="Dimension out of range"):
        acg.zeros(3).diagonal()


def test_overlap_errors_without_torch() -> None:
    with pytest.raises(RuntimeError, match=OVERLAP):
        acg.arange(6.0).as_strided((3,), (0,)).mul_(2)
    with pytest.raises(RuntimeError, match=OVERLAP):  # a partial overlap, written
        acg.arange(6.0).as_strided((2, 2), (1, 1)).add_(1)
    with pytest.raises(RuntimeError, match=OVERLAP):  # a view of an overlapping view
        acg.arange(6.0).as_strided((2, 2), (1, 1))[0].fill_(1)
    x = acg.arange(6.0)
    x.as_strided((2, 2), (1, 1)).fill_(9)  # a fill is well defined
    assert x.tolist() == [9.0, 9.0, 9.0, 3.0, 4.0, 5.0]
    x.as_strided((2, 2), (2, 1)).add_(1)  # distinct elements (0, 1, 2, 3): writable
    assert x.tolist() == [10.0, 10.0, 10.0, 4.0, 4.0, 5.0]


def test_a_read_only_overlapping_window_view_still_reads() -> None:
    x = acg.arange(6.0)
    w = x.as_strided((4, 3), (1, 1))  # sliding windows
    np.testing.assert_array_equal(w.numpy(), np.lib.stride_tricks.sliding_window_view(
        np.arange(6.0), 3))


# -- gradients through the write-back ----------------------------------------------------------
RNG = np.random.default_rng(0)
W = RNG.standard_normal((3, 4))
C = RNG.standard_normal((3, 4))
V = RNG.standard_normal(3)


def _diag_program(T: Any, w: Any, v: Any) -> Any:
    y = w * 2
    y.diagonal(offset=1).mul_(3)
    z = y * 1
    z.diagonal().copy_(v * v)
    return (z * T.tensor(C)).sum() + (z ** 2).sum()


def _strided_program(T: Any, w: Any, v: Any) -> Any:
    y = w.reshape(-1) * 1.5
    y.as_strided((2, 2), (5, 2), 1).add_(v[:2].reshape(2, 1) * v[1:].reshape(1, 2))
    return (y.sin() * T.tensor(C.reshape(-1))).sum()


@pytest.mark.parametrize("program", [_diag_program, _strided_program])
def test_gradients_through_view_writes_match_pytorch(mode: ExecMode, program: Callable) -> None:
    torch = pytest.importorskip("torch")
    tw = torch.tensor(W, requires_grad=True)
    tv = torch.tensor(V, requires_grad=True)
    program(torch, tw, tv).backward()
    w = acg.tensor(W, requires_grad=True)
    v = acg.tensor(V, requires_grad=True)
    loss = program(acg, w, v)
    with mode():
        loss.backward()
    assert_close(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(v.grad.numpy(), tv.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_diagonal_write_gradient_hand_computed(mode: ExecMode) -> None:
    w = acg.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    y = w * 1
    y.diagonal().mul_(4)
    with mode():
        (y * y).sum().backward()
    scale = np.where(np.eye(3) == 1, 4.0, 1.0)
    assert_close(w.grad.numpy(), 2 * np.arange(9.0).reshape(3, 3) * scale ** 2)


def test_gradient_through_a_fill_of_an_overlapping_view(mode: ExecMode) -> None:
    """(PyTorch's backward raises its overlap error here; the fill is well defined, and so is
    its gradient: nothing reaches the filled element.)"""
    w = acg.tensor(np.arange(6.0), requires_grad=True)
    y = w * 3
    y.as_strided((3,), (0,), 1).fill_(2.0)
    with mode():
        (y * acg.arange(6.0)).sum().backward()
    assert_close(w.grad.numpy(), [0.0, 0.0, 6.0, 9.0, 12.0, 15.0])


@pytest.mark.parametrize("scatter", ["diagonal", "as_strided"])
def test_scatter_gradients_against_finite_differences(mode: ExecMode, scatter: str) -> None:
    """(PyTorch 2.13's own as_strided_scatter gradient fails its gradcheck: the oracle here
    is a finite difference.)"""
    def f(T: Any, b: Any, s: Any) -> Any:
        if scatter == "diagonal":
            out = T.diagonal_scatter(b * 1, s * s, 1, 0, 1)
        else:
            out = T.as_strided_scatter(b * 1, s * s, (3,), (5,), 1)
        return (out.cos() * T.tensor(C)).sum()

    b0, s0 = RNG.standard_normal((3, 4)), RNG.standard_normal(3)
    b = acg.tensor(b0, requires_grad=True)
    s = acg.tensor(s0, requires_grad=True)
    loss = f(acg, b, s)
    with mode():
        loss.backward()

    def value(bv: np.ndarray, sv: np.ndarray) -> float:
        return f(acg, acg.tensor(bv), acg.tensor(sv)).item()
    assert_close(b.grad.numpy(), numeric_grad(lambda bv: value(bv, s0), b0), atol=1e-6)
    assert_close(s.grad.numpy(), numeric_grad(lambda sv: value(b0, sv), s0), atol=1e-6)


def test_diagonal_write_under_acg_compile_matches_eager() -> None:
    def step(x: acg.Tensor) -> acg.Tensor:
        y = x * 1
        y.diagonal().add_(1.0)
        y.as_strided((2,), (5,), 2).mul_(-1)
        return y

    x = acg.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(acg.compile(step)(x).numpy(), step(x).numpy())


def test_linalg_diagonal_is_a_view_over_the_last_two_dims(mode):
    x = acg.zeros(2, 3, 3)
    acg.linalg.diagonal(x).fill_(1.0)
    assert_close(x, np.broadcast_to(np.eye(3, dtype=np.float32), (2, 3, 3)))
    y = acg.randn(3, 3, requires_grad=True)
    with mode():
        (acg.linalg.diagonal(y, offset=1) * 2.0).sum().backward()
    assert_close(y.grad, np.diag([2.0, 2.0], k=1))
