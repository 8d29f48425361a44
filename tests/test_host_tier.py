"""The host tier (kernels/_xp.py): eager CPU ops at a shape without an XLA program run in
numpy, so loops whose shapes keep changing never wait for compiles; compiled regions
(acg.compile) run shapes after their first eagerly until those shapes earn a program.

Agreement of the two tiers op by op is test_ops.py's ``test_host_tier_matches_xla``; here:
that the host tier is really taken, when programs get compiled, errors, and whole programs
(generation) in every mode.
"""
from __future__ import annotations

import sys
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from autograd_compile.kernels import _xp

pytestmark = pytest.mark.skipif(not _xp._enabled(), reason="the host tier runs on CPU backends")


class _Compiles:
    """Counts XLA compiles (jax's own monitoring event) inside the block."""

    def __enter__(self) -> "_Compiles":
        self.n = 0
        self._on = True

        def listener(event: str, duration: float, **kw: object) -> None:
            if self._on and event == "/jax/core/compile/backend_compile_duration":
                self.n += 1
        jax.monitoring.register_event_duration_secs_listener(listener)
        return self

    def __exit__(self, *exc: object) -> None:
        self._on = False


def test_new_shapes_run_on_the_host_without_compiling() -> None:
    # sizes no other test uses, so no program exists for them yet
    before = sum(_xp.STATS.values())
    with _Compiles() as c:
        for n in range(101, 109):
            a = acg.ones(3, n) * 2.5 + 1
            b = F.softmax(a @ acg.ones(n, 7), -1).sum(0)
    assert c.n == 0  # (the ones are host values numpy fills: no kernel at all)
    assert sum(_xp.STATS.values()) - before >= 8 * 5
    np.testing.assert_allclose(b.numpy(), np.full(7, 3 / 7), rtol=1e-6)


def test_the_tier_is_chosen_once_by_size() -> None:
    small, large = acg.full((5, 211), 0.5), acg.full((400, 503), 0.5)  # 1055 / 201200 elements
    with _Compiles() as c:
        for _ in range(50):
            y = small * small
    assert c.n == 0 and y.tolist() == [[0.25] * 211] * 5  # light: numpy, for good
    with _Compiles() as c:
        for _ in range(3):
            z = large * large
    assert c.n == 1 and float(z.sum()) == 0.25 * 400 * 503  # heavy: its program, at once


def test_the_tier_follows_the_kind_of_kernel() -> None:
    """An elementwise op of a mid size (numpy streams it faster than a program call) stays
    on the host; a several-pass kernel (softmax) of that size gets XLA's fused loop."""
    mid = acg.full((200, 251), 0.5)  # 50200 elements: past the fused limit, within the stream one
    with _Compiles() as c:
        for _ in range(3):
            y = (mid * 2.0).tanh() - 1.0
    assert c.n == 0 and type(y._store) is np.ndarray
    np.testing.assert_allclose(y.numpy(), np.full((200, 251), np.tanh(1.0) - 1), rtol=1e-6)
    assert _xp.host_cost(_xp.host_sig([mid._store]), _xp.RATES["stream"]) < _xp.HOST_LIMIT \
        < _xp.host_cost(_xp.host_sig([mid._store]))
    with _Compiles() as c:
        for _ in range(3):
            p = F.softmax(mid, -1)
    assert c.n == 1 and isinstance(p._store, jax.Array)
    np.testing.assert_allclose(p.numpy(), np.full((200, 251), 1 / 251), rtol=1e-6)


def test_a_small_part_of_a_large_value_is_read_on_the_host() -> None:
    """Slices, rows and embedding lookups read only what they return: a small result of a
    large (jax) value takes numpy's view, not a program of its own per slice."""
    big = acg.arange(1000 * 401, dtype=acg.float32).reshape(1000, 401)._data  # 401000 elements
    x, w = acg.Tensor(big, requires_grad=True), acg.Tensor(big, requires_grad=True)  # op path
    ix = acg.tensor([[3, 999], [0, 7]])
    with _Compiles() as c:
        parts = [x[5:9], x[17], x.narrow(1, 398, 3), F.embedding(ix, w)]
    assert c.n == 0 and all(type(p._store) is np.ndarray for p in parts)
    ref = np.asarray(big)
    for got, want in zip(parts, [ref[5:9], ref[17], ref[:, 398:401], ref[[[3, 999], [0, 7]]]]):
        np.testing.assert_array_equal(got.detach().numpy(), want)
    with _Compiles() as c:
        whole = x[1:]  # most of it: a copy that large is the program's
    assert c.n == 1 and isinstance(whole._store, jax.Array)
    np.testing.assert_array_equal(whole.detach().numpy(), ref[1:])


def test_one_op_and_shape_gives_the_same_bits_every_call() -> None:
    """As PyTorch's kernels: a tier never changes under a running program."""
    x = acg.linspace(-3, 3, 3 * 317).reshape(3, 317)
    first = F.gelu(F.softmax(x, -1) * 7.0).numpy()
    for _ in range(300):
        again = F.gelu(F.softmax(x, -1) * 7.0).numpy()
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("draw", ["rand", "randn", "randint", "dropout"])
def test_random_ops_at_new_shapes_draw_exactly_the_same_numbers(draw: str) -> None:
    """Random ops at new shapes take a bucketed stream (kernels/_streams.py): the same
    values as their own program, from one program per power of two."""
    ops = {"rand": lambda s: acg.rand(*s), "randn": lambda s: acg.randn(*s),
           "randint": lambda s: acg.randint(3, 17, s),
           "dropout": lambda s: F.dropout(acg.ones(*s), 0.4)}
    shapes = [(3, 5), (7,), (2, 3, 4), (61,), (5, 13)]
    with _Compiles() as c:
        host = []
        for s in shapes:
            acg.manual_seed(7)
            host.append(ops[draw](s).numpy())
    assert c.n <= 5 + 1  # five buckets (8..128) and the generator's key program at most
    with _xp.forced("xla"):
        for s, h in zip(shapes, host):
            acg.manual_seed(7)
            np.testing.assert_array_equal(h, ops[draw](s).numpy())


def test_errors_are_the_same_on_the_host() -> None:
    a, b = acg.ones(2, 313), acg.ones(3, 313)
    with _xp.forced("host"):
        with pytest.raises(RuntimeError, match=r"must match the size of tensor b \(3\)"):
            a + b
        with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dim"):
            acg.cat([a, acg.ones(2, 2)], 0)
        with pytest.raises(IndexError):
            acg.ones(2, 3)[5]


def test_numpy_warnings_stay_inside() -> None:
    with _xp.forced("host"):  # IEEE results, no RuntimeWarning (pytest makes them errors)
        out = acg.tensor([1.0, 0.0, -1.0]) / acg.zeros(3)
    assert np.isinf(out[0].item()) and np.isnan(out[1].item()) and np.isinf(out[2].item())


def test_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACG_HOST_TIER", "0")
    assert not _xp._enabled()
    monkeypatch.setenv("ACG_HOST_TIER", "1")
    assert _xp._enabled() == (jax.default_backend() == "cpu")


# -- whole programs: token-by-token generation, the sequence growing each step -----------------
class _TinyLM(nn.Module):
    def __init__(self, vocab: int = 11, width: int = 16, block: int = 32,
                 sdpa: bool = False) -> None:
        super().__init__()
        self.sdpa = sdpa  # nanoGPT's flash path: F.scaled_dot_product_attention
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(block, width)
        self.attn = nn.Linear(width, 3 * width)
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: acg.Tensor) -> acg.Tensor:
        t = idx.size(1)
        x = self.tok(idx) + self.pos(acg.arange(t, device=idx.device))  # nanoGPT reads the device
        q, k, v = self.attn(self.ln(x)).split(x.size(-1), dim=2)
        if self.sdpa:
            x = x + F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
            return self.head(F.gelu(x))
        att = (q @ k.transpose(-2, -1)) * 0.25
        att = att.masked_fill(acg.tril(acg.ones(t, t)) == 0, float("-inf"))
        x = x + F.softmax(att, dim=-1) @ v
        return self.head(F.gelu(x))


def _generate(model: object, idx: acg.Tensor, n: int) -> acg.Tensor:
    with acg.no_grad():
        for _ in range(n):
            logits = model(idx)[:, -1, :]
            idx = acg.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
    return idx


@pytest.mark.parametrize("sdpa", [False, True], ids=["matmul-softmax", "sdpa"])
@pytest.mark.parametrize("how", ["eager", "compile"])
def test_generation_grows_without_per_length_compiles(how: str, sdpa: bool) -> None:
    acg.manual_seed(0)
    model = _TinyLM(sdpa=sdpa)
    model.eval()
    prompt = acg.tensor([[1, 2, 3]])
    run = acg.compile(model) if how == "compile" else model
    acg.aot.counters.clear()
    with _Compiles() as c:  # first: the reference below compiles a program per length
        got = _generate(run, prompt, 9).tolist()
    with _xp.forced("xla"):
        want = _generate(model, prompt, 9).tolist()  # the reference: every op an XLA program
    assert got == want
    if how == "compile":
        # automatic dynamic: one retrace when the length first changes, never one per length;
        # lengths after the first run eagerly (a compile each would stall the loop)
        assert acg.aot.counters["traces"] <= 2
        assert acg.aot.counters["eager_runs"] == 0
        assert acg.aot.counters["eager_shapes"] >= 7
    assert c.n <= 6  # compiles bounded, not 9 lengths x every op


def test_shapes_run_op_by_op_keep_host_values_between_ops() -> None:
    """A compiled function at a shape not worth compiling yet runs its graph op by op on
    numpy: values stay numpy arrays between ops and in the results (no copy to a jax array
    and back per op), and an input returned as is comes back as the input's own array."""
    w = acg.randn(5)

    @acg.compile
    def f(x):
        return (x * w).softmax(-1) + 1, w
    for n in (2, 3):  # the first shape compiles, the second retraces with a dynamic size
        f(acg.randn(n, 5))
    acg.aot.counters.clear()
    x = acg.randn(7, 5)
    out, same = f(x)
    assert acg.aot.counters["eager_shapes"] == 1 and acg.aot.counters["compiles"] == 0
    assert type(out._store) is np.ndarray
    want = jax.nn.softmax(x.numpy() * w.numpy(), -1) + 1
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert np.array_equal(same.numpy(), w.numpy())


def test_attention_takes_the_host_only_where_no_gradient_flows() -> None:
    """Without a gradient, attention is the host-eligible twin (a new length compiles
    nothing); with one, forward and backward stay in XLA (the backward recomputes the
    probabilities against the forward's log-sum-exp, so both must come from one library)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 3, 7, 4)).astype(np.float32) for _ in range(3))
    before = _xp.STATS.copy()
    with acg.no_grad():
        fast = F.scaled_dot_product_attention(acg.tensor(q), acg.tensor(k), acg.tensor(v),
                                              is_causal=True)
    assert _xp.STATS["scaled_dot_product_attention_nograd"] == \
        before["scaled_dot_product_attention_nograd"] + 1
    leaves = [acg.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=True)
    assert _xp.STATS["scaled_dot_product_attention"] == before["scaled_dot_product_attention"]
    np.testing.assert_allclose(fast.numpy(), out.detach().numpy(), rtol=1e-5, atol=1e-6)

    def reference(q, k, v):
        s = jnp.where(jnp.tril(jnp.ones((7, 7), bool)), q @ jnp.swapaxes(k, -1, -2) / 2.0,
                      -jnp.inf)
        return (jax.nn.softmax(s, -1) @ v).sum()
    (out.sum()).backward()
    for leaf, want in zip(leaves, jax.grad(reference, argnums=(0, 1, 2))(q, k, v)):
        np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask,causal", [(None, False), ("bool", False), ("float", False),
                                         ("rows-masked", False), (None, True)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_host_attention_equals_the_xla_kernel(mask: str | None, causal: bool,
                                              dtype: str) -> None:
    """The numpy twin of no-grad attention (in-place on one scores buffer) against the
    jnp kernel XLA runs: outputs and log-sum-exp, fully masked rows (zeros, lse -inf) and
    a causal triangle over L != S included (PyTorch takes a mask or is_causal, not both)."""
    from autograd_compile.kernels import attention
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    k, v = (rng.standard_normal((2, 3, 7, 4)).astype(dtype) for _ in range(2))
    m = {None: None, "bool": rng.random((5, 7)) > 0.3,
         "float": rng.standard_normal((5, 7)).astype(dtype),
         "rows-masked": np.tile(np.arange(5)[:, None] != 2, (1, 7))}[mask]
    with acg.no_grad():
        args = [acg.tensor(a) for a in (q, k, v)] + [None if m is None else acg.tensor(m)]
        with _xp.forced("host"):
            got_out, got_lse = attention.sdpa_nograd(*args, is_causal=causal)
        with _xp.forced("xla"):
            want_out, want_lse = attention.sdpa_nograd(*args, is_causal=causal)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got_out.numpy(), want_out.numpy(), rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(got_lse.numpy(), want_lse.numpy(), rtol=tol * 10, atol=tol)
    assert got_out.dtype == want_out.dtype and got_lse.dtype == want_lse.dtype
    if mask == "rows-masked":
        assert not got_out.numpy()[:, :, 2].any() and np.isneginf(got_lse.numpy()[:, :, 2]).all()


def test_training_gradients_match_in_every_mode(mode: object) -> None:  # noqa: D103
    """A small step whose batch size changes (the last smaller batch) in all three modes:
    gradients equal jax.grad's, whichever tier ran each op."""
    acg.manual_seed(0)
    lin = nn.Linear(5, 3)
    w0, b0 = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    for batch in (8, 8, 3):
        x = np.linspace(-1, 1, batch * 5, dtype=np.float32).reshape(batch, 5)
        lin.zero_grad()
        with mode():
            F.gelu(lin(acg.tensor(x))).pow(2).mean().backward()

        def loss(w, b):
            return (jax.nn.gelu(x @ w.T + b, approximate=False) ** 2).mean()
        gw, gb = jax.grad(loss, argnums=(0, 1))(w0, b0)
        np.testing.assert_allclose(lin.weight.grad.numpy(), gw, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(lin.bias.grad.numpy(), gb, rtol=1e-5, atol=1e-6)


def test_results_never_share_a_buffer_with_an_input() -> None:
    """numpy's view of a jax buffer handed back to jax would be that very buffer: a program
    donating one array (optimizers, in-place write-back) would change the other."""
    x = acg.arange(12.0).reshape(3, 4)
    with _xp.forced("host"):
        outs = [x.view(12), x.transpose(0, 1), x[1:], acg.broadcast_to(x[0], (2, 4))]
    outs.append(acg.tensor(x.numpy()))
    ptr = x._data.unsafe_buffer_pointer()
    assert all(o._data.unsafe_buffer_pointer() != ptr for o in outs)


# -- host values: a tensor holds a host result as a numpy array --------------------------------
def test_host_results_stay_numpy_until_jax_reads_them() -> None:
    """A chain of small eager ops keeps numpy values; ``_data`` moves one to jax once and
    keeps it; the values equal the XLA tier's."""
    a = acg.tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4))
    chain = lambda: ((a * 2 + 1).relu() @ a.T).softmax(-1)[1:]  # noqa: E731
    out = chain()
    assert type(a._store) is np.ndarray and type(out._store) is np.ndarray
    assert not out._store.flags.writeable and not out.numpy().flags.writeable
    with _xp.forced("xla"):
        ref = chain()
    assert isinstance(ref._store, jax.Array)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    host = out.numpy()
    first = out._data
    assert isinstance(first, jax.Array) and out._data is first  # moved once, then kept
    np.testing.assert_array_equal(np.asarray(first), host)  # the same bits, now in jax


def test_a_host_value_is_the_tensors_own() -> None:
    """acg.tensor copies the caller's array; writing the caller's array or a view changes
    nothing in the tensor; in-place ops replace the value (views of the old one keep it)."""
    src = np.arange(6, dtype=np.float32)
    t = acg.tensor(src)
    src[0] = 100.0
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="read-only"):
        t.numpy()[1] = 7.0
    old = t[2:4]
    t.add_(1.0)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert old.tolist() == [2.0, 3.0]  # as before the write (our views do not see base writes)


def test_large_host_values_cross_once_before_a_program() -> None:
    """A host value over the host tier's size goes to jax once (kept on the tensor), not
    on every op that runs it as an XLA program."""
    value = np.zeros((700, 600), np.float32)  # 420k elements: an op on it compiles
    value.flags.writeable = False
    big = sys.modules["autograd_compile.tensor"]._make(value)  # a host value that size
    assert type(big._store) is np.ndarray
    y = big + 1.0
    assert isinstance(big._store, jax.Array) and isinstance(y._store, jax.Array)
    assert float(y.sum()) == 420000.0
    mid = acg.zeros(300, 300)  # 90k elements: numpy makes it and streams it (+ stays numpy)
    assert type(mid._store) is np.ndarray and type((mid + 1.0)._store) is np.ndarray
    p = F.softmax(mid, -1)  # a fused kernel that size is a program: mid crosses, once
    assert isinstance(mid._store, jax.Array) and isinstance(p._store, jax.Array)
    np.testing.assert_allclose(p.numpy(), np.full((300, 300), 1 / 300), rtol=1e-6)


def test_host_values_inside_compiled_code(mode: object) -> None:
    """A host value used as a constant by acg.compile and by compiled autograd (all three
    modes) gives eager's values and gradients."""
    mask = acg.tensor([[1.0, 0.0, 1.0]]) * 2  # a host value (a closure constant)
    w = acg.tensor([[0.5, -1.0, 2.0]], requires_grad=True)

    def f(x: acg.Tensor) -> acg.Tensor:
        return ((x * w + mask) ** 2).sum()
    x = acg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    eager = f(x)
    eager.backward()
    want = w.grad.numpy().copy()
    w.grad = None
    compiled = acg.compile(f)(x)
    with mode():
        compiled.backward()
    assert float(compiled) == float(eager)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)
    ref = jax.grad(lambda w_: (((np.asarray(x.numpy()) * w_ + mask.numpy()) ** 2).sum()))(
        np.array([[0.5, -1.0, 2.0]], np.float32))
    np.testing.assert_allclose(want, ref, rtol=1e-6)


def test_a_donated_parameter_never_clobbers_a_host_view() -> None:
    """A parameter whose value came from the host, read through a view, then updated by a
    whole-step program that donates its buffer: the view keeps its values."""
    lin = nn.Linear(4, 2)
    with acg.no_grad():
        lin.weight.copy_(acg.arange(8.0).reshape(2, 4) / 8)
    row = lin.weight.detach()[0]  # a view of the parameter's value
    before = row.tolist()
    opt = acg.optim.SGD(lin.parameters(), lr=0.5)

    @acg.compile(fullgraph=True)
    def step(x: acg.Tensor) -> acg.Tensor:
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    for _ in range(3):
        step(acg.ones(3, 4))
    assert row.tolist() == before
    assert lin.weight.detach()[0].tolist() != before


def test_operators_on_plain_host_tensors_skip_the_dispatcher() -> None:
    """+, -, * and comparisons of plain host tensors are numpy's own (no kernel call), with
    PyTorch's dtypes; anything with autograd history, a promotion or a mode takes the op."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64, np.int64, np.int32, np.uint8):
        a = (rng.standard_normal((3, 4)) * 5).astype(dt)
        b = (rng.standard_normal(4) * 5).astype(dt)
        for f in (lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
                  lambda x, y: x == y, lambda x, y: x < y, lambda x, y: x >= y,
                  lambda x, y: 2 - x, lambda x, y: x * 3, lambda x, y: x[0, 0] * y):
            ours, theirs = f(acg.tensor(a), acg.tensor(b)), f(torch.tensor(a), torch.tensor(b))
            assert str(ours.dtype) == str(theirs.dtype)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x, y = acg.tensor(a.astype(np.float32)), acg.tensor(b.astype(np.float32))
    before = _xp.STATS["mul_Tensor"]
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.runcall(lambda: (x * y, x + 0.5, x < y))
    calls = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    assert not any(f.endswith("kernels/_jit.py") for (f, _, _) in calls)
    assert _xp.STATS["mul_Tensor"] == before + 1
    assert (acg.tensor([1, 2]) * 0.5).dtype == acg.float32  # a promotion: the op path
    w = acg.tensor([1.0, 2.0], requires_grad=True)
    (w * acg.tensor([3.0, 4.0])).sum().backward()  # autograd history: the op path
    assert w.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="must match the size"):
        acg.ones(3) + acg.ones(4)  # numpy's broadcasting error becomes PyTorch's


def test_operators_with_autograd_history_record_the_ops_node(mode: object) -> None:
    """+, -, * of host tensors with autograd history are numpy's, without the dispatcher,
    and record the node the op's Autograd kernel records: same names, gradients (against
    jax.grad), tensor hooks and their order, in all three modes."""
    import cProfile
    import pstats
    rng = np.random.default_rng(7)
    a0, b0 = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(
        np.float32)

    def program(a: acg.Tensor, b: acg.Tensor) -> acg.Tensor:
        h = a * b - 0.5  # broadcasting, a scalar
        h = 2.0 * h + b  # reflected
        return (1 - h) * h

    calls: list[str] = []
    a, b = acg.tensor(a0, requires_grad=True), acg.tensor(b0, requires_grad=True)
    prof = cProfile.Profile()
    out = prof.runcall(program, a, b)
    ran = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    assert not any(f.endswith("kernels/_jit.py") or (f.endswith("dispatcher.py") and fn == "_run")
                   for (f, _, fn) in ran)  # no kernel, no dispatch
    assert out.grad_fn.name() == "MulBackward0"
    with _xp.forced("xla"):  # the op path: the same graph, node by node
        slow = program(a, b)
    assert [n.name() for n, _ in slow.grad_fn.next_functions] == \
        [n.name() for n, _ in out.grad_fn.next_functions]
    np.testing.assert_allclose(out.detach().numpy(), slow.detach().numpy(), rtol=1e-6)
    a.register_hook(lambda g: calls.append("a") or g * 2)
    b.register_hook(lambda g: calls.append("b"))
    with mode():
        out.sum().backward()

    def reference(a, b):
        h = 2.0 * (a * b - 0.5) + b
        return ((1 - h) * h).sum()
    ga, gb = jax.grad(reference, argnums=(0, 1))(a0, b0)
    np.testing.assert_allclose(a.grad.numpy(), 2 * ga, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), gb, rtol=1e-5, atol=1e-6)
    a.grad = b.grad = None
    with _xp.forced("xla"):
        slow_calls = len(calls)
        slow.sum().backward()
    assert calls[slow_calls:] == calls[:slow_calls]  # the same hooks, in the same order
    np.testing.assert_allclose(a.grad.numpy(), 2 * ga, rtol=1e-5, atol=1e-6)
    with acg.no_grad():
        assert (a * b).grad_fn is None and not (a * b).requires_grad


def test_unary_ops_on_host_values_skip_the_dispatcher(mode: object) -> None:
    """tanh, sigmoid, exp, relu... of a plain float host value run the op's own numpy kernel
    directly (the same bits as the op path) and record the op's node: gradients against
    jax.grad in all three modes; other dtypes take the op path, with its dtype."""
    import cProfile
    import pstats
    x0 = np.linspace(-2, 2, 12).reshape(3, 4)  # float64: gradients checked closely

    def program(x: acg.Tensor) -> acg.Tensor:
        return (x.tanh() * x.sigmoid() + F.relu(x) + x.abs().sqrt() + acg.exp(x).log()).sum()

    x = acg.tensor(x0, requires_grad=True)
    prof = cProfile.Profile()
    prof.runcall(lambda: [x.tanh(), x.sigmoid(), F.relu(x), x.abs().sqrt(), acg.exp(x).log()])
    ran = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    assert not any(f.endswith("kernels/_jit.py") or (f.endswith("dispatcher.py") and fn == "_run")
                   for (f, _, fn) in ran)  # no kernel, no dispatch
    out = program(x)
    with _xp.forced("xla"):
        slow = program(acg.tensor(x0))
    assert x.tanh().grad_fn.name() == "TanhBackward0"
    np.testing.assert_allclose(out.item(), slow.item(), rtol=1e-12)
    with mode():
        out.backward()

    def reference(v):
        return (jnp.tanh(v) * jax.nn.sigmoid(v) + jax.nn.relu(v) + jnp.sqrt(jnp.abs(v))
                + v).sum()
    want = jax.grad(reference)(jnp.asarray(x0))  # (acg runs jax with x64 on)
    assert want.dtype == jnp.float64
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(want), rtol=1e-10)
    ints = acg.tensor([1, 2, 3])
    assert ints.tanh().dtype == acg.float32 and ints.neg().dtype == acg.int64  # the op path


def test_joins_of_plain_host_tensors_are_numpys() -> None:
    """cat/stack of plain host tensors of one dtype are numpy's joins (no kernel call), with
    PyTorch's shapes; mixed dtypes, autograd history and bad shapes take the op."""
    import cProfile
    import pstats
    a, b = acg.tensor(np.arange(6.0).reshape(2, 3)), acg.ones(2, 3, dtype=acg.float64)
    prof = cProfile.Profile()
    outs = prof.runcall(lambda: [acg.cat([a, b], -1), acg.stack([a, b], 1), a[1]])
    assert not any(f.endswith("kernels/_jit.py") for (f, _, _) in pstats.Stats(prof).stats)
    np.testing.assert_array_equal(outs[0].numpy(), np.concatenate([a.numpy(), b.numpy()], -1))
    np.testing.assert_array_equal(outs[1].numpy(), np.stack([a.numpy(), b.numpy()], 1))
    assert outs[2].tolist() == [3.0, 4.0, 5.0]
    assert acg.cat([a, acg.tensor([[1, 2, 3]])]).dtype == acg.float64  # promotion: the op
    w = acg.ones(3, requires_grad=True)
    acg.stack([w, w * 2]).sum().backward()  # autograd history: the op, with its backward
    assert w.grad.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        acg.stack([a, b[0]])


def test_argmax_of_host_values_is_numpys() -> None:
    """argmax/argmin of host values: numpy's first-of-ties (NaN counts as the max, as in
    PyTorch), int64, every dim/keepdim form, no kernel call; bad dims take the op's error."""
    torch = pytest.importorskip("torch")
    import cProfile
    import pstats
    rng = np.random.default_rng(5)
    values = [rng.standard_normal((3, 4)).astype(np.float32), rng.integers(0, 3, (2, 3, 4)),
              np.array([1.0, np.nan, 3.0, np.nan], np.float32)]
    forms = [lambda t: t.argmax(), lambda t: t.argmin(), lambda t: t.argmax(-1),
             lambda t: t.argmin(0, keepdim=True), lambda t: t.argmax(keepdim=True)]
    for v in values:
        for f in forms:
            ours, theirs = f(acg.tensor(v)), f(torch.tensor(v))
            assert ours.dtype == acg.int64 and tuple(ours.shape) == tuple(theirs.shape)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = acg.tensor(values[0], requires_grad=True)  # no gradient either way: numpy's too
    prof = cProfile.Profile()
    out = prof.runcall(lambda: x.argmax(1))
    assert not any(f.endswith("kernels/_jit.py") for (f, _, _) in pstats.Stats(prof).stats)
    assert out.grad_fn is None and not out.requires_grad
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.argmax(2)


def test_integer_powers_multiply_as_xla_does() -> None:
    """``x ** n`` on the host is repeated squaring, XLA's integer_pow (numpy's own pow is
    libm's: other bits, and ~250x slower); the same bits on both tiers."""
    x = acg.tensor(np.random.default_rng(0).standard_normal(300).astype(np.float32))
    for n in range(-4, 9):
        with _xp.forced("host"):
            host = x.pow(n)
        with _xp.forced("xla"):
            xla = x.pow(n)
        assert type(host._store) is np.ndarray and isinstance(xla._store, jax.Array)
        assert np.array_equal(host.numpy(), xla.numpy(), equal_nan=True), n


@pytest.mark.parametrize("exponent", [2.0, 3.0, -1.0, -2.0, 2.5])
def test_float_exponents_pytorch_multiplies(mode: object, exponent: float) -> None:
    """pow by 2.0, 3.0, -1.0, -2.0 multiplies (PyTorch's optimized scalar kernel: its bits),
    others are the general pow; values and gradients against jax in every mode."""
    x0 = np.random.default_rng(1).uniform(0.5, 2.0, (4, 5)).astype(np.float32)
    x = acg.tensor(x0, requires_grad=True)
    y = acg.pow(x, exponent)
    assert y.dtype == acg.float32
    with mode():
        (y * y.detach()).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), x0 ** exponent, rtol=2e-7)
    want = jax.grad(lambda v: (v ** exponent * jax.lax.stop_gradient(v ** exponent)).sum())(x0)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    if exponent in (2.0, 3.0, -1.0, -2.0):
        p = x0
        for _ in range(int(abs(exponent)) - 1):
            p = p * x0
        assert np.array_equal(y.detach().numpy(), p if exponent > 0 else np.float32(1) / p)


def test_views_of_plain_host_tensors_are_numpy_views(mode: object) -> None:
    """reshape/view/transpose/permute/unsqueeze of a plain host value are numpy views sharing
    its (read-only) memory, as PyTorch's views share storage, without the dispatcher; they
    record the op's node: gradients against jax.grad in all three modes; bad arguments raise
    the op's PyTorch errors; an in-place op through such a view still writes its base."""
    import cProfile
    import pstats
    x0 = np.linspace(-2, 2, 24).reshape(2, 3, 4)  # float64: gradients checked closely

    def views(x: acg.Tensor) -> list:
        return [x.reshape(6, 4), x.view(-1), x.transpose(0, 2), x.permute(2, 0, 1),
                x.unsqueeze(1), x.flatten(1), x.mT, acg.swapaxes(x, -1, 0)]

    x = acg.tensor(x0, requires_grad=True)
    prof = cProfile.Profile()
    outs = prof.runcall(views, x)
    ran = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    assert not any(f.endswith("kernels/_jit.py") or (f.endswith("dispatcher.py") and fn == "_run")
                   for (f, _, fn) in ran)  # no kernel, no dispatch
    with acg.no_grad():
        shared = views(acg.tensor(x0))
    base = shared[0]._base_meta[0]._store
    assert all(np.shares_memory(v._store, base) for v in shared)
    assert not any(v._store.flags.writeable for v in shared)
    with _xp.forced("xla"):
        slow = views(acg.tensor(x0, requires_grad=True))
    for fast, ref in zip(outs, slow):
        assert fast.shape == ref.shape and fast.grad_fn.name() == ref.grad_fn.name()
        np.testing.assert_array_equal(fast.detach().numpy(), ref.detach().numpy())
    w = np.arange(1.0, 25.0)
    order: list[str] = []
    outs[0].register_hook(lambda g: order.append("reshape"))
    outs[3].register_hook(lambda g: order.append("permute"))
    loss = sum((v.reshape(-1) * acg.tensor(w)).sum() for v in outs)
    with mode():
        loss.backward()

    def reference(v):
        ws = jnp.asarray(w)
        parts = [v.reshape(6, 4), v.reshape(-1), v.transpose(2, 1, 0), v.transpose(2, 0, 1),
                 v[:, None], v.reshape(2, 12), jnp.swapaxes(v, -1, -2), jnp.swapaxes(v, -1, 0)]
        return sum((p.reshape(-1) * ws).sum() for p in parts)
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(jax.grad(reference)(jnp.asarray(x0))),
                               rtol=1e-12)
    assert sorted(order) == ["permute", "reshape"]
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        acg.tensor(x0).reshape(5, 5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        acg.tensor(x0).transpose(0, 3)
    with pytest.raises(RuntimeError, match="number of dimensions in the tensor input does not"):
        acg.tensor(x0).permute(0, 1)
    y = acg.tensor(x0)
    y.view(-1)[:4].zero_()  # through a fast-path view, into its base
    assert y.flatten()[:5].tolist() == [0.0, 0.0, 0.0, 0.0, float(x0.flat[4])]


@pytest.mark.parametrize("n", [27, 64, 65])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_short_row_reductions_equal_numpys(dtype: type, n: int) -> None:
    """Over a short last axis the host's sum (a matvec), max and min (over the transposed
    copy, for rows of up to 64), mean, softmax and log_softmax equal numpy's own reductions,
    of contiguous arrays and of a transposed view; NaN and inf propagate as there; other
    axes and long rows keep numpy's path."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8, n)).astype(dtype)
    x[3, 2, 5], x[7, 1, 0], x[9, 0, 3] = np.nan, np.inf, -np.inf
    tol = dict(rtol=1e-5 if dtype == np.float32 else 1e-12, atol=0)
    t = acg.tensor(x)
    with _xp.forced("host"):
        got = {"sum": t.sum(-1), "sumk": t.sum(2, keepdim=True), "max": t.amax(-1),
               "min": t.amin(-1, keepdim=True), "mean": t.mean(-1), "sum0": t.sum(0),
               "softmax": t.softmax(-1), "log_softmax": t.log_softmax(-1),
               "maxT": t.transpose(0, 1).amax(-1), "minT": t.transpose(0, 1).amin(-1)}
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(-1, keepdims=True))
        want = {"sum": x.sum(-1), "sumk": x.sum(2, keepdims=True), "max": x.max(-1),
                "min": x.min(-1, keepdims=True), "mean": x.mean(-1), "sum0": x.sum(0),
                "maxT": x.transpose(1, 0, 2).max(-1), "minT": x.transpose(1, 0, 2).min(-1),
                "softmax": e / e.sum(-1, keepdims=True),
                "log_softmax": x - x.max(-1, keepdims=True)
                - np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True))}
    for k in want:
        assert got[k].dtype == acg.tensor(want[k]).dtype, k
        np.testing.assert_allclose(got[k].numpy(), want[k], **tol, err_msg=k)


def test_compiled_backward_reads_host_saved_values_without_moving_them() -> None:
    """A cached compiled backward takes shapes and dtypes of host-tier saved values from
    the numpy arrays themselves (the program call moves them, not the cache lookup); the
    same graph with a saved value already on the device hits the same program; gradients
    equal eager's."""
    from autograd_compile.compiled_autograd import counters
    rng = np.random.default_rng(3)
    x0, w0 = rng.standard_normal((4, 6)).astype(np.float32), rng.standard_normal((6, 5))
    w0 = w0.astype(np.float32)

    def grads(compiled: bool, move: bool) -> tuple[np.ndarray, np.ndarray, object]:
        x, w = acg.tensor(x0, requires_grad=True), acg.tensor(w0, requires_grad=True)
        h = (x @ w).tanh()  # saved by the product below: a host value
        assert type(h._store) is np.ndarray
        if move:
            h.__jax_array__()  # now a device value: the same key
        ctx = acg.compiled_autograd.enable("jax") if compiled else _nullcontext()
        with ctx:
            (h * h).mean().backward()
        return x.grad.numpy(), w.grad.numpy(), type(h._store)

    want = grads(False, False)
    acg.compiled_autograd.reset()
    for step in range(4):
        got = grads(True, False)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-7)
        assert got[2] is np.ndarray or not step  # a hit's lookup did not move it
    moved = grads(True, True)
    np.testing.assert_allclose(moved[0], want[0], rtol=1e-6, atol=1e-7)
    assert counters["captures"] == 1 and counters["cache_hits"] == 4


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _ran(fn: object, *args: object) -> tuple[object, set]:
    """``fn(*args)`` and the (file, function) pairs it ran, from cProfile."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    out = prof.runcall(fn, *args)
    return out, {(f, name) for (f, _, name) in pstats.Stats(prof).stats}  # type: ignore


def _dispatched(ran: set) -> bool:
    return any(f.endswith("kernels/_jit.py") or (f.endswith("dispatcher.py") and fn == "_run")
               for f, fn in ran)


def test_split_and_chunk_of_plain_host_tensors_are_numpy_views(mode: object) -> None:
    """split/chunk of a plain host value are numpy slices sharing its read-only memory,
    without the dispatcher; with history they record split_with_sizes' node (gradients
    against jax.grad in every mode, hooks on the pieces run); bad sizes and dims raise the
    op's PyTorch errors; an in-place write through a piece reaches the base."""
    x0 = np.linspace(-2, 2, 42).reshape(2, 3, 7)

    def pieces(x: acg.Tensor) -> list:
        return [*x.split(3, 2), *x.split([1, 2], 1), *x.chunk(2, 0), *acg.split(x, 4, -1)]

    x = acg.tensor(x0, requires_grad=True)
    outs, ran = _ran(pieces, x)
    assert not _dispatched(ran)
    with acg.no_grad():
        shared = pieces(acg.tensor(x0))
    assert all(np.shares_memory(p._store, shared[0]._store.base) for p in shared)
    assert not any(p._store.flags.writeable for p in shared)
    with _xp.forced("xla"):
        slow = pieces(acg.tensor(x0, requires_grad=True))
    for fast, ref in zip(outs, slow, strict=True):
        assert fast.shape == ref.shape and fast.grad_fn.name() == ref.grad_fn.name()
        np.testing.assert_array_equal(fast.detach().numpy(), ref.detach().numpy())
    seen: list[int] = []
    outs[1].register_hook(lambda g: seen.append(1))
    outs[4].register_hook(lambda g: seen.append(4))
    with mode():
        sum((p * (i + 1)).pow(2).sum() for i, p in enumerate(outs)).backward()

    def reference(v):
        parts = [v[..., :3], v[..., 3:6], v[..., 6:], v[:, :1], v[:, 1:], v[:1], v[1:],
                 v[..., :4], v[..., 4:]]
        return sum(((p * (i + 1)) ** 2).sum() for i, p in enumerate(parts))
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(jax.grad(reference)(jnp.asarray(x0))),
                               rtol=1e-12)
    assert sorted(seen) == [1, 4]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly"):
        acg.tensor(x0).split([2, 2], 2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        acg.tensor(x0).split(2, 3)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative"):
        acg.tensor(x0).split(-1, 2)
    assert acg.zeros(0).split([]) == ()  # no sizes for an empty dim: no pieces, as PyTorch
    y = acg.tensor(x0)
    y.split(3, 2)[1].zero_()  # through a fast-path piece, into its base
    assert y[0, 0].tolist() == [float(x0[0, 0, 0]), float(x0[0, 0, 1]), float(x0[0, 0, 2]),
                                0.0, 0.0, 0.0, float(x0[0, 0, 6])]


def test_host_erf_is_xlas_formula() -> None:
    """float32 erf (and so exact gelu) on the host evaluates XLA's own rational
    approximation: within 6e-7 of XLA's at every float32 in [-6, 6], bit-equal on about
    half of them (XLA fuses multiply-adds), NaN, +-inf and +-0 alike; float64 stays on XLA
    (numpy has no full-precision erf)."""
    x0 = np.concatenate([np.linspace(-6, 6, 200_001, dtype=np.float32),
                         np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 3.7, -4.0])])
    x = acg.tensor(x0)
    with _xp.forced("host"):
        host = [x.erf(), F.gelu(x)]
    with _xp.forced("xla"):
        xla = [x.erf(), F.gelu(x)]
    assert all(type(h._store) is np.ndarray for h in host)
    for h, r, atol in zip(host, xla, (6e-7, 2e-6)):  # (gelu's 1 + erf cancels near -1)
        h, r = h.numpy(), r.numpy()
        assert h.dtype == r.dtype == np.float32
        np.testing.assert_allclose(h, r, rtol=0, atol=atol, equal_nan=True)
    assert np.mean(host[0].numpy() == xla[0].numpy()) > 0.4
    assert np.array_equal(host[0].numpy()[-8:-3], xla[0].numpy()[-8:-3], equal_nan=True)
    np.testing.assert_allclose(host[0].numpy(), jax.scipy.special.erf(x0.astype(np.float64)),
                               rtol=0, atol=1e-6)  # and true erf, to float32's rounding
    with _xp.forced("host"):
        d = acg.tensor(x0[:50].astype(np.float64)).erf()
    assert isinstance(d._store, jax.Array)


def test_host_causal_attention_masks_as_xla() -> None:
    """The host's causal attention masks with a cached read-only mask per length: each
    length equals XLA's, and a NaN in a future key never reaches an earlier row (the row
    that reads it is NaN in PyTorch; XLA's kernel zeroes such a row, a known difference)."""
    from autograd_compile.kernels import attention
    rng = np.random.default_rng(5)
    for n in (3, 9, 9, 17):
        q, k, v = (rng.standard_normal((1, 2, n, 4)).astype(np.float32) for _ in range(3))
        k[0, 1, -1, 2] = np.nan  # the last position's key: only the last row reads it
        args = [acg.tensor(a) for a in (q, k, v)]
        with acg.no_grad(), _xp.forced("host"):
            host = F.scaled_dot_product_attention(*args, is_causal=True).numpy()
        with acg.no_grad(), _xp.forced("xla"):
            xla = F.scaled_dot_product_attention(*args, is_causal=True).numpy()
        np.testing.assert_allclose(host[..., :-1, :], xla[..., :-1, :], rtol=1e-5, atol=1e-6)
        assert np.isfinite(host[..., :-1, :]).all()
    mask = attention._above(9, 9)
    assert mask is attention._above(9, 9) and not mask.flags.writeable
    assert np.array_equal(mask, np.triu(np.ones((9, 9), bool), 1))


def test_generator_keys_are_host_values_jax_reads_alike() -> None:
    """A random op's key is a read-only host value (no jax array made per draw); draws equal
    jax.random's from that key data, eagerly and in a compiled function."""
    from autograd_compile.kernels.random import default_generator
    acg.manual_seed(11)
    key = default_generator.next_key()
    assert type(key._store) is np.ndarray and key._store.dtype == np.uint32
    assert not key._store.flags.writeable
    acg.manual_seed(11)
    got = acg.rand(6)
    want = jax.random.uniform(jax.random.wrap_key_data(jnp.asarray(key._store)), (6,),
                              np.float32)
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))
    acg.manual_seed(11)
    compiled = acg.compile(lambda x: x + acg.rand(6))(acg.zeros(6))
    np.testing.assert_array_equal(compiled.numpy(), np.asarray(want))


def test_cat_reads_small_program_results_on_the_host() -> None:
    """cat of a host value and a small jax CPU result (a sampled token beside the prompt)
    joins on numpy, without the dispatcher: the values, dtype and a host result."""
    idx = acg.tensor(np.arange(6).reshape(1, 6))
    with _xp.forced("xla"):
        drawn = acg.tensor([[7]]) + 0  # an XLA program's result
    assert isinstance(drawn._store, jax.Array)
    out, ran = _ran(lambda: acg.cat((idx, drawn), dim=1))
    assert not _dispatched(ran) and type(out._store) is np.ndarray
    assert out.tolist() == [[0, 1, 2, 3, 4, 5, 7]] and out.dtype == acg.int64


def test_op_by_op_runs_move_data_on_numpy_and_keep_composites_on_the_host() -> None:
    """A compiled function at a shape run op by op: views, transposes and splits read numpy
    slices directly and * and + of one dtype are numpy's operators (no kernel call), a
    composite op (split.Tensor) keeps host values (no transfer to a jax array), and the
    results are eager's, bit for bit."""
    w = acg.randn(6)

    def f(x):
        a, b = (x * w).view(x.shape[0], 2, 3).transpose(1, 2).split(2, 1)
        return a.reshape(x.shape[0], -1) + 1, b.softmax(1)
    cf = acg.compile(f)
    for n in (2, 3):  # the first shape compiles, the second retraces with a dynamic size
        cf(acg.randn(n, 6))
    acg.aot.counters.clear()
    x = acg.randn(5, 6)
    x._data  # the input on the device already, as a program's input is: nothing else moves
    outs, ran = _ran(cf, x)
    assert acg.aot.counters["eager_shapes"] == 1 and acg.aot.counters["compiles"] == 0
    assert not any(f.endswith("kernels/_transfer.py") for f, _ in ran)  # nothing moved
    assert all(type(o._store) is np.ndarray for o in outs)
    for got, want in zip(outs, f(x), strict=True):  # the same numpy kernels: the same bits
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_host_layer_norm_twin_equals_the_formula(dtype: type) -> None:
    """layer_norm's numpy twin (one centred buffer, BLAS row sums) equals the textbook
    formula over one or two trailing dims, with and without affine, on a transposed view;
    XLA's kernel agrees to the dtype's rounding."""
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((6, 5, 4, 3)).astype(dtype).transpose(0, 2, 1, 3)  # a view
    w0, b0 = rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for shape, w, b in (((3,), None, None), ((5, 3), w0, b0), ((5, 3), w0, None)):
        axes = tuple(range(4 - len(shape), 4))
        mu = x0.mean(axes, keepdims=True)
        want = (x0 - mu) / np.sqrt(((x0 - mu) ** 2).mean(axes, keepdims=True) + 1e-5)
        want = want * (1 if w is None else w) + (0 if b is None else b)
        args = [None if a is None else acg.tensor(a) for a in (w, b)]
        with _xp.forced("host"):
            host = F.layer_norm(acg.tensor(x0), shape, *args)
        with _xp.forced("xla"):
            xla = F.layer_norm(acg.tensor(x0), shape, *args)
        assert type(host._store) is np.ndarray and host.dtype == xla.dtype
        np.testing.assert_allclose(host.numpy(), want.astype(dtype), **tol)
        np.testing.assert_allclose(host.numpy(), xla.numpy(), **tol)


def test_matmul_tier_is_chosen_by_its_multiply_adds() -> None:
    """matmul's host cost counts multiply-adds and output, not input elements: attention's
    batch of small products (32x4 of 16x16x16, 65k input elements) runs on numpy without
    compiling, an outer product writing 1M elements gets its program; both equal XLA's."""
    rng = np.random.default_rng(4)
    a, b = (acg.tensor(rng.standard_normal((32, 4, 16, 16)).astype(np.float32)) for _ in "ab")
    u, v = acg.tensor(rng.standard_normal((1000, 1))), acg.tensor(rng.standard_normal((1, 1000)))
    with _Compiles() as c:
        small = a @ b
    assert c.n == 0 and type(small._store) is np.ndarray
    big = u @ v
    assert isinstance(big._store, jax.Array)
    with _xp.forced("xla"):
        want = a @ b
    np.testing.assert_allclose(small.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(big.numpy(), u.numpy() @ v.numpy(), rtol=1e-12)
