"""grouped_mm, scaled_mm, scaled_grouped_mm and the ScalingType/SwizzleType enums against
PyTorch (CPU: grouped_mm in float32, scaled_mm TensorWise/RowWise on float8), gradients in
every execution mode, PyTorch's errors; scaled_grouped_mm (no CPU kernel in PyTorch) against a
per-group numpy reference. Values and gradients in float64 are in op_cases_tails.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F

S = F.ScalingType


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# (name, mat_a shape, mat_b shape, offs); sizes multiples of 4 (PyTorch's CPU kernel needs
# 16-byte strides)
LAYOUTS = [
    ("2d_3d", (12, 8), (3, 8, 4), [4, 4, 12]),
    ("3d_3d", (3, 4, 8), (3, 8, 4), None),
    ("3d_2d", (3, 4, 8), (8, 12), [4, 8, 12]),
    ("2d_2d", (4, 16), (16, 8), [4, 12, 16]),
]


@pytest.mark.parametrize("name,sa,sb,offs", LAYOUTS, ids=[x[0] for x in LAYOUTS])
def test_grouped_mm_matches_torch_values_and_grads(mode, name, sa, sb, offs) -> None:
    torch = pytest.importorskip("torch")
    rng = _rng()
    a, b = rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)
    g = None
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    # torch wants mat_b column-major: build it as a transposed contiguous tensor
    tb_cm = tb.transpose(-2, -1).contiguous().transpose(-2, -1)
    toffs = None if offs is None else torch.tensor(offs, dtype=torch.int32)
    want = torch.nn.functional.grouped_mm(ta, tb_cm, offs=toffs)
    g = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(g))
    xa, xb = acg.tensor(a, requires_grad=True), acg.tensor(b, requires_grad=True)
    got = F.grouped_mm(xa, xb, offs=None if offs is None else acg.tensor(offs, dtype=acg.int32))
    assert got.dtype == acg.float32 and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
    with mode():
        (got * acg.tensor(g)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(xb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_grouped_mm_under_acg_compile() -> None:
    rng = _rng(1)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((2, 4, 3))
    offs = acg.tensor([2, 6], dtype=acg.int32)

    def step(x, w):
        return F.grouped_mm(x, w, offs=offs).square().sum()
    xs = [acg.tensor(a, requires_grad=True) for _ in range(2)]
    ws = [acg.tensor(b, requires_grad=True) for _ in range(2)]
    step(xs[0], ws[0]).backward()
    acg.compile(step)(xs[1], ws[1]).backward()
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ws[1].grad.numpy(), ws[0].grad.numpy(), rtol=1e-10)


def test_grouped_mm_bfloat16_with_float32_accumulation() -> None:
    torch = pytest.importorskip("torch")
    rng = _rng(2)
    a = rng.standard_normal((3, 4, 8)).astype(np.float32)
    b = rng.standard_normal((3, 8, 8)).astype(np.float32)
    xa, xb = acg.tensor(a).to(acg.bfloat16), acg.tensor(b).to(acg.bfloat16)
    out = F.grouped_mm(xa, xb)
    want = torch.nn.functional.grouped_mm(torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16())
    assert out.dtype == acg.bfloat16
    np.testing.assert_allclose(out.float().numpy(), want.float().numpy(), rtol=2e-2, atol=5e-2)
    wide = F.grouped_mm(xa, xb, out_dtype=acg.float32)
    assert wide.dtype == acg.float32
    np.testing.assert_allclose(wide.numpy(), xa.float().numpy() @ xb.float().numpy(), rtol=1e-5)


GMM_ERRORS = [  # (call on a module `m` holding grouped_mm, dtype namespace `d`)
    lambda m, d, a, b, o: m.grouped_mm(a, b),  # 2d operand without offs
    lambda m, d, a, b, o: m.grouped_mm(a.reshape(3, 4, 8), b, offs=o),  # both 3d with offs
    lambda m, d, a, b, o: m.grouped_mm(a.reshape(3, 4, 8), b[:, :4]),  # contraction
    lambda m, d, a, b, o: m.grouped_mm(a.reshape(3, 4, 8)[:2], b),  # batch
    lambda m, d, a, b, o: m.grouped_mm(a, b, offs=o.long()),  # int64 offsets
    lambda m, d, a, b, o: m.grouped_mm(a[0], b, offs=o),  # 1-d
    lambda m, d, a, b, o: m.grouped_mm(a.int(), b.int(), offs=o),  # integer operands
    lambda m, d, a, b, o: m.grouped_mm(a, b, offs=o, bias=b[:, 0]),  # bias
    lambda m, d, a, b, o: m.grouped_mm(a, b, offs=o, out_dtype=d.bfloat16),  # narrowing
]


@pytest.mark.parametrize("i", range(len(GMM_ERRORS)))
def test_grouped_mm_errors_match_torch(i: int) -> None:
    torch = pytest.importorskip("torch")
    call = GMM_ERRORS[i]
    a, b = np.ones((12, 8), np.float32), np.ones((3, 8, 4), np.float32)
    with pytest.raises(Exception) as theirs:
        call(torch.nn.functional, torch, torch.tensor(a),
             torch.tensor(b).transpose(-2, -1).contiguous().transpose(-2, -1),
             torch.tensor([4, 8, 12], dtype=torch.int32))
    with pytest.raises(type(theirs.value)) as ours:
        call(F, acg, acg.tensor(a), acg.tensor(b), acg.tensor([4, 8, 12], dtype=acg.int32))
    assert str(theirs.value).splitlines()[0] in str(ours.value)


# -- scaled_mm -------------------------------------------------------------------------------------
def _f8(torch, x: np.ndarray, column_major: bool = False):
    t = torch.tensor(x.T if column_major else x).to(torch.float8_e4m3fn)
    return t.t() if column_major else t


SCALED = [  # (name, scale_a, recipe, scale_b, recipe, bias, output dtype name)
    ("tensorwise", np.float32(3.0), "TensorWise", np.float32(0.5), "TensorWise", False, None),
    ("tensorwise_f32_bias", np.float32(2.0), "TensorWise", np.float32(0.25), "TensorWise", True,
     "float32"),
    ("rowwise", "rows", "RowWise", "cols", "RowWise", False, "float32"),
    ("rowwise_bias_bf16", "rows", "RowWise", "cols", "RowWise", True, "bfloat16"),
    ("tensorwise_f16_out", np.array([1.5], np.float32), "TensorWise", np.float32(2.0),
     "TensorWise", False, "float16"),
    ("tensorwise_f8_out", np.float32(0.125), "TensorWise", np.float32(0.5), "TensorWise", False,
     "keep"),
]


@pytest.mark.parametrize("name,sa,ra,sb,rb,bias,out", SCALED, ids=[c[0] for c in SCALED])
def test_scaled_mm_matches_torch(name, sa, ra, sb, rb, bias, out) -> None:
    torch = pytest.importorskip("torch")
    rng = _rng(3)
    x, y = rng.standard_normal((16, 32)).astype(np.float32), \
        rng.standard_normal((32, 8)).astype(np.float32)
    sa = rng.random((16, 1)).astype(np.float32) + 0.5 if isinstance(sa, str) else sa
    sb = rng.random((1, 8)).astype(np.float32) + 0.5 if isinstance(sb, str) else sb
    bv = rng.standard_normal(8).astype(np.float32) if bias else None
    kw_t = {} if out is None else {"output_dtype": None if out == "keep" else
                                   getattr(torch, out)}
    kw_a = {} if out is None else {"output_dtype": None if out == "keep" else getattr(acg, out)}
    want = torch.nn.functional.scaled_mm(
        _f8(torch, x), _f8(torch, y, True), torch.tensor(sa), getattr(torch.nn.functional.ScalingType, ra),
        torch.tensor(sb), getattr(torch.nn.functional.ScalingType, rb),
        bias=None if bv is None else torch.tensor(bv), **kw_t)
    got = F.scaled_mm(acg.tensor(x).to(acg.float8_e4m3fn), acg.tensor(y).to(acg.float8_e4m3fn),
                      acg.tensor(sa), getattr(S, ra), acg.tensor(sb), getattr(S, rb),
                      bias=None if bv is None else acg.tensor(bv), **kw_a)
    assert str(got.dtype) == str(want.dtype)
    tol = 1e-5 if want.dtype == torch.float32 else 2e-2 if want.dtype != torch.float8_e4m3fn \
        else 0.13
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol)


SCALED_ERRORS = [  # (call(m, d, a, b, one, rows, cols))
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, a, one, m.ScalingType.TensorWise, one,
                                              m.ScalingType.TensorWise),  # shapes
    lambda m, d, a, b, one, r, c: m.scaled_mm(a[0], b, one, m.ScalingType.TensorWise, one,
                                              m.ScalingType.TensorWise),  # not a matrix
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, b, one, m.ScalingType.TensorWise, c,
                                              m.ScalingType.RowWise),  # mixed recipes
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, b, r, m.ScalingType.BlockWise1x128, c,
                                              m.ScalingType.BlockWise1x128),  # block-wise
    lambda m, d, a, b, one, r, c: m.scaled_mm(a.float(), b.float(), one, m.ScalingType.TensorWise,
                                              one, m.ScalingType.TensorWise),  # not float8
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, b, one.double(), m.ScalingType.TensorWise, one,
                                              m.ScalingType.TensorWise),  # float64 scale
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, b, one, m.ScalingType.TensorWise, one,
                                              m.ScalingType.TensorWise,
                                              swizzle_a=m.SwizzleType.SWIZZLE_32_4_4,
                                              swizzle_b=m.SwizzleType.NO_SWIZZLE),
    lambda m, d, a, b, one, r, c: m.scaled_mm(a, b, one, m.ScalingType.TensorWise, one,
                                              m.ScalingType.TensorWise, bias=a[0].float()),
]


@pytest.mark.parametrize("i", range(len(SCALED_ERRORS)))
def test_scaled_mm_errors_match_torch(i: int) -> None:
    torch = pytest.importorskip("torch")
    call = SCALED_ERRORS[i]
    x, y = np.ones((16, 32), np.float32), np.ones((32, 8), np.float32)
    r, c = np.ones((16, 1), np.float32), np.ones((1, 8), np.float32)
    with pytest.raises(Exception) as theirs:
        call(torch.nn.functional, torch, _f8(torch, x), _f8(torch, y, True), torch.tensor(1.0),
             torch.tensor(r), torch.tensor(c))
    with pytest.raises(type(theirs.value)) as ours:
        call(F, acg, acg.tensor(x).to(acg.float8_e4m3fn), acg.tensor(y).to(acg.float8_e4m3fn),
             acg.tensor(1.0), acg.tensor(r), acg.tensor(c))
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]


def test_scaling_and_swizzle_enums_match_torch() -> None:
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    assert [(k, v.value) for k, v in S.__members__.items()] == \
        [(k, v.value) for k, v in tf.ScalingType.__members__.items()]
    assert [(k, v.value) for k, v in F.SwizzleType.__members__.items()] == \
        [(k, v.value) for k, v in tf.SwizzleType.__members__.items()]
    assert repr(S.RowWise) == repr(tf.ScalingType.RowWise) and str(S.RowWise) == \
        str(tf.ScalingType.RowWise)


# -- scaled_grouped_mm: PyTorch has no CPU kernel; numpy per-group reference ----------------------
def _q(x: np.ndarray) -> np.ndarray:
    """float8_e4m3fn rounding, as a float32 array (what the op reads)."""
    return np.asarray(acg.tensor(x).to(acg.float8_e4m3fn).float().numpy())


GROUPED_SCALED = [  # (name, a shape, b shape, offs, scale_a shape, scale_b shape)
    ("2d_3d", (8, 16), (2, 16, 4), [3, 8], (8,), (2, 4)),
    ("3d_3d", (2, 4, 16), (2, 16, 4), None, (2, 4), (2, 4)),
    ("3d_2d", (2, 4, 16), (16, 8), [3, 8], (2, 4), (8,)),
    ("2d_2d", (4, 16), (16, 8), [5, 16], (8,), (16,)),
]


def _grouped_scaled_ref(a, b, offs, sa, sb):
    starts = [0] + list(offs[:-1]) if offs is not None else None
    if a.ndim == 3 and b.ndim == 3:
        return np.stack([(a[g] * sa[g][:, None]) @ (b[g] * sb[g][None]) for g in range(2)])
    if a.ndim == 2 and b.ndim == 3:
        out = np.zeros((a.shape[0], b.shape[2]))
        for g, (s, e) in enumerate(zip(starts, offs)):
            out[s:e] = (a[s:e] * sa[s:e, None]) @ (b[g] * sb[g][None])
        return out
    if a.ndim == 3:
        out = np.zeros((a.shape[1], b.shape[1]))
        for g, (s, e) in enumerate(zip(starts, offs)):
            out[:, s:e] = (a[g] * sa[g][:, None]) @ (b[:, s:e] * sb[None, s:e])
        return out
    m, n = a.shape[0], b.shape[1]
    return np.stack([(a[:, s:e] * sa[g * m:(g + 1) * m, None]) @
                     (b[s:e] * sb[None, g * n:(g + 1) * n])
                     for g, (s, e) in enumerate(zip(starts, offs))])


@pytest.mark.parametrize("name,sa_,sb_,offs,ssa,ssb", GROUPED_SCALED,
                         ids=[c[0] for c in GROUPED_SCALED])
def test_scaled_grouped_mm_rowwise_matches_per_group_reference(name, sa_, sb_, offs, ssa,
                                                              ssb) -> None:
    rng = _rng(4)
    a, b = _q(rng.standard_normal(sa_)), _q(rng.standard_normal(sb_))
    sa, sb = rng.random(ssa).astype(np.float32) + .5, rng.random(ssb).astype(np.float32) + .5
    got = F.scaled_grouped_mm(
        acg.tensor(a).to(acg.float8_e4m3fn), acg.tensor(b).to(acg.float8_e4m3fn), acg.tensor(sa),
        S.RowWise, acg.tensor(sb), S.RowWise,
        offs=None if offs is None else acg.tensor(offs, dtype=acg.int32),
        output_dtype=acg.float32)
    np.testing.assert_allclose(got.numpy(), _grouped_scaled_ref(a, b, offs, sa, sb), rtol=1e-5,
                               atol=1e-5)
    assert F.scaled_grouped_mm(
        acg.tensor(a).to(acg.float8_e4m3fn), acg.tensor(b).to(acg.float8_e4m3fn),
        acg.tensor(sa), S.RowWise, acg.tensor(sb), S.RowWise,
        offs=None if offs is None else acg.tensor(offs, dtype=acg.int32)).dtype == acg.bfloat16


def test_scaled_grouped_mm_tensorwise_and_errors() -> None:
    rng = _rng(5)
    a, b = _q(rng.standard_normal((8, 16))), _q(rng.standard_normal((2, 16, 4)))
    offs = acg.tensor([3, 8], dtype=acg.int32)
    a8, b8 = acg.tensor(a).to(acg.float8_e4m3fn), acg.tensor(b).to(acg.float8_e4m3fn)
    got = F.scaled_grouped_mm(a8, b8, acg.tensor(2.0), S.TensorWise, acg.tensor(0.5),
                              S.TensorWise, offs=offs, output_dtype=acg.float32)
    want = _grouped_scaled_ref(a, b, [3, 8], np.ones(8), np.ones((2, 4)))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        F.scaled_grouped_mm(a8, b8, acg.ones(8, 1), S.RowWise, acg.ones(2, 4), S.RowWise,
                            offs=offs)
    with pytest.raises(ValueError, match="swizzle"):
        F.scaled_grouped_mm(a8, b8, acg.ones(8), S.RowWise, acg.ones(2, 4), S.RowWise, offs=offs,
                            swizzle_b=F.SwizzleType.SWIZZLE_32_4_4)


# -- stft / istft ----------------------------------------------------------------------------------
STFT = [  # (name, stft kwargs, window length or None, input shape)
    ("hann_hop_win", dict(n_fft=16, hop_length=3, win_length=10), 10, (2, 64)),
    ("rect_nocenter_normalized", dict(n_fft=16, center=False, normalized=True), 16, (64,)),
    ("twosided", dict(n_fft=16, onesided=False), 16, (2, 48)),
    ("constant_pad", dict(n_fft=16, pad_mode="constant"), 16, (2, 48)),
    ("align_to_window", dict(n_fft=16, win_length=10, center=False, align_to_window=True), 10,
     (64,)),
]


@pytest.mark.parametrize("name,kw,wlen,shape", STFT, ids=[c[0] for c in STFT])
def test_stft_matches_torch_values_and_grads(mode, name, kw, wlen, shape) -> None:
    torch = pytest.importorskip("torch")
    rng = _rng(6)
    x, w = rng.standard_normal(shape), np.hanning(wlen)
    tx = torch.tensor(x, requires_grad=True)
    want = torch.view_as_real(torch.stft(tx, window=torch.tensor(w), return_complex=True, **kw))
    ct = rng.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(ct))
    ax = acg.tensor(x, requires_grad=True)
    got = acg.view_as_real(acg.stft(ax, window=acg.tensor(w), return_complex=True, **kw))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    with mode():
        (got * acg.tensor(ct)).sum().backward()
    np.testing.assert_allclose(ax.grad.numpy(), tx.grad.numpy(), atol=1e-12)


ISTFT = [  # (name, shared kwargs, istft-only kwargs, window length)
    ("hann", dict(n_fft=16, hop_length=4), {}, 16),
    ("length_longer", dict(n_fft=16, hop_length=4), dict(length=70), 16),
    ("length_shorter_normalized", dict(n_fft=16, normalized=True), dict(length=50), 16),
    ("twosided_complex_out", dict(n_fft=16, onesided=False), dict(return_complex=True), 16),
    ("short_window", dict(n_fft=16, win_length=12, hop_length=2), {}, 12),
    ("rect_nocenter", dict(n_fft=16, hop_length=2, center=False), {}, 16),
]


@pytest.mark.parametrize("name,kw,ikw,wlen", ISTFT, ids=[c[0] for c in ISTFT])
def test_istft_matches_torch_values_and_grads(mode, name, kw, ikw, wlen) -> None:
    torch = pytest.importorskip("torch")
    rng = _rng(7)
    x, w = rng.standard_normal((2, 64)), np.hanning(wlen)
    if not kw.get("center", True):  # the first sample needs a non-zero window weight
        w = np.ones(wlen)
    tspec = torch.stft(torch.tensor(x), window=torch.tensor(w), return_complex=True,
                       **kw).detach().requires_grad_(True)
    want = torch.istft(tspec, window=torch.tensor(w), **kw, **ikw)
    ct = rng.standard_normal(tuple(torch.view_as_real(want).shape if want.is_complex()
                                   else want.shape))
    (torch.view_as_real(want) if want.is_complex() else want).backward(torch.tensor(ct))
    aspec = acg.tensor(tspec.detach().numpy(), requires_grad=True)
    got = acg.istft(aspec, window=acg.tensor(w), **kw, **ikw)
    assert got.dtype == (acg.complex128 if want.is_complex() else acg.float64)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    with mode():
        ((acg.view_as_real(got) if got.is_complex() else got) * acg.tensor(ct)).sum().backward()
    np.testing.assert_allclose(aspec.grad.numpy(), tspec.grad.numpy(), atol=1e-12)


STFT_ERRORS = [  # (call on a module m; torch's message is compared after the call's prefix)
    lambda m, x, w: m.stft(x, 16),  # return_complex missing for real input
    lambda m, x, w: m.stft(x, 16, window=w[:10], return_complex=True),
    lambda m, x, w: m.stft(x, 128, center=False, window=m.ones(128), return_complex=True),
    lambda m, x, w: m.stft(x, 16, hop_length=0, window=w, return_complex=True),
    lambda m, x, w: m.stft(x.to(m.complex128), 16, window=w, onesided=True,
                           return_complex=True),
    lambda m, x, w: m.stft(x, 16, window=w, align_to_window=True, return_complex=True),
    lambda m, x, w: m.stft(x.reshape(2, 2, 16), 8, window=w[:8], return_complex=True),
    lambda m, x, w: m.istft(m.stft(x, 16, window=w, return_complex=True).abs(), 16, window=w),
    lambda m, x, w: m.istft(m.stft(x, 16, window=w, return_complex=True), 16, window=w,
                            return_complex=True),
]


@pytest.mark.parametrize("i", range(len(STFT_ERRORS)))
def test_stft_istft_errors_match_torch(i: int) -> None:
    torch = pytest.importorskip("torch")
    call = STFT_ERRORS[i]
    x, w = np.ones(64), np.hanning(16)
    with pytest.raises(Exception) as theirs:
        call(torch, torch.tensor(x), torch.tensor(w))
    with pytest.raises(type(theirs.value)) as ours:
        call(acg, acg.tensor(x), acg.tensor(w))
    assert str(theirs.value).split(" : ")[-1] == str(ours.value).split(" : ")[-1]


def test_istft_refuses_a_window_that_leaves_samples_uncovered() -> None:
    torch = pytest.importorskip("torch")
    w = np.hanning(16)  # zero at both ends: without centering sample 0 has no weight
    with pytest.raises(RuntimeError, match="window overlap add min"):
        torch.istft(torch.stft(torch.ones(64), 16, window=torch.tensor(w), center=False,
                               return_complex=True), 16, window=torch.tensor(w), center=False)
    spec = acg.stft(acg.ones(64), 16, window=acg.tensor(w), center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        acg.istft(spec, 16, window=acg.tensor(w), center=False)


def test_stft_warns_once_without_a_window_and_tensor_methods() -> None:
    import autograd_compile.kernels.api_tail_c as tc
    tc._STFT_WARNED[0] = tc._ISTFT_WARNED[0] = False
    x = acg.arange(64.0)
    with pytest.warns(UserWarning, match="A window was not provided"):
        spec = x.stft(16, return_complex=True)
    with pytest.warns(UserWarning, match="A window was not provided"):
        y = spec.istft(16)
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-4)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        assert x.stft(16, window=acg.ones(16), return_complex=False).shape == (9, 17, 2)


# -- the rest of the long tail -------------------------------------------------------------------
def test_as_strided_in_place_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    t, a = torch.arange(6.0), acg.arange(6.0)
    assert a.as_strided_((2, 2), (1, 2), 1) is a
    t.as_strided_((2, 2), (1, 2), 1)
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    b = acg.arange(6.0)
    acg.as_strided_(b, (3,), (2,))
    np.testing.assert_array_equal(b.numpy(), [0.0, 2.0, 4.0])
    with pytest.raises(RuntimeError, match="as_strided_"):
        acg.ones(3, requires_grad=True).as_strided_((2,), (1,))


def test_copy_views_fork_wait_layout_and_thread_safe_generator_match_torch() -> None:
    torch = pytest.importorskip("torch")
    z = np.array([1 + 2j, -3.5j])
    np.testing.assert_array_equal(acg.view_as_real_copy(acg.tensor(z)).numpy(),
                                  torch.view_as_real_copy(torch.tensor(z)).numpy())
    r = np.array([[1.0, 2.0], [0.5, -1.0]])
    np.testing.assert_array_equal(acg.view_as_complex_copy(acg.tensor(r)).numpy(),
                                  torch.view_as_complex_copy(torch.tensor(r)).numpy())
    fut = acg.fork(lambda a, b=1: a * 10 + b, 4, b=2)
    assert fut.done() and acg.wait(fut) == torch.wait(torch.jit.fork(lambda a: a * 10 + 2, 4))
    assert fut.then(lambda f: f.value() + 1).wait() == 43
    assert repr(acg.strided) == repr(torch.strided) and acg.ones(2).layout is acg.strided
    assert isinstance(acg.strided, acg.layout) and isinstance(acg.channels_last,
                                                              acg.memory_format)
    assert repr(acg.contiguous_format) == repr(torch.contiguous_format)
    assert acg.thread_safe_generator() is None and torch.thread_safe_generator() is None


def test_numpy_of_a_tensor_that_requires_grad_raises_as_torch() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(2, requires_grad=True).numpy()
    x = acg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as ours:
        x.numpy()
    assert str(ours.value) == str(theirs.value)
    np.testing.assert_array_equal(x.numpy(force=True), [1.0, 1.0])
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="requires grad"):
        (x * 2).numpy()  # a non-leaf in the graph too
    with acg.no_grad():
        np.testing.assert_array_equal((x * 2).numpy(), [2.0, 2.0])  # made without grad


# -- torch.lstm / gru / rnn_tanh / rnn_relu (flat weights) -----------------------------------------
FLAT_RNN = [("lstm_proj", "lstm", dict(proj_size=3)), ("lstm", "lstm", {}), ("gru", "gru", {}),
            ("rnn_tanh", "rnn_tanh", {}), ("rnn_relu", "rnn_relu", {})]


@pytest.mark.filterwarnings("ignore:LSTM with projections")  # torch's own oneDNN note
@pytest.mark.parametrize("name,fn,kw", FLAT_RNN, ids=[c[0] for c in FLAT_RNN])
def test_flat_weight_rnn_entries_match_torch(mode, name, fn, kw) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(fn, torch.nn.RNN)
    extra = {"nonlinearity": fn[4:]} if fn.startswith("rnn") else kw
    m = cls(4, 5, num_layers=2, bidirectional=True, batch_first=True, **extra)
    rng = _rng(8)
    x = rng.standard_normal((3, 6, 4)).astype(np.float32)
    h0 = rng.standard_normal((4, 3, kw.get("proj_size", 5))).astype(np.float32)
    c0 = rng.standard_normal((4, 3, 5)).astype(np.float32)
    tp = [p.detach().clone().requires_grad_() for p in m._flat_weights]
    ap = [acg.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    thx = [torch.tensor(h0), torch.tensor(c0)] if fn == "lstm" else torch.tensor(h0)
    ahx = [acg.tensor(h0), acg.tensor(c0)] if fn == "lstm" else acg.tensor(h0)
    want = getattr(torch, fn)(torch.tensor(x), thx, tp, True, 2, 0.0, False, True, True)
    got = getattr(acg, fn)(acg.tensor(x), ahx, ap, True, 2, 0.0, False, True, True)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-5)
    sum(w.square().sum() for w in want).backward()
    with mode():
        sum(g.square().sum() for g in got).backward()
    for a, t in zip(ap, tp):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
