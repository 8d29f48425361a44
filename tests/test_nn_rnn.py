"""Recurrent layers (RNN, LSTM, GRU, cells) and nn.utils.rnn.

Against PyTorch (the same weights through state_dict): outputs, final states and the
gradients of the input, h0/c0 and every parameter, in each execution mode, for dense,
packed, bidirectional, multi-layer, projected and batch-first runs; cells; packing
utilities; errors with PyTorch's class and words. Without torch: the backward op against
``jax.vjp`` of the forward kernel, and a float64 finite-difference check. One op per layer
and direction: the dispatch count and the captured graph do not grow with the sequence.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from autograd_compile.kernels import rnn as krnn
from autograd_compile.nn.utils import rnn as R
from _layer_check import check_layer_grads
from conftest import assert_close

RNG = np.random.default_rng(0)


def _x(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _pair(torch, name: str, args: tuple, kw: dict, double: bool = True):
    """(torch module, our module with torch's weights loaded through state_dict)."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args, **kw)
    ours = getattr(nn, name)(*args, **kw)
    if double:
        theirs, ours = theirs.double(), ours.double()
    state = {k: acg.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    return theirs, ours


def _as_list(out) -> list:
    """(output, h) or (output, (h, c)) flattened; a PackedSequence gives its data."""
    first, states = out
    first = first.data if hasattr(first, "batch_sizes") else first
    return [first] + (list(states) if isinstance(states, tuple) else [states])


def _run_both(torch, theirs, ours, x: np.ndarray, states: list[np.ndarray] | None, mode,
              pack=None):
    """Forward both, backward a fixed random cotangent of every output; return values and
    gradients of (input, states..., parameters...) for each framework."""
    def go(lib, module, tensor, ctx):
        xt = tensor(x)
        st = [tensor(s) for s in states] if states else None
        inp = pack(lib, xt) if pack else xt
        hx = None if st is None else (tuple(st) if len(st) == 2 else st[0])
        outs = _as_list(module(inp, hx))
        cots = [np.random.default_rng(i).standard_normal(tuple(o.shape)) for i, o in
                enumerate(outs)]
        loss = sum((o * tensor(c, grad=False)).sum() for o, c in zip(outs, cots))
        with ctx():
            loss.backward()
        grads = [xt.grad] + [s.grad for s in st or []] + [p.grad for p in module.parameters()]
        return [np.asarray(o.detach().numpy()) for o in outs], \
            [np.asarray(g.detach().numpy()) for g in grads]
    import contextlib
    t = go(torch, theirs, lambda a, grad=True: torch.tensor(a, requires_grad=grad),
           contextlib.nullcontext)
    o = go(acg, ours, lambda a, grad=True: acg.tensor(a, requires_grad=grad), mode)
    return t, o


def _assert_same(t, o, tol: float = 1e-10) -> None:
    for a, b in zip(t[0] + t[1], o[0] + o[1]):
        assert_close(b, a, rtol=tol, atol=tol)
    assert len(t[1]) == len(o[1])


CASES = {  # name, constructor args and kwargs, input shape, states given
    "rnn_tanh_h0": ("RNN", (3, 4), {}, (5, 2, 3), True),
    "rnn_relu_bi2_bf": ("RNN", (3, 4, 2), {"nonlinearity": "relu", "bidirectional": True,
                                           "batch_first": True}, (2, 5, 3), False),
    "lstm_bi2_proj_h0c0": ("LSTM", (3, 5, 2), {"bidirectional": True, "proj_size": 2},
                           (4, 2, 3), True),
    "lstm_nobias_bf": ("LSTM", (3, 4), {"bias": False, "batch_first": True}, (2, 6, 3), False),
    "lstm_unbatched_h0c0": ("LSTM", (3, 4, 2), {}, (5, 3), True),
    "gru_bi2_h0": ("GRU", (3, 4, 2), {"bidirectional": True}, (4, 3, 3), True),
    # unidirectional stacks: one rnn_stack op (all layers in one scan)
    "lstm3_proj_h0c0": ("LSTM", (3, 5, 3), {"proj_size": 2}, (4, 2, 3), True),
    "gru2_nobias_bf": ("GRU", (3, 4, 2), {"bias": False, "batch_first": True}, (2, 5, 3),
                       False),
    "rnn_relu3_h0": ("RNN", (3, 4, 3), {"nonlinearity": "relu"}, (6, 2, 3), True),
}


def _states(name: str, module, shape: tuple) -> list[np.ndarray]:
    lead = module.num_layers * (2 if module.bidirectional else 1)
    batch = () if len(shape) == 2 else (shape[0] if module.batch_first else shape[1],)
    h = _x(lead, *batch, module.proj_size or module.hidden_size)
    return [h, _x(lead, *batch, module.hidden_size)] if name == "LSTM" else [h]


@pytest.mark.parametrize("case", list(CASES))
def test_against_torch_float64(mode, case):
    torch = pytest.importorskip("torch")
    name, args, kw, shape, with_states = CASES[case]
    theirs, ours = _pair(torch, name, args, kw)
    states = _states(name, ours, shape) if with_states else None
    _assert_same(*_run_both(torch, theirs, ours, _x(*shape), states, mode))


def test_lstm_against_torch_float32_with_dropout_in_eval(mode):
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(torch, "LSTM", (4, 6, 3), {"dropout": 0.5}, double=False)
    theirs.eval(), ours.eval()
    x = _x(7, 3, 4).astype(np.float32)
    states = [s.astype(np.float32) for s in _states("LSTM", ours, x.shape)]
    _assert_same(*_run_both(torch, theirs, ours, x, states, mode), tol=2e-5)


def test_dropout_between_layers_in_training():
    acg.manual_seed(0)
    lstm = nn.LSTM(3, 8, 2, dropout=0.5)
    x = acg.randn(4, 2, 3)
    lstm.eval()
    ref = lstm(x)[0].detach().numpy()
    assert_close(lstm(x)[0].detach().numpy(), ref, rtol=0, atol=0)
    lstm.train()
    assert not np.allclose(lstm(x)[0].detach().numpy(), ref)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)


@pytest.mark.parametrize("name,kw", [("LSTM", {"bidirectional": True}),
                                     ("GRU", {"bidirectional": True}), ("LSTM", {})])
def test_packed_sequence_against_torch(mode, name, kw):
    """Unsorted lengths, two layers (bidirectional, or one rnn_stack), h0 given: packed
    output data, final states at each sequence's own last step, all gradients."""
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(torch, name, (3, 4, 2), kw)
    lengths = [3, 5, 2]

    def pack(lib, x):
        utils = lib.nn.utils.rnn
        return utils.pack_padded_sequence(x, lengths, enforce_sorted=False)
    states = _states(name, ours, (5, 3, 3))
    _assert_same(*_run_both(torch, theirs, ours, _x(5, 3, 3), states, mode, pack))


def test_packed_output_pads_back_like_torch():
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(torch, "RNN", (2, 3), {"batch_first": True})
    x = _x(3, 4, 2)
    t_out, t_h = theirs(torch.nn.utils.rnn.pack_padded_sequence(
        torch.tensor(x), [2, 4, 1], batch_first=True, enforce_sorted=False))
    o_out, o_h = ours(R.pack_padded_sequence(acg.tensor(x), acg.tensor([2, 4, 1]),
                                             batch_first=True, enforce_sorted=False))
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out, batch_first=True,
                                                         padding_value=-1.0, total_length=5)
    o_pad, o_len = R.pad_packed_sequence(o_out, batch_first=True, padding_value=-1.0,
                                         total_length=5)
    assert_close(o_pad.detach().numpy(), t_pad.detach().numpy(), rtol=1e-10, atol=1e-10)
    assert o_len.tolist() == t_len.tolist() and o_len.dtype == np.int64
    assert_close(o_h.detach().numpy(), t_h.detach().numpy(), rtol=1e-10, atol=1e-10)
    assert o_out.sorted_indices.tolist() == t_out.sorted_indices.tolist()
    assert o_out.unsorted_indices.tolist() == t_out.unsorted_indices.tolist()


# -- nn.utils.rnn -----------------------------------------------------------------------------
def test_pad_and_pack_utilities_against_torch():
    torch = pytest.importorskip("torch")
    tr = torch.nn.utils.rnn
    seqs = [_x(4, 2), _x(2, 2), _x(3, 2)]
    ts, os_ = [torch.tensor(s) for s in seqs], [acg.tensor(s) for s in seqs]
    for kw in ({}, {"batch_first": True, "padding_value": 7.0},
               {"padding_side": "left", "batch_first": True}):
        assert_close(R.pad_sequence(os_, **kw).detach().numpy(), tr.pad_sequence(ts, **kw).detach().numpy())
    tp = tr.pack_sequence(ts, enforce_sorted=False)
    op = R.pack_sequence(os_, enforce_sorted=False)
    assert_close(op.data.detach().numpy(), tp.data.detach().numpy())
    assert op.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for got, want in zip(R.unpack_sequence(op), tr.unpack_sequence(tp)):
        assert_close(got.detach().numpy(), want.detach().numpy())
    padded = tr.pad_sequence(ts)
    for got, want in zip(R.unpad_sequence(acg.tensor(padded.detach().numpy()), [4, 2, 3]),
                         tr.unpad_sequence(padded, torch.tensor([4, 2, 3]))):
        assert_close(got.detach().numpy(), want.detach().numpy())
    sorted_ = R.pack_sequence([os_[0], os_[2], os_[1]])
    assert sorted_.sorted_indices is None and sorted_.unsorted_indices is None
    assert isinstance(sorted_, tuple) and sorted_.double().data.dtype == np.float64


def test_gradient_through_pack_and_pad():
    """pack then pad is a gather: valid slots pass the gradient, padding gets none."""
    x = acg.tensor(_x(3, 2, 2), requires_grad=True)
    packed = R.pack_padded_sequence(x, [3, 1])
    padded, _ = R.pad_packed_sequence(packed, padding_value=5.0)
    padded.sum().backward()
    want = np.zeros((3, 2, 2))
    want[:3, 0], want[:1, 1] = 1.0, 1.0
    assert_close(x.grad.detach().numpy(), want)
    assert_close(padded.detach().numpy()[1:, 1], np.full((2, 2), 5.0))


def test_packing_errors_match_torch():
    x = acg.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order when "
                                           "`enforce_sorted` is True"):
        R.pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 2 \(batch_size=3\)"):
        R.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(x, [3, 0, 1], enforce_sorted=False)
    packed = R.pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(ValueError, match="but got total_length=2 and max sequence length "
                                         "being 3"):
        R.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, "
                                           "but got middle."):
        R.pad_sequence([x[0]], padding_side="middle")


# -- cells -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw,batched", [("RNNCell", {}, True),
                                             ("RNNCell", {"nonlinearity": "relu"}, False),
                                             ("LSTMCell", {}, True), ("LSTMCell", {}, False),
                                             ("GRUCell", {"bias": False}, True)])
def test_cells_against_torch(mode, name, kw, batched):
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(torch, name, (3, 4), kw)
    shape = (2,) if batched else ()
    x, states = _x(*shape, 3), [_x(*shape, 4) for _ in range(2 if name == "LSTMCell" else 1)]

    def go(lib, module, ctx):
        xt = lib.tensor(x, requires_grad=True)
        st = [lib.tensor(s, requires_grad=True) for s in states]
        out = module(xt, tuple(st) if len(st) == 2 else st[0])
        outs = list(out) if isinstance(out, tuple) else [out]
        loss = sum((o * (k + 2.0)).sin().sum() for k, o in enumerate(outs))
        with ctx():
            loss.backward()
        vals = [o.detach().numpy() for o in outs]
        return vals + [xt.grad.detach().numpy()] + [s.grad.detach().numpy() for s in st] + \
            [p.grad.detach().numpy() for p in module.parameters()]
    import contextlib
    for a, b in zip(go(torch, theirs, contextlib.nullcontext), go(acg, ours, mode)):
        assert_close(b, a, rtol=1e-10, atol=1e-10)
    assert repr(ours) == repr(theirs)


def test_cell_errors_match_torch():
    torch = pytest.importorskip("torch")
    calls = [lambda m: m.LSTMCell(3, 4)(m.zeros(2, 5)),
             lambda m: m.GRUCell(3, 4)(m.zeros(2, 3), m.zeros(3, 4)),
             lambda m: m.RNNCell(3, 4)(m.zeros(2, 3), m.zeros(2, 5)),
             lambda m: m.RNNCell(3, 4)(m.zeros(2, 3, 1)),
             lambda m: m.LSTMCell(3, 4)(m.zeros(2, 3), (m.zeros(2, 4), m.zeros(2, 3, 4)))]
    for call in calls:
        _same_error(torch, call)


# -- errors, repr, parameters ------------------------------------------------------------------
def _same_error(torch, call) -> None:
    """``call(namespace)`` raises the same class and text with torch.nn and ours."""
    with pytest.raises(Exception) as theirs:
        call(_NS(torch.nn, torch.zeros, torch.float64))
    with pytest.raises(type(theirs.value)) as ours:
        call(_NS(nn, acg.zeros, acg.float64))
    assert str(ours.value) == str(theirs.value)


class _NS:
    """nn's classes plus a zeros factory, so one lambda builds a call in either framework."""

    def __init__(self, mod, zeros, f64) -> None:
        self.mod, self.zeros, self.f64 = mod, zeros, f64

    def __getattr__(self, name):
        return getattr(self.mod, name)


ERROR_CALLS = [
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 5)),
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 3), (m.zeros(1, 3, 4), m.zeros(1, 2, 4))),
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 3), (m.zeros(1, 2, 4), m.zeros(1, 3, 4))),
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 3), (m.zeros(1, 3, 4), m.zeros(3, 4))),
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 3, 1)),
    lambda m: m.LSTM(3, 4)(m.zeros(2, 3, 3, dtype=m.f64)),
    lambda m: m.GRU(3, 4)(m.zeros(2, 3, 3), m.zeros(1, 2, 4)),
    lambda m: m.GRU(3, 4)(m.zeros(2, 3), m.zeros(1, 2, 4)),
    lambda m: m.RNN(3, 4)(m.zeros(2, 3, 3), m.zeros(3, 4)),
    lambda m: m.RNN(3, 4)(m.zeros(3)),
    lambda m: m.RNN(3, 4, nonlinearity="x"),
    lambda m: m.GRU(3, 4, proj_size=2),
    lambda m: m.LSTM(3, 4, proj_size=4),
    lambda m: m.LSTM(3, 4, dropout=1.5),
    lambda m: m.LSTM(3, 0),
    lambda m: m.LSTM(3, 4, 0),
    lambda m: m.LSTM(3.0, 4),
    lambda m: m.LSTM(3, 4, bias=1),
]


@pytest.mark.parametrize("k", range(len(ERROR_CALLS)))
def test_errors_match_torch(k):
    torch = pytest.importorskip("torch")
    _same_error(torch, ERROR_CALLS[k])


def test_repr_state_dict_all_weights_and_init():
    torch = pytest.importorskip("torch")
    configs = [("LSTM", (3, 4, 2), {"proj_size": 2, "bidirectional": True, "bias": False,
                                    "batch_first": True, "dropout": 0.5}),
               ("RNN", (3, 4), {"nonlinearity": "relu"}), ("GRU", (3, 4), {}),
               ("LSTMCell", (3, 4), {}), ("RNNCell", (3, 4), {"bias": False})]
    for name, args, kw in configs:
        theirs, ours = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
        assert repr(ours) == repr(theirs)
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        assert list(ours.state_dict()) == list(theirs.state_dict())
    lstm = nn.LSTM(3, 4, proj_size=2)
    assert [[tuple(p.shape) for p in ws] for ws in lstm.all_weights] == \
        [[(16, 3), (16, 2), (16,), (16,), (2, 4)]]
    assert lstm.all_weights[0][0] is lstm.weight_ih_l0
    assert lstm._flat_weights_names == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
                                        "bias_hh_l0", "weight_hr_l0"]
    lstm.flatten_parameters()
    assert nn.modules.rnn.LSTM is nn.LSTM  # PyTorch's module path resolves
    acg.manual_seed(0)
    big = nn.GRU(8, 400)
    bound = 1 / math.sqrt(400)
    w = big.weight_hh_l0.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    assert nn.LSTM(2, 3, dtype=acg.float64).weight_ih_l0.dtype == np.float64


# -- without torch: the backward op against jax.vjp, finite differences -----------------------
@pytest.mark.parametrize("kmode,proj,masked,reverse", [
    ("LSTM", True, True, True), ("LSTM", False, False, False), ("GRU", False, True, False),
    ("GRU", False, False, True), ("RNN_TANH", False, True, True), ("RNN_RELU", False, False,
                                                                    False)])
def test_backward_kernel_matches_jax_vjp(kmode, proj, masked, reverse):
    t, b, i, h = 5, 3, 2, 4
    p = 2 if proj else h
    g = krnn.GATES[kmode] * h
    r = np.random.default_rng(1)
    arr = lambda *s: jnp.asarray(r.standard_normal(s))  # noqa: E731
    x, hx, w_ih, w_hh, b_ih, b_hh = arr(t, b, i), arr(b, p), arr(g, i), arr(g, p), arr(g), arr(g)
    cx = arr(b, h) if kmode == "LSTM" else None
    w_hr = arr(p, h) if proj else None
    lengths = jnp.asarray([5, 2, 3]) if masked else None

    def fwd(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr):
        out, hn, cn, _, _ = krnn._rnn_layer(x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, lengths,
                                            kmode, reverse)
        return out, hn, cn
    primals = (x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    outs, vjp = jax.vjp(fwd, *primals)
    cots = tuple(jnp.asarray(r.standard_normal(o.shape)) for o in outs)
    want = vjp(cots)
    full = krnn._rnn_layer(*primals, lengths, kmode, reverse)
    got = krnn._rnn_layer_bwd(*cots, *primals, lengths, full[0], full[3], full[4], kmode,
                              reverse)
    for gw, ww in zip(got, want):
        if ww is not None:
            assert_close(gw, ww, rtol=1e-10, atol=1e-10)


class _OutputOnly(nn.Module):
    """A recurrent layer's output alone (the gradient oracle takes one tensor)."""

    def __init__(self, rnn) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        out, state = self.rnn(x)
        h = state[0] if isinstance(state, tuple) else state
        return acg.cat([out.reshape(-1), h.reshape(-1)])


def test_lstm_gradients_against_finite_differences(mode):
    acg.manual_seed(0)
    lstm = _OutputOnly(nn.LSTM(2, 3, bidirectional=True, proj_size=1))
    check_layer_grads(lstm, [_x(3, 2, 2)], mode, rtol=1e-5, atol=1e-7)


# -- one op per layer and direction; acg.compile ----------------------------------------------
def test_graph_is_one_op_per_layer_and_direction_whatever_the_length():
    """A traced forward + backward holds one ``rnn_layer`` and one ``rnn_layer_backward`` per
    layer and direction, and the same nodes for 5 steps as for 60: no per-step dispatch."""
    from autograd_compile.proxy_tensor import make_fx
    lstm = nn.LSTM(3, 4, 2, bidirectional=True)
    params = list(lstm.parameters())

    def step(x):
        out, (h, c) = lstm(x)
        return acg.autograd.grad(out.sum() + h.sum() + c.sum(), params)
    counts = []
    for steps in (5, 60):
        gm = make_fx(step, "fake")(acg.randn(steps, 2, 3))
        targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
        assert targets.count("acg.rnn_layer") == 4
        assert targets.count("acg.rnn_layer_backward") == 4
        counts.append(len(targets))
    assert counts[0] == counts[1]


def test_unidirectional_stack_is_one_op_whatever_the_length():
    """Layers without dropout between them: one ``rnn_stack`` forward and one
    ``rnn_stack_backward``; dropout in training falls back to one op per layer."""
    from autograd_compile.proxy_tensor import make_fx

    def targets(module, steps):
        params = list(module.parameters())

        def step(x):
            out, (h, c) = module(x)
            return acg.autograd.grad(out.sum() + h.sum() + c.sum(), params)
        gm = make_fx(step, "fake")(acg.randn(steps, 2, 3))
        return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    lstm = nn.LSTM(3, 4, 3, dropout=0.3)
    lstm.eval()
    short, long = targets(lstm, 5), targets(lstm, 60)
    assert short.count("acg.rnn_stack") == 1 and short.count("acg.rnn_stack_backward") == 1
    assert "acg.rnn_layer" not in short and len(short) == len(long)
    lstm.train()
    assert targets(lstm, 5).count("acg.rnn_layer") == 3


_STACKS = [("LSTM", {"num_layers": 2}, False), ("LSTM", {"num_layers": 3, "proj_size": 2}, False),
           ("GRU", {"num_layers": 2}, False),
           ("RNN", {"num_layers": 3, "nonlinearity": "relu"}, False),
           ("RNN", {"num_layers": 2, "bias": False}, False),
           ("LSTM", {"num_layers": 2, "bias": False, "proj_size": 3}, True),
           ("GRU", {"num_layers": 3}, True)]


def test_stack_without_input_grad(mode):
    """An input that needs no gradient: the backward skips its matmul, the rest agrees."""
    x = _x(5, 3, 4)

    def run(wavefront):
        acg.manual_seed(0)
        lstm = nn.LSTM(4, 6, 2).double()
        lstm._wavefront = wavefront
        out, (h, c) = lstm(acg.tensor(x))
        with mode():
            ((out * out).sum() + c.sum()).backward()
        return [p.grad.numpy() for p in lstm.parameters()]
    for g, w in zip(run(True), run(False)):
        assert_close(g, w, rtol=1e-11, atol=1e-12)


def _stack_run(name, kw, packed, wavefront, mode):
    acg.manual_seed(0)
    module = getattr(nn, name)(4, 6, **kw).double()
    module._wavefront = wavefront
    r = np.random.default_rng(3)
    layers, width = kw["num_layers"], kw.get("proj_size") or 6
    x = acg.tensor(r.standard_normal((5, 3, 4)), requires_grad=True)
    h0 = acg.tensor(r.standard_normal((layers, 3, width)), requires_grad=True)
    states = [h0] + ([acg.tensor(r.standard_normal((layers, 3, 6)), requires_grad=True)]
                     if name == "LSTM" else [])
    inp = R.pack_padded_sequence(x, [5, 2, 3], enforce_sorted=False) if packed else x
    out, st = module(inp, tuple(states) if name == "LSTM" else h0)
    out = R.pad_packed_sequence(out)[0] if packed else out
    finals = list(st) if name == "LSTM" else [st]
    cot = acg.tensor(np.cos(np.arange(math.prod(out.shape))).reshape(out.shape))
    loss = (out * cot).sum() + sum((f * f).sum() for f in finals)
    with mode():
        loss.backward()
    leaves = [x] + states + list(module.parameters())
    return [t.detach().numpy() for t in [out] + finals] + [t.grad.numpy() for t in leaves]


@pytest.mark.parametrize("name,kw,packed", _STACKS)
def test_stack_matches_one_op_per_layer(mode, name, kw, packed):
    """The wavefront (``rnn_stack``) against the per-layer ops, float64, in every mode."""
    got = _stack_run(name, kw, packed, True, mode)
    want = _stack_run(name, kw, packed, False, mode)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("kmode,proj,masked,bias", [
    ("LSTM", True, True, True), ("LSTM", False, False, False), ("GRU", False, True, True),
    ("RNN_TANH", False, False, True)])
def test_stack_backward_kernel_matches_jax_vjp(kmode, proj, masked, bias):
    t, b, i, h, layers = 6, 3, 2, 4, 3
    p = 2 if proj else h
    g = krnn.GATES[kmode] * h
    r = np.random.default_rng(2)
    arr = lambda *s: jnp.asarray(r.standard_normal(s))  # noqa: E731
    weights = []
    for layer in range(layers):
        weights += [arr(g, i if layer == 0 else p), arr(g, p)] + (
            [arr(g), arr(g)] if bias else []) + ([arr(p, h)] if proj else [])
    x, hx = arr(t, b, i), arr(layers, b, p)
    cx = arr(layers, b, h) if kmode == "LSTM" else None
    lengths = jnp.asarray([6, 2, 3]) if masked else None

    def fwd(x, hx, cx, weights):
        out, hn, cn, _, _, _ = krnn._rnn_stack(x, hx, cx, weights, lengths, kmode, bias, proj)
        return out, hn, cn
    outs, vjp = jax.vjp(fwd, x, hx, cx, weights)
    cots = tuple(jnp.asarray(r.standard_normal(o.shape)) for o in outs)
    want_x, want_hx, want_cx, want_w = vjp(cots)
    full = krnn._rnn_stack(x, hx, cx, weights, lengths, kmode, bias, proj)
    gx, ghx, gcx, gw = krnn._rnn_stack_bwd(*cots, x, hx, cx, weights, lengths, *full[3:],
                                           kmode, bias, proj)
    assert_close(gx, want_x, rtol=1e-10, atol=1e-10)
    assert_close(ghx, want_hx, rtol=1e-10, atol=1e-10)
    if cx is not None:
        assert_close(gcx, want_cx, rtol=1e-10, atol=1e-10)
    assert_close(gw, jnp.concatenate([w.reshape(-1) for w in want_w]), rtol=1e-10, atol=1e-10)


def test_stack_gradients_against_finite_differences(mode):
    acg.manual_seed(0)
    lstm = _OutputOnly(nn.LSTM(2, 3, 2, proj_size=1))
    check_layer_grads(lstm, [_x(3, 2, 2)], mode, rtol=1e-5, atol=1e-7)


class _LSTMHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(3, 4, 2, batch_first=True, proj_size=2)
        self.head = nn.Linear(2, 1)

    def forward(self, x):
        out, (h, c) = self.rnn(x)
        return self.head(out).pow(2).sum() + c.sum() + h.sum()


def test_acg_compile_module_matches_eager():
    acg.manual_seed(0)
    model, x = _LSTMHead().double(), acg.tensor(_x(2, 6, 3))
    loss = model(x)
    loss.backward()
    want = [loss.item()] + [p.grad.detach().numpy().copy() for p in model.parameters()]
    compiled = acg.compile(model)
    for _ in range(2):  # the second call runs the cached program
        model.zero_grad()
        loss = compiled(x)
        loss.backward()
        got = [loss.item()] + [p.grad.detach().numpy() for p in model.parameters()]
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-10, atol=1e-12)


# -- double backward (a gradient penalty), against torch -------------------------------------
@pytest.mark.parametrize("name,kw,lengths", [
    ("LSTM", {"bidirectional": True, "proj_size": 2}, None),
    ("GRU", {"num_layers": 2}, [4, 2, 3]),
    ("LSTM", {"num_layers": 3, "proj_size": 2}, [4, 2, 3])])
def test_double_backward_against_torch(mode, name, kw, lengths):
    """d/dtheta of |d loss / d x|^2 (and of the loss): the backward of the backward op,
    with packed sequences for GRU."""
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(torch, name, (3, 5), kw)
    x0 = _x(4, 3, 3)

    def go(lib, module, ctx):
        x = lib.tensor(x0, requires_grad=True)
        inp = x if lengths is None else lib.nn.utils.rnn.pack_padded_sequence(
            x, lengths, enforce_sorted=False)
        out, state = module(inp)
        out = out if lengths is None else out.data
        h = state[0] if isinstance(state, tuple) else state
        loss = (out * out).sum() + h.sin().sum()
        gx, = lib.autograd.grad(loss, x, create_graph=True)
        total = (gx * gx).sum() + loss
        with ctx():
            total.backward()
        return [total.detach().numpy(), x.grad.detach().numpy()] + \
            [p.grad.detach().numpy() for p in module.parameters()]
    import contextlib
    for got, want in zip(go(acg, ours, mode), go(torch, theirs, contextlib.nullcontext)):
        assert_close(got, want, rtol=1e-9, atol=1e-10)


def test_docstring_examples_run():
    import doctest
    from autograd_compile.benchmarks import step_rnn
    from autograd_compile.nn import rnn as rnn_modules
    for module in (rnn_modules, R, step_rnn):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
