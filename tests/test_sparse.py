"""Sparse COO tensors (``acg.sparse``): values and gradients against a dense numpy oracle in
every execution mode, and against PyTorch where it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.sparse import SparseTensor

IDX = [[0, 1, 1, 2], [2, 0, 2, 1]]
VALS = [3.0, 4.0, 5.0, -1.0]
DENSE = np.array([[0, 0, 3], [4, 0, 5], [0, -1, 0]], np.float32)


def _s(requires_grad: bool = False) -> SparseTensor:
    return acg.sparse_coo_tensor(IDX, VALS, (3, 3), requires_grad=requires_grad)


def _x() -> np.ndarray:
    return np.arange(6, dtype=np.float32).reshape(3, 2) / 3 - 0.5


# -- construction, parts, printing -----------------------------------------------------------
def test_parts_and_metadata():
    s = _s()
    assert s.is_sparse and s.layout == acg.sparse_coo and not acg.ones(1).is_sparse
    assert tuple(s.shape) == (3, 3) and s.size() == (3, 3) and s.dtype == acg.float32
    assert s._nnz() == 4 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert s._indices().tolist() == IDX and s._values().tolist() == VALS
    assert not s.is_coalesced() and s.coalesce().is_coalesced()
    np.testing.assert_array_equal(s.to_dense().numpy(), DENSE)
    assert isinstance(s, acg.Tensor)


def test_inferred_size_and_legacy_constructor():
    s = acg.sparse_coo_tensor(IDX, VALS)
    assert tuple(s.shape) == (3, 3)
    f = acg.sparse.FloatTensor(acg.tensor(IDX), acg.tensor(VALS), acg.Size([3, 4]))
    assert tuple(f.shape) == (3, 4) and f.dtype == acg.float32


def test_coalesce_sums_repeats_and_sorts():
    s = acg.sparse_coo_tensor([[1, 0, 1], [0, 1, 0]], [1.0, 2.0, 3.0], (2, 2)).coalesce()
    assert s._indices().tolist() == [[0, 1], [1, 0]] and s._values().tolist() == [2.0, 4.0]
    assert s.indices().tolist() == [[0, 1], [1, 0]] and s.values().tolist() == [2.0, 4.0]


def test_to_sparse_and_transpose():
    s = acg.tensor(DENSE).to_sparse()
    assert s.is_coalesced() and s._nnz() == 4
    np.testing.assert_array_equal(s.to_dense().numpy(), DENSE)
    np.testing.assert_array_equal(s.t().to_dense().numpy(), DENSE.T)
    np.testing.assert_array_equal(s.transpose(0, 1).to_dense().numpy(), DENSE.T)
    assert s.t().shape == (3, 3) and not s.t().is_coalesced()


def test_to_dtype_and_scalar_ops():
    s = _s()
    d = s.to(acg.float64)
    assert d.dtype == acg.float64 and d.is_sparse and d._indices().dtype == acg.int64
    np.testing.assert_allclose(s.mul(2).to_dense().numpy(), DENSE * 2)
    np.testing.assert_allclose((s * 0.5).to_dense().numpy(), DENSE * 0.5)
    np.testing.assert_allclose((acg.ones(3, 3) + s).numpy(), DENSE + 1)
    np.testing.assert_allclose((s + s).to_dense().numpy(), DENSE * 2)


def test_repr_matches_pytorch_layout():
    text = repr(acg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3)))
    assert text == ("tensor(indices=tensor([[0, 1, 1],\n"
                    "                       [2, 0, 2]]),\n"
                    "       values=tensor([3., 4., 5.]),\n"
                    "       size=(2, 3), nnz=3, layout=torch.sparse_coo)")
    assert repr(_s(True)).endswith("layout=torch.sparse_coo, requires_grad=True)")


# -- products, every spelling ------------------------------------------------------------------
@pytest.mark.parametrize("spell", ["spmm", "sparse.mm", "mm", "matmul", "@", "method"])
def test_sparse_dense_product(spell):
    s, x = _s(), acg.tensor(_x())
    fn = {"spmm": lambda: acg.spmm(s, x), "sparse.mm": lambda: acg.sparse.mm(s, x),
          "mm": lambda: acg.mm(s, x), "matmul": lambda: acg.matmul(s, x),
          "@": lambda: s @ x, "method": lambda: s.mm(x)}[spell]
    np.testing.assert_allclose(fn().numpy(), DENSE @ _x(), rtol=1e-6)


def test_vector_dense_sparse_and_addmm():
    s, x = _s(), _x()
    v = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose((s @ acg.tensor(v)).numpy(), DENSE @ v, rtol=1e-6)
    np.testing.assert_allclose((acg.tensor(x.T) @ s).numpy(), x.T @ DENSE, rtol=1e-6)
    b = np.ones((3, 2), np.float32)
    out = acg.sparse.addmm(acg.tensor(b), s, acg.tensor(x), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(out.numpy(), 0.5 * b + 2 * DENSE @ x, rtol=1e-6)
    np.testing.assert_allclose(acg.addmm(acg.tensor(b), s, acg.tensor(x)).numpy(),
                               b + DENSE @ x, rtol=1e-6)


def test_sum_and_row_normalisation():
    s = _s()
    assert acg.sparse.sum(s).item() == pytest.approx(DENSE.sum())
    rows = acg.sparse.sum(s, dim=1)
    assert rows.is_sparse and rows.is_coalesced()
    np.testing.assert_allclose(rows.to_dense().numpy(), DENSE.sum(1))
    inv = 1.0 / rows.to_dense()
    scaled = acg.sparse_coo_tensor(s._indices(), s._values() * inv[s._indices()[0]], s.shape)
    np.testing.assert_allclose(scaled.to_dense().numpy(), DENSE / DENSE.sum(1, keepdims=True),
                               rtol=1e-6)


def test_softmax_over_stored_entries():
    s = _s()
    out = acg.sparse.softmax(s, 1).to_dense().numpy()
    mask = DENSE != 0
    e = np.where(mask, np.exp(DENSE), 0)
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-6)
    log = acg.sparse.log_softmax(s, 1)._values().numpy()
    np.testing.assert_allclose(log, np.log(acg.sparse.softmax(s, 1)._values().numpy()),
                               rtol=1e-5, atol=1e-6)


# -- gradients in every mode ------------------------------------------------------------------
def test_spmm_grads_dense_and_sparse(mode):
    s, x = _s(True), acg.tensor(_x(), requires_grad=True)
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    loss = (acg.sparse.mm(s, x) * acg.tensor(w)).sum()
    with mode():
        loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), DENSE.T @ w, rtol=1e-5, atol=1e-6)
    assert s.grad.is_sparse and s.grad._indices().tolist() == IDX
    full = w @ _x().T  # d loss / d S, read at the pattern
    np.testing.assert_allclose(s.grad._values().numpy(), full[tuple(np.array(IDX))],
                               rtol=1e-5, atol=1e-6)


def test_to_dense_and_sum_grads(mode):
    s = _s(True)
    coef = np.arange(9, dtype=np.float32).reshape(3, 3)
    loss = (s.to_dense() * acg.tensor(coef)).sum() + acg.sparse.sum(s, 1).to_dense().pow(2).sum()
    with mode():
        loss.backward()
    rows = DENSE.sum(1)
    expect = coef[tuple(np.array(IDX))] + 2 * rows[np.array(IDX[0])]
    np.testing.assert_allclose(s.grad._values().numpy(), expect, rtol=1e-6)


def test_values_requiring_grad_get_dense_grad(mode):
    v = acg.tensor(VALS, requires_grad=True)
    s = acg.sparse_coo_tensor(IDX, v, (3, 3))
    assert s.requires_grad and not s.is_leaf
    with mode():
        (s @ acg.ones(3, 1)).sum().backward()
    assert v.grad.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_softmax_grad_against_finite_differences():
    s = _s(True)
    w = acg.tensor(np.arange(4, dtype=np.float32))
    (acg.sparse.softmax(s, 1)._values() * w).sum().backward()

    def f(vals: np.ndarray) -> float:
        out = acg.sparse.softmax(acg.sparse_coo_tensor(IDX, vals.astype(np.float32), (3, 3)), 1)
        return float((out._values().numpy() * np.arange(4)).sum())
    from conftest import numeric_grad
    num = numeric_grad(f, np.array(VALS, np.float64), eps=1e-2)
    np.testing.assert_allclose(s.grad._values().numpy(), num, rtol=1e-2, atol=1e-3)


def test_failed_backward_leaves_grad_untouched():
    s, x = _s(True), acg.tensor(_x(), requires_grad=True)
    acg.sparse.mm(s, x).sum().backward()
    before = (s.grad._values().numpy().copy(), x.grad.numpy().copy())
    out = acg.sparse.mm(s, x).sum()

    def boom(g):
        raise ValueError("hook failed")
    x.register_hook(boom)
    with pytest.raises(ValueError):
        out.backward()
    np.testing.assert_array_equal(s.grad._values().numpy(), before[0])
    np.testing.assert_array_equal(x.grad.numpy(), before[1])


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call, kind, text", [
    (lambda: acg.sparse_coo_tensor(IDX, VALS, (2, 3)), RuntimeError,
     "size is inconsistent with indices: for dim 0, size is 2 but found index 2"),
    (lambda: acg.sparse_coo_tensor([[-1], [0]], [1.0], (2, 3)), RuntimeError,
     "found negative index -1 for dim 0"),
    (lambda: acg.sparse_coo_tensor([0, 1], [1.0, 2.0]), RuntimeError,
     "indices must be sparse_dim x nnz, but got: [2]"),
    (lambda: acg.sparse_coo_tensor(IDX, VALS[:3], (3, 3)), RuntimeError,
     "indices and values must have same nnz"),
    (lambda: acg.sparse_coo_tensor(IDX, VALS, (3, 3, 3)), RuntimeError,
     "'len(size) == sparse_dim + dense_dim' is not satisfied"),
    (lambda: acg.mm(_s(), acg.ones(4, 2)), RuntimeError,
     "addmm: Argument #3 (dense): Expected dim 0 size 3, got 4"),
    (lambda: acg.mm(_s(), acg.ones(3, 2, dtype=acg.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: _s() + acg.ones(3, 3), RuntimeError, "add(sparse, dense) is not supported"),
    (lambda: _s().values(), RuntimeError, "Cannot get values on an uncoalesced tensor"),
    (lambda: _s().numpy(), TypeError, "can't convert Sparse layout tensor to numpy"),
    (lambda: acg.exp(_s()), NotImplementedError, "Could not run 'acg::exp'"),
])
def test_errors(call, kind, text):
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value)


# -- genuinely sparse: a Cora-sized graph stays cheap ------------------------------------------
def test_cora_sized_graph_is_not_densified():
    rng = np.random.default_rng(0)
    n, nnz = 2708, 13264
    idx = rng.integers(0, n, size=(2, nnz))
    s = acg.sparse_coo_tensor(idx, rng.random(nnz).astype(np.float32), (n, n))
    x = acg.tensor(rng.random((n, 16)).astype(np.float32), requires_grad=True)
    out = acg.spmm(s, x)
    out.sum().backward()
    expect = np.zeros((n, 16), np.float32)
    np.add.at(expect, idx[0], s._values().numpy()[:, None] * x.detach().numpy()[idx[1]])
    np.testing.assert_allclose(out.detach().numpy(), expect, rtol=1e-4, atol=1e-4)
    assert x.grad.shape == (n, 16)


def test_sparse_argument_of_a_compiled_region(mode):
    """pygcn calls ``model(features, adj)``: a sparse argument is traced through its
    indices and values (its size is in the guard), gradients reach values that require
    grad, in every mode; a new pattern of the same size reuses the trace."""
    acg.manual_seed(0)
    lin = acg.nn.Linear(4, 2)
    x = acg.randn(3, 4)
    f = acg.compile(lambda x, a: acg.spmm(a, lin(x)).tanh().sum())
    acg.aot.counters.clear()
    for idx in ([[0, 1, 2, 2], [1, 0, 2, 0]], [[0, 0, 1, 2], [0, 2, 1, 1]]):
        vals = acg.tensor([1.0, 2.0, 3.0, 0.5], requires_grad=True)
        adj = acg.sparse_coo_tensor(acg.tensor(idx), vals, (3, 3))
        lin.zero_grad()
        with mode():
            f(x, adj).backward()
        got = (vals.grad.numpy().copy(), lin.weight.grad.numpy().copy())
        vals.grad, lin.weight.grad = None, None
        ref_v = acg.tensor([1.0, 2.0, 3.0, 0.5], requires_grad=True)
        ref = acg.sparse_coo_tensor(acg.tensor(idx), ref_v, (3, 3)).to_dense()  # eager, dense
        (ref @ lin(x)).tanh().sum().backward()
        np.testing.assert_allclose(got[0], ref_v.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[1], lin.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert acg.aot.counters["traces"] == 1 and acg.aot.counters["eager_runs"] == 0
