"""PyTorch's own autograd tests (test/test_autograd.py), re-expressed in our API.

Each test names the PyTorch test it ports; expected values come from the
algorithm (hand-computed in the comments) and every test runs in all three
modes: eager, compiled with the eager backend, compiled with the JAX backend.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

ca = acg.compiled_autograd


def scalar(v: float) -> acg.Tensor:
    return acg.tensor(v, requires_grad=True)


def returns_none(fn):
    """A post-accumulate-grad hook must return None: run ``fn`` for its effect only."""
    def hook(p):
        fn(p)
    return hook


# -- hook order and AccumulateGrad ---------------------------------------------------------

def test_post_accumulate_grad_hook_ordering(mode):
    """tensor pre-hook, AccumulateGrad pre-hook, post-accumulate hook, AccumulateGrad
    post-hook: ((1 - 2) / 5 + 0.5) * 10 = 3 (the post-hook sees .grad itself)."""
    t = acg.rand(3, requires_grad=True)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    t.register_hook(lambda g: g.sub(2.0))
    acc.register_prehook(lambda go: (go[0].div(5.0),))
    t.register_post_accumulate_grad_hook(returns_none(lambda p: p.grad.add_(0.5)))

    def acc_post(gi, go):
        t.grad = go[0].mul(10)
    acc.register_hook(acc_post)
    with mode():
        t.sum().backward()
    assert_close(t.grad, [3.0, 3.0, 3.0])


def test_post_accumulate_grad_hook_ordering_not_stolen_when_grad_exists(mode):
    """With .grad already set, AccumulateGrad adds in place: its post-hook sees the
    incoming gradient, not .grad (PyTorch's accumulateGrad)."""
    t = acg.rand(2, requires_grad=True)
    t.grad = acg.ones(2)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    seen = []
    t.register_post_accumulate_grad_hook(returns_none(lambda p: p.grad.add_(0.5)))
    acc.register_hook(lambda gi, go: seen.append(go[0].tolist()))
    with mode():
        (t * 3.0).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert_close(t.grad, [4.5, 4.5])


def test_prehook_ordering(mode):
    """Tensor hooks run before node pre-hooks; grad() runs a leaf's tensor hooks but not
    its accumulator's pre-hooks; backward(inputs=(b,)) captures b's gradient after its
    tensor hooks and still runs b.grad_fn's pre-hooks."""
    log = []

    def hook1(g):
        log.append(1)
        return g * 3

    def hook2(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)
    a = scalar(1.0)
    b = a.clone()
    b.grad_fn.register_prehook(hook2)
    b.register_hook(hook1)
    b.grad_fn.register_prehook(hook2)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(hook1)
    acc.register_prehook(hook2)
    a.register_hook(hook1)
    with mode():
        b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]
    assert a.grad.item() == 3 * 2 * 2 * 3 * 3 * 2
    log.clear()
    with mode():
        g, = acg.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]
    assert g.item() == 3 * 2 * 2 * 3 * 3
    log.clear()
    with mode():
        b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    assert b.grad.item() == 3  # captured after the tensor hook, before the pre-hooks


def test_hook_edge_case_when_called_with_grad(mode):
    """grad() runs the tensor hooks of an input's node but not its pre- or post-hooks."""
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def bump(kind):
        def hook(*args):
            counts[kind] += 1
        return hook
    a = scalar(1.0)
    b = a * 2
    c = b * 2
    a.register_hook(bump("tensor"))
    b.register_hook(bump("tensor"))
    acc = b.grad_fn.next_functions[0][0]
    for node in (acc, b.grad_fn):
        node.register_hook(bump("post"))
        node.register_prehook(bump("pre"))
    cases = [(lambda: acg.autograd.grad(c, inputs=(b,), retain_graph=True), (1, 0, 0)),
             (lambda: acg.autograd.grad(c, inputs=(a, b), retain_graph=True), (2, 1, 1)),
             (lambda: c.backward(retain_graph=True), (2, 2, 2)),
             (lambda: c.backward(inputs=(a, b), retain_graph=True), (2, 2, 2))]
    for run, expected in cases:
        counts.update(tensor=0, pre=0, post=0)
        with mode():
            run()
        assert (counts["tensor"], counts["pre"], counts["post"]) == expected


def test_accumulate_grad_posthooks_can_observe_tensor_prehook(mode):
    a = scalar(1.0)
    seen = []
    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: seen.append(("post", len(gi), go[0].item())))
    acc.register_prehook(lambda go: seen.append(("pre", len(go), go[0].item())))
    a.register_hook(lambda g: g * 2)
    with mode():
        b.backward()
    assert seen == [("pre", 1, 2.0), ("post", 0, 2.0)]


def test_accumulate_grad_posthooks_should_not_execute(mode):
    """backward(inputs=[b]): nodes that lead only to other leaves do not run."""
    def boom(*args):
        raise RuntimeError("must not run")
    a = scalar(1.0)
    a.register_hook(boom)
    b = scalar(1.0)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(boom)
    with mode():
        (a + b + c).sum().backward(inputs=[b])
    assert b.grad.item() == 1.0 and a.grad is None


def test_retains_grad_can_always_observe_tensor_prehook(mode):
    def double(g):
        return g * 2
    a = scalar(1.0)
    b = a.clone()
    b.register_hook(double)
    b.retain_grad()
    b.register_hook(double)
    with mode():
        b.clone().backward()
    assert b.grad.item() == 4  # retain_grad runs after every tensor hook
    a = scalar(1.0)
    b = a.clone()
    b.retain_grad()
    b.register_hook(double)
    with mode():
        b.clone().backward()
    assert b.grad.item() == 2


# -- retain_grad -----------------------------------------------------------------------------

def test_retain_grad(mode):
    x = acg.rand(1, 3, requires_grad=True)
    h1 = x * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()
    with mode():
        out.backward(retain_graph=True)
    assert_close(h1.grad, h1.detach() * 2)
    with mode():
        out.backward(retain_graph=True)
    assert_close(h1.grad, h1.detach() * 4)
    x.grad.zero_()
    x.retain_grad()  # a no-op on a leaf
    with mode():
        out.backward()
    assert_close(x.grad, x.detach() * 18, rtol=1e-5)


def test_retain_grad_inplace(mode):
    """After an in-place op, .grad is the gradient of the latest version."""
    for n_inplace in (1, 2):
        a = acg.tensor([1.0], requires_grad=True).clone()
        a.retain_grad()
        for _ in range(n_inplace):
            a.mul_(2)
        with mode():
            (a * 3.0).sum().backward()
        assert a.grad.tolist() == [3.0]


def test_retain_grad_inplace_on_a_base_that_did_not_require_grad(mode):
    x = acg.zeros(4)
    y = acg.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't retain_grad"):
        x.retain_grad()
    x.add_(y)  # x now has history, and no retain_grad registration to move
    x.retain_grad()
    x.mul_(2.0)
    with mode():
        (x * 3.0).sum().backward()
    assert y.grad.tolist() == [6.0] * 4
    assert x.grad.tolist() == [3.0] * 4


# -- custom Functions ----------------------------------------------------------------------------

class _NonTensorIO(acg.autograd.Function):
    """forward(x, n) -> (x * 2, n): a non-tensor input and a non-tensor output."""

    @staticmethod
    def forward(ctx, x, n):
        return x * 2, n

    @staticmethod
    def backward(ctx, g, g_n):
        assert g_n is None  # a non-tensor output gets None, never zeros
        return g * 2, None


def test_custom_fn_non_variable_input(mode):
    x = acg.ones(2, requires_grad=True)
    y, n = _NonTensorIO.apply(x, 3)
    assert n == 3
    with mode():
        y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_custom_fn_non_tensor_input_with_a_gradient_raises(mode):
    class Bad(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g
    x = acg.ones(2, requires_grad=True)
    y = Bad.apply(x, 2.0)
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position "
                                           "2, but the corresponding forward input was not a "
                                           "Variable"), mode():
        y.sum().backward()
    assert x.grad is None


# -- a tensor reached with no gradient -------------------------------------------------------

class _NoGrad(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return None


def test_hooks_of_a_tensor_reached_without_gradient_get_none(mode):
    log = []
    x = acg.ones(2, requires_grad=True)
    x.register_hook(lambda g: log.append(("leaf", g)))
    a = x * 2.0
    a.register_hook(lambda g: log.append(("a", g)))
    a.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    with mode():
        _NoGrad.apply(a).sum().backward()
    assert log == [("a", None), ("pre", (None,)), ("leaf", None)]
    assert x.grad is None


def test_a_hook_cannot_replace_a_none_gradient(mode):
    x = acg.ones(2, requires_grad=True)
    a = x * 2.0
    a.register_hook(lambda g: acg.ones(2))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None "
                                           "value"), mode():
        _NoGrad.apply(a).sum().backward()
    assert x.grad is None


def test_grad_nonleaf_register_hook(mode):
    """A hook on one output of unbind is called with None when that output is unused."""
    x = acg.rand(5, requires_grad=True)
    parts = x.unbind()
    seen = []
    parts[0].register_hook(lambda g: seen.append(None if g is None else g.item()))
    with mode():
        parts[0].backward(retain_graph=True)
    assert seen == [1.0]
    expected = np.zeros(5, np.float32)
    expected[0] = 1
    assert_close(x.grad, expected)
    for i in range(1, 5):
        with mode():
            parts[i].backward(retain_graph=True)
        assert seen[-1] is None
        expected[i] = 1
        assert_close(x.grad, expected)
        assert parts[i].grad is None


# -- error texts ---------------------------------------------------------------------------------

def test_post_accumulate_grad_hook_returns_not_none(mode):
    t = acg.rand(2, 3, requires_grad=True)
    t.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="hooks should return None."), mode():
        t.sum().backward()
    assert t.grad is None


def test_post_accumulate_grad_hook_on_non_leaf():
    leaf = acg.rand(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on "
                                           "non-leaf tensors"):
        (2.0 * leaf).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_multiple_hooks_and_tensors(mode):
    t1, t2 = acg.rand(3, requires_grad=True), acg.rand(5, requires_grad=True)
    r1, r2 = t1.detach().clone(), t2.detach().clone()
    t1.register_post_accumulate_grad_hook(returns_none(lambda p: p.sub_(p.grad)))
    t1.register_post_accumulate_grad_hook(returns_none(lambda p: p.mul_(4.0)))
    t2.register_post_accumulate_grad_hook(returns_none(lambda p: p.sub_(p.grad)))
    with mode():
        t1.sum().backward()
        t2.sum().backward()
    assert_close(t1, (r1.detach().numpy() - 1.0) * 4.0)
    assert_close(t2, r2.detach().numpy() - 1.0)


def test_nested_compiled_autograd_contexts_must_exit_in_order():
    outer, inner = ca.enable("eager"), ca.enable("eager")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(RuntimeError, match="Nested Compiled Autograd Contexts must return before "
                                           "their parent context"):
        outer.__exit__(None, None, None)
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)


def test_hook_returning_a_non_tensor_type_error(mode):
    x = scalar(1.0)
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"), mode():
        (x * 2.0).backward()


# -- higher-order gradients ------------------------------------------------------------------

@pytest.mark.parametrize("x0", [2.0, -1.5])
def test_higher_order_gradients(mode, x0):
    """x**3 differentiated four times with create_graph: 3x^2, 6x, 6, 0 (test_compiled_autograd's
    test_higher_order_gradients); every intermediate stays connected to x."""
    x = acg.tensor(x0, requires_grad=True)
    g, out = x ** 3, []
    for _ in range(4):
        with mode():
            g, = acg.autograd.grad(g, x, create_graph=True)
        out.append(g.item())
    assert out == pytest.approx([3 * x0 ** 2, 6 * x0, 6.0, 0.0])


def test_higher_order_gradients_against_jax(mode):
    """Second derivative of a small composite against jax.grad(jax.grad(...))."""
    import jax
    import jax.numpy as jnp
    x = acg.tensor([0.3, -0.7, 1.1], dtype=acg.float64, requires_grad=True)
    with mode():
        g, = acg.autograd.grad((x ** 2 * x.sin()).sum(), x, create_graph=True)
        gg, = acg.autograd.grad(g.sum(), x)
    f = lambda v: jnp.sum(v ** 2 * jnp.sin(v))
    expected = jax.grad(lambda v: jnp.sum(jax.grad(f)(v)))(jnp.asarray(x.detach().numpy()))
    assert_close(gg, expected, rtol=1e-10, atol=1e-12)


# -- more of test_autograd.py ------------------------------------------------------------------

def test_grad_nonleaf(mode):
    """grad() of a non-leaf with create_graph, five gradient steps, then backward."""
    x_init = acg.randn(2, 2, requires_grad=True)
    y = acg.randn(2, 2, requires_grad=True)
    go = acg.ones(2, 2)
    fn = lambda v: v ** 2 + y * v + y ** 2
    x = x_init
    for _ in range(5):
        with mode():
            gx, = acg.autograd.grad(fn(x), x, grad_outputs=go, create_graph=True)
        assert_close(gx, (2 * x + y).detach(), rtol=1e-5)
        assert y.grad is None and x.grad is None
        x = x + 0.05 * gx
    with mode():
        x.backward(go)
    assert y.grad is not None and x_init.grad is not None


def test_grad_nonleaf_many_outputs(mode):
    x = acg.randn(4, 2, requires_grad=True)
    a, b = x[:2], x[2:]
    called = []
    x.register_hook(lambda g: called.append(1))
    go = acg.randn(2, 2)
    with mode():
        ga, gb = acg.autograd.grad(a + 2 * b, [a, b], grad_outputs=go, create_graph=True)
    assert_close(ga, go)
    assert_close(gb, go * 2)
    assert called == [] and x.grad is None


def test_grad_materialize_grads(mode):
    x, a = scalar(0.5), scalar(1.0)
    y = x * a
    with mode():
        dydx = acg.autograd.grad(y, x, create_graph=True)
        none = acg.autograd.grad(dydx, x, create_graph=True, allow_unused=True)
        d2 = acg.autograd.grad(dydx, x, create_graph=True, allow_unused=True,
                               materialize_grads=True)
    assert none[0] is None and d2[0].item() == 0


def test_accumulate_grad_with_create_graph(mode):
    """.grad built under create_graph is itself differentiable (test_accumulate_grad)."""
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    with mode():
        (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    assert_close(x.grad, [2.0, 4.0])
    g = x.grad
    x.grad = None
    with mode():
        g.sum().backward()
    assert_close(x.grad, [2.0, 2.0])


class _MarkNonDiff(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x > 0
        ctx.mark_non_differentiable(out)
        return x * 2, out

    @staticmethod
    def backward(ctx, g, g_mask):
        return g * 2


def test_mark_non_differentiable_mixed(mode):
    x = acg.tensor([-1.0, 2.0], requires_grad=True)
    y, mask = _MarkNonDiff.apply(x)
    assert y.requires_grad and not mask.requires_grad
    with mode():
        y.sum().backward()
    assert_close(x.grad, [2.0, 2.0])  # the Function's own backward: g * 2


def test_materialize_grads_off_passes_none(mode):
    seen = []

    class F(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2 is None)
            return g1

    x = acg.ones(2, requires_grad=True)
    with mode():
        F.apply(x)[0].sum().backward()
    assert seen == [True]
    assert_close(x.grad, [1.0, 1.0])


def test_materialize_grads_on_gives_zeros(mode):
    seen = []

    class F(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(g2 is not None)
            return g1 + 3.0 * g2

    x = acg.ones(2, requires_grad=True)
    with mode():
        F.apply(x)[0].sum().backward()
    assert seen == [True]
    assert_close(x.grad, [1.0, 1.0])  # g2 was zeros


def test_save_none_for_backward(mode):
    class F(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x, None)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            n1, x, n2 = ctx.saved_tensors
            assert n1 is None and n2 is None
            return g * x

    x = acg.tensor([3.0], requires_grad=True)
    with mode():
        F.apply(x).sum().backward()
    assert x.grad.tolist() == [3.0]


def test_once_differentiable(mode):
    class F(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @acg.autograd.once_differentiable
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    x = acg.tensor([1.5], requires_grad=True)
    with mode():
        g, = acg.autograd.grad(F.apply(x).sum(), x)
    assert_close(g, [3.0])


def test_anomaly_detect_nan(mode):
    class NaNGrad(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = acg.ones(2, requires_grad=True)
    with acg.autograd.detect_anomaly():
        y = NaNGrad.apply(x).sum()
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"), mode():
            y.backward()
    assert x.grad is None


def test_saved_tensor_hooks_pack_once_unpack_after_tensor_hook(mode):
    """Unpack runs once, after the output's tensor hook (eager order, in every mode)."""
    counts = {"pack": 0, "unpack": 0}
    at_hook = []

    def pack(t):
        counts["pack"] += 1
        return t

    def unpack(t):
        counts["unpack"] += 1
        return t
    x = acg.ones(4, requires_grad=True)
    with acg.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = (x.sin()).sum()
    assert counts == {"pack": 1, "unpack": 0}
    out.register_hook(lambda g: at_hook.append(counts["unpack"]))
    with mode():
        out.backward()
    assert counts == {"pack": 1, "unpack": 1}
    assert at_hook == [0]
