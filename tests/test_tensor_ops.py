"""Tensor ops beyond the op table: sampling (statistics, determinism by seed and Generator,
errors), indexing assignment and the version-counter error in every execution mode, devices,
and the conveniences ported programs call (dtype aliases, casts, new_*, grad-mode decorators,
inference_mode). Forward/backward/fake checks of the ops themselves are in op_cases_tensor.py.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F

INPLACE_ERROR = "one of the variables needed for gradient computation has been modified by an " \
                "inplace operation"


# -- determinism: the same seed gives the same stream ---------------------------------------------
SAMPLERS = {
    "rand": lambda g: acg.rand(2, 3, generator=g),
    "randn": lambda g: acg.randn(4, generator=g, dtype=acg.float64),
    "randint": lambda g: acg.randint(0, 10, (5,), generator=g),
    "randperm": lambda g: acg.randperm(7, generator=g),
    "bernoulli": lambda g: acg.bernoulli(acg.full((6,), 0.5), generator=g),
    "multinomial": lambda g: acg.multinomial(acg.tensor([[0.2, 0.3, 0.5]] * 2), 2, generator=g),
    "normal_": lambda g: acg.zeros(5).normal_(generator=g),
    "uniform_": lambda g: acg.zeros(5).uniform_(-1, 1, generator=g),
    "bernoulli_": lambda g: acg.zeros(6).bernoulli_(0.3, generator=g),
    "normal": lambda g: acg.normal(0.0, 2.0, (4,), generator=g),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_global_seed_repeats_the_stream(name: str) -> None:
    draw = SAMPLERS[name]
    acg.manual_seed(123)
    first = [draw(None).detach().numpy() for _ in range(3)]
    acg.manual_seed(123)
    again = [draw(None).detach().numpy() for _ in range(3)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(first[0], f) for f in first[1:])  # the stream moves on


@pytest.mark.parametrize("name", SAMPLERS)
def test_generator_is_independent_of_the_global_stream(name: str) -> None:
    draw = SAMPLERS[name]
    g = acg.Generator().manual_seed(5)
    acg.manual_seed(9)
    ours = draw(g).detach().numpy()
    after = acg.rand(4).detach().numpy()
    acg.manual_seed(9)
    np.testing.assert_array_equal(acg.rand(4).detach().numpy(), after)  # g did not advance the global
    np.testing.assert_array_equal(draw(acg.Generator().manual_seed(5)).detach().numpy(), ours)


def test_generator_state_round_trips_and_seed() -> None:
    g = acg.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(42) is g and g.initial_seed() == 42
    state = g.get_state()
    assert state.dtype == acg.uint8
    a = acg.randn(3, generator=g).detach().numpy()
    g.set_state(state)
    np.testing.assert_array_equal(acg.randn(3, generator=g).detach().numpy(), a)
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    with pytest.raises(RuntimeError, match="uint8"):
        g.set_state(acg.zeros(3))
    with pytest.raises(TypeError, match="Generator"):
        acg.rand(2, generator=3)


def test_global_rng_state_and_manual_seed_returns_the_generator() -> None:
    assert acg.manual_seed(1) is acg.default_generator and acg.initial_seed() == 1
    state = acg.get_rng_state()
    a = acg.rand(3).detach().numpy()
    acg.set_rng_state(state)
    np.testing.assert_array_equal(acg.rand(3).detach().numpy(), a)


def test_random_ops_take_their_key_as_an_input() -> None:
    """A captured graph sees the key as an op argument (a tensor), never a baked constant."""
    seen = []

    class Record(acg.DispatchMode):
        def __acg_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((str(func), [a for a in args if isinstance(a, acg.Tensor)]))
            return func(*args, **(kwargs or {}))
    with Record():
        acg.rand(3)
        acg.multinomial(acg.ones(4), 2)
    keys = [ts[-1] for name, ts in seen if "rand" in name or "multinomial" in name]
    assert len(keys) == 2 and all(k.dtype == jnp.uint32 and k.shape == (2,) for k in keys)
    assert not np.array_equal(keys[0].detach().numpy(), keys[1].detach().numpy())


# -- sampling statistics (against the distributions' own moments) --------------------------------
def test_multinomial_with_replacement_frequencies() -> None:
    p = np.array([0.1, 0.0, 0.6, 0.3])
    draws = acg.multinomial(acg.tensor(p * 7), 20000, replacement=True,
                            generator=acg.Generator().manual_seed(0)).detach().numpy()
    assert draws.shape == (20000,) and draws.dtype == np.int64
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, p, atol=0.015)  # ~4 standard errors


def test_multinomial_without_replacement() -> None:
    p = np.array([[0.5, 0.25, 0.0, 0.25], [1.0, 1.0, 1.0, 1.0]])
    g = acg.Generator().manual_seed(1)
    rows = np.stack([acg.multinomial(acg.tensor(p), 3, generator=g).detach().numpy() for _ in range(2000)])
    assert rows.shape == (2000, 2, 3)
    assert all(len(set(r)) == 3 for r in rows.reshape(-1, 3))  # no repeats within a draw
    assert not (rows[:, 0] == 2).any()  # a zero-probability category is never drawn
    first = np.bincount(rows[:, 0, 0], minlength=4) / 2000  # the first draw follows p
    np.testing.assert_allclose(first, p[0] / p[0].sum(), atol=0.04)
    full = acg.multinomial(acg.tensor(p[1]), 4).detach().numpy()
    assert sorted(full) == [0, 1, 2, 3]


@pytest.mark.parametrize("probs, n, replacement, match", [
    ([0.5, -0.1, 0.6], 1, True, "element < 0"),
    ([0.5, float("nan"), 0.6], 1, True, "`inf`, `nan`"),
    ([[0.5, 0.5], [0.0, 0.0]], 1, True, r"sum of probabilities <= 0"),
    ([0.5, 0.5], 3, False, "cannot sample n_sample > prob_dist.size"),
    ([0.5, 0.5], 0, True, "n_sample <= 0"),
    ([[[0.5, 0.5]]], 1, True, "1 or 2 dim"),
])
def test_multinomial_errors(probs, n, replacement, match) -> None:
    with pytest.raises(RuntimeError, match=match):
        acg.multinomial(acg.tensor(probs), n, replacement)


def test_multinomial_rejects_integer_probabilities() -> None:
    with pytest.raises(RuntimeError, match="floating-point"):
        acg.multinomial(acg.tensor([1, 2]), 1)


def test_bernoulli_statistics_and_errors() -> None:
    p = acg.tensor([0.0, 0.2, 0.9, 1.0], dtype=acg.float64).expand(20000, 4)
    draws = acg.bernoulli(p, generator=acg.Generator().manual_seed(2))
    assert draws.dtype == acg.float64 and set(np.unique(draws.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.detach().numpy().mean(0), [0.0, 0.2, 0.9, 1.0], atol=0.01)
    half = acg.zeros(20000).bernoulli_(0.25)
    assert abs(half.detach().numpy().mean() - 0.25) < 0.01
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        acg.bernoulli(acg.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        acg.zeros(2).bernoulli_(-0.1)


def test_randperm_randint_normal_uniform() -> None:
    acg.manual_seed(3)
    perm = acg.randperm(50)
    assert perm.dtype == acg.int64 and sorted(perm.tolist()) == list(range(50))
    ints = acg.randint(-3, 4, (20000,)).detach().numpy()
    assert ints.dtype == np.int64 and ints.min() == -3 and ints.max() == 3
    np.testing.assert_allclose(np.bincount(ints + 3) / ints.size, [1 / 7] * 7, atol=0.01)
    assert acg.randint(5, (2, 3)).shape == (2, 3)
    x = acg.empty(20000, dtype=acg.float64).normal_(2.0, 0.5)
    assert abs(x.detach().numpy().mean() - 2.0) < 0.02 and abs(x.detach().numpy().std() - 0.5) < 0.02
    u = acg.empty(20000).uniform_(-2, 3).detach().numpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    m = acg.normal(acg.tensor([0.0, 10.0]).expand(20000, 2), acg.tensor([1.0, 0.1]))
    np.testing.assert_allclose(m.detach().numpy().mean(0), [0.0, 10.0], atol=0.05)
    np.testing.assert_allclose(m.detach().numpy().std(0), [1.0, 0.1], rtol=0.05)
    with pytest.raises(RuntimeError, match="std >= 0"):
        acg.zeros(2).normal_(0, -1)
    with pytest.raises(RuntimeError, match="from=2"):
        acg.zeros(2).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="from=4 >= to=4"):
        acg.randint(4, 4, (2,))
    with pytest.raises(RuntimeError, match="non-negative"):
        acg.randperm(-1)


def test_random_fills_record_nothing_under_no_grad() -> None:
    w = acg.zeros(3, 4, requires_grad=True)
    with acg.no_grad():
        w.normal_()
        w.uniform_(-1, 1)
        w.fill_(0.5)
        w.zero_()
    assert w.is_leaf and w.grad_fn is None and w.requires_grad and w._version == 4
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w.normal_()


# -- indexing assignment, in every execution mode --------------------------------------------------
def _grads(fn, *arrays):
    """jax.grad of ``fn`` (a jnp function to a scalar) w.r.t. every argument."""
    return jax.grad(fn, argnums=tuple(range(len(arrays))))(*map(jnp.asarray, arrays))


def test_mask_assignment_of_logits_below_threshold(mode) -> None:
    x0 = np.random.default_rng(0).standard_normal((3, 5))
    x = acg.tensor(x0, requires_grad=True)
    logits = x * 2
    v = logits.topk(2).values[..., -1:]
    logits[logits < v] = -float("inf")
    loss = (logits.softmax(-1) * acg.arange(5.0, dtype=acg.float64)).sum()
    with mode():
        loss.backward()

    def ref(x):
        lg = x * 2
        kth = jax.lax.top_k(lg, 2)[0][..., -1:]
        lg = jnp.where(lg < kth, -jnp.inf, lg)
        return (jax.nn.softmax(lg, -1) * jnp.arange(5.0)).sum()
    np.testing.assert_allclose(x.grad.numpy(), _grads(ref, x0)[0], rtol=1e-10, atol=1e-12)


def test_row_mask_index_and_position_assignment(mode) -> None:
    rng = np.random.default_rng(1)
    x0, v0, w0 = rng.standard_normal((4, 3, 2)), rng.standard_normal(2), rng.standard_normal((2,
                                                                                             2))
    x, v, w = (acg.tensor(a, requires_grad=True) for a in (x0, v0, w0))
    y = x * 1
    y[acg.tensor([True, False, True, False])] = 0.0  # rows by a bool mask
    y[:, -1, :] = v  # a position counted from the end, broadcast value
    y[acg.tensor([3, 1]), 0] = w  # an index tensor and a tensor value
    with mode():
        (y * y).sum().backward()

    def ref(x, v, w):
        y = x.at[jnp.array([0, 2])].set(0.0).at[:, -1, :].set(v).at[jnp.array([3, 1]), 0].set(w)
        return (y * y).sum()
    for ours, want in zip((x, v, w), _grads(ref, x0, v0, w0)):
        np.testing.assert_allclose(ours.grad.numpy(), want, rtol=1e-12)


def test_assignment_to_a_saved_tensor_raises_in_backward(mode) -> None:
    x = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()  # exp saves its output
    version = y._version
    y[0] = 5.0
    assert y._version > version
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        with mode():
            y.sum().backward()
    assert x.grad is None  # a failed backward writes nothing


def test_mask_assignment_to_a_saved_tensor_raises(mode) -> None:
    x = acg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    y = x.sigmoid()
    z = y * 1
    y[y > 0.5] = 0.0
    y.masked_fill_(acg.tensor([True, False]), 1.0)
    with pytest.raises(RuntimeError, match=INPLACE_ERROR):
        with mode():
            (y + z).sum().backward()
    assert x.grad is None


def test_masked_fill_tensor_value_gradient(mode) -> None:
    x = acg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    v = acg.tensor(0.5, requires_grad=True)
    y = (x * 1).masked_fill_(acg.tensor([[True], [False]]), v)
    with mode():
        (y * acg.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0], [3.0, 4.0]] and v.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        x.masked_fill(acg.tensor([True, False]), acg.tensor([1.0]))
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_fill(acg.tensor([1, 0]), 1.0)


def test_sort_topk_scatter_gradients(mode) -> None:
    x0 = np.array([[0.3, -1.2, 2.5, 0.9], [1.1, 0.2, -2.0, 1.7]])
    x = acg.tensor(x0, requires_grad=True)
    w = acg.tensor(np.arange(8.0).reshape(2, 4))
    s = acg.sort(x, descending=True).values
    t = x.topk(2, largest=False).values
    sc = acg.zeros(2, 4, dtype=acg.float64).scatter(1, acg.tensor([[2, 0], [1, 3]]), t)
    loss = (s * w).sum() + (sc * w).sum() + acg.einsum("ij,ij->", x, x)
    with mode():
        loss.backward()

    def ref(x):
        s = -jnp.sort(-x, -1)
        t = -jax.lax.top_k(-x, 2)[0]
        sc = jnp.zeros((2, 4)).at[jnp.array([[0], [1]]), jnp.array([[2, 0], [1, 3]])].set(t)
        wj = jnp.arange(8.0).reshape(2, 4)
        return (s * wj).sum() + (sc * wj).sum() + (x * x).sum()
    np.testing.assert_allclose(x.grad.numpy(), _grads(ref, x0)[0], rtol=1e-12)


# -- errors with PyTorch's exception types --------------------------------------------------------
@pytest.mark.parametrize("call, exc, match", [
    (lambda: acg.ones(3).topk(4), RuntimeError, "k out of range"),
    (lambda: acg.ones(3).sort(dim=1), IndexError, "Dimension out of range"),
    (lambda: acg.ones(3).argmax(2), IndexError, "Dimension out of range"),
    (lambda: acg.ones(3, 2).gather(0, acg.tensor([[3, 0]])), IndexError, "out of bounds"),
    (lambda: acg.ones(3, 2).scatter(0, acg.tensor([[3, 0]]), 1.0), IndexError, "out of bounds"),
    (lambda: acg.ones(3).index_select(0, acg.tensor([5])), IndexError, "out of bounds"),
    (lambda: acg.ones(3).index_select(0, acg.tensor([[0]])), IndexError, "vector"),
    (lambda: acg.ones(3)[acg.tensor([3])], IndexError, "out of bounds"),
    (lambda: acg.ones(2, 3)[:, 3], IndexError, "out of bounds"),
    (lambda: acg.tril(acg.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda: acg.einsum("ij,jk->ik", acg.ones(2, 3)), RuntimeError, "more operands|fewer"),
    (lambda: acg.einsum("ij,jk->ik", acg.ones(2, 3), acg.ones(4, 2)), RuntimeError,
     "do not broadcast"),
    (lambda: acg.einsum("ijk->i", acg.ones(2, 3)), RuntimeError, "number of subscripts"),
    (lambda: F.one_hot(acg.tensor([0, -1]), 3), RuntimeError, "non-negative"),
    (lambda: F.one_hot(acg.tensor([0, 3]), 3), RuntimeError, "smaller than num_classes"),
    (lambda: F.one_hot(acg.tensor([0.5])), RuntimeError, "LongTensor"),
    (lambda: acg.isclose(acg.ones(2), acg.ones(2, dtype=acg.float64)), RuntimeError,
     "did not match"),
    (lambda: acg.linspace(0, 1, -1), RuntimeError, "non-negative"),
    (lambda: acg.masked_select(acg.ones(2), acg.ones(2)), RuntimeError, "Bool"),
])
def test_bad_input_errors(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_one_hot_infers_classes_and_linspace_values() -> None:
    np.testing.assert_array_equal(F.one_hot(acg.tensor([[2], [0]])).detach().numpy(),
                                  np.eye(3, dtype=np.int64)[[[2], [0]]])
    np.testing.assert_allclose(acg.linspace(-1, 2, 7).detach().numpy(), np.linspace(-1, 2, 7), atol=1e-6)
    assert acg.linspace(0, 1, 3).dtype == acg.float32
    assert acg.linspace(0, 10, 3, dtype=acg.float64).tolist() == [0.0, 5.0, 10.0]


# -- devices --------------------------------------------------------------------------------------
def test_device_objects_behave_like_pytorch() -> None:
    d = acg.device("cuda:0")
    assert (d.type, d.index, str(d), repr(d)) == ("cuda", 0, "cuda:0",
                                                  "device(type='cuda', index=0)")
    assert acg.device("cuda", 1) == acg.device("cuda:1") != acg.device("cuda")
    assert acg.device("cpu").index is None and str(acg.device("cpu")) == "cpu"
    assert acg.device(acg.device("cpu")) == acg.device("cpu")
    assert acg.device("cpu") != "cpu"  # as in PyTorch: a device never equals a str
    assert len({acg.device("cpu"), acg.device("cpu"), acg.device("cuda")}) == 2
    for bad in ("tpu", "cuda:x", "cuda:-1"):
        with pytest.raises(RuntimeError):
            acg.device(bad)


def test_tensors_live_on_cpu_and_cuda_is_a_clear_error() -> None:
    x = acg.ones(2, 3, device="cpu")
    assert x.device == acg.device("cpu") and not x.is_cuda and x.get_device() == -1
    assert x.to("cpu") is x and x.cpu() is x and x.to(acg.device("cpu")) is x
    assert x.to("cpu", acg.float64).dtype == acg.float64
    assert x.to(acg.zeros(1, dtype=acg.int64)).dtype == acg.int64
    assert x.to(dtype=acg.half).dtype == acg.float16
    assert acg.cuda.is_available() == bool(acg.cuda.device_count())
    for make in (lambda: acg.zeros(2, device="cuda"), lambda: acg.randn(2, device="cuda:0"),
                 lambda: acg.tensor([1.0], device=acg.device("cuda")), lambda: x.to("cuda"),
                 lambda: x.cuda(), lambda: acg.arange(3, device="cuda")):
        if acg.cuda.is_available():
            assert make().device.type == "cuda"
        else:
            with pytest.raises(RuntimeError, match="CUDA.*'cuda(:0)?'"):
                make()


@pytest.mark.parametrize("factory", [
    lambda d: acg.zeros(2, device=d), lambda d: acg.ones(2, device=d),
    lambda d: acg.full((2,), 1.0, device=d), lambda d: acg.empty(2, device=d),
    lambda d: acg.rand(2, device=d), lambda d: acg.randn(2, device=d),
    lambda d: acg.randint(0, 3, (2,), device=d), lambda d: acg.randperm(2, device=d),
    lambda d: acg.arange(2, device=d), lambda d: acg.eye(2, device=d),
    lambda d: acg.linspace(0, 1, 2, device=d), lambda d: acg.tensor([1.0], device=d),
    lambda d: acg.zeros_like(acg.ones(2), device=d), lambda d: acg.ones(1).new_zeros(2, device=d),
])
def test_every_factory_takes_device(factory) -> None:
    assert factory("cpu").device == acg.device("cpu")
    assert factory(acg.device("cpu")).device == acg.device("cpu")


# -- conveniences ---------------------------------------------------------------------------------
def test_dtype_aliases_and_casts() -> None:
    assert (acg.long, acg.int, acg.float, acg.double, acg.half) == (
        acg.int64, acg.int32, acg.float32, acg.float64, acg.float16)
    x = acg.tensor([1.7, -0.2, 0.0])
    for method, dtype in (("float", acg.float32), ("long", acg.int64), ("int", acg.int32),
                          ("bool", acg.bool), ("half", acg.float16), ("double", acg.float64)):
        y = getattr(x, method)()
        assert y.dtype == dtype
        np.testing.assert_array_equal(y.detach().numpy(), np.asarray([1.7, -0.2, 0.0], np.float32)
                                      .astype(dtype))
    assert x.float() is x  # no change returns self, as in PyTorch


def test_new_factories_and_as_methods() -> None:
    x = acg.ones(2, 3, dtype=acg.float64)
    assert x.new_zeros(4).dtype == acg.float64 and x.new_zeros((2, 2)).tolist() == [[0.0] * 2] * 2
    assert x.new_ones(2, dtype=acg.int64).tolist() == [1, 1]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_empty(3).shape == (3,)
    t = x.new_tensor([1, 2])
    assert t.dtype == acg.float64 and t.tolist() == [1.0, 2.0]
    assert x.new_zeros(2, requires_grad=True).requires_grad
    i = acg.tensor([1, 2, 3, 4, 5, 6])
    assert i.type_as(x).dtype == acg.float64
    assert i.view_as(x).shape == (2, 3) and i.reshape_as(x).tolist() == [[1, 2, 3], [4, 5, 6]]
    assert acg.tensor([1.0, 2.0, 3.0]).expand_as(x).tolist() == [[1.0, 2.0, 3.0]] * 2


def test_from_numpy_and_empty() -> None:
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = acg.from_numpy(a)
    assert t.dtype == acg.int32 and t.tolist() == a.tolist()
    assert acg.from_numpy(np.ones(2, np.float64)).dtype == acg.float64
    with pytest.raises(TypeError, match="np.ndarray"):
        acg.from_numpy([1, 2])
    assert acg.empty(2, 3).shape == (2, 3) and acg.empty((4,), dtype=acg.long).dtype == acg.int64


def test_grad_mode_decorators_and_inference_mode() -> None:
    x = acg.ones(2, requires_grad=True)

    @acg.no_grad
    def bare(t):
        return t * 2

    @acg.no_grad()
    def called(t):
        return t * 2

    @acg.inference_mode
    def infer(t):
        assert acg.is_inference_mode_enabled()
        return t * 2

    @acg.inference_mode()
    def infer_called(t):
        return t * 2

    @acg.enable_grad
    def enabled(t):
        return t * 2
    assert not any(f(x).requires_grad for f in (bare, called, infer, infer_called))
    with acg.no_grad():
        assert enabled(x).requires_grad
    with acg.inference_mode():
        assert not (x * 2).requires_grad and acg.is_inference_mode_enabled()
        with acg.inference_mode(False):  # as PyTorch: inference off, grad mode on
            assert acg.is_grad_enabled() and not acg.is_inference_mode_enabled()
        assert not acg.is_grad_enabled() and acg.is_inference_mode_enabled()
    assert not acg.is_inference_mode_enabled() and acg.is_grad_enabled()
    assert (x * 2).requires_grad


# -- the fuzzer's new menu entries, as fixed programs in every mode --------------------------------
FUZZ_PROGRAMS = {
    "tril_cumsum_logsumexp": ([(3, 4)], [("tril", (0,), (-1,)), ("cumsum", (1,), (-1,)),
                                         ("logsumexp", (2,), (0, True))]),
    "masked_fill_sort_topk": ([(2, 2, 3)], [("masked_fill", (0,), ()), ("sort", (1,), (1,)),
                                            ("topk", (2,), (2, 2))]),
    "einsum": ([(3, 4), (4, 5)], [("einsum_mm", (0, 1), ()), ("einsum_sum0", (2,), ())]),
}


@pytest.mark.parametrize("name", FUZZ_PROGRAMS)
def test_fuzz_menu_entries_match_jax_in_every_mode(name: str) -> None:
    from test_fuzz import program, run_all_modes
    leaves, ops = FUZZ_PROGRAMS[name]
    run_all_modes(program(leaves, ops, hooks=[("tensor", len(leaves), 2.0, False)]), seed=1)


def test_device_copy_op_differentiates_in_every_mode(mode) -> None:
    """The op behind ``to(device)`` (exercised here on the CPU, the one device this machine
    has): values unchanged, the gradient travels back through it."""
    x = acg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = acg.ops.acg.to_device(x * x, "cpu")
    assert y.device == acg.device("cpu") and y.grad_fn is not None
    with mode():
        (y * acg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [2.0, -8.0, 18.0]


def test_inplace_variants_match_out_of_place_and_write_through_views() -> None:
    a = np.arange(12.0).reshape(3, 4)
    x = acg.tensor(a)
    assert x.tril_(1) is x and x.tolist() == np.tril(a, 1).tolist() and x._version == 1
    y = acg.tensor(a)
    y[1:].triu_()  # a view: the write reaches y
    assert y.tolist() == np.concatenate([a[:1], np.triu(a[1:])]).tolist()
    idx = acg.tensor([[1], [0], [3]])
    z = acg.tensor(a).scatter_(1, idx, -1.0)
    want = a.copy()
    want[[0, 1, 2], [1, 0, 3]] = -1.0
    assert z.tolist() == want.tolist()
    w = acg.tensor(a).scatter_add_(1, idx, acg.ones(3, 1, dtype=acg.float64))
    want = a.copy()
    want[[0, 1, 2], [1, 0, 3]] += 1.0
    assert w.tolist() == want.tolist()
