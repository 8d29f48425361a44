"""Bad input gets PyTorch's error class and a message that says what is wrong (DESIGN §7).

Hook and backward errors run in every execution mode (the ``mode`` fixture):
compiled autograd must raise the same error, with the same concrete shapes, as
eager. Guards: a cached graph fed inputs that violate what it was captured
under must be recaptured, never run (checked against eager gradients).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import compiled_autograd as ca
from conftest import assert_close

BACKENDS = ["eager", "jax"]


def leaf(*shape: int) -> acg.Tensor:
    data = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape) / 10
    return acg.tensor(data, dtype=acg.float64, requires_grad=True)


def raises(cls: type, *fragments: str):
    """pytest.raises(cls) whose message must contain every fragment (literally)."""
    return pytest.raises(cls, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


# -- ops ----------------------------------------------------------------------------------

def test_shape_mismatch_names_the_op_and_both_shapes():
    with raises(RuntimeError, "add", "[2, 3]", "[4, 5]"):
        acg.ones(2, 3) + acg.ones(4, 5)
    with raises(RuntimeError, "matmul", "[2, 3]", "[4, 2]"):
        acg.ones(2, 3) @ acg.ones(4, 2)


def test_matmul_dtype_mismatch_names_both_dtypes():
    with raises(RuntimeError, "matmul", "float32", "float64"):
        acg.ones(2, 3, dtype=acg.float32) @ acg.ones(3, 2, dtype=acg.float64)


def test_factory_dtype_is_not_taken_from_an_earlier_call():
    """Regression: kernels/_jit.py keyed its programs on a tuple holding the dtype, and
    np.dtype('float64') == None, so ones(2) and ones(2, dtype=float64) shared one."""
    assert acg.ones(2).dtype == acg.float32
    assert acg.ones(2, dtype=acg.float64).dtype == acg.float64
    assert acg.zeros(3, dtype=acg.float64).dtype == acg.float64
    assert acg.zeros(3).dtype == acg.float32


# -- backward entry points ------------------------------------------------------------------

def test_backward_on_non_scalar_needs_a_gradient(mode):
    x = leaf(2, 3)
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs",
                "[2, 3]"), mode():
        (x * 2.0).backward()
    assert x.grad is None


def test_gradient_of_the_wrong_shape(mode):
    x = leaf(2, 3)
    with raises(RuntimeError, "Mismatch in shape", "[3, 2]", "[2, 3]"), mode():
        (x * 2.0).backward(acg.ones(3, 2, dtype=acg.float64))
    assert x.grad is None


def test_gradient_of_another_dtype_is_cast_as_in_pytorch(mode):
    x = acg.tensor([1.0, 2.0], dtype=acg.float32, requires_grad=True)
    with mode():
        (x * 3.0).backward(acg.tensor([1.0, 0.5], dtype=acg.float64))
    assert x.grad.dtype == acg.float32
    assert x.grad.tolist() == [3.0, 1.5]


def test_second_backward_through_a_freed_graph(mode):
    x = leaf(3)
    y = (x.sin() * x).sum()
    with mode():
        y.backward()
    first = x.grad.numpy().copy()
    with raises(RuntimeError, "backward through the graph a second time", "retain_graph=True"), \
            mode():
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), first)


def test_backward_on_a_tensor_that_does_not_require_grad(mode):
    with raises(RuntimeError, "does not require grad"), mode():
        acg.ones(3, dtype=acg.float64).sum().backward()


def test_assigning_a_grad_of_the_wrong_shape_or_dtype():
    x = leaf(2)
    with raises(RuntimeError, "different size", "[3]", "[2]"):
        x.grad = acg.ones(3, dtype=acg.float64)
    with raises(RuntimeError, "different type", "float32", "float64"):
        x.grad = acg.ones(2, dtype=acg.float32)
    with raises(TypeError, "list"):
        x.grad = [1.0, 2.0]
    assert x.grad is None


# -- hooks ----------------------------------------------------------------------------------

def hooked(on: str, hook, pure: bool = False) -> tuple[acg.Tensor, acg.Tensor]:
    """x [4, 3] -> a = x * 2 with ``hook`` on x (leaf) or a (non-leaf); returns (x, loss)."""
    x = leaf(4, 3)
    a = x * 2.0
    (x if on == "leaf" else a).register_hook(ca.pure_hook(hook) if pure else hook)
    return x, a.sum()


@pytest.mark.parametrize("pure", [False, True], ids=["opaque", "pure"])
@pytest.mark.parametrize("on", ["leaf", "non_leaf"])
def test_tensor_hook_changing_the_shape(mode, on, pure):
    x, loss = hooked(on, lambda g: g.sum(0), pure)
    # concrete sizes, also when the error is raised while capturing with symbolic ones
    with raises(RuntimeError, "has changed the size of value", "[4, 3]", "[3]"), mode():
        loss.backward()
    assert x.grad is None


@pytest.mark.parametrize("pure", [False, True], ids=["opaque", "pure"])
@pytest.mark.parametrize("on", ["leaf", "non_leaf"])
def test_tensor_hook_changing_the_dtype(mode, on, pure):
    x, loss = hooked(on, lambda g: g.to(acg.float32), pure)
    with raises(RuntimeError, "has changed the type of value", "float64", "float32"), mode():
        loss.backward()
    assert x.grad is None


@pytest.mark.parametrize("on", ["leaf", "non_leaf"])
def test_tensor_hook_returning_a_non_tensor(mode, on):
    def to_list(g):
        return g.tolist()
    x, loss = hooked(on, to_list)
    with raises(TypeError, "expected Variable, but hook returned", "list", "to_list"), mode():
        loss.backward()
    assert x.grad is None


@pytest.mark.parametrize("pure", [False, True], ids=["opaque", "pure"])
@pytest.mark.parametrize("kind", ["pre", "post"])
def test_node_hook_returning_the_wrong_number_of_values(mode, kind, pure):
    x = leaf(3)
    a = x * x  # MulBackward0: one gradient in, two out
    if kind == "pre":
        hook, expect = (lambda go: (go[0], go[0])), "(got 2, but expected 1)"
        register = a.grad_fn.register_prehook
    else:
        hook, expect = (lambda gi, go: (gi[0],)), "(got 1, but expected 2)"
        register = a.grad_fn.register_hook
    register(ca.pure_hook(hook) if pure else hook)
    with raises(RuntimeError, "incorrect number of values", expect), mode():
        a.sum().backward()
    assert x.grad is None


def test_node_hook_returning_a_non_tuple(mode):
    x = leaf(3)
    a = x.sin()
    a.grad_fn.register_prehook(lambda go: go[0])
    with raises(TypeError, "expected tuple", "Tensor"), mode():
        a.sum().backward()


def test_post_accumulate_grad_hook_returning_a_value(mode):
    x = leaf(3)
    x.register_post_accumulate_grad_hook(lambda p: p.grad)
    with raises(RuntimeError, "post accumulate grad hooks should return None", "Tensor"), \
            mode():
        (x * 2.0).sum().backward()
    assert x.grad is None


def test_post_accumulate_grad_hook_on_a_non_leaf_or_a_tensor_without_grad():
    x = leaf(3)
    with raises(RuntimeError, "non-leaf"):
        (x * 2.0).register_post_accumulate_grad_hook(lambda p: None)
    with raises(RuntimeError, "doesn't require gradient"):
        acg.ones(3).register_post_accumulate_grad_hook(lambda p: None)
    with raises(RuntimeError, "doesn't require gradient"):
        acg.ones(3).register_hook(lambda g: g)


# -- custom Functions -----------------------------------------------------------------------

class SumsTooMuch(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g.sum(0)


class TwoGrads(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g, g


class FloatGrad(acg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return 2.0


def test_function_backward_of_the_wrong_shape(mode):
    x = leaf(4, 3)
    with raises(RuntimeError, "SumsTooMuchBackward", "invalid gradient", "[3]", "[4, 3]"), mode():
        SumsTooMuch.apply(x).sum().backward()
    assert x.grad is None


def test_function_backward_returning_too_many_gradients(mode):
    x = leaf(4, 3)
    with raises(RuntimeError, "TwoGradsBackward", "incorrect number of gradients",
                "expected 1, got 2"), mode():
        TwoGrads.apply(x).sum().backward()


def test_function_backward_returning_a_non_tensor(mode):
    """Regression: a float from backward() surfaced as AttributeError ('float' object has
    no attribute 'shape') from validate_outputs. PyTorch says "expected Variable or None
    (got float)"; ours also names the Function."""
    x = leaf(4, 3)
    with pytest.raises((TypeError, RuntimeError), match="(?s)(?=.*FloatGrad)(?=.*float)"), \
            mode():
        FloatGrad.apply(x).sum().backward()
    assert x.grad is None


# -- saved tensors modified in place ----------------------------------------------------------

def test_saved_tensor_modified_in_place(mode):
    w = leaf(4, 3)
    h = w * 2.0
    y = h.sin()  # SinBackward0 saves h
    with acg.no_grad():
        h.add_(1.0)
    with raises(RuntimeError, "modified by an inplace operation", "float64", "[4, 3]",
                "SinBackward0", "version 1", "expected version 0"), mode():
        y.sum().backward()
    assert w.grad is None


def test_saved_leaf_modified_in_place(mode):
    w = leaf(3)
    c = acg.tensor([1.0, 2.0, 3.0], dtype=acg.float64)
    y = w * c  # MulBackward0 saves c for w's gradient
    c.mul_(2.0)
    with raises(RuntimeError, "modified by an inplace operation", "MulBackward0"), mode():
        y.sum().backward()


def test_saved_tensor_modified_in_place_by_a_hook_during_backward(mode):
    """Regression: eager raises (MulBackward0 unpacks w after the hook bumped its version)
    and rolls back; compiled-eager silently used the new w, compiled-jax the old one."""
    x, w = leaf(2), leaf(2)
    b = (x * w).sin()  # MulBackward0 saves x and w

    def bump_w(g):
        with acg.no_grad():
            w.mul_(2.0)
    b.register_hook(bump_w)
    with raises(RuntimeError, "modified by an inplace operation", "MulBackward0"), mode():
        b.sum().backward()
    assert x.grad is None and w.grad is None
    assert w.tolist() == [0.1, 0.2]  # the hook's write was rolled back


# -- enable() and compiler_fn ---------------------------------------------------------------

def test_enable_with_something_that_is_not_a_compiler():
    with raises(TypeError, "compiler_fn", "int"):
        ca.enable(42)
    with raises(ValueError, "unknown compiled-autograd backend", "'tpu'", "'eager'", "'jax'"):
        ca.enable("tpu")


@pytest.fixture
def fresh():
    ca.reset()
    yield ca.counters
    ca.reset()


def test_compiler_returning_a_non_callable(fresh):
    x = leaf(3)

    def returns_a_string(gm):
        return "not a program"
    with raises(TypeError, "returns_a_string", "str", "callable"), ca.enable(returns_a_string):
        (x.sin()).sum().backward()
    assert x.grad is None and fresh["captures"] == 0 and not ca.cache._CACHE


def test_compiler_that_raises_propagates_and_caches_nothing(fresh):
    x = leaf(3)

    def explodes(gm):
        raise ValueError("backend exploded")
    with raises(ValueError, "backend exploded"), ca.enable(explodes):
        (x.sin()).sum().backward()
    assert x.grad is None and not ca.cache._CACHE
    with ca.enable("jax"):
        (x.sin()).sum().backward()
    assert_close(x.grad, np.cos([0.1, 0.2, 0.3]), rtol=1e-12)
    assert fresh["captures"] == 1


def test_each_compiler_fn_compiles_its_own_graphs(fresh):
    """Regression: the cache key ignored compiler_fn, so a graph compiled under one
    compiler was silently run under another (which was never called)."""
    def run(compiler):
        x = leaf(3)
        with ca.enable(compiler):
            (x.sin() * 2.0).sum().backward()
        return x.grad
    run("jax")
    seen = []
    grad = run(lambda gm: seen.append(gm) or gm)
    assert len(seen) == 1
    assert_close(grad, 2 * np.cos([0.1, 0.2, 0.3]), rtol=1e-12)

    def explodes(gm):
        raise ValueError("backend exploded")
    with raises(ValueError, "backend exploded"):
        run(explodes)


# -- guards: a cached graph must not run on inputs it was not captured for -------------------

def mlp_grads(batch: int, width: int, backend: str | None) -> list[np.ndarray]:
    """Gradients of a two-layer net on [batch, width] inputs (weights [width, width])."""
    rng = np.random.default_rng(batch * 100 + width)
    x = acg.tensor(rng.standard_normal((batch, width)), dtype=acg.float64)
    w1 = acg.tensor(rng.standard_normal((width, width)), dtype=acg.float64, requires_grad=True)
    w2 = acg.tensor(rng.standard_normal((width, 1)), dtype=acg.float64, requires_grad=True)
    loss = (((x @ w1).tanh() @ w2) ** 2).mean()
    with ca.enable(backend) if backend else ca.disable():
        loss.backward()
    return [w1.grad.numpy(), w2.grad.numpy()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sizes_equal_at_capture_that_differ_later_recapture(fresh, backend):
    mlp_grads(8, 8, backend)  # batch == width: one symbol for both
    for got, want in zip(mlp_grads(8, 5, backend), mlp_grads(8, 5, None)):
        assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert fresh["captures"] == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_of_one_recaptures(fresh, backend):
    mlp_grads(8, 5, backend)
    for got, want in zip(mlp_grads(1, 5, backend), mlp_grads(1, 5, None)):
        assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert fresh["captures"] == 2


class OneRowBoost(acg.autograd.Function):
    """A backward that decides on a size: 1 and >= 2 rows take different branches."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * 100.0 if g.shape[0] == 1 else g


@pytest.mark.parametrize("backend", BACKENDS)
def test_size_becoming_one_is_a_guard_failure_not_garbage(fresh, backend):
    """Regression: symbols are assumed >= 2 at capture (so ``g.shape[0] == 1`` is decided
    without a guard), but SizeGuards did not check that bound: batch 1 reused the graph."""
    for rows, want in [(8, 1.0), (1, 100.0)]:
        x = acg.ones(rows, 2, dtype=acg.float64, requires_grad=True)
        with ca.enable(backend):
            OneRowBoost.apply(x).sum().backward()
        assert x.grad.numpy().tolist() == [[want, want]] * rows
    assert fresh["captures"] == 2


class BranchOnSizes(acg.autograd.Function):
    """A backward that decides on sizes: more than 5 rows, or a square gradient."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        boost = g.shape[0] > 5 or g.shape[0] == g.shape[1]
        return g * 100.0 if boost else g


@pytest.mark.parametrize("backend", BACKENDS)
def test_size_decisions_taken_at_capture_are_guarded(fresh, backend):
    """Regression: the capture records guards (``s0 <= 5``, ``Ne(s0, s1)``) in its ShapeEnv,
    but SizeGuards compiled its check in begin_capture, before the walk added any guard, so
    none was checked: sizes that take the other branch reused the graph."""
    for shape, want in [((3, 2), 1.0), ((8, 2), 100.0), ((4, 4), 100.0), ((4, 2), 1.0)]:
        x = acg.ones(*shape, dtype=acg.float64, requires_grad=True)
        with ca.enable(backend):
            BranchOnSizes.apply(x).sum().backward()
        assert x.grad.numpy()[0, 0] == want, shape


class SignedScale(acg.autograd.Function):
    """A backward that branches on a float saved on ctx (a lifted scalar)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.k if ctx.k > 0 else g * 0.0), None


@pytest.mark.parametrize("backend", BACKENDS)
def test_lifted_scalar_decided_at_capture_is_guarded(fresh, backend):
    for k, want in [(2.0, 2.0), (3.0, 3.0), (-1.0, 0.0), (0.5, 0.5)]:
        x = leaf(3)
        with ca.enable(backend):
            SignedScale.apply(x, k).sum().backward()
        assert x.grad.tolist() == [want] * 3
    assert fresh["captures"] >= 2  # the sign flip recaptured; no wrong branch was reused


@pytest.mark.parametrize("backend", BACKENDS)
def test_dtype_change_recaptures(fresh, backend):
    for dtype in (acg.float32, acg.float64, acg.float32):
        x = acg.tensor([0.5, 1.5], dtype=dtype, requires_grad=True)
        with ca.enable(backend):
            (x * x * 3.0).sum().backward()
        assert x.grad.dtype == dtype
        assert_close(x.grad, [3.0, 9.0])
    assert fresh["captures"] == 2 and fresh["cache_hits"] == 1


class Config:
    def __init__(self, scale: float) -> None:
        self.scale = scale


class ScaleFromConfig(acg.autograd.Function):
    """The backward reads a float through an object saved on ctx."""

    @staticmethod
    def forward(ctx, x, cfg):
        ctx.cfg = cfg
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.cfg.scale, None


@pytest.mark.parametrize("backend", BACKENDS)
def test_value_read_through_an_object_on_ctx_is_not_frozen_into_the_graph(fresh, backend):
    """Regression: ``ctx.cfg`` went into the cache key by identity and ``cfg.scale`` was
    baked into the graph as a constant, so after ``cfg.scale = 5.0`` the cached graph still
    multiplied by 2.0 (eager: 5.0)."""
    cfg = Config(2.0)
    for scale in (2.0, 5.0):
        cfg.scale = scale
        x = leaf(2)
        with ca.enable(backend):
            ScaleFromConfig.apply(x, cfg).sum().backward()
        assert x.grad.tolist() == [scale, scale]
