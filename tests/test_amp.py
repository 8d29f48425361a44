"""acg.amp: autocast (dtypes per op table, gradients, nesting, tracing) and GradScaler."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.kernels import _xp
from autograd_compile.amp import autocast_mode
from autograd_compile.amp.policy import policy_of
from conftest import ExecMode, assert_close

F = acg.nn.functional
BF16, F16, F32 = np.dtype(jnp.bfloat16), np.dtype(jnp.float16), np.dtype(jnp.float32)
RNG = np.random.default_rng(0)
NO_GPU = not acg.cuda.is_available()


def _randn(*shape: int, dtype: str = "float32") -> acg.Tensor:
    return acg.tensor(RNG.standard_normal(shape).astype(dtype))


def _f32(t: acg.Tensor) -> np.ndarray:
    return np.asarray(t.float().detach().numpy())


# -- op tables: output dtypes ---------------------------------------------------------------
A, B, X3 = _randn(3, 4), _randn(4, 5), _randn(2, 3, 4)
LOWER_CASES = {  # ops on the CPU lower-precision list, fed float32: (op, inputs)
    "mm": (acg.mm, (A, B)),
    "matmul": (acg.matmul, (X3, B)),
    "bmm": (acg.bmm, (X3, _randn(2, 4, 5))),
    "linear": (F.linear, (A, B.T.contiguous(), _randn(5))),
    "einsum": (lambda a, b: acg.einsum("ij,jk->ik", a, b), (A, B)),
    "conv2d": (F.conv2d, (_randn(1, 2, 5, 5), _randn(3, 2, 3, 3), _randn(3))),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             (X3, X3 * 0.5, X3 * 2)),
}


@pytest.mark.parametrize("name", sorted(LOWER_CASES))
def test_lower_precision_ops_run_in_bfloat16_on_cast_inputs(name: str) -> None:
    op, inputs = LOWER_CASES[name]
    with acg.autocast("cpu"):
        out = op(*inputs)
    assert op(*inputs).dtype == F32 and out.dtype == BF16
    # autocast casts the inputs: the result is exactly the op on bfloat16 inputs
    np.testing.assert_array_equal(_f32(out), _f32(op(*(t.bfloat16() for t in inputs))))


def test_mm_under_autocast_is_the_bfloat16_product() -> None:
    with acg.autocast("cpu"):
        out = acg.mm(A, B)
    expected = jnp.matmul(jnp.asarray(A).astype(jnp.bfloat16), jnp.asarray(B).astype(jnp.bfloat16))
    np.testing.assert_array_equal(np.asarray(out.detach().numpy()), np.asarray(expected))


H = _randn(3, 5).bfloat16()  # bfloat16 activations and targets
H2, P = (_randn(3, 5) * 2).bfloat16(), (_randn(3, 5) * 0.1 + 1).bfloat16()
FP32_CASES = {  # ops on the CPU float32 list, fed bfloat16: (op, inputs)
    "mse_loss": (F.mse_loss, (H, H2)),
    "l1_loss": (F.l1_loss, (H, H2)),
    "smooth_l1_loss": (F.smooth_l1_loss, (H, H2)),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, (H, H2.sigmoid())),
    "cross_entropy": (F.cross_entropy, (H, acg.tensor([0, 4, 2]))),
    "nll_loss": (F.nll_loss, (H, acg.tensor([1, 0, 3]))),
    "prod": (acg.prod, (P,)),
}


@pytest.mark.parametrize("name", sorted(FP32_CASES))
def test_float32_ops_run_in_float32_on_the_upcast_inputs(name: str) -> None:
    op, inputs = FP32_CASES[name]
    with acg.autocast("cpu"):
        out = op(*inputs)
    assert op(*inputs).dtype == BF16 and out.dtype == F32
    upcast = [t.float() if t.dtype == BF16 else t for t in inputs]
    assert_close(out.detach().numpy(), op(*upcast).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_other_ops_keep_their_types_and_ineligible_inputs_are_not_cast() -> None:
    x64, ints = _randn(3, 4, dtype="float64"), acg.tensor([1, 2, 3])
    with acg.autocast("cpu"):
        assert (H.relu().dtype, H.softmax(-1).dtype, H.sum().dtype) == (BF16,) * 3  # CPU list
        assert (H + A[:, :1].expand(3, 5)).dtype == F32  # type promotion, not autocast
        assert acg.mm(x64, B.double()).dtype == np.dtype("float64")  # float64: not eligible
        assert (ints * 2).dtype == np.dtype("int64")
        assert acg.cat([H, A[:, :1].expand(3, 5)]).dtype == F32  # promote: the widest
        assert acg.cat([H, H]).dtype == BF16
        # mixed types, as PyTorch's CPU kernels: float32 parameters, the input's dtype out
        assert F.layer_norm(H, (5,), acg.ones(5), acg.zeros(5)).dtype == BF16


NORMS = {"LayerNorm": lambda nn: nn.LayerNorm(6), "RMSNorm": lambda nn: nn.RMSNorm(6, eps=1e-6),
         "BatchNorm2d": lambda nn: nn.BatchNorm2d(4), "BatchNorm2d-eval":
         lambda nn: nn.BatchNorm2d(4).eval(), "GroupNorm": lambda nn: nn.GroupNorm(2, 4),
         "InstanceNorm2d": lambda nn: nn.InstanceNorm2d(4, affine=True)}


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # torch's rms_norm
@pytest.mark.parametrize("name", sorted(NORMS))
@pytest.mark.parametrize("autocast", [False, True], ids=["bf16-input", "autocast"])
def test_norm_layers_take_a_bf16_input_with_float32_parameters(mode, name, autocast):
    """A bf16 activation through a float32 model's norm layer (after ``x.bfloat16()`` or
    inside CPU autocast): the result is bfloat16, computed in float32 and rounded once,
    the parameters' gradients float32, as PyTorch's mixed-type CPU kernels."""
    x0 = np.random.default_rng(0).standard_normal((2, 4, 3, 6)).astype(np.float32)
    layer = NORMS[name](acg.nn)
    with acg.no_grad():
        for p in layer.parameters():
            p.copy_(acg.tensor(np.random.default_rng(1).uniform(0.5, 1.5, p.shape)))
    x = acg.tensor(x0).to(acg.bfloat16).requires_grad_()
    with acg.autocast("cpu", enabled=autocast):
        y = layer(x)
    assert y.dtype == acg.bfloat16
    with mode():
        y.float().square().sum().backward()
    assert x.grad.dtype == acg.bfloat16
    assert all(p.grad.dtype == acg.float32 for p in layer.parameters())
    ref = NORMS[name](acg.nn)  # oracle: the same layer in float32 on the bf16 values
    ref.load_state_dict(layer.state_dict())
    xr = acg.tensor(x.detach().float().numpy(), requires_grad=True)
    yr = ref(xr)
    yr.bfloat16().float().square().sum().backward()
    assert_close(y.float().detach(), yr.bfloat16().float().detach(), rtol=0, atol=0)
    for p, q in zip(layer.parameters(), ref.parameters()):
        assert_close(p.grad, q.grad, rtol=2e-2, atol=2e-2)
    torch = pytest.importorskip("torch")
    theirs = NORMS[name](torch.nn)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in layer.state_dict().items()})
    with torch.autocast("cpu", enabled=autocast):
        yt = theirs(torch.tensor(x0).bfloat16())
    assert yt.dtype == torch.bfloat16
    assert_close(y.float().detach(), yt.float().detach(), rtol=1e-2, atol=1e-2)


# -- CUDA's table, run on this machine by treating its tensors as "cuda" ---------------------
@pytest.fixture
def as_if_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUDA autocast without a GPU: every tensor counts as a "cuda" tensor."""
    monkeypatch.setattr(autocast_mode, "gpu_count", lambda: 1)
    monkeypatch.setattr(autocast_mode, "_tensor_device_type", lambda t: "cuda")


def test_cuda_table_float16_and_float32_ops(as_if_cuda: None) -> None:
    with acg.autocast("cuda"):
        mm, lin = acg.mm(A, B), F.linear(A, B.T)
        h = mm.tanh()  # not listed: float16 stays
        sm, ls, ln = h.softmax(-1), h.log_softmax(-1), F.layer_norm(h, (5,))
        ex, sm_explicit, total = h.exp(), h.softmax(-1, dtype=acg.float16), h.sum()
    assert (mm.dtype, lin.dtype, h.dtype) == (F16, F16, F16)
    assert (sm.dtype, ls.dtype, ln.dtype, ex.dtype, total.dtype) == (F32,) * 5
    assert sm_explicit.dtype == F16  # an explicit dtype= is respected (fp32_set_opt_dtype)
    assert_close(sm.detach().numpy(), h.float().softmax(-1).detach().numpy())
    assert policy_of("cuda", "softmax.int") == "fp32_set_opt_dtype"
    assert policy_of("cpu", "softmax.int") is None


def test_cuda_bans_binary_cross_entropy(as_if_cuda: None) -> None:
    p = _randn(4).sigmoid()
    with acg.autocast("cuda"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p.detach())
    F.binary_cross_entropy(p, p.detach())  # outside: fine


@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU behaviour")
def test_cuda_autocast_and_scaler_without_a_gpu_warn_and_disable() -> None:
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling"):
        ctx = acg.autocast(device_type="cuda", dtype=acg.float16)
    with ctx:
        assert not acg.is_autocast_enabled("cuda") and acg.mm(A, B).dtype == F32
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = acg.cuda.amp.autocast()
    for make in (lambda: acg.amp.GradScaler("cuda"), lambda: acg.cuda.amp.GradScaler()):
        with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
            assert not make().is_enabled()


def test_cpu_autocast_with_an_unsupported_dtype_warns_and_disables() -> None:
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        ctx = acg.autocast("cpu", dtype=acg.float64)
    with ctx:
        assert acg.mm(A, B).dtype == F32


def test_bad_device_type_errors() -> None:
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        acg.autocast(acg.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        acg.autocast("tpu")


# -- state, nesting, decorator ---------------------------------------------------------------
def test_nested_autocast_state_and_queries() -> None:
    assert not acg.is_autocast_enabled("cpu") and acg.get_autocast_dtype("cpu") is acg.bfloat16
    with acg.autocast("cpu"):
        assert acg.is_autocast_enabled("cpu") and acg.mm(A, B).dtype == BF16
        with acg.autocast("cpu", enabled=False):
            assert not acg.is_autocast_enabled("cpu") and acg.mm(A, B).dtype == F32
            with acg.cpu.amp.autocast(dtype=acg.float16):
                assert acg.get_autocast_dtype("cpu") == F16 and acg.mm(A, B).dtype == F16
            assert acg.mm(A, B).dtype == F32
        assert acg.mm(A, B).dtype == BF16 and acg.get_autocast_dtype("cpu") == BF16
    assert not acg.is_autocast_enabled("cpu") and acg.mm(A, B).dtype == F32
    assert not acg.is_autocast_enabled()  # no argument: "cuda", as PyTorch


def test_decorator_form_and_reentrant_instance() -> None:
    ctx = acg.autocast("cpu")

    @ctx
    def chain(n: int) -> acg.Tensor:  # re-enters the same instance recursively
        return acg.mm(A, B) if n == 0 else chain(n - 1)

    assert chain(3).dtype == BF16 and not acg.is_autocast_enabled("cpu")
    assert acg.mm(A, B).dtype == F32


def test_a_dispatch_mode_sees_the_casts() -> None:
    """Autocast is above every mode (as PyTorch's autocast is above __torch_dispatch__)."""
    class Log(acg.DispatchMode):
        def __init__(self) -> None:
            self.seen: list[tuple[str, list[str]]] = []

        def __acg_dispatch__(self, func, types, args=(), kwargs=None):
            self.seen.append((func.name, [a.dtype.name for a in args
                                          if isinstance(a, acg.Tensor)]))
            return func(*args, **(kwargs or {}))

    with acg.autocast("cpu"), Log() as log:
        acg.mm(A, B)
    assert log.seen == [("to", ["float32"]), ("to", ["float32"]), ("mm", ["bfloat16"] * 2)]


# -- gradients ---------------------------------------------------------------------------------
W1, B1, W2, B2 = (np.asarray(RNG.standard_normal(s) * 0.5, np.float32)
                  for s in ((16, 6), (16,), (4, 16), (4,)))
XIN = np.asarray(RNG.standard_normal((8, 6)), np.float32)
YIN = np.asarray(RNG.integers(0, 4, 8), np.int64)


def _mlp_loss(params: list[acg.Tensor]) -> acg.Tensor:
    w1, b1, w2, b2 = params
    h = F.linear(acg.tensor(XIN), w1, b1).tanh()
    return F.cross_entropy(F.linear(h, w2, b2), acg.tensor(YIN))


def _reference_loss(w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array) -> jax.Array:
    """The same model with autocast's casts written out: linears in bfloat16, the loss in
    float32."""
    bf = jnp.bfloat16
    h = jnp.tanh(jnp.matmul(XIN.astype(bf), w1.astype(bf).T) + b1.astype(bf))
    logits = (jnp.matmul(h, w2.astype(bf).T) + b2.astype(bf)).astype(jnp.float32)
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.mean(logp[jnp.arange(len(YIN)), YIN])


_REFERENCE = jax.jit(jax.value_and_grad(_reference_loss, argnums=(0, 1, 2, 3)))  # one compile


def _params() -> list[acg.Tensor]:
    return [acg.tensor(p, requires_grad=True) for p in (W1, B1, W2, B2)]


def test_gradients_under_autocast_match_a_jax_reference(mode) -> None:
    params = _params()
    with acg.autocast("cpu"):
        loss = _mlp_loss(params)
    assert loss.dtype == F32
    with mode():
        loss.backward()
    ref_loss, ref_grads = _REFERENCE(*(jnp.asarray(p) for p in (W1, B1, W2, B2)))
    assert_close(loss.item(), float(ref_loss), rtol=1e-2, atol=1e-2)
    for p, g in zip(params, ref_grads):
        assert p.grad.dtype == F32  # the cast's backward brings the gradient back to float32
        scale = float(jnp.abs(g).max())
        assert_close(p.grad.numpy(), g, rtol=3e-2, atol=3e-2 * scale)


def test_backward_inside_autocast_is_not_autocast(mode) -> None:
    """Backward formulas run in the dtypes the forward recorded, wherever backward is called."""
    outside, inside = _params(), _params()
    with acg.autocast("cpu"):
        loss = _mlp_loss(outside)
    with mode():
        loss.backward()
    with acg.autocast("cpu"):
        loss = _mlp_loss(inside)
        with mode():
            loss.backward()
    for a, b in zip(outside, inside):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_acg_compile_traces_the_casts_and_guards_on_autocast() -> None:
    model = acg.nn.Sequential(acg.nn.Linear(6, 16), acg.nn.Tanh(), acg.nn.Linear(16, 4))
    compiled = acg.compile(model)
    x = acg.tensor(XIN)
    with acg.autocast("cpu"):
        out = compiled(x)
        eager = model(x)
    assert out.dtype == BF16
    assert_close(_f32(out), _f32(eager), rtol=1e-2, atol=1e-2)
    region = compiled._compiled._entries[0].region
    assert "acg.to" in region.forward_graph.code  # the casts are in the traced program
    out.float().sum().backward()
    grads = [p.grad.numpy() for p in model.parameters()]
    model.zero_grad()
    eager.float().sum().backward()
    for g, p in zip(grads, model.parameters()):
        assert g.dtype == F32
        assert_close(g, p.grad.numpy(), rtol=2e-2, atol=2e-2)
    retraces = acg.aot.counters["retraces"]
    assert compiled(x).dtype == F32  # outside autocast: another trace, not the bfloat16 one
    assert acg.aot.counters["retraces"] == retraces + 1


def _custom_mm(cast_inputs=None) -> type:
    class MM(acg.autograd.Function):
        seen: list = []

        @staticmethod
        @acg.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        @acg.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            ga, gb = g.mm(b.t()), a.t().mm(g)  # under the forward's autocast state
            MM.seen.append((ga.dtype.name, gb.dtype.name))
            return ga, gb
    return MM


def test_custom_fwd_and_custom_bwd(mode) -> None:
    a, b = _randn(3, 4).requires_grad_(), _randn(4, 5).requires_grad_()
    mm = _custom_mm()
    with acg.autocast("cpu"):
        out = mm.apply(a, b)  # autocast applies inside forward
    assert out.dtype == BF16
    with mode():
        out.float().sum().backward()  # and, by custom_bwd, inside its backward
    assert mm.seen == [("bfloat16", "bfloat16")]
    assert a.grad.dtype == F32 and b.grad.dtype == F32
    ones = np.ones((3, 5), np.float32)
    assert_close(a.grad.numpy(), ones @ _f32(b.bfloat16()).T, rtol=2e-2, atol=5e-2)
    mm32 = _custom_mm(cast_inputs=acg.float32)
    with acg.autocast("cpu"):
        out = mm32.apply(a.bfloat16(), b.bfloat16())  # cast to float32, autocast off inside
    assert out.dtype == F32
    with mode():
        out.sum().backward()
    assert mm32.seen == [("float32", "float32")]


# -- GradScaler ----------------------------------------------------------------------------
def _reference_scaler(steps: list[bool], scale: float, growth: float, backoff: float,
                      interval: int) -> list[tuple[float, int]]:
    """PyTorch's update rule by hand: (scale, growth tracker) after each step's update."""
    tracker, out = 0, []
    for found_inf in steps:
        if found_inf:
            scale, tracker = scale * backoff, 0
        elif tracker + 1 == interval:
            scale, tracker = scale * growth, 0
        else:
            tracker += 1
        out.append((scale, tracker))
    return out


def test_grad_scaler_sequence_matches_the_hand_computed_rule(mode) -> None:
    infs = [False, True, False, False, False, True, False, False, False, False]
    xs = [RNG.standard_normal(3).astype(np.float32) for _ in infs]
    for x, bad in zip(xs, infs):
        if bad:
            x[1] = np.inf
    w = acg.nn.Parameter(acg.ones(3))
    opt = acg.optim.SGD([w], lr=0.1)
    scaler = acg.amp.GradScaler("cpu", init_scale=16.0, growth_interval=3)
    expected = _reference_scaler(infs, 16.0, 2.0, 0.5, 3)
    w_ref = np.ones(3, np.float32)
    for x, bad, (scale, tracker) in zip(xs, infs, expected):
        before = scaler.get_scale()
        opt.zero_grad()
        with mode():
            scaler.scale((w * acg.tensor(x)).sum()).backward()
        assert_close(w.grad.numpy(), x * before)  # the scaled gradient
        assert scaler.step(opt) is None
        if not bad:
            assert_close(w.grad.numpy(), x)  # unscaled before the step
            w_ref = w_ref - np.float32(0.1) * x
        scaler.update()
        assert_close(w.detach().numpy(), w_ref)  # a step with an inf gradient was skipped
        assert (scaler.get_scale(), scaler._get_growth_tracker()) == (scale, tracker)


def test_unscale_then_clip_sees_the_true_gradients() -> None:
    w = acg.nn.Parameter(acg.tensor([3.0, 4.0]))
    b = acg.nn.Parameter(acg.tensor([0.5]))
    opt = acg.optim.SGD([w, b], lr=1.0)
    scaler = acg.amp.GradScaler("cpu", init_scale=2.0 ** 10)
    scaler.scale([((w * w).sum() + b.sum(), (b * 0).sum())])[0][0].backward()
    scaler.unscale_(opt)
    assert_close(w.grad.numpy(), [6.0, 8.0])
    assert_close(b.grad.numpy(), [1.0])
    total = acg.nn.utils.clip_grad_norm_([w, b], max_norm=1.0)
    assert_close(total.item(), math.sqrt(101.0))
    scaler.step(opt)  # does not unscale a second time
    assert_close(w.detach().numpy(), np.array([3.0, 4.0]) - np.array([6.0, 8.0]) / math.sqrt(101.0),
                 rtol=1e-5, atol=1e-5)


def test_scale_keeps_the_structure_of_nested_outputs() -> None:
    scaler = acg.amp.GradScaler("cpu", init_scale=4.0)
    a, b = acg.tensor(1.0), acg.tensor([2.0, 3.0])
    out = scaler.scale([a, (b, [a])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert out[0].item() == 4.0 and out[1][0].tolist() == [8.0, 12.0]
    assert out[1][1][0].item() == 4.0
    assert [t.item() for t in scaler.scale(iter([a, a]))] == [4.0, 4.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([a, 3.0])


def _one_scaled_step(scaler: acg.amp.GradScaler, opt, w, x: np.ndarray) -> None:
    opt.zero_grad()
    scaler.scale((w * acg.tensor(x)).sum()).backward()
    scaler.step(opt)
    scaler.update()


def test_state_dict_round_trip_continues_identically() -> None:
    xs = [np.array([1.0, np.inf if i == 1 else 2.0], np.float32) for i in range(5)]
    w = acg.nn.Parameter(acg.ones(2))
    opt = acg.optim.SGD([w], lr=0.1)
    scaler = acg.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.25,
                                growth_interval=2)
    for x in xs[:3]:
        _one_scaled_step(scaler, opt, w, x)
    sd = scaler.state_dict()
    assert sd == {"scale": 8.0 * 0.25, "growth_factor": 3.0, "backoff_factor": 0.25,
                  "growth_interval": 2, "_growth_tracker": 1}  # clean, inf, clean
    fresh = acg.amp.GradScaler("cpu")
    fresh.load_state_dict(sd)
    assert fresh.state_dict() == sd  # before its first scale(): from the loaded init values
    w2 = acg.nn.Parameter(acg.tensor(w.detach().numpy()))
    opt2 = acg.optim.SGD([w2], lr=0.1)
    for x in xs[3:]:
        _one_scaled_step(scaler, opt, w, x)
        _one_scaled_step(fresh, opt2, w2, x)
        assert fresh.state_dict() == scaler.state_dict()
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())


def test_disabled_scaler_is_a_pass_through() -> None:
    scaler = acg.amp.GradScaler("cpu", enabled=False)
    loss = acg.tensor(2.0)
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    w = acg.nn.Parameter(acg.ones(1))
    opt = acg.optim.SGD([w], lr=1.0)
    w.grad = acg.tensor([float("inf")])
    scaler.unscale_(opt)
    assert scaler.step(opt, closure=lambda: 7.0) == 7.0  # optimizer.step's return, even on inf
    assert not np.isfinite(w.detach().numpy()).any()
    scaler.update()
    assert scaler.state_dict() == {}
    scaler.load_state_dict({})  # a no-op
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        acg.amp.GradScaler("cpu").load_state_dict({})


def test_grad_scaler_errors_follow_pytorch() -> None:
    w = acg.nn.Parameter(acg.ones(2))
    opt = acg.optim.SGD([w], lr=0.1)
    scaler = acg.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        scaler.update()
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        scaler.step(opt)
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this "
                                           "optimizer since the last update\\(\\)"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last "
                                           "update\\(\\)"):
        scaler.step(opt)
    scaler.update()
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)
    empty = acg.optim.SGD([acg.nn.Parameter(acg.ones(1))], lr=0.1)
    with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
        scaler.step(empty)
    half = acg.nn.Parameter(acg.ones(2, dtype=acg.float16))
    half.grad = acg.ones(2, dtype=acg.float16)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.unscale_(acg.optim.SGD([half], lr=0.1))
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        acg.amp.GradScaler("cpu", growth_factor=1.0)


def test_update_with_a_new_scale() -> None:
    scaler = acg.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(acg.tensor(1.0))
    scaler.update(new_scale=32.0)
    assert scaler.get_scale() == 32.0
    scaler.update(new_scale=acg.tensor([0.5]))
    assert scaler.get_scale() == 0.5


# -- a nanoGPT-style training loop ---------------------------------------------------------
class _TinyGPT(acg.nn.Module):
    """One attention block; few parameter shapes (each costs kernel compiles in eager mode)."""

    def __init__(self, vocab: int = 8, n: int = 16, block: int = 8) -> None:
        super().__init__()
        self.wte, self.wpe = acg.nn.Embedding(vocab, n), acg.nn.Embedding(block, n)
        self.ln1, self.ln2 = acg.nn.LayerNorm(n), acg.nn.LayerNorm(n)
        self.qkv = acg.nn.Linear(n, 3 * n, bias=False)
        self.proj = acg.nn.Linear(n, n, bias=False)
        self.head = acg.nn.Linear(n, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied, as nanoGPT (one weight cast twice)

    def forward(self, idx: acg.Tensor, targets: acg.Tensor) -> tuple:
        b, t = idx.shape
        x = self.wte(idx) + self.wpe(acg.arange(t))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=2)
        q, k, v = (z.view(b, t, 2, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + F.gelu(self.proj(y.transpose(1, 2).contiguous().view(b, t, -1)))
        logits = self.head(self.ln2(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                               ignore_index=-1)
        return logits, loss


def _train(mode, scaler: acg.amp.GradScaler, steps: int = 5) -> tuple[list[float], list]:
    acg.manual_seed(0)
    model = _TinyGPT()
    opt = acg.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    ctx = acg.amp.autocast(device_type="cpu", dtype=acg.bfloat16)
    data = np.random.default_rng(1).integers(0, 8, (4, 9))
    X, Y = acg.tensor(data[:, :-1]), acg.tensor(data[:, 1:])
    losses = []
    for _ in range(steps):
        with ctx:
            logits, loss = model(X, Y)
        assert logits.dtype == BF16 and loss.dtype == F32
        with mode():
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        acg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("mode_name", [
    "eager", "compiled-eager",
    # the whole GPT backward as one XLA program: ~20 s of compiling on a loaded CI machine
    # (compiled-jax under autocast is covered by the gradient and scaler tests above)
    pytest.param("compiled-jax", marks=pytest.mark.slow)])
def test_nanogpt_style_loop_trains_and_power_of_two_scaling_is_exact(mode_name: str) -> None:
    if mode_name != "eager":
        acg.compiled_autograd.reset()
    mode = ExecMode(mode_name)
    # both runs on one eager tier: an op's last bit may change when its shape moves from the
    # host tier to XLA between the runs, and this test compares bits
    with _xp.forced("xla"):
        losses, params = _train(mode, acg.cuda.amp.GradScaler(enabled=False))
        # scaling by 2**k and unscaling is exact: the scaled run takes the very same steps
        scaled_losses, scaled_params = _train(mode,
                                              acg.amp.GradScaler("cpu", init_scale=2.0 ** 12))
    assert losses[-1] < losses[0] - 0.3
    assert scaled_losses == losses
    for a, b in zip(params, scaled_params):
        np.testing.assert_array_equal(a, b)



def test_docstring_examples_run() -> None:
    import doctest
    import warnings

    from autograd_compile import amp, cpu
    from autograd_compile.amp import cpu_amp, cuda_amp, grad_scaler, policy
    for module in (amp, autocast_mode, grad_scaler, policy, cpu_amp, cuda_amp, cpu):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "cuda" without a GPU
            result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize("op", ["linear", "conv2d"])
def test_autocast_bias_is_added_before_the_one_rounding(op):
    """Under bfloat16 autocast, linear and conv add their bias to the float32 accumulator
    and round once, as PyTorch's addmm / convolution: rounding x @ w.T first, then the sum,
    was off by one ulp in a quarter of the elements (a ViT drifted from torch's)."""
    rng = np.random.default_rng(0)
    if op == "linear":
        x, w, b = rng.normal(size=(64, 96)), rng.normal(size=(128, 96)) * 0.1, \
            rng.normal(size=128) * 0.1
    else:
        x, w, b = rng.normal(size=(2, 8, 10, 10)), rng.normal(size=(16, 8, 3, 3)) * 0.1, \
            rng.normal(size=16) * 0.1
    bf = [np.asarray(acg.tensor(v.astype(np.float32)).bfloat16().float().numpy(), np.float64)
          for v in (x, w, b)]  # the bfloat16 inputs, exactly, in float64
    fn = getattr(acg.nn.functional, op)
    exact = fn(*(acg.tensor(v) for v in bf)).numpy()  # float64: no rounding to speak of
    want = acg.tensor(exact).to(acg.bfloat16).float().numpy()
    with acg.autocast("cpu", dtype=acg.bfloat16):
        got = fn(*(acg.tensor(v.astype(np.float32)) for v in (x, w, b)))
    assert got.dtype == acg.bfloat16
    assert np.mean(got.float().numpy() != want) < 1e-3


@pytest.mark.parametrize("op", ["gelu", "gelu_tanh", "softmax", "log_softmax"])
def test_bfloat16_transcendentals_round_once(op):
    """gelu and (log_)softmax of bfloat16 compute in float32 and round once, as PyTorch's
    CPU kernels: computed in bfloat16 a third of the elements were one ulp off. (float32's
    erf/tanh errors flip a few roundings of gelu against the float64 result, torch's too.)"""
    x = np.random.default_rng(1).normal(size=(8, 64)) * 3
    xb = acg.tensor(x.astype(np.float32)).bfloat16()
    exact_in = acg.tensor(np.asarray(xb.float().numpy(), np.float64))  # the same values
    fns = {"gelu": lambda t: acg.nn.functional.gelu(t),
           "gelu_tanh": lambda t: acg.nn.functional.gelu(t, approximate="tanh"),
           "softmax": lambda t: t.softmax(-1), "log_softmax": lambda t: t.log_softmax(-1)}
    want = fns[op](exact_in).to(acg.bfloat16).float().numpy()
    got = fns[op](xb)
    assert got.dtype == acg.bfloat16
    assert np.mean(got.float().numpy() != want) < (0.1 if op.startswith("gelu") else 1e-2)
