"""Sparse COO programs against PyTorch: a pygcn GCN trained with Adam, sparse embeddings
with SparseAdam and SGD, gradients of sparse leaves, and ``acg.compile`` with sparse inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg

torch = pytest.importorskip("torch")
# torch warns once per process that it does not check sparse invariants (we always do)
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

N, F_IN, HID, CLASSES = 40, 12, 8, 3


def _graph() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    edges = rng.integers(0, N, size=(2, 160))
    edges = np.concatenate([edges, np.stack([np.arange(N)] * 2)], 1)  # self loops
    vals = rng.random(edges.shape[1]).astype(np.float32) + 0.1
    feats = rng.random((N, F_IN)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=N)
    return edges, vals, feats, labels


def _gcn(lib):
    class GraphConvolution(lib.nn.Module):
        def __init__(self, fin: int, fout: int) -> None:
            super().__init__()
            self.weight = lib.nn.Parameter(lib.empty(fin, fout))
            self.bias = lib.nn.Parameter(lib.empty(fout))
            stdv = 1.0 / math.sqrt(fout)
            self.weight.data.uniform_(-stdv, stdv)
            self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input, adj):
            support = input @ self.weight
            return lib.spmm(adj, support) + self.bias

    class GCN(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gc1, self.gc2 = GraphConvolution(F_IN, HID), GraphConvolution(HID, CLASSES)

        def forward(self, x, adj):
            x = lib.nn.functional.relu(self.gc1(x, adj))
            return lib.nn.functional.log_softmax(self.gc2(x, adj), dim=1)
    return GCN()


def _normalised(lib, edges: np.ndarray, vals: np.ndarray):
    adj = lib.sparse_coo_tensor(lib.tensor(edges), lib.tensor(vals), (N, N)).coalesce()
    rowsum = lib.sparse.sum(adj, dim=1).to_dense()
    idx = adj._indices()
    return lib.sparse_coo_tensor(idx, adj._values() / rowsum[idx[0]], (N, N))


def _train_gcn(lib, mode=None, steps: int = 20) -> tuple[list[float], list[np.ndarray]]:
    edges, vals, feats, labels = _graph()
    ref = _gcn(torch)  # one init for both: torch's first draws, copied
    model = _gcn(lib)
    with torch.no_grad():
        init = [p.detach().numpy().copy() for p in ref.parameters()]
    with lib.no_grad():
        for p, v in zip(model.parameters(), init):
            p.copy_(lib.tensor(v))
    adj, x, y = _normalised(lib, edges, vals), lib.tensor(feats), lib.tensor(labels)
    opt = lib.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = lib.nn.functional.nll_loss(model(x, adj), y)
        if mode is None:
            loss.backward()
        else:
            with mode():
                loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in model.parameters()]


def test_gcn_trains_as_pytorch(mode):
    torch.manual_seed(0)
    ours = _train_gcn(acg, mode)
    torch.manual_seed(0)
    theirs = _train_gcn(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_sparse_mm_grad_of_sparse_leaf_matches_pytorch():
    edges, vals, feats, _ = _graph()
    out = {}
    for lib in (acg, torch):
        s = lib.sparse_coo_tensor(lib.tensor(edges), lib.tensor(vals), (N, N),
                                  requires_grad=True)
        x = lib.tensor(feats, requires_grad=True)
        (lib.sparse.mm(s, x) ** 2).sum().backward()
        g = s.grad.coalesce()
        out[lib] = (g._indices().numpy(), g._values().numpy(), x.grad.numpy())
    for a, b in zip(out[acg], out[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def _embedding_run(lib, opt_name: str, **kw) -> tuple[np.ndarray, list]:
    emb = lib.nn.Embedding(7, 3, sparse=True)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(np.arange(21, dtype=np.float32).reshape(7, 3) / 9))
    opt = getattr(lib.optim, opt_name)(emb.parameters(), **kw)
    grads = []
    for step in range(5):
        idx = lib.tensor([[1, 3, 1], [0, 3, 6], [2, 2, 2]][step % 3])
        opt.zero_grad()
        (emb(idx) ** 2).sum().backward()
        g = emb.weight.grad
        grads.append((g.is_sparse, g._indices().numpy().tolist()))
        opt.step()
    return emb.weight.detach().numpy(), grads


@pytest.mark.parametrize("opt_name, kw", [
    ("SparseAdam", dict(lr=0.1)), ("SparseAdam", dict(lr=0.05, betas=(0.8, 0.9), maximize=True)),
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
])
def test_sparse_embedding_optimizers_match_pytorch(opt_name, kw):
    ours, theirs = _embedding_run(acg, opt_name, **kw), _embedding_run(torch, opt_name, **kw)
    assert ours[1] == theirs[1]  # sparse grads with the looked-up rows, uncoalesced
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)


def test_sparse_grad_errors_match_pytorch():
    def errors(lib):
        emb = lib.nn.Embedding(5, 2, sparse=True)
        emb(lib.tensor([1, 2])).sum().backward()
        texts = []
        for make in (lambda: lib.optim.Adam(emb.parameters()),
                     lambda: lib.optim.SGD(emb.parameters(), lr=0.1, weight_decay=0.1)):
            with pytest.raises(RuntimeError) as info:
                make().step()
            texts.append(str(info.value))
        p = lib.nn.Parameter(lib.ones(2))
        (p * 2).sum().backward()
        with pytest.raises(RuntimeError) as info:
            lib.optim.SparseAdam([p]).step()
        return texts + [str(info.value)]
    assert errors(acg) == errors(torch)


def test_embedding_sparse_grad_in_compiled_autograd(mode):
    emb = acg.nn.Embedding(6, 2, sparse=True)
    with mode():
        emb(acg.tensor([[1, 4], [4, 0]])).sum().backward()
    g = emb.weight.grad
    assert g.is_sparse and g._indices().tolist() == [[1, 4, 4, 0]]
    np.testing.assert_array_equal(g.to_dense().numpy()[4], [2.0, 2.0])


def test_compile_with_sparse_constant_and_argument(caplog):
    edges, vals, feats, _ = _graph()
    adj = _normalised(acg, edges, vals)
    lin = acg.nn.Linear(F_IN, 4)
    x = acg.tensor(feats)
    expect = (adj.to_dense() @ lin(x)).detach().numpy()
    constant = acg.compile(lambda x: acg.spmm(adj, lin(x)))
    np.testing.assert_allclose(constant(x).detach().numpy(), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(constant(x).detach().numpy(), expect, rtol=1e-5, atol=1e-6)
    as_arg = acg.compile(lambda x, a: acg.spmm(a, lin(x)))  # traced: its parts are inputs
    acg.aot.counters.clear()
    out = as_arg(x, adj)
    assert acg.aot.counters["traces"] == 1 and acg.aot.counters["eager_runs"] == 0
    np.testing.assert_allclose(out.detach().numpy(), expect, rtol=1e-5, atol=1e-6)
