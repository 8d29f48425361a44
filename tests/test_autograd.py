"""Tape autograd, PyTorch-faithful: backward/grad API, graphs, Functions, modes."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

XS = [0.3, -1.2, 2.0]


def leaf(values=XS):
    return acg.tensor(values, dtype=acg.float64, requires_grad=True)


def jgrad(f, *args):
    return jax.grad(f, tuple(range(len(args))))(*[jnp.array(a, jnp.float64) for a in args])


# -- graph structure ----------------------------------------------------------------------

def test_grad_fn_names_and_next_functions():
    x = leaf()
    c = acg.tensor([1.0, 2.0, 3.0], dtype=acg.float64)
    y = (x * c).sin()
    assert y.grad_fn.name() == "SinBackward0"
    mul = y.grad_fn.next_functions[0][0]
    assert mul.name() == "MulBackward0"
    (acc, i0), (none, i1) = mul.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is x and i0 == 0
    assert none is None and i1 == 0
    assert x.is_leaf and not y.is_leaf and y.requires_grad and not c.requires_grad


def test_leaf_accumulator_is_unique_per_tensor():
    x = leaf()
    a, b = x * 2, x * 3
    assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]


# -- backward -----------------------------------------------------------------------------

def test_backward_matches_jax_and_accumulates(mode):
    x, w = leaf(), leaf([1.0, 0.5, -0.25])
    with mode():
        for _ in range(2):
            ((x * w).sin() * x).sum().backward()
    gx, gw = jgrad(lambda x, w: (jnp.sin(x * w) * x).sum(), XS, [1.0, 0.5, -0.25])
    assert_close(x.grad, 2 * np.asarray(gx))
    assert_close(w.grad, 2 * np.asarray(gw))


def test_backward_existing_grad_is_updated_in_place(mode):
    x = leaf()
    x.grad = acg.tensor([1.0, 1.0, 1.0], dtype=acg.float64)
    held = x.grad
    with mode():
        (x * 2).sum().backward()
    assert x.grad is held and held.tolist() == [3.0, 3.0, 3.0]


def test_backward_with_gradient_argument(mode):
    x = leaf()
    y = x * x
    with mode():
        y.backward(acg.tensor([1.0, 0.0, 2.0], dtype=acg.float64))
    assert_close(x.grad, np.array([1.0, 0.0, 2.0]) * 2 * np.array(XS))


def test_backward_errors():
    x = leaf()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        acg.tensor([1.0]).sum().backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(acg.tensor([1.0, 2.0], dtype=acg.float64))


def test_second_backward_without_retain_graph_raises(mode):
    x = leaf()
    y = (x.exp() * x).sum()
    with mode():
        y.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()


def test_retain_graph_allows_a_second_backward(mode):
    x = leaf()
    y = (x.exp() * x).sum()
    with mode():
        y.backward(retain_graph=True)
    y.backward()  # eager after a (possibly compiled) retained run
    (g,) = jgrad(lambda x: (jnp.exp(x) * x).sum(), XS)
    assert_close(x.grad, 2 * np.asarray(g))


def test_backward_inputs_restricts_accumulation(mode):
    x, w = leaf(), leaf([2.0, 2.0, 2.0])
    log = []
    x.register_hook(lambda g: log.append("x"))
    with mode():
        (x * w).sum().backward(inputs=[w])
    assert x.grad is None and log == []
    assert_close(w.grad, XS)


def test_backward_inputs_on_a_non_leaf(mode):
    x = leaf()
    h = x * 3
    with mode():
        (h * h).sum().backward(inputs=[h])
    assert_close(h.grad, 6 * np.array(XS))
    assert x.grad is None


def test_retain_grad_accumulates_across_calls(mode):
    x = leaf()
    h = x * 2
    h.retain_grad()
    assert h.retains_grad
    y = (h * h).sum()
    with mode():
        y.backward(retain_graph=True)
        y.backward()
    assert_close(h.grad, 2 * 2 * 2 * np.array(XS))


# -- autograd.grad ---------------------------------------------------------------------------

def test_grad_returns_and_leaves_dot_grad_alone(mode):
    x, w = leaf(), leaf([1.0, 2.0, 3.0])
    with mode():
        gx, gw = acg.autograd.grad((x * w * w).sum(), [x, w])
    assert x.grad is None and w.grad is None
    ex, ew = jgrad(lambda x, w: (x * w * w).sum(), XS, [1.0, 2.0, 3.0])
    assert_close(gx, ex)
    assert_close(gw, ew)


def test_grad_allow_unused(mode):
    x, unused = leaf(), leaf()
    with mode():
        with pytest.raises(RuntimeError, match="appears to not have been used"):
            acg.autograd.grad((x * 2).sum(), [x, unused], retain_graph=True)
        gx, gu = acg.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert gu is None and gx.tolist() == [2.0, 2.0, 2.0]


def test_grad_wrt_an_intermediate(mode):
    x = leaf()
    h = x.sin()
    with mode():
        (gh,) = acg.autograd.grad((h * h).sum(), h)
    assert_close(gh, 2 * np.sin(XS))


def test_double_backward_create_graph(mode):
    x = leaf()
    with mode():
        (g,) = acg.autograd.grad((x * x * x.sin()).sum(), x, create_graph=True)
        assert g.requires_grad
        g.sum().backward()
    f = lambda x: (x * x * jnp.sin(x)).sum()
    second = jax.grad(lambda x: jax.grad(f)(x).sum())(jnp.array(XS, jnp.float64))
    assert_close(x.grad, second)


# -- grad modes, detach ----------------------------------------------------------------------

def test_no_grad_enable_grad_and_detach():
    x = leaf()
    with acg.no_grad():
        assert (x * 2).grad_fn is None
        with acg.enable_grad():
            assert (x * 2).requires_grad
    assert acg.is_grad_enabled()
    d = (x * 2).detach()
    assert d.grad_fn is None and not d.requires_grad and d.tolist() == [2 * v for v in XS]

    @acg.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        acg.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf variables"):
        (leaf() * 2).requires_grad = False


# -- in-place ------------------------------------------------------------------------------

def test_inplace_on_saved_tensor_raises_pytorch_error(mode):
    x = leaf()
    h = x * 1
    y = h.sin()  # saves h
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"), mode():
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with acg.no_grad():
        x.add_(1)  # allowed: optimizers do this
    assert x._version == 1


def test_inplace_ops_are_differentiated(mode):
    x = leaf()
    h = x * 2
    h.mul_(x)
    h.add_(x)
    with mode():
        h.sum().backward()
    assert_close(x.grad, 4 * np.array(XS) + 1)


# -- custom Function ------------------------------------------------------------------------------

class ScaledSquare(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale  # a non-tensor attribute
        ctx.seen_needs = ctx.needs_input_grad
        return x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * ctx.scale, None


def test_custom_function(mode):
    x = leaf()
    y = ScaledSquare.apply(x, 3.0)
    assert y.grad_fn.name() == "ScaledSquareBackward"
    assert y.grad_fn.seen_needs == (True, False)
    with mode():
        y.sum().backward()
    assert_close(x.grad, 6 * np.array(XS))


class SortLike(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = acg.tensor([2, 0, 1])
        ctx.mark_non_differentiable(idx)
        ctx.set_materialize_grads(False)
        return x * 1, idx

    @staticmethod
    def backward(ctx, g, g_idx):
        assert g_idx is None  # materialize off: undefined grads stay None
        return g * 5


def test_function_non_differentiable_output_and_materialize(mode):
    x = leaf()
    y, idx = SortLike.apply(x)
    assert not idx.requires_grad and y.requires_grad
    with mode():
        y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0, 5.0]


class Once(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    @acg.autograd.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp()


def test_once_differentiable():
    x = leaf()
    y = Once.apply(x)
    seed = acg.ones(3, dtype=acg.float64, requires_grad=True)  # a grad that itself needs grad
    (g,) = acg.autograd.grad(y, x, grad_outputs=seed, create_graph=True)
    assert_close(g, np.exp(XS))
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()
    # with a plain seed (as PyTorch) the result simply has no history
    (g2,) = acg.autograd.grad(Once.apply(x).sum(), x, create_graph=True)
    assert not g2.requires_grad


def test_function_wrong_gradient_count():
    class Bad(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return (g,)
    x = leaf()
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        Bad.apply(x, x).sum().backward()


# -- saved tensor hooks, anomaly ----------------------------------------------------------------

def test_saved_tensors_hooks_pack_and_unpack(mode):
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.detach().numpy()

    def unpack(a):
        unpacked.append(a.shape)
        return acg.tensor(a)
    x = leaf()
    with acg.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    assert packed == [(3,), (3,)]
    with mode():
        y.backward()
    assert len(unpacked) == 2
    assert_close(x.grad, 2 * np.array(XS))


def test_detect_anomaly_names_the_node():
    x = acg.tensor([-1.0, 1.0], dtype=acg.float64, requires_grad=True)
    y = (x.sqrt() * 0).sum()  # sqrt(-1) = nan; its backward yields nan
    with acg.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan"):
            y.backward()
    assert x.grad is None


def test_reentrant_backward_inside_a_custom_backward(mode):
    class Inner(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with acg.enable_grad():
                t = x.detach().requires_grad_()
                (t * t).sum().backward()  # an inner, eager backward
            return g * t.grad
    x = leaf()
    with mode():
        Inner.apply(x).sum().backward()
    assert_close(x.grad, 2 * np.array(XS))


def test_grad_takes_pytorchs_whole_signature(mode):
    """only_inputs (deprecated: warns when False, does nothing) sits where PyTorch has it;
    is_grads_batched gives one gradient per leading entry of the grad outputs (a Jacobian
    from the identity), and create_graph keeps it differentiable."""
    import warnings
    x = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with mode():
        y = x ** 3
        (jac,) = acg.autograd.grad(y, x, acg.eye(3), None, True, True, None, True)
        np.testing.assert_allclose(jac.detach().numpy(), np.diag(3 * np.array([1, 4, 9.0])))
        (hess_diag,) = acg.autograd.grad(jac.sum(), x)
        np.testing.assert_allclose(hess_diag.numpy(), 6 * np.array([1, 2, 3.0]))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (g,) = acg.autograd.grad((x * x).sum(), x, only_inputs=False)
        assert [w.category for w in caught] == [FutureWarning]
        np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="is_grads_batched=True needs grad_outputs"):
        acg.autograd.grad((x * x).sum(), x, is_grads_batched=True)


_READS_ONLY_PART = {  # ops whose backward reads some outputs only (statistics, indices)
    "batch_norm": lambda x: acg.nn.functional.batch_norm(x, None, None, training=True),
    "max_pool2d": lambda x: acg.nn.functional.max_pool2d(x, 2),
    "adaptive_max_pool2d": lambda x: acg.nn.functional.adaptive_max_pool2d(x, 2),
    "max_pool1d": lambda x: acg.nn.functional.max_pool1d(x.flatten(2), 2),
    "max.dim": lambda x: x.max(1)[0],
    "sort": lambda x: x.sort(-1)[0],
    "topk": lambda x: x.topk(2)[0],
}


@pytest.mark.parametrize("op", sorted(_READS_ONLY_PART))
def test_inplace_on_an_output_the_backward_does_not_read(mode, op):
    """Conv -> BatchNorm -> ReLU(inplace=True), MaxPool -> ReLU(True): the in-place write
    bumps the output's version, which PyTorch's backward never checks (it saves the
    statistics or indices, not the output). Gradients equal the out-of-place program's."""
    fn = _READS_ONLY_PART[op]
    x0 = np.random.default_rng(0).standard_normal((2, 3, 6, 6)).astype(np.float32)

    def grad(inplace):
        x = acg.tensor(x0, requires_grad=True)
        y = fn(x * 1)
        y = y.relu_() if inplace else y.relu()
        with mode():
            (y * y).sum().backward()
        return x.grad.numpy()

    want = grad(False)
    assert_close(grad(True), want)
    assert np.abs(want).sum() > 0


@pytest.mark.parametrize("op", ["relu_", "sigmoid_", "tanh_", "exp_"])
def test_inplace_ops_whose_backward_reads_their_result(mode, op):
    """x.relu_() reads relu's result in backward, which is x itself: gradients equal the
    out-of-place op's, in a compiled region too, and a later write to x raises PyTorch's
    version error."""
    x0 = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)

    def run(fn):
        x = acg.tensor(x0, requires_grad=True)
        with mode():
            (fn(x) * 2).sum().backward()
        return x.grad.numpy()

    inplace = lambda x: getattr(x * 1, op)()  # noqa: E731
    want = run(lambda x: getattr(x * 1, op.rstrip("_"))())
    assert_close(run(inplace), want)
    assert_close(run(acg.compile(inplace, fullgraph=True)), want, rtol=1e-5)
    y = inplace(acg.tensor(x0, requires_grad=True))
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with mode():
            y.sum().backward()


def test_grad_and_backward_take_any_iterable_of_tensors(mode):
    """``autograd.grad(loss, m.parameters())`` (MAML's inner loop), ``.values()``, generators
    of outputs and ``backward(inputs=m.parameters())`` work as in PyTorch."""
    acg.manual_seed(0)
    m = acg.nn.Linear(2, 1)
    x = acg.ones(3, 2)
    want = [np.full((1, 2), 3.0), np.full((1,), 3.0)]
    with mode():
        for ins in (m.parameters(), dict(m.named_parameters()).values()):
            got = acg.autograd.grad(m(x).sum(), ins)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g.numpy(), w)
        got = acg.autograd.grad((o for o in [m(x).sum()]), list(m.parameters()))
        np.testing.assert_allclose(got[1].numpy(), want[1])
        m(x).sum().backward(inputs=m.parameters())
        acg.autograd.backward(iter([m(x).sum()]), grad_tensors=iter([acg.tensor(2.0)]))
    np.testing.assert_allclose(m.weight.grad.numpy(), 3 * want[0])
    np.testing.assert_allclose(m.bias.grad.numpy(), 3 * want[1])
