"""Compiled autograd: capture, cache keys and guards, backends, errors, logging."""
from __future__ import annotations

import logging
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import compiled_autograd as ca
from conftest import assert_close

BACKENDS = ["eager", "jax"]


@pytest.fixture(autouse=True)
def fresh_cache():
    ca.reset()
    yield
    ca.reset()


def mlp(batch, seed=0, width=8):
    rng = np.random.default_rng(seed)
    x = acg.tensor(rng.standard_normal((batch, 4)), dtype=acg.float32)
    w1 = acg.tensor(rng.standard_normal((4, width)), dtype=acg.float32, requires_grad=True)
    w2 = acg.tensor(rng.standard_normal((width, 1)), dtype=acg.float32, requires_grad=True)
    return x, w1, w2


def loss_of(x, w1, w2, scale=1.0):
    return (((x @ w1).tanh() @ w2) ** 2).mean() * scale


@jax.jit  # one XLA compile per shape rather than one per primitive
def _jax_grads(x, w1, w2, scale):
    f = lambda w1, w2: (jnp.tanh(x @ w1) @ w2).__pow__(2).mean() * scale
    return jax.grad(f, (0, 1))(w1, w2)


def jax_grads(x, w1, w2, scale=1.0):
    return _jax_grads(x.detach().numpy(), w1.detach().numpy(), w2.detach().numpy(), scale)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_match_jax(backend):
    x, w1, w2 = mlp(6)
    with ca.enable(backend):
        loss_of(x, w1, w2).backward()
    g1, g2 = jax_grads(x, w1, w2)
    assert_close(w1.grad, g1, rtol=1e-5)
    assert_close(w2.grad, g2, rtol=1e-5)
    assert ca.counters["captures"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_capture_serves_every_batch_size(backend):
    for batch in range(10, 91, 20):  # 5 sizes
        x, w1, w2 = mlp(batch, seed=batch)
        with ca.enable(backend):
            loss_of(x, w1, w2).backward()
        g1, _ = jax_grads(x, w1, w2)
        assert_close(w1.grad, g1, rtol=1e-5, atol=1e-6)
    assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 4
    if backend == "jax":  # XLA builds a program for the first size; the others, seen once
        assert ca.counters["compiles"] == 1 and ca.counters["eager_shapes"] == 4  # op by op


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_equal_to_a_width_by_chance_is_told_apart_once(backend):
    """Batch 8 == width 8 at the first capture shares one symbol (duck sizing). Batch 4
    then equals the input width 4, by chance again: the second capture, having seen both
    size lists, gives the batch its own symbol, and that capture serves every batch after."""
    for batch in (8, 4, 12, 20, 8):
        x, w1, w2 = mlp(batch, seed=batch)
        with ca.enable(backend):
            loss_of(x, w1, w2).backward()
        g1, g2 = jax_grads(x, w1, w2)
        assert_close(w1.grad, g1, rtol=1e-5, atol=1e-6)
        assert_close(w2.grad, g2, rtol=1e-5, atol=1e-6)
    assert ca.counters["captures"] == 2 and ca.counters["cache_hits"] == 3


def test_fresh_parameters_same_shapes_reuse_the_capture():
    for seed in range(3):
        x, w1, w2 = mlp(5, seed=seed)
        with ca.enable("jax"):
            loss_of(x, w1, w2).backward()
    assert ca.counters["captures"] == 1


def test_scalar_change_is_lifted_not_recaptured():
    results = []
    for scale in (1.0, 2.5, -3.0):
        x, w1, w2 = mlp(5)
        with ca.enable("jax"):
            loss_of(x, w1, w2, scale).backward()
        g1, _ = jax_grads(x, w1, w2, scale)
        assert_close(w1.grad, g1, rtol=1e-5)
        results.append(w1.grad.detach().numpy())
    assert ca.counters["captures"] == 1


def test_changed_hook_closure_is_not_recaptured():
    for factor in (2.0, 5.0):
        x, w1, w2 = mlp(5)
        w1.register_hook(lambda g, f=factor: g * f)
        with ca.enable("jax"):
            loss_of(x, w1, w2).backward()
        g1, _ = jax_grads(x, w1, w2)
        assert_close(w1.grad, np.asarray(g1) * factor, rtol=1e-5)
    assert ca.counters["captures"] == 1


def test_integer_exponent_change_recaptures():
    for p in (2, 3):
        x = acg.tensor([1.0, 2.0], requires_grad=True)
        with ca.enable("jax"):
            (x ** p).sum().backward()
        assert_close(x.grad, p * np.array([1.0, 2.0]) ** (p - 1))
    assert ca.counters["captures"] == 2


def test_hook_count_change_recaptures():
    x, w1, w2 = mlp(5)
    with ca.enable("jax"):
        loss_of(x, w1, w2).backward()
        w1.register_hook(lambda g: g)
        loss_of(x, w1, w2).backward()
    assert ca.counters["captures"] == 2


def test_grad_defined_or_not_is_in_the_key():
    x, w1, w2 = mlp(5)
    with ca.enable("jax"):
        loss_of(x, w1, w2).backward()
        loss_of(x, w1, w2).backward()  # now .grad exists: accumulate
    g1, _ = jax_grads(x, w1, w2)
    assert_close(w1.grad, 2 * np.asarray(g1), rtol=1e-5)
    assert ca.counters["captures"] == 2


def test_pinned_graph_code():
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sin() * 3.0).sum()
    gms = []

    def spy(gm):
        gms.append(gm)
        return gm
    with ca.enable(spy):
        y.backward()
    assert gms[0].code.strip() == textwrap.dedent("""\
        def forward(self, inputs, sizes, scalars, hooks, leaves):
            getitem = operator.getitem(sizes, 0);  sizes = None
            getitem_1 = operator.getitem(scalars, 0);  scalars = None
            getitem_2 = operator.getitem(inputs, 0)
            getitem_3 = operator.getitem(inputs, 1);  inputs = None
            expand = ops.acg.expand(getitem_2, [getitem]);  getitem_2 = getitem = None
            mul_Tensor = ops.acg.mul.Tensor(expand, getitem_1);  expand = getitem_1 = None
            cos = ops.acg.cos(getitem_3);  getitem_3 = None
            mul_Tensor_1 = ops.acg.mul.Tensor(mul_Tensor, cos);  mul_Tensor = cos = None
            getitem_4 = operator.getitem(leaves, 0);  leaves = None
            accumulate_grad(getitem_4, mul_Tensor_1);  getitem_4 = mul_Tensor_1 = None
            return ()""")
    assert_close(x.grad, 3 * np.cos([1.0, 2.0]))


def test_pinned_graph_code_of_one_op_backwards():
    """Losses, norms and embeddings differentiate in one op each, as PyTorch's native
    backward kernels: the captured graph names them; gradients against jax.grad."""
    rng = np.random.default_rng(0)
    w0, t0 = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    ix = np.array([[0, 1], [3, 1], [2, 2], [1, 0], [3, 3]])
    w, table = acg.tensor(w0, requires_grad=True), acg.tensor(t0, requires_grad=True)
    gms = []
    with ca.enable(lambda gm: gms.append(gm) or acg.backends.get("jax")(gm)):
        h = F.layer_norm(F.embedding(acg.tensor(ix), table).reshape(5, 4), (4,))
        F.cross_entropy(h @ w, acg.tensor([0, 1, 2, 0, 1])).backward()
    assert gms[0].code.strip() == textwrap.dedent("""\
        def forward(self, inputs, sizes, scalars, hooks, leaves):
            getitem = operator.getitem(sizes, 0)
            getitem_2 = operator.getitem(sizes, 4)
            getitem_3 = operator.getitem(sizes, 17);  sizes = None
            getitem_4 = operator.getitem(scalars, 0)
            getitem_5 = operator.getitem(scalars, 1);  scalars = None
            getitem_6 = operator.getitem(inputs, 0)
            getitem_7 = operator.getitem(inputs, 1)
            getitem_8 = operator.getitem(inputs, 2)
            getitem_9 = operator.getitem(inputs, 3)
            getitem_10 = operator.getitem(inputs, 4)
            getitem_11 = operator.getitem(inputs, 5)
            getitem_12 = operator.getitem(inputs, 6);  inputs = None
            cross_entropy_backward = ops.acg.cross_entropy_backward(getitem_6, getitem_7, getitem_8, None, 'mean', -100, getitem_4);  getitem_6 = getitem_7 = getitem_8 = getitem_4 = None
            transpose_int = ops.acg.transpose.int(getitem_10, -2, -1);  getitem_10 = None
            matmul = ops.acg.matmul(cross_entropy_backward, transpose_int);  transpose_int = None
            transpose_int_1 = ops.acg.transpose.int(getitem_9, -2, -1);  getitem_9 = None
            matmul_1 = ops.acg.matmul(transpose_int_1, cross_entropy_backward);  transpose_int_1 = cross_entropy_backward = None
            getitem_13 = operator.getitem(leaves, 0)
            accumulate_grad(getitem_13, matmul_1);  getitem_13 = matmul_1 = None
            layer_norm_backward = ops.acg.layer_norm_backward(matmul, getitem_11, [getitem_2], None, getitem_5);  matmul = getitem_11 = getitem_5 = None
            getitem_14 = operator.getitem(layer_norm_backward, 0);  layer_norm_backward = None
            reshape = ops.acg.reshape(getitem_14, [getitem, getitem_3, getitem_3]);  getitem_14 = getitem = getitem_3 = None
            embedding_dense_backward = ops.acg.embedding_dense_backward(reshape, getitem_12, getitem_2, -1, False);  reshape = getitem_12 = getitem_2 = None
            getitem_17 = operator.getitem(leaves, 1);  leaves = None
            accumulate_grad(getitem_17, embedding_dense_backward);  getitem_17 = embedding_dense_backward = None
            return ()""")

    def loss(wv, tv):
        e = tv[ix].reshape(5, 4)
        hv = (e - e.mean(-1, keepdims=True)) * jax.lax.rsqrt(e.var(-1, keepdims=True) + 1e-5)
        logp = jax.nn.log_softmax(hv @ wv, -1)
        return -logp[np.arange(5), np.array([0, 1, 2, 0, 1])].mean()
    gw, gt = jax.grad(loss, (0, 1))(w0, t0)
    assert_close(w.grad, gw, rtol=1e-9, atol=1e-12)
    assert_close(table.grad, gt, rtol=1e-8, atol=1e-12)


def test_pure_hooks_are_traced_into_the_program():
    gms = []
    x, w1, w2 = mlp(5)

    @ca.pure_hook
    def clip(g):
        return g.clamp(-0.1, 0.1)
    w1.register_hook(clip)
    with ca.enable(lambda gm: gms.append(gm) or acg.backends.get("jax")(gm)):
        loss_of(x, w1, w2).backward()
    assert "call_tensor_pre_hook" not in gms[0].code and "clamp" in gms[0].code
    g1, _ = jax_grads(x, w1, w2)
    assert_close(w1.grad, np.clip(g1, -0.1, 0.1), rtol=1e-5)


def test_nested_enable_innermost_wins_and_must_exit_in_order():
    x = acg.tensor([1.0], requires_grad=True)
    seen = []
    outer = ca.enable(lambda gm: seen.append("outer") or gm)
    inner = ca.enable(lambda gm: seen.append("inner") or gm)
    with outer:
        with inner:
            (x * 2).sum().backward()
        with ca.disable():
            (x * 3).sum().backward()
    assert seen == ["inner"]
    assert x.grad.tolist() == [5.0]
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Nested Compiled Autograd Contexts must return before their parent context"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)


def test_enable_rejects_a_non_compiler():
    with pytest.raises(TypeError, match="expects a compiler_fn"):
        ca.enable(42)
    with pytest.raises(ValueError, match="unknown compiled-autograd backend"):
        ca.enable("tpu-magic")


def test_compiler_that_raises_or_returns_junk_changes_nothing_and_cache_recovers():
    x, w1, w2 = mlp(5)
    w1.grad = acg.ones(4, 8)

    def broken(gm):
        raise ValueError("compiler exploded")
    with pytest.raises(ValueError, match="compiler exploded"), ca.enable(broken):
        loss_of(x, w1, w2).backward()
    with pytest.raises(TypeError, match="expected a callable"), ca.enable(lambda gm: 3):
        loss_of(x, w1, w2).backward()
    assert w1.grad.tolist() == np.ones((4, 8)).tolist() and w2.grad is None
    with ca.enable("jax"):
        loss_of(x, w1, w2).backward()
    g1, _ = jax_grads(x, w1, w2)
    assert_close(w1.grad, 1 + np.asarray(g1), rtol=1e-5)


def test_create_graph_under_compile_gives_double_backward():
    x = acg.tensor([0.5, 1.5], dtype=acg.float64, requires_grad=True)
    with ca.enable("jax"):
        (g,) = acg.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gg,) = acg.autograd.grad(g.sum(), x)
    assert_close(gg, 6 * np.array([0.5, 1.5]))


class Cube(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_function_captured_with_lifted_ctx_scalar(backend):
    for k in (2.0, 4.0):
        x = acg.tensor([1.0, 2.0], requires_grad=True)
        with ca.enable(backend):
            Cube.apply(x, k).sum().backward()
        assert_close(x.grad, 3 * k * np.array([1.0, 4.0]))
    assert ca.counters["captures"] == 1


def test_logs_show_graph_and_miss_reason(caplog, monkeypatch):
    monkeypatch.setattr(acg.config, "LOGS", frozenset({"compiled_autograd_verbose"}))
    logger = logging.getLogger("autograd_compile.compiled_autograd")
    logger.setLevel(logging.DEBUG)
    x = acg.tensor([1.0], requires_grad=True)
    with caplog.at_level(logging.DEBUG, logger="autograd_compile.compiled_autograd"):
        with ca.enable("eager"):
            (x * 2).sum().backward()
            (x.sin()).sum().backward()
    text = caplog.text
    assert "def forward(self, inputs, sizes, scalars, hooks, leaves)" in text
    assert "cache miss: first graph" in text
    assert "cache miss: the graph differs: an acg::mul.Tensor node at capture is acg::sin now" in text


def test_reset_clears_cache_and_counters():
    x = acg.tensor([1.0], requires_grad=True)
    with ca.enable("eager"):
        (x * 2).sum().backward()
    ca.reset()
    assert all(v == 0 for v in ca.counters.values())
    with ca.enable("eager"):
        (x * 2).sum().backward()
    assert ca.counters["captures"] == 1


def test_cross_entropy_training_step_matches_eager():
    acg.manual_seed(0)
    model = acg.nn.Sequential(acg.nn.Linear(6, 16), acg.nn.GELU(), acg.nn.Linear(16, 3))
    x, y = acg.randn(8, 6), acg.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    F.cross_entropy(model(x), y).backward()
    eager = [p.grad.detach().numpy() for p in model.parameters()]
    model.zero_grad()
    with ca.enable("jax"):
        F.cross_entropy(model(x), y).backward()
    for p, e in zip(model.parameters(), eager):
        assert_close(p.grad, e, rtol=1e-5, atol=1e-6)


def test_sizes_stay_static_across_host_hook_boundaries():
    """Regression: a size computed before an opaque hook and used after it reached the
    next XLA program as a traced value (TracerBoolConversionError in sum_to_size)."""
    acg.manual_seed(0)
    model = acg.nn.Sequential(acg.nn.Linear(5, 7), acg.nn.Tanh(), acg.nn.Linear(7, 3))
    seen = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: seen.append(p.shape))
    x = acg.randn(6, 5)
    for mode in ("eager", "jax"):
        out = model(x)
        out.register_hook(lambda g: g * 0.5)
        model.zero_grad()
        if mode == "eager":
            (out * out).mean().backward()
            ref = [p.grad.detach().numpy() for p in model.parameters()]
        else:
            with ca.enable("jax"):
                (out * out).mean().backward()
    for p, r in zip(model.parameters(), ref):
        assert_close(p.grad, r, rtol=1e-5, atol=1e-7)
    assert len(seen) == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_ops_with_size_arguments_capture(backend):
    """Regression: Collector.sizes (a list) shadowed its sizes() visitor, so any op with
    a SymInt[] argument (layer_norm, expand, reshape) failed to compile."""
    x = acg.randn(3, 16, requires_grad=True)
    w = acg.randn(16, requires_grad=True)
    v = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    def loss():
        return F.layer_norm(x, 16, w).sum() + (v.expand(2, 3) * 1.5).reshape(6).sum()
    loss().backward()
    ref = [t.grad.detach().numpy() for t in (x, w, v)]
    for t in (x, w, v):
        t.grad = None
    with ca.enable(backend):
        loss().backward()
    for t, r in zip((x, w, v), ref):
        assert_close(t.grad, r, rtol=1e-5, atol=1e-6)


def _graphs_of_every_argument_kind(seed: int):
    """One loss touching saved tensors, shape-only tensors, SymInt[] args, floats,
    Tensor[] args, None in Tensor? slots, slices, int dims and in-place ops."""
    rng = np.random.default_rng(seed)
    a = acg.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = acg.tensor(rng.standard_normal((4,)), requires_grad=True)
    h = (a * b + 0.5).tanh()
    h = acg.cat([h, h * 2.0], dim=0).reshape(2, 12).sum(dim=[1], keepdim=True)
    g = a[1:, ::2].clamp(min=-0.5) ** 3
    g.mul_(1.5)
    return (h.mean() + g.sum() + acg.stack([b, b]).pow(2).sum()), (a, b)


def test_inlined_op_node_collect_matches_the_generic_visit():
    """Collected(fast=True) inlines op nodes' visit: same key, sizes, scalars and
    inputs as the generic visitor path on an identical graph (the fast path must never
    give the cache a key that disagrees with what capture replays)."""
    from autograd_compile.autograd import engine
    runs = []
    for fast in (False, True):
        loss, (a, _) = _graphs_of_every_argument_kind(seed=3)
        a.grad = acg.zeros_like(a)  # one accumulator adds, the other sets
        task = engine.GraphTask([loss], [acg.ones(())], False, False, None, True)
        runs.append(ca.cache.Collected(task, "jax", fast=fast))
    generic, fast = runs
    assert fast.key == generic.key and len(fast.key.items) > 40
    assert fast.col.sizes == generic.col.sizes and fast.col.scalars == generic.col.scalars
    assert [t.shape for t in fast.col.inputs] == [t.shape for t in generic.col.inputs]
    for x, y in zip(fast.col.inputs, generic.col.inputs):
        np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    assert [i for _, _, i in fast.col.saved_vars] == [i for _, _, i in generic.col.saved_vars]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_argument_kind_graph_is_reused_across_data(backend):
    def grads(seed, compiled):
        loss, leaves = _graphs_of_every_argument_kind(seed)
        with ca.enable(backend) if compiled else ca.disable():
            loss.backward()
        return [t.grad.detach().numpy() for t in leaves]
    for seed in (0, 1, 2):
        for got, want in zip(grads(seed, True), grads(seed, False)):
            assert_close(got, want)
    assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_size_equal_to_a_width_reuses_the_capture(backend):
    """Duck sizing guards only what the graph decided: a batch that happens to equal the
    layer width (e.g. a rank-1 bias gradient compared with a rank-2 one) must not
    recapture."""
    rng = np.random.default_rng(0)
    w = acg.tensor(rng.standard_normal((8, 8)), requires_grad=True)
    b = acg.tensor(rng.standard_normal(8), requires_grad=True)
    for batch in (4, 8, 16):
        x = acg.tensor(rng.standard_normal((batch, 8)))
        grads = []
        for ctx in (ca.enable(backend), ca.disable()):
            w.grad = b.grad = None
            with ctx:
                F.linear(x, w, b).tanh().sum().backward()
            grads.append((w.grad.detach().numpy(), b.grad.detach().numpy()))
        for got, want in zip(*grads):
            assert_close(got, want)
    assert ca.counters["captures"] == 1 and ca.counters["cache_hits"] == 2
