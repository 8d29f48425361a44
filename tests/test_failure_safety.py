"""Nothing is lost when a backward fails (DESIGN §7), in every execution mode.

A scene has leaves with and without ``.grad``, a retained non-leaf grad, a custom
Function, and hooks that change tensors in place (an SGD step on a leaf, a write
into another leaf's ``.grad``, a buffer outside the graph). A fault is injected
at one hook kind (or the Function's backward, or the compiler); the failing
backward must leave every value, ``.grad`` (the same object) and retained grad
as before, and the same backward retried once the fault is gone must give what
a clean eager run gives, reusing the compiled graph instead of capturing again.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import compiled_autograd as ca


class Fault(Exception):
    pass


class Square(acg.autograd.Function):
    """a -> a * a; its backward raises while ``Square.armed``."""

    armed = False

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        if Square.armed:
            raise Fault("Square.backward")
        (a,) = ctx.saved_tensors
        return g * a * 2.0


class Scene:
    """x, w, b leaves (x and b start with a .grad); a = x * w (retained, with a .grad);
    loss = ((Square(a) + b) * 0.5).sum(); hooks everywhere, ``fault`` armed at ``site``."""

    def __init__(self, site: str) -> None:
        f64 = dict(dtype=acg.float64)
        self.x = acg.tensor([0.5, -1.0, 2.0], requires_grad=True, **f64)
        self.w = acg.tensor([1.5, 0.25, -0.5], requires_grad=True, **f64)
        self.b = acg.tensor([0.1, 0.2, 0.3], requires_grad=True, **f64)
        self.x.grad = acg.tensor([10.0, 20.0, 30.0], **f64)
        self.b.grad = acg.tensor([1.0, 1.0, 1.0], **f64)
        self.buf = acg.tensor([1.0, 2.0], **f64)  # outside the graph; hooks scale it
        self.armed, self.calls = False, []
        self.a = self.x * self.w
        self.a.retain_grad()
        self.a.grad = acg.tensor([7.0, 7.0, 7.0], **f64)  # a retained grad sums into it
        self.c = Square.apply(self.a)
        self.loss = ((self.c + self.b) * 0.5).sum()
        self._hooks(site)

    def _fault_hook(self, name: str):
        """A hook that first changes ``buf`` in place, then raises while armed."""
        def hook(*args):
            self.calls.append(name)
            with acg.no_grad():
                self.buf.mul_(2.0)
            if self.armed and name == self.site:
                raise Fault(name)
        return hook

    def _hooks(self, site: str) -> None:
        self.site = site
        h = self._fault_hook
        self.a.register_hook(lambda g: g * 2.0)
        self.a.register_hook(h("tensor_pre_non_leaf"))
        self.x.register_hook(h("tensor_pre_leaf"))
        self.c.grad_fn.register_prehook(h("node_pre"))
        self.a.grad_fn.register_hook(h("node_post"))
        self.w.register_post_accumulate_grad_hook(h("post_acc"))
        self.c.grad_fn.register_hook(self._scale_x_grad)
        self.b.register_post_accumulate_grad_hook(self._sgd)

    def _scale_x_grad(self, grad_inputs, grad_outputs):  # runs before x's .grad is written
        with acg.no_grad():
            self.x.grad.mul_(3.0)

    def _sgd(self, p):
        with acg.no_grad():
            p.sub_(p.grad * 0.1)

    def tensors(self) -> dict[str, acg.Tensor]:
        return {"x": self.x, "w": self.w, "b": self.b, "buf": self.buf, "a": self.a}

    def state(self) -> dict:
        """Every value, .grad object and .grad value."""
        out = {}
        for name, t in self.tensors().items():
            g = t.grad
            out[name] = (t.detach().numpy().copy(), g, None if g is None else g.detach().numpy().copy())
        return out


def assert_same_state(before: dict, after: dict) -> None:
    for name, (value, grad, grad_value) in before.items():
        now_value, now_grad, now_grad_value = after[name]
        np.testing.assert_array_equal(now_value, value, err_msg=f"{name} changed")
        assert now_grad is grad, f"{name}.grad was replaced"
        if grad is not None:
            np.testing.assert_array_equal(now_grad_value, grad_value,
                                          err_msg=f"{name}.grad changed")


def clean_eager(site: str) -> dict:
    """The state after one successful eager backward of a fresh scene."""
    scene = Scene(site)
    with ca.disable():
        scene.loss.backward()
    return scene.state()


def expected_by_hand() -> dict[str, np.ndarray]:
    """The clean run, written out in numpy (an oracle independent of the engine)."""
    x, w, b = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5]), np.array([0.1, 0.2, 0.3])
    a = x * w
    ga = 2.0 * a  # d/da of 0.5 * a^2 is a; the tensor hook doubles it
    b_grad = 1.0 + 0.5
    return {"x.grad": 3 * np.array([10.0, 20.0, 30.0]) + ga * w, "w.grad": ga * x,
            "a.grad": 7.0 + ga, "b.grad": np.full(3, b_grad), "b": b - 0.1 * b_grad,
            "buf": np.array([1.0, 2.0]) * 2.0 ** 5}  # five fault-site hooks, once each


HOOK_SITES = ["tensor_pre_leaf", "tensor_pre_non_leaf", "node_pre", "node_post", "post_acc"]


def check_clean(scene: Scene, site: str) -> None:
    state = scene.state()
    want = clean_eager(site)
    for name in want:
        np.testing.assert_allclose(state[name][0], want[name][0], rtol=1e-13, err_msg=name)
        if want[name][2] is not None:
            np.testing.assert_allclose(state[name][2], want[name][2], rtol=1e-13,
                                       err_msg=f"{name}.grad")
    by_hand = expected_by_hand()
    for key, value in by_hand.items():
        name, _, attr = key.partition(".")
        got = state[name][2] if attr else state[name][0]
        np.testing.assert_allclose(got, value, rtol=1e-13, err_msg=key)


@pytest.mark.parametrize("site", HOOK_SITES)
def test_hook_fault_changes_nothing_and_the_retry_reuses_the_graph(mode, site):
    with mode():  # a structurally identical scene compiles the graph first
        Scene(site).loss.backward()
    captures = ca.counters["captures"]
    scene = Scene(site)
    before = scene.state()
    scene.armed = True
    with pytest.raises(Fault, match=site), mode():
        scene.loss.backward()
    assert site in scene.calls
    assert_same_state(before, scene.state())
    scene.armed, scene.calls = False, []
    with mode():
        scene.loss.backward()
    assert sorted(scene.calls) == sorted(HOOK_SITES)  # every hook ran once in the retry
    check_clean(scene, site)
    assert ca.counters["captures"] == captures


def test_function_backward_fault_changes_nothing(mode):
    scene = Scene("none")
    before = scene.state()
    Square.armed = True
    try:
        with pytest.raises(Fault, match="Square.backward"), mode():
            scene.loss.backward()
    finally:
        Square.armed = False
    assert_same_state(before, scene.state())
    if mode.compiled:
        assert not ca.cache._CACHE and ca.counters["captures"] == 0  # a failed capture is dropped
    with mode():
        scene.loss.backward()
    check_clean(scene, "none")
    if mode.compiled:
        assert ca.counters["captures"] == 1


@pytest.mark.parametrize("backend", ["eager", "jax"])
def test_compiler_fault_changes_nothing(backend):
    ca.reset()
    scene = Scene("none")
    before = scene.state()

    def broken(gm):
        raise Fault("compiler")
    with pytest.raises(Fault, match="compiler"), ca.enable(broken):
        scene.loss.backward()
    assert_same_state(before, scene.state())
    assert scene.calls == [] and not ca.cache._CACHE and ca.counters["captures"] == 0
    with ca.enable(backend):
        scene.loss.backward()
    check_clean(scene, "none")
    assert ca.counters["captures"] == 1


def test_nested_backward_inside_a_failing_hook_is_undone_too(mode):
    """A hook runs a whole (successful) backward of another graph, then the outer one
    fails: the inner backward's .grad writes are rolled back with the rest."""
    scene = Scene("none")
    q = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
    inner = (q * q).sum()

    def hook(g):
        inner.backward()
        raise Fault("after the nested backward")
    scene.a.register_hook(hook)
    before = scene.state()
    with pytest.raises(Fault), mode():
        scene.loss.backward()
    assert q.grad is None
    assert_same_state(before, scene.state())


def test_repeated_faults_do_not_accumulate_anything(mode):
    scene = Scene("node_post")
    before = scene.state()
    scene.armed = True
    for _ in range(3):
        with pytest.raises(Fault), mode():
            scene.loss.backward()
        assert_same_state(before, scene.state())
    scene.armed = False
    with mode():
        scene.loss.backward()
    check_clean(scene, "node_post")
