"""acg.utils.checkpoint against torch.utils.checkpoint: the same gradients as the unchecked
model (PyTorch's, with the same weights), in every execution mode; dropout inside a
checkpointed block gets the forward's masks again (RNG preserved)."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.utils.checkpoint import checkpoint, checkpoint_sequential

from conftest import assert_close

torch = pytest.importorskip("torch")
tcp = pytest.importorskip("torch.utils.checkpoint")


def _pair_mlp(seed: int = 0):
    """The same 3-layer MLP in PyTorch and here (weights copied from PyTorch's)."""
    torch.manual_seed(seed)
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8),
                               torch.nn.ReLU(), torch.nn.Linear(8, 3), torch.nn.Sigmoid())
    net = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, 8),
                            acg.nn.ReLU(), acg.nn.Linear(8, 3), acg.nn.Sigmoid())
    net.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in tnet.state_dict().items()})
    return tnet, net


def _x(shape=(5, 4), seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _grads(params) -> list[np.ndarray]:
    return [np.asarray(p.grad.detach().numpy() if hasattr(p.grad, "numpy") else p.grad)
            for p in params]


def test_checkpoint_function_with_closure_params(mode) -> None:
    tnet, net = _pair_mlp()
    xn = _x()
    tx = torch.tensor(xn, requires_grad=True)
    tcp.checkpoint(lambda a: tnet(a) * 2.0, tx, use_reentrant=False).pow(2).sum().backward()
    x = acg.tensor(xn, requires_grad=True)
    y = checkpoint(lambda a: net(a) * 2.0, x, use_reentrant=False)
    with mode():
        y.pow(2).sum().backward()
    assert_close(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(net.parameters(), tnet.parameters()):
        assert_close(p.grad.detach().numpy(), tp.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_module_kwargs_and_non_tensor_args(mode) -> None:
    xn, wn = _x((3, 4)), _x((4, 2), seed=2)

    def f(a, scale, *, w, shift=0.0, tag="t"):
        return (a @ w).tanh() * scale + shift, tag, a.shape[0]

    tx, tw = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
    tout, ttag, tn = tcp.checkpoint(f, tx, 3.0, w=tw, shift=1.5, use_reentrant=False)
    (tout ** 2).sum().backward()
    x, w = acg.tensor(xn, requires_grad=True), acg.tensor(wn, requires_grad=True)
    out, tag, n = checkpoint(f, x, 3.0, w=w, shift=1.5, use_reentrant=False)
    assert (tag, n) == (ttag, tn) == ("t", 3)
    assert_close(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
    with mode():
        (out ** 2).sum().backward()
    assert_close(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(w.grad.detach().numpy(), tw.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_does_not_record_intermediates() -> None:
    x = acg.tensor(_x(), requires_grad=True)
    y = checkpoint(lambda a: a.sin().exp(), x, use_reentrant=False)
    node = y.grad_fn
    # the graph is one node straight to x: sin/exp are not recorded until backward reruns them
    assert node.next_edges[0][0] is x.grad_fn or node.next_edges[0][0].name() == "AccumulateGrad"
    assert "Checkpoint" in node.name()


def test_checkpoint_dropout_rng_preserved(mode) -> None:
    xn = _x((16, 8))
    lin = acg.nn.Linear(8, 8)
    drop = acg.nn.Dropout(0.5)

    def block(a):
        return drop(lin(a)).relu()

    acg.manual_seed(7)
    x0 = acg.tensor(xn, requires_grad=True)
    block(x0).sum().backward()  # the unchecked oracle, same seed
    ref_x, ref_w = x0.grad.detach().numpy(), lin.weight.grad.detach().numpy()
    lin.weight.grad = None
    lin.bias.grad = None
    acg.manual_seed(7)
    x = acg.tensor(xn, requires_grad=True)
    y = checkpoint(block, x, use_reentrant=False)
    acg.rand(3)  # the global stream moves on between forward and backward
    with mode():
        y.sum().backward()
    assert_close(x.grad.detach().numpy(), ref_x)
    assert_close(lin.weight.grad.detach().numpy(), ref_w)
    # without the preserved state the rerun draws other masks: other gradients (test can fail)
    acg.manual_seed(7)
    x2 = acg.tensor(xn, requires_grad=True)
    y2 = checkpoint(block, x2, use_reentrant=False, preserve_rng_state=False)
    with mode():
        y2.sum().backward()
    assert not np.allclose(x2.grad.detach().numpy(), ref_x)


def test_checkpoint_sequential_matches_torch(mode) -> None:
    tnet, net = _pair_mlp(3)
    xn = _x((6, 4))
    tx = torch.tensor(xn, requires_grad=True)
    tcp.checkpoint_sequential(tnet, 3, tx, use_reentrant=False).sum().backward()
    x = acg.tensor(xn, requires_grad=True)
    y = checkpoint_sequential(net, 3, x, use_reentrant=False)
    with mode():
        y.sum().backward()
    assert_close(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(net.parameters(), tnet.parameters()):
        assert_close(p.grad.detach().numpy(), tp.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_autograd_grad_and_no_grad() -> None:
    xn = _x((3,))
    tx = torch.tensor(xn, requires_grad=True)
    tg, = torch.autograd.grad(tcp.checkpoint(torch.sin, tx, use_reentrant=False).sum(), tx)
    x = acg.tensor(xn, requires_grad=True)
    g, = acg.autograd.grad(checkpoint(acg.sin, x, use_reentrant=False).sum(), x)
    assert_close(g.detach().numpy(), tg.detach().numpy())
    with acg.no_grad():
        y = checkpoint(acg.sin, x, use_reentrant=False)
    assert not y.requires_grad


def test_use_reentrant_warnings_and_errors() -> None:
    x = acg.tensor([1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(acg.sin, x)
    net = acg.nn.Sequential(acg.nn.Linear(1, 1), acg.nn.Linear(1, 1))
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        checkpoint_sequential(net, 2, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda a, k: a, x, k=1, use_reentrant=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):  # the oracle
        tcp.checkpoint(lambda a, k: a, torch.ones(1, requires_grad=True), k=1,
                       use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        checkpoint(acg.sin, acg.tensor([1.0]), use_reentrant=True)


torch.manual_seed(11)
_TNET = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2))
_NET = acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.GELU(), acg.nn.Linear(4, 2))
_NET.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in _TNET.state_dict().items()})


def _global_block(a):
    return _NET(a).square()


def _tglobal_block(a):
    return _TNET(a).square()


class _Block(acg.nn.Module):
    """A module that checkpoints its own method (parameters reached through ``self``)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = _NET

    def _body(self, a):
        return self.inner(a).tanh()

    def forward(self, a):
        return checkpoint(self._body, a, use_reentrant=False)


def test_checkpoint_reaches_global_and_method_parameters(mode) -> None:
    xn = _x((4, 3))
    _TNET.zero_grad()
    tx = torch.tensor(xn)
    (_tglobal_block(tx).sum() + _TNET(tx).tanh().sum()).backward()
    _NET.zero_grad()
    x = acg.tensor(xn)  # no input requires grad: only the parameters do
    y = checkpoint(_global_block, x, use_reentrant=False).sum() + _Block()(x).sum()
    with mode():
        y.backward()
    for p, tp in zip(_NET.parameters(), _TNET.parameters()):
        assert_close(p.grad.detach().numpy(), tp.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


class _CkptNet(acg.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.Tanh(), acg.nn.Linear(8, 8),
                                      acg.nn.ReLU(), acg.nn.Linear(8, 3), acg.nn.Sigmoid())

    def forward(self, x):
        return checkpoint_sequential(self.body, 2, x, use_reentrant=False).square()


def test_checkpoint_under_acg_compile(mode) -> None:
    tnet, _ = _pair_mlp(5)
    net = _CkptNet()
    net.body.load_state_dict({k: acg.tensor(v.detach().numpy())
                              for k, v in tnet.state_dict().items()})
    xn = _x((3, 4))
    tx = torch.tensor(xn, requires_grad=True)
    tcp.checkpoint_sequential(tnet, 2, tx, use_reentrant=False).square().sum().backward()
    x = acg.tensor(xn, requires_grad=True)
    y = acg.compile(net)(x).sum()
    with mode():
        y.backward()
    assert_close(x.grad.detach().numpy(), tx.grad.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(net.parameters(), tnet.parameters()):
        assert_close(p.grad.detach().numpy(), tp.grad.detach().numpy(), rtol=1e-5, atol=1e-6)


def _saved_bytes(run, params) -> int:
    """Bytes of the distinct activations (tensors other than ``params``, which live anyway)
    the graph saves for backward while ``run`` records."""
    seen: dict[int, int] = {}
    skip = {id(p) for p in params}

    def pack(t):
        if id(t) not in skip:
            seen[id(t)] = t.detach().numpy().nbytes
        return t
    with acg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return sum(seen.values()), out


def test_checkpoint_holds_less_between_forward_and_backward() -> None:
    net = acg.nn.Sequential(*[m for _ in range(8) for m in (acg.nn.Linear(64, 64),
                                                            acg.nn.Tanh())])
    x = acg.tensor(_x((256, 64)), requires_grad=True)
    plain, y0 = _saved_bytes(lambda: net(x), net.parameters())
    ckpt, y1 = _saved_bytes(lambda: checkpoint_sequential(net, 4, x, use_reentrant=False),
                            net.parameters())
    # unchecked: every layer's input and tanh output; checkpointed: 3 segment inputs + the
    # last segment's activations (PyTorch's layout: the last segment runs unchecked)
    assert ckpt < 0.5 * plain, (ckpt, plain)
    assert_close(y1.detach().numpy(), y0.detach().numpy())


class _Tracker:
    """A context manager recording how often (and in which grad mode) it was entered."""

    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append((self.name, acg.is_grad_enabled()))

    def __exit__(self, *exc) -> None:
        return None


def test_context_fn_wraps_forward_and_recomputation() -> None:
    log: list = []
    tlog: list = []

    class TTracker(_Tracker):
        def __enter__(self):
            self.log.append((self.name, torch.is_grad_enabled()))

    x = acg.tensor([0.5, 1.5], requires_grad=True)
    y = checkpoint(acg.exp, x, use_reentrant=False,
                   context_fn=lambda: (_Tracker(log, "fwd"), _Tracker(log, "recompute")))
    y.sum().backward()
    tx = torch.tensor([0.5, 1.5], requires_grad=True)
    tcp.checkpoint(torch.exp, tx, use_reentrant=False,
                   context_fn=lambda: (TTracker(tlog, "fwd"), TTracker(tlog, "recompute"))
                   ).sum().backward()
    assert [n for n, _ in log] == [n for n, _ in tlog] == ["fwd", "recompute"]
    assert log[1][1] and tlog[1][1]  # the recomputation records a graph
    assert_close(x.grad.detach().numpy(), tx.grad.detach().numpy())
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(acg.exp, x, use_reentrant=True, context_fn=lambda: (None, None))


def test_checkpoint_double_backward() -> None:
    xn = _x((4,))
    tx = torch.tensor(xn, requires_grad=True)
    tg, = torch.autograd.grad(tcp.checkpoint(lambda a: (a * a).sin(), tx, use_reentrant=False)
                              .sum(), tx, create_graph=True)
    tgg, = torch.autograd.grad(tg.pow(2).sum(), tx)
    x = acg.tensor(xn, requires_grad=True)
    g, = acg.autograd.grad(checkpoint(lambda a: (a * a).sin(), x, use_reentrant=False).sum(),
                           x, create_graph=True)
    gg, = acg.autograd.grad(g.pow(2).sum(), x)
    assert_close(g.detach().numpy(), tg.detach().numpy(), rtol=1e-5)
    assert_close(gg.detach().numpy(), tgg.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_set_checkpoint_early_stop_false_matches_torch_hook_calls():
    """Without early stop (PyTorch's ``set_checkpoint_early_stop(False)``, what the
    recomputation here always does) the function runs again whole in backward: the same
    forward-hook calls as PyTorch's, in the same order."""
    from autograd_compile.utils.checkpoint import checkpoint, set_checkpoint_early_stop
    torch = pytest.importorskip("torch")

    def run(lib, ck, early):
        calls = []
        lib.manual_seed(0)
        lin1, lin2 = lib.nn.Linear(4, 4), lib.nn.Linear(4, 4)
        lin2.register_forward_hook(lambda m, i, o: calls.append("lin2 hook"))

        def fn(x):
            calls.append("fn body")
            return lin2(lin1(x).tanh())
        x = lib.ones(2, 4, requires_grad=True)
        with early(False):
            y = ck(fn, x, use_reentrant=False)
            calls.append("backward")
            y.sum().backward()
        return calls
    from torch.utils.checkpoint import checkpoint as t_ck, set_checkpoint_early_stop as t_early
    assert run(acg, checkpoint, set_checkpoint_early_stop) == run(torch, t_ck, t_early) == [
        "fn body", "lin2 hook", "backward", "fn body", "lin2 hook"]
