"""CPU autocast (bfloat16) follows PyTorch's op lists for the ops that are not one op of the
same name here: fused ops covering several of PyTorch's (conv_transpose, pad, 3-d pools;
``policy.FUSED``) and Python-level ops that PyTorch runs as one aten op (addmm and its
family, prelu, dot, mv, losses; ``autocast_op``). Output dtypes are PyTorch 2.13's (checked
against torch where installed), values are the op on the cast inputs, gradients reach
float32 parameters in every execution mode."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.amp.policy import policy_of
from conftest import ExecMode, assert_close

BF16, F32 = "bfloat16", "float32"


def _inputs(T: Any, low: bool) -> Callable[..., Any]:
    rng = np.random.default_rng(0)

    def r(*shape: int, pos: bool = False) -> Any:
        a = rng.standard_normal(shape).astype(np.float32)
        t = T.tensor(np.abs(a) + 0.5 if pos else a)
        return t.bfloat16() if low else t
    return r


def _cases(T: Any, r: Callable[..., Any]) -> dict[str, Callable[[], Any]]:
    F = T.nn.functional
    return {
        # lower precision (fed float32)
        "conv_transpose1d": lambda: F.conv_transpose1d(r(1, 2, 5), r(2, 3, 2)),
        "conv_transpose2d": lambda: F.conv_transpose2d(r(1, 2, 5, 5), r(2, 3, 2, 2), r(3)),
        "conv_transpose3d": lambda: F.conv_transpose3d(r(1, 2, 3, 3, 3), r(2, 3, 2, 2, 2)),
        "addmm": lambda: T.addmm(r(3, 5), r(3, 4), r(4, 5)),
        "addmm_method": lambda: r(3, 5).addmm(r(3, 4), r(4, 5), beta=0.5, alpha=2),
        "baddbmm": lambda: T.baddbmm(r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)),
        "addbmm": lambda: T.addbmm(r(3, 5), r(2, 3, 4), r(2, 4, 5)),
        "prelu": lambda: F.prelu(r(2, 3, 4), r(3)),
        "mm": lambda: T.mm(r(3, 4), r(4, 5)),
        "bmm": lambda: T.bmm(r(2, 3, 4), r(2, 4, 5)),
        "matmul_vec": lambda: T.matmul(r(4), r(4)),
        "conv2d": lambda: F.conv2d(r(1, 2, 5, 5), r(3, 2, 2, 2)),
        "linear": lambda: F.linear(r(3, 4), r(5, 4), r(5)),
        # PyTorch's one kernel, in no CPU list: the input's type (not the matmul inside)
        "addmv": lambda: T.addmv(r(3), r(3, 4), r(4)),
        "addr": lambda: T.addr(r(3, 4), r(3), r(4)),
        "dot": lambda: T.dot(r(4), r(4)),
        "mv": lambda: T.mv(r(3, 4), r(4)),
        "bilinear": lambda: F.bilinear(r(2, 4), r(2, 3), r(5, 4, 3)),
        "ormqr": lambda: T.ormqr(*T.geqrf(r(3, 3).float()), r(3, 2)),
        "avg_pool2d": lambda: F.avg_pool2d(r(1, 1, 4, 4), 2),
        "constant_pad": lambda: F.pad(r(1, 2, 5), (2, 2)),
        # float32 (fed bfloat16)
        "avg_pool3d": lambda: F.avg_pool3d(r(1, 1, 4, 4, 4), 2),
        "max_pool3d": lambda: F.max_pool3d(r(1, 1, 4, 4, 4), 2),
        "adaptive_avg_pool3d": lambda: F.adaptive_avg_pool3d(r(1, 1, 4, 4, 4), 2),
        "adaptive_max_pool3d": lambda: F.adaptive_max_pool3d(r(1, 1, 4, 4, 4), 2),
        "max_unpool2d": lambda: F.max_unpool2d(*F.max_pool2d(r(1, 1, 4, 4), 2,
                                                             return_indices=True), 2),
        "fractional_max_pool2d": lambda: F.fractional_max_pool2d(
            r(1, 1, 6, 6), 2, output_size=3, _random_samples=T.full((1, 1, 2), 0.5)),
        "reflection_pad1d": lambda: F.pad(r(1, 2, 5), (2, 2), mode="reflect"),
        "reflection_pad2d": lambda: F.pad(r(1, 2, 5, 5), (2, 2, 1, 1), mode="reflect"),
        "replication_pad3d": lambda: F.pad(r(1, 2, 3, 3, 3), (1,) * 6, mode="replicate"),
        "grid_sample": lambda: F.grid_sample(r(1, 1, 4, 4), T.tanh(r(1, 3, 3, 2)),
                                             align_corners=False),
        "quantile": lambda: T.quantile(r(5), 0.3),
        "cdist": lambda: T.cdist(r(3, 4), r(5, 4)),
        "trace": lambda: T.trace(r(3, 3)),
        "kl_div": lambda: F.kl_div(r(4), r(4), reduction="batchmean", log_target=True),
        "huber_loss": lambda: F.huber_loss(r(4), r(4)),
        "margin_ranking_loss": lambda: F.margin_ranking_loss(r(4), r(4), r(4).sign()),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(r(2, 4), r(2, 4), r(2, 4)),
        "multi_margin_loss": lambda: F.multi_margin_loss(r(3, 4), T.tensor([0, 1, 2])),
        "poisson_nll_loss": lambda: F.poisson_nll_loss(r(4), r(4, pos=True)),
        "cosine_embedding_loss": lambda: F.cosine_embedding_loss(r(2, 4), r(2, 4),
                                                                 T.tensor([1, -1])),
        "hinge_embedding_loss": lambda: F.hinge_embedding_loss(r(4), r(4).sign()),
        "pinverse": lambda: T.pinverse(r(3, 4)),
        "fft_ihfft": lambda: T.fft.ihfft(r(4)),
    }


EXPECTED = {  # (output dtype fed float32, fed bfloat16), PyTorch 2.13 on CPU
    **dict.fromkeys(["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "addmm",
                     "addmm_method", "baddbmm", "addbmm", "prelu", "mm", "bmm", "matmul_vec",
                     "conv2d", "linear"], (BF16, BF16)),
    **dict.fromkeys(["addmv", "addr", "dot", "mv", "bilinear", "avg_pool2d", "constant_pad"],
                    (F32, BF16)),
    "ormqr": (F32, F32),
    **dict.fromkeys(["avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
                     "max_unpool2d", "fractional_max_pool2d", "reflection_pad1d",
                     "reflection_pad2d", "replication_pad3d", "grid_sample", "quantile", "cdist",
                     "trace", "kl_div", "huber_loss", "margin_ranking_loss",
                     "triplet_margin_loss", "multi_margin_loss", "poisson_nll_loss",
                     "cosine_embedding_loss", "hinge_embedding_loss", "pinverse"],
                    (F32, F32)),
    "fft_ihfft": ("complex64", "complex64"),
}
_NO_BF16_INPUT = {"bilinear"}  # PyTorch: a bfloat16 input with a float32 weight is an error


def _dtype_under_autocast(T: Any, name: str, low: bool) -> str:
    with T.autocast("cpu", dtype=T.bfloat16):
        out = _cases(T, _inputs(T, low))[name]()
    return str(out.dtype).replace("torch.", "")


@pytest.mark.parametrize("low", [False, True], ids=["float32_in", "bfloat16_in"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_output_dtype(name: str, low: bool) -> None:
    if low and name in _NO_BF16_INPUT:
        pytest.skip("PyTorch raises for this input")
    assert _dtype_under_autocast(acg, name, low) == EXPECTED[name][low]


@pytest.mark.parametrize("low", [False, True], ids=["float32_in", "bfloat16_in"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_expected_dtypes_are_pytorchs(name: str, low: bool) -> None:
    torch = pytest.importorskip("torch")
    if low and name in _NO_BF16_INPUT:
        pytest.skip("PyTorch raises for this input")
    assert _dtype_under_autocast(torch, name, low) == EXPECTED[name][low]


def test_module_forms_of_the_probe() -> None:
    x = acg.randn(1, 4, 6, 6)
    layers = [(acg.nn.ConvTranspose1d(4, 2, 2), x[:, :, 0]),
              (acg.nn.ConvTranspose2d(4, 2, 2, stride=2), x),
              (acg.nn.ConvTranspose3d(4, 2, 2), x.unsqueeze(2)), (acg.nn.PReLU(), x)]
    with acg.autocast("cpu", dtype=acg.bfloat16):
        for layer, inp in layers:
            assert layer(inp).dtype == acg.bfloat16, layer
    for layer, inp in layers:  # outside: unchanged
        assert layer(inp).dtype == acg.float32


# -- values: the op on the cast inputs, and the body not autocast again ----------------------
def _bf16(t: acg.Tensor) -> acg.Tensor:
    return t.bfloat16()


@pytest.mark.parametrize("name", ["addmm", "baddbmm", "addbmm", "conv_transpose2d", "prelu"])
def test_lower_ops_equal_the_op_on_bfloat16_inputs(name: str) -> None:
    r = _inputs(acg, False)
    args = {"addmm": (r(3, 5), r(3, 4), r(4, 5)), "baddbmm": (r(2, 3, 5), r(2, 3, 4), r(2, 4, 5)),
            "addbmm": (r(3, 5), r(2, 3, 4), r(2, 4, 5)),
            "conv_transpose2d": (r(1, 2, 5, 5), r(2, 3, 2, 2), r(3)),
            "prelu": (r(2, 3, 4), r(3))}[name]
    fn = {"conv_transpose2d": acg.nn.functional.conv_transpose2d,
          "prelu": acg.nn.functional.prelu}.get(name) or getattr(acg, name)
    with acg.autocast("cpu"):
        out = fn(*args)
    expected = fn(*[_bf16(a) for a in args])
    assert out.dtype == acg.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), expected.float().numpy())


@pytest.mark.parametrize("name", ["dot", "mv", "addmv"])
def test_single_kernel_ops_are_not_autocast_inside(name: str) -> None:
    r = _inputs(acg, False)
    args = {"dot": (r(40), r(40)), "mv": (r(3, 40), r(40)), "addmv": (r(3), r(3, 40), r(40))}[name]
    fn = getattr(acg, name)
    with acg.autocast("cpu"):
        out = fn(*args)
    np.testing.assert_array_equal(out.numpy(), fn(*args).numpy())  # float32 all through


def test_fused_ops_resolve_to_pytorchs_names() -> None:
    assert policy_of("cpu", "conv_transpose", [None, None, None, [2]]) == "lower"
    assert policy_of("cuda", "conv_transpose", [None, None, None, [1, 1, 1]]) == "lower"
    assert policy_of("cpu", "max_pool_nd_with_indices", [None, [2, 2, 2]]) == "fp32"
    assert policy_of("cpu", "max_pool_nd_with_indices", [None, [2, 2]]) is None
    assert policy_of("cpu", "pad", [None, [1, 1, 1, 1], "reflect", None]) == "fp32"
    assert policy_of("cpu", "pad", [None, [1, 1] * 3, "reflect", None]) is None  # not listed
    assert policy_of("cpu", "pad", [None, [1, 1], "constant", 0.0]) is None
    assert policy_of("cuda", "upsample_nd", [None, [4, 4], "bilinear"]) == "fp32"
    assert policy_of("cpu", "upsample_nd", [None, [4, 4], "bilinear"]) is None
    assert policy_of("cpu", "conv_transpose") is None  # no arguments: not resolved


# -- gradients reach float32 parameters ------------------------------------------------------
def _model(T: Any) -> Any:
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.ConvTranspose2d(3, 4, 2, stride=2), T.nn.PReLU(),
                           T.nn.Conv2d(4, 2, 3))


def _loss(T: Any, model: Any, x: Any, a: Any, b: Any) -> Any:
    with T.autocast("cpu", dtype=T.bfloat16):
        h = model(x).flatten(1)  # [2, 2 * 6 * 6]
        y = T.addmm(T.zeros(2, 3), h, a)
        z = T.baddbmm(y.unsqueeze(0), y.unsqueeze(0), b)
    return (z.float() ** 2).mean()


def test_gradients_under_autocast_match_pytorch(mode: ExecMode) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    a0 = rng.standard_normal((72, 3)).astype(np.float32) * 0.1
    b0 = rng.standard_normal((1, 3, 3)).astype(np.float32)
    theirs = _model(torch)
    ta = torch.tensor(a0, requires_grad=True)
    tb = torch.tensor(b0, requires_grad=True)
    _loss(torch, theirs, torch.tensor(x0), ta, tb).backward()

    ours = _model(acg)
    ours.load_state_dict({k: acg.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    a = acg.tensor(a0, requires_grad=True)
    b = acg.tensor(b0, requires_grad=True)
    loss = _loss(acg, ours, acg.tensor(x0), a, b)
    with mode():
        loss.backward()
    for got, want in [(a.grad, ta.grad), (b.grad, tb.grad)] + [
            (p.grad, q.grad) for p, q in zip(ours.parameters(), theirs.parameters())]:
        assert got.dtype == acg.float32  # the casts' backward casts back
        scale = float(np.abs(want.numpy()).max()) + 1e-6
        assert_close(got.numpy() / scale, want.numpy() / scale, rtol=0, atol=3e-2)


def test_acg_compile_traces_the_new_casts() -> None:
    model = _model(acg)
    rng = np.random.default_rng(2)
    x = acg.tensor(rng.standard_normal((2, 3, 4, 4)).astype(np.float32))
    a = acg.tensor(rng.standard_normal((72, 3)).astype(np.float32))

    def step(x: acg.Tensor) -> acg.Tensor:
        with acg.autocast("cpu"):
            return acg.addmm(acg.zeros(2, 3), model(x).flatten(1), a)

    eager, compiled = step(x), acg.compile(step)(x)
    assert eager.dtype == compiled.dtype == acg.bfloat16
    np.testing.assert_array_equal(compiled.detach().float().numpy(),
                                  eager.detach().float().numpy())
