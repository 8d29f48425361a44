"""Proxy tracing with make_fx: one suite per tracing mode (real, fake, symbolic)."""
from __future__ import annotations

import gc
import operator
import textwrap
import weakref

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.tracing.fake import FakeTensor, FakeTensorMode
from autograd_compile.tracing.proxy_tensor import make_fx, sym_size

MODES = ["real", "fake", "symbolic"]


def mlp_loss(x, w1, w2):
    h = (x @ w1).tanh()
    return ((h @ w2) ** 2).mean()


def inputs(batch=4, seed=0):
    rng = np.random.default_rng(seed)
    return (acg.tensor(rng.standard_normal((batch, 3)), dtype=acg.float32),
            acg.tensor(rng.standard_normal((3, 5)), dtype=acg.float32),
            acg.tensor(rng.standard_normal((5, 2)), dtype=acg.float32))


@pytest.mark.parametrize("tracing_mode", MODES)
def test_traced_graph_equals_eager(tracing_mode):
    args = inputs()
    gm = make_fx(mlp_loss, tracing_mode)(*args)
    np.testing.assert_allclose(gm(*args).detach().numpy(), mlp_loss(*args).detach().numpy(), rtol=1e-6)
    gm.graph.lint()


@pytest.mark.parametrize("tracing_mode", MODES)
def test_traced_training_step_forward_and_backward(tracing_mode):
    def step(x, w1, w2):
        w1 = w1.detach().requires_grad_()
        w2 = w2.detach().requires_grad_()
        loss = mlp_loss(x, w1, w2)
        g1, g2 = acg.autograd.grad(loss, [w1, w2])
        return loss, g1, g2
    args = inputs()
    gm = make_fx(step, tracing_mode)(*args)
    for got, want in zip(gm(*args), step(*args)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_fake_mode_runs_no_data():
    gm = make_fx(lambda x: (x * 2).sum(), "fake")(acg.ones(3))
    assert all(not isinstance(n.meta.get("val"), acg.Tensor) or
               isinstance(n.meta["val"], FakeTensor) for n in gm.graph.nodes)


def test_symbolic_trace_serves_other_batch_sizes_and_records_size_math():
    def f(x):
        flat = x.reshape(x.shape[0] * 2, -1)  # size arithmetic on a symbolic size
        return flat.sum(1)
    gm = make_fx(f, "symbolic")(acg.ones(4, 6))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert sym_size in targets and operator.mul in targets  # not baked constants
    for batch in (4, 10):
        x = acg.tensor(np.arange(batch * 6, dtype=np.float32).reshape(batch, 6))
        np.testing.assert_allclose(gm(x).detach().numpy(), f(x).detach().numpy())


def test_symbolic_mlp_runs_at_two_batch_sizes():
    gm = make_fx(mlp_loss, "symbolic")(*inputs(batch=4))
    for batch in (7, 16):
        args = inputs(batch, seed=batch)
        np.testing.assert_allclose(gm(*args).detach().numpy(), mlp_loss(*args).detach().numpy(), rtol=1e-6)


def test_traced_step_prints_as_readable_python():
    def step(x, w):
        return (x @ w).relu().sum()
    gm = make_fx(step, "fake")(acg.ones(2, 3), acg.ones(3, 4))
    assert gm.code.strip() == textwrap.dedent("""\
        def forward(self, arg0, arg1):
            matmul = ops.acg.matmul(arg0, arg1);  arg0 = arg1 = None
            relu = ops.acg.relu(matmul);  matmul = None
            sum_1 = ops.acg.sum(relu);  relu = None
            return sum_1""")


def test_constants_from_outside_become_module_attributes():
    c = acg.tensor([1.0, 2.0, 3.0])
    gm = make_fx(lambda x: x * c, "fake")(acg.ones(3))
    assert "_tensor_constant0" in gm.code
    np.testing.assert_allclose(gm(acg.ones(3)).detach().numpy(), [1.0, 2.0, 3.0])


def test_tracers_do_not_leak():
    refs = []
    for _ in range(50):
        gm = make_fx(mlp_loss, "symbolic")(*inputs())
        refs.append(weakref.ref(gm))
        del gm
    gc.collect()
    assert sum(r() is not None for r in refs) == 0


def test_fake_tensor_mode_basics():
    with FakeTensorMode() as mode:
        x = acg.ones(8, 3)
        y = (x @ acg.ones(3, 5)).sum(0)
    assert isinstance(y, FakeTensor) and y.shape == (5,) and y.dtype == acg.float32
    with pytest.raises(RuntimeError, match="FakeTensor"):
        y.item()
    real = acg.ones(2, 2)
    fake = mode.from_tensor(real)
    assert isinstance(fake, FakeTensor) and fake.shape == (2, 2)


def test_f_functional_under_fake_mode_matches_real_shapes():
    x, t = acg.randn(4, 10), acg.tensor([1, 2, 3, 4])
    real = F.cross_entropy(F.layer_norm(x, (10,)), t)
    with FakeTensorMode() as mode:
        fake = F.cross_entropy(F.layer_norm(mode.from_tensor(x), (10,)), mode.from_tensor(t))
    assert tuple(fake.shape) == tuple(real.shape) and fake.dtype == real.dtype


def test_symbolic_traces_leave_no_graph_nodes_behind():
    """Regression: the module-level SymInt->proxy map kept every symbolic tracer (and its
    whole graph) alive, because proxies point back at their tracer."""
    from autograd_compile.fx import Node

    def live_nodes() -> int:
        gc.collect()
        return sum(issubclass(type(o), Node) for o in gc.get_objects())  # see test_memory
    small = lambda x: (x * 2).tanh().sum()
    for _ in range(5):
        make_fx(small, "symbolic")(acg.ones(8, 8))
    before = live_nodes()
    for _ in range(60):
        make_fx(small, "symbolic")(acg.ones(8, 8))
    assert live_nodes() <= before


def test_traced_forward_and_backward_step_prints_as_readable_python():
    def step(x, w):
        w = w.detach().requires_grad_()
        loss = (x @ w).tanh().sum()
        (g,) = acg.autograd.grad(loss, [w])
        return loss, g
    gm = make_fx(step, "fake")(acg.ones(2, 3), acg.ones(3, 4))
    assert gm.code.strip() == textwrap.dedent("""\
        def forward(self, arg0, arg1):
            detach = ops.acg.detach(arg1);  arg1 = None
            matmul = ops.acg.matmul(arg0, detach);  detach = None
            tanh = ops.acg.tanh(matmul);  matmul = None
            sum_1 = ops.acg.sum(tanh)
            ones = ops.acg.ones([], dtype=float32)
            expand = ops.acg.expand(ones, [2, 4]);  ones = None
            mul_Tensor = ops.acg.mul.Tensor(tanh, tanh);  tanh = None
            sub_Tensor = ops.acg.sub.Tensor(1, mul_Tensor);  mul_Tensor = None
            mul_Tensor_1 = ops.acg.mul.Tensor(expand, sub_Tensor);  expand = sub_Tensor = None
            transpose_int = ops.acg.transpose.int(arg0, -2, -1);  arg0 = None
            matmul_1 = ops.acg.matmul(transpose_int, mul_Tensor_1);  transpose_int = mul_Tensor_1 = None
            return (sum_1, matmul_1)""")
    x, w = inputs()[0][:2], acg.randn(3, 4)
    for got, want in zip(gm(x, w), step(x, w)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
