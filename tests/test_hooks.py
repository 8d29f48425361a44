"""Hook semantics, following PyTorch's "Backward Hooks execution" note.

Every test runs in each execution mode (the ``mode`` fixture) and checks
gradients against jax.grad plus the exact hook log.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

X = [1.0, 2.0, 3.0]
W = [0.5, -0.5, 2.0]


def leaves():
    return (acg.tensor(X, dtype=acg.float64, requires_grad=True),
            acg.tensor(W, dtype=acg.float64, requires_grad=True))


def jax_grads(f):
    return jax.grad(f, (0, 1))(jnp.array(X, jnp.float64), jnp.array(W, jnp.float64))


def test_tensor_hooks_fire_later_created_first(mode):
    x, w = leaves()
    a = x * w
    b, c = a.sin(), a.cos()
    log = []
    for name, t in [("a", a), ("b", b), ("c", c), ("x", x), ("w", w)]:
        t.register_hook(lambda g, name=name: log.append(name))
    with mode():
        (b + c).sum().backward()
    assert log == ["c", "b", "a", "x", "w"]
    gx, gw = jax_grads(lambda x, w: (jnp.sin(x * w) + jnp.cos(x * w)).sum())
    assert_close(x.grad, gx)
    assert_close(w.grad, gw)


def test_hook_sees_the_summed_gradient_once(mode):
    x, w = leaves()
    a = x * w
    seen = []
    a.register_hook(lambda g: seen.append(g.tolist()))
    with mode():
        (a * 2 + a * 3).sum().backward()
    assert seen == [[5.0, 5.0, 5.0]]


def test_returning_a_tensor_replaces_none_keeps(mode):
    x, w = leaves()
    a = x * w
    a.register_hook(lambda g: None)
    a.register_hook(lambda g: g * 10)
    a.register_hook(lambda g: None)
    x.register_hook(lambda g: g + 1)
    with mode():
        a.sum().backward()
    assert_close(x.grad, np.array(W) * 10 + 1)
    assert_close(w.grad, np.array(X) * 10)


def test_full_order_on_a_non_leaf_and_a_leaf(mode):
    x, w = leaves()
    a = x * w
    log = []
    a.register_hook(lambda g: log.append(("tensor_hook_1", g.tolist())) or g * 2)
    a.retain_grad()
    a.register_hook(lambda g: log.append(("tensor_hook_2", g.tolist())))  # before retain_grad
    node = a.grad_fn
    node.register_prehook(lambda go: log.append(("pre", a.grad.tolist())))
    node.register_hook(lambda gi, go: log.append(("post", len(gi), len(go))))
    acc = node.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    x.register_post_accumulate_grad_hook(lambda p: log.append(("post_acc", p.grad.tolist())))
    acc.register_hook(lambda gi, go: log.append(("acc_post", len(gi), len(go))))
    x.register_hook(lambda g: log.append(("x_hook", g.tolist())))
    with mode():
        a.sum().backward()
    w2 = [2 * v for v in W]
    assert log == [
        ("tensor_hook_1", [1.0, 1.0, 1.0]), ("tensor_hook_2", [2.0, 2.0, 2.0]),
        ("pre", [2.0, 2.0, 2.0]), ("post", 2, 1),
        ("x_hook", w2), ("post_acc", w2), ("acc_post", 0, 1),
    ]
    assert_close(a.grad, [2.0, 2.0, 2.0])


def test_node_prehook_and_posthook_replace(mode):
    x, w = leaves()
    a = x * w
    s = a.sum()
    a.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    a.grad_fn.register_hook(lambda gi, go: (gi[0], gi[1] * 0))
    with mode():
        s.backward()
    assert_close(x.grad, np.array(W) * 3)
    assert_close(w.grad, [0.0, 0.0, 0.0])


def test_hooks_added_between_backwards_apply_next_time(mode):
    x, w = leaves()
    a = x * w
    log = []
    with mode():
        a.sum().backward(retain_graph=True)
        a.register_hook(lambda g: log.append("late"))
        a.sum().backward(retain_graph=True)
    assert log == ["late"]
    assert_close(x.grad, np.array(W) * 2)


def test_removal_during_backward_applies_next_time(mode):
    x, w = leaves()
    a = x * w
    b = a.sin()
    log = []
    handles = {}
    b.register_hook(lambda g: log.append("b") or handles["a"].remove())
    handles["a"] = a.register_hook(lambda g: log.append("a"))
    with mode():
        b.sum().backward(retain_graph=True)
        b.sum().backward()
    assert log == ["b", "a", "b"]


def test_handle_removal_before_backward(mode):
    x, w = leaves()
    log = []
    h = x.register_hook(lambda g: log.append("x"))
    h2 = x.register_post_accumulate_grad_hook(lambda p: log.append("acc"))
    h.remove(), h2.remove()
    with mode():
        (x * w).sum().backward()
    assert log == []


def test_hooks_run_with_grad_mode_off_unless_create_graph(mode):
    x, w = leaves()
    a = x * w
    seen = []
    a.register_hook(lambda g: seen.append((acg.is_grad_enabled(), g.requires_grad)))
    with mode():
        a.sum().backward(retain_graph=True)
        a.sum().backward(create_graph=True)
    assert seen == [(False, False), (True, False)]


def test_post_accumulate_hook_sees_accumulated_grad(mode):
    x, w = leaves()
    x.grad = acg.tensor([100.0, 100.0, 100.0], dtype=acg.float64)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    with mode():
        (x * w).sum().backward()
    assert seen == [[100.5, 99.5, 102.0]]


def test_post_accumulate_hook_can_update_the_parameter_in_place(mode):
    x, w = leaves()

    def sgd(p):
        with acg.no_grad():
            p.sub_(p.grad * 0.1)
    x.register_post_accumulate_grad_hook(sgd)
    with mode():
        (x * w).sum().backward()
    assert_close(x, np.array(X) - 0.1 * np.array(W))


# -- wrong hook returns raise PyTorch's errors --------------------------------------------

def test_tensor_hook_changing_size_or_dtype_raises(mode):
    x, w = leaves()
    a = x * w
    a.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="has changed the size of value"), mode():
        a.sum().backward()
    x2, w2 = leaves()
    b = x2 * w2
    b.register_hook(lambda g: g.to(acg.float32))
    with pytest.raises(RuntimeError, match="has changed the type of value"), mode():
        b.sum().backward()


def test_tensor_hook_returning_non_tensor_raises(mode):
    x, w = leaves()
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned"), mode():
        (x * w).sum().backward()


def test_node_post_hook_returning_a_bare_tensor_raises(mode):
    x, w = leaves()
    a = x * w
    a.grad_fn.register_hook(lambda gi, go: gi[0])
    with pytest.raises(TypeError, match="expected tuple"), mode():
        a.sum().backward()


def test_node_hooks_returning_wrong_count_raise(mode):
    x, w = leaves()
    a = x * w
    a.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="incorrect number of values"), mode():
        a.sum().backward()
    x2, w2 = leaves()
    b = x2 * w2
    b.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="incorrect number of values"), mode():
        b.sum().backward()


def test_post_accumulate_hook_returning_value_or_on_non_leaf_raises(mode):
    x, w = leaves()
    x.register_post_accumulate_grad_hook(lambda p: p)
    with pytest.raises(RuntimeError, match="hooks should return None"), mode():
        (x * w).sum().backward()
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * w).register_post_accumulate_grad_hook(lambda p: None)


# -- a failing backward changes nothing -------------------------------------------------

@pytest.mark.parametrize("where", ["tensor_hook", "pre_hook", "post_hook", "post_acc_hook"])
def test_backward_that_raises_leaves_every_grad_untouched(mode, where):
    x, w = leaves()
    w.grad = acg.tensor([7.0, 7.0, 7.0], dtype=acg.float64)
    a = x * w
    a.retain_grad()
    b = a.sin()
    hooked = acg.tensor([1.0, 1.0], dtype=acg.float64)
    calls = []

    def boom(*args):
        hooked.mul_(5)  # an in-place write by a hook before it fails: must be undone
        calls.append(where)
        if len(calls) == 1:
            raise ValueError("injected fault")
    install = {
        "tensor_hook": lambda: b.register_hook(lambda g: boom()),
        "pre_hook": lambda: a.grad_fn.register_prehook(lambda go: boom()),
        "post_hook": lambda: a.grad_fn.register_hook(lambda gi, go: boom()),
        "post_acc_hook": lambda: w.register_post_accumulate_grad_hook(lambda p: boom()),
    }
    install[where]()
    with pytest.raises(ValueError, match="injected fault"), mode():
        b.sum().backward()
    assert x.grad is None and a.grad is None
    assert w.grad.tolist() == [7.0, 7.0, 7.0]
    assert hooked.tolist() == [1.0, 1.0]
    with mode():  # the fault is gone: the same graph can run (nothing was freed)
        b.sum().backward()
    gx, gw = jax_grads(lambda x, w: jnp.sin(x * w).sum())
    assert_close(x.grad, gx)
    assert_close(w.grad, np.asarray(gw) + 7.0)
    assert hooked.tolist() == [5.0, 5.0]
