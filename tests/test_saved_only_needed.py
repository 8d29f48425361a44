"""Save only what the backward needs (PyTorch's derivatives.yaml rule), and unpack lazily.

An op saves an input only when a gradient that reads it is needed: ``x * w`` with only
``w`` requiring grad saves ``x`` (for w's gradient), never ``w``. ``saved_tensors_hooks``
pack exactly the tensors saved, once each; unpack runs when the node runs (after the
tensor hooks of its output and its pre-hooks), once per saved tensor, in every mode.
Gradients are checked against ``jax.vjp`` for each requires_grad combination.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.backends import get as get_backend
from conftest import assert_close

ca = acg.compiled_autograd
hooks = acg.autograd.graph.saved_tensors_hooks


def _layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * w + b


def _rms_norm(x, w):
    eps = float(jnp.finfo(x.dtype).eps)
    return x / jnp.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _conv(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID")
    return y + b[None, :, None, None]


# name -> (input names and shapes, our op, the jax reference, {requires_grad: packed})
# "packed" lists what PyTorch's derivatives save for those gradients, in argument order
CASES = {
    "mul": ((("a", (2, 3)), ("b", (3,))), lambda a, b: a * b, lambda a, b: a * b,
            {"a": ["b"], "b": ["a"], "ab": ["a", "b"]}),
    "div": ((("a", (2, 3)), ("b", (2, 3))), lambda a, b: a / b, lambda a, b: a / b,
            {"a": ["b"], "b": ["a", "b"], "ab": ["a", "b"]}),
    "matmul": ((("a", (2, 3)), ("b", (3, 4))), lambda a, b: a @ b, lambda a, b: a @ b,
               {"a": ["b"], "b": ["a"], "ab": ["a", "b"]}),
    "matmul_vec": ((("a", (3,)), ("b", (3, 4))), lambda a, b: a @ b, lambda a, b: a @ b,
                   {"a": ["b"], "b": ["a"]}),
    "linear": ((("x", (2, 3)), ("w", (4, 3)), ("bias", (4,))), F.linear,
               lambda x, w, b: x @ w.T + b,
               {"x": ["w"], "w": ["x"], "bias": [], "xw": ["x", "w"], "xwbias": ["x", "w"]}),
    "linear_vec": ((("x", (3,)), ("w", (4, 3)), ("bias", (4,))), F.linear,
                   lambda x, w, b: w @ x + b, {"x": ["w"], "wbias": ["x"]}),
    "pow": ((("a", (2, 3)), ("b", (2, 3))), lambda a, b: a ** b,
            lambda a, b: a ** b, {"b": ["a", "b", "out"]}),
    "layer_norm": ((("x", (2, 4)), ("w", (4,)), ("bias", (4,))),
                   lambda x, w, b: F.layer_norm(x, (4,), w, b), _layer_norm,
                   {"x": ["x", "w"], "w": ["x"], "bias": [], "xwbias": ["x", "w"]}),
    "rms_norm": ((("x", (2, 4)), ("w", (4,))), lambda x, w: F.rms_norm(x, (4,), w), _rms_norm,
                 {"x": ["x", "w"], "w": ["x"]}),
    "conv2d": ((("x", (1, 2, 5, 5)), ("w", (3, 2, 3, 3)), ("bias", (3,))), F.conv2d, _conv,
               {"x": ["w"], "w": ["x"], "bias": []}),
}
# pow's base is the output of abs (an intermediate); its own combinations, base included:
POW_BASE = {"a": ["a", "b"], "ab": ["a", "b", "out"]}


def _which(combo: str, names: list[str]) -> set[str]:
    """'xwbias' -> {'x', 'w', 'bias'} (longest names first, so 'bias' is not 'b')."""
    picked = set()
    for n in sorted(names, key=len, reverse=True):
        if n in combo:
            picked.add(n)
            combo = combo.replace(n, "", 1)
    assert not combo, f"unknown input in combination: {combo!r}"
    return picked


def _table() -> list[tuple[str, str]]:
    return [(case, combo) for case, spec in CASES.items() for combo in spec[3]]


class Recorder:
    """Pack/unpack hooks that log which tensor each call saw, by identity."""

    def __init__(self, named: dict[str, acg.Tensor]) -> None:
        self.named, self.packed, self.unpacked, self.events = named, [], [], []

    def name_of(self, t: acg.Tensor) -> str:
        return next((n for n, v in self.named.items() if v is t), "out")

    def pack(self, t: acg.Tensor) -> tuple[int, acg.Tensor]:
        self.packed.append(self.name_of(t))
        return (len(self.packed) - 1, t)

    def unpack(self, box: tuple[int, acg.Tensor]) -> acg.Tensor:
        self.unpacked.append(box[0])
        self.events.append(f"unpack {self.packed[box[0]]}")
        return box[1]


@pytest.mark.parametrize("case,combo", _table())
def test_packs_only_what_the_needed_gradients_read(mode, case, combo):
    specs, ours, ref, table = CASES[case]
    names = [n for n, _ in specs]
    rng = np.random.default_rng(len(case))
    arrays = [rng.uniform(0.5, 1.5, s).astype(np.float32) for _, s in specs]
    grad_of = _which(combo, names)
    ts = {n: acg.tensor(a, requires_grad=n in grad_of) for n, a in zip(names, arrays)}
    rec = Recorder(ts)
    with hooks(rec.pack, rec.unpack):
        out = ours(*ts.values())
    assert rec.packed == table[combo]
    assert rec.unpacked == []  # nothing unpacks before backward
    cot = rng.standard_normal(out.shape).astype(np.float32)
    with mode():
        (out * acg.tensor(cot)).sum().backward()
    assert sorted(rec.unpacked) == list(range(len(rec.packed)))  # each once
    want = [n for n in names if n in grad_of]
    _, vjp = jax.vjp(lambda *xs: ref(*[xs[want.index(n)] if n in want else a
                                       for n, a in zip(names, arrays)]),
                     *[arrays[names.index(n)] for n in want])
    for n, g in zip(want, vjp(cot)):
        assert_close(ts[n].grad, g, rtol=1e-4, atol=1e-5)
    for n in names:
        if n not in grad_of:
            assert ts[n].grad is None
    if mode.compiled:
        assert ca.counters["captures"] == 1


@pytest.mark.parametrize("combo", sorted(POW_BASE))
def test_pow_base_gradient_packs_base_and_exponent(mode, combo):
    """pow(a, b) with a an intermediate (abs of a leaf): a's gradient reads a and b; the
    exponent's gradient reads the output too."""
    rng = np.random.default_rng(7)
    a0 = acg.tensor(rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32), requires_grad=True)
    b = acg.tensor(rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32),
                   requires_grad="b" in combo)
    a = a0.abs()
    rec = Recorder({"a": a, "b": b})
    with hooks(rec.pack, rec.unpack):
        out = a ** b
    assert rec.packed == POW_BASE[combo]
    with mode():
        out.sum().backward()
    assert sorted(rec.unpacked) == list(range(len(rec.packed)))
    ga, gb = jax.grad(lambda x, y: (jnp.abs(x) ** y).sum(), (0, 1))(a0.detach().numpy(), b.detach().numpy())
    assert_close(a0.grad, ga, rtol=1e-5)
    if "b" in combo:
        assert_close(b.grad, gb, rtol=1e-5)


def test_saved_tensor_unpack_hook_ordering(mode):
    """PyTorch's test_saved_tensor_unpack_hook_ordering, with the eager order in every mode:
    x * y with only x requiring grad packs y once; the loss's tensor hook runs before the
    unpack, and unpack runs once."""
    counts = {"pack": 0, "unpack": 0}
    seen_at_hook = []

    def pack(t):
        counts["pack"] += 1
        return t

    def unpack(t):
        counts["unpack"] += 1
        return t
    x = acg.ones(4, requires_grad=True)
    y = acg.ones(4)
    with hooks(pack, unpack):
        out = x * y
    assert counts == {"pack": 1, "unpack": 0}
    loss = out.sum()
    loss.register_hook(lambda g: seen_at_hook.append(counts["unpack"]))
    with mode():
        loss.backward()
    assert counts == {"pack": 1, "unpack": 1}
    assert seen_at_hook == [0]
    assert_close(x.grad, np.ones(4))


def _chain(rec: Recorder, events: list) -> tuple[acg.Tensor, acg.Tensor]:
    """x.exp() (saves its output) times c (mul saves c): hooks on both nodes."""
    x = acg.tensor([0.1, 0.2, 0.3], requires_grad=True)
    c = acg.tensor([1.0, 2.0, 3.0])
    rec.named = {"x": x, "c": c}
    with hooks(rec.pack, rec.unpack):
        h = x.exp()
        m = h * c
    m.register_hook(lambda g: events.append("m hook"))
    h.register_hook(lambda g: events.append("h hook"))
    h.grad_fn.register_prehook(lambda go: events.append("exp pre-hook"))
    h.grad_fn.register_hook(lambda gi, go: events.append("exp post-hook"))
    m.grad_fn.register_prehook(lambda go: events.append("mul pre-hook"))
    return x, m.sum()


def test_unpack_runs_when_its_node_runs(mode):
    """Each node's saved tensors unpack after that node's tensor hooks and pre-hooks and
    before its post-hooks, nodes in backward order (as the PyTorch engine does)."""
    rec = Recorder({})
    rec.events = events = []
    x, loss = _chain(rec, events)
    assert rec.packed == ["out", "c"]
    with mode():
        loss.backward()
    assert events == ["m hook", "mul pre-hook", "unpack c", "h hook", "exp pre-hook",
                      "unpack out", "exp post-hook"]
    assert_close(x.grad, np.exp([0.1, 0.2, 0.3]) * [1.0, 2.0, 3.0], rtol=1e-6)


def test_each_backward_unpacks_once_and_reuses_the_capture(mode):
    """retain_graph: every backward unpacks each saved tensor once; compiled mode captures
    once and calls the unpack hooks from the cached program."""
    rec = Recorder({})
    rec.events = events = []
    x, loss = _chain(rec, events)
    x.grad = acg.zeros(3)  # .grad set from the start: both backwards have one cache key
    with mode():
        loss.backward(retain_graph=True)
        loss.backward()
    assert sorted(rec.unpacked) == [0, 0, 1, 1]
    assert [e for e in events if e.startswith("unpack")] == ["unpack c", "unpack out"] * 2
    assert_close(x.grad, 2 * np.exp([0.1, 0.2, 0.3]) * [1.0, 2.0, 3.0], rtol=1e-6)
    if mode.compiled:
        assert (ca.counters["captures"], ca.counters["cache_hits"]) == (1, 1)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"), mode():
        loss.backward()


def test_new_graphs_hit_the_cache_and_unpack_their_own_tensors(mode):
    """A training-loop shape: a fresh forward each step under the hooks, one capture."""
    w = acg.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    w.grad = acg.zeros(2, 2)  # every step then has the same cache key
    total = np.zeros((2, 2), np.float32)
    for step in range(3):
        x = acg.tensor(np.full((3, 2), step + 1.0, np.float32))
        rec = Recorder({"x": x, "w": w})
        with hooks(rec.pack, rec.unpack):
            y = F.linear(x, w)
        assert rec.packed == ["x"]  # only the weight's gradient is needed: it reads x
        with mode():
            y.sum().backward()
        assert rec.unpacked == [0]
        total += np.full((2, 2), 3.0 * (step + 1), np.float32)
        assert_close(w.grad, total)
    if mode.compiled:
        assert (ca.counters["captures"], ca.counters["cache_hits"]) == (1, 2)


class Scale(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(k)
        return x * k

    @staticmethod
    def backward(ctx, g):
        (k,) = ctx.saved_tensors
        return g * k, None


def test_custom_function_saved_tensors_unpack_when_it_runs(mode):
    rec = Recorder({})
    rec.events = events = []
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    k = acg.tensor([3.0, 4.0])
    rec.named = {"k": k}
    with hooks(rec.pack, rec.unpack):
        y = Scale.apply(x, k)
    y.register_hook(lambda g: events.append("y hook"))
    with mode():
        y.sum().backward()
    assert rec.packed == ["k"]
    assert events == ["y hook", "unpack k"]
    assert_close(x.grad, [3.0, 4.0])


def _backward_ops(mode, loss: acg.Tensor) -> list[str]:
    """Names of the ops the backward ran: logged by a dispatch mode in eager, read from the
    captured graph in compiled mode."""
    if not mode.compiled:
        class Log(acg.DispatchMode):
            def __init__(self):
                self.names = []

            def __acg_dispatch__(self, func, types, args=(), kwargs=None):
                self.names.append(func.name)
                return func(*args, **(kwargs or {}))
        with Log() as log:
            loss.backward()
        return log.names
    graphs = []
    backend = get_backend(mode.name.split("-", 1)[1])
    with ca.enable(lambda gm: graphs.append(gm) or backend(gm)):
        loss.backward()
    return [n.target.name for n in graphs[0].graph.nodes
            if n.op == "call_function" and hasattr(n.target, "name")]


def test_gradients_nobody_needs_are_not_computed(mode):
    """x @ w with x data: the backward runs one matmul (w's gradient), not two."""
    x = acg.tensor(np.ones((2, 3), np.float32))
    w = acg.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    ops = _backward_ops(mode, (x @ w).sum())
    assert ops.count("matmul") == 1
    assert_close(w.grad, np.full((3, 4), 2.0))


@pytest.mark.parametrize("backend", ["eager", "jax"])
def test_compiled_unpack_must_keep_the_packed_shape(backend):
    """The compiled program was captured for the packed shape: an unpack hook returning
    another shape is a clear error, and .grad stays untouched."""
    x = acg.ones(3, requires_grad=True)
    with hooks(lambda t: t, lambda t: acg.ones(1)):
        y = (x * acg.ones(3)).sum()
    with pytest.raises(RuntimeError, match=r"unpack hook returned a tensor of shape \[1\]"), \
            ca.enable(backend):
        y.backward()
    assert x.grad is None


def test_double_backward_through_hooked_saved_tensors(mode):
    """create_graph: the unpacked output is reconnected to its node, so a second backward
    reaches it again (ExpBackward runs twice: its output unpacks twice, the rest once)."""
    rec = Recorder({})
    x = acg.tensor([0.5, 1.0], requires_grad=True)
    rec.named = {"x": x}
    with hooks(rec.pack, rec.unpack):
        y = (x.exp() * x).sum()
    assert rec.packed == ["out", "out", "x"]  # exp's output; mul's two inputs
    with mode():
        (g,) = acg.autograd.grad(y, x, create_graph=True)
        (gg,) = acg.autograd.grad(g.sum(), x)
    xs = np.array([0.5, 1.0])
    assert_close(g, np.exp(xs) * (1 + xs), rtol=1e-6)
    assert_close(gg, np.exp(xs) * (2 + xs), rtol=1e-6)
    assert sorted(rec.unpacked) == [0, 0, 1, 2]
