"""``utils.checkpoint`` under ``acg.compile`` is rematerialisation inside the program: the
checkpointed nodes are marked in the joint trace and the partitioner recomputes them in the
backward program instead of saving them (tails area). Gradients equal the unchecked program's;
the forward program saves fewer intermediates; random draws inside replay the same keys.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.utils.checkpoint import checkpoint

nn = acg.nn


def _blocks(p: float = 0.0) -> tuple:
    acg.manual_seed(0)
    return tuple(nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Dropout(p), nn.Linear(16, 16),
                               nn.Tanh()) for _ in range(2))


def _run(fn, params, x, mode) -> tuple:
    for p in params:
        p.grad = None
    compiled = acg.compile(fn)
    acg.manual_seed(5)  # the same dropout keys for both programs
    with mode():
        compiled(x).backward()
    return compiled._entries[0].region, [p.grad.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("p", [0.0, 0.5], ids=["deterministic", "dropout"])
def test_checkpoint_is_recomputed_in_the_compiled_backward(mode, p: float) -> None:
    b1, b2 = _blocks(p)
    params = list(b1.parameters()) + list(b2.parameters())
    x = acg.randn(8, 16)

    def plain(x):
        return b2(b1(x)).square().sum()

    def ckpt(x):
        h = checkpoint(b1, x, use_reentrant=False)
        return checkpoint(b2, h, use_reentrant=False).square().sum()
    plain_region, want = _run(plain, params, x, mode)
    ckpt_region, got = _run(ckpt, params, x, mode)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # float32, summed in other orders
    assert ckpt_region.n_saved_fw < plain_region.n_saved_fw  # held between fwd and bwd
    assert ckpt_region.n_saved_fw <= 1  # at most the last block's output (read by square)
    bw = str(ckpt_region.backward_graph.graph)
    assert bw.count("acg.linear") >= 3  # the blocks' forward ops run again in the backward


def test_recomputation_matches_eager_checkpoint_and_torch() -> None:
    torch = pytest.importorskip("torch")
    b1, _ = _blocks()
    tb = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Dropout(0.0),
                             torch.nn.Linear(16, 16), torch.nn.Tanh())
    tb.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in b1.state_dict().items()})
    xn = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    tx = torch.tensor(xn, requires_grad=True)
    torch.utils.checkpoint.checkpoint(tb, tx, use_reentrant=False).sum().backward()
    x = acg.tensor(xn, requires_grad=True)
    acg.compile(lambda x: checkpoint(b1, x, use_reentrant=False).sum())(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(b1.parameters(), tb.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)
