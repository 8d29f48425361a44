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
    assert str(got.dtype) == str(want.dtype).replace("torch.", "")
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
