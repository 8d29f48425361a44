"""Long tail i-z (kernels/api_tail_b.py) checked against PyTorch: values, dtypes, gradients."""
import warnings

import numpy as np
import pytest

import autograd_compile as acg

torch = pytest.importorskip("torch")

R = np.random.default_rng(0)
A = R.standard_normal((3, 4))
P = R.uniform(0.5, 2.0, (3, 4))          # positive
B = R.standard_normal((3, 4))
M = R.standard_normal((4, 3))
V = R.standard_normal(4)
W = R.standard_normal(3)
I = np.array([[3, 1, 2], [1, 1, 5]], dtype=np.int64)
NAN = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, 5.0, 4.0, 0.5]])
INF = np.array([-np.inf, np.inf, 0.0, -0.0, 1.0, -2.0])


def _conv(x, lib):
    """numpy arrays to tensors of lib (leaves), other values as they are."""
    if isinstance(x, np.ndarray):
        return lib.tensor(x)
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], np.ndarray):
        return type(x)(lib.tensor(v) for v in x)
    return x


def _ref(name, *args, **kwargs):
    """torch's result, its deprecation/beta warnings silenced (they are torch's, not ours)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(torch, name)(*args, **kwargs)


def sumw(outs, lib):
    """A weighted sum of the float64 outputs: a scalar loss with distinct output gradients."""
    return sum((o * lib.tensor(np.linspace(0.5, 1.5, o.numel())).reshape(o.shape)).sum()
               for o in _flat(outs) if o.dtype == lib.float64)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _flat(x)]
    return [out]


# (name, args, kwargs, differentiable input positions)
CASES = [
    ("log10", (P,), {}, [0]), ("log2", (P,), {}, [0]), ("sinh", (A,), {}, [0]),
    ("log10", (I,), {}, []),
    ("lerp", (A, B, 0.3), {}, [0, 1]), ("lerp", (A, B, P), {}, [0, 1, 2]),
    ("rad2deg", (A,), {}, [0]), ("rad2deg", (I,), {}, []),
    ("ldexp", (A, np.arange(12.0).reshape(3, 4) % 4 - 1), {}, [0]),
    ("logaddexp", (A, B), {}, [0, 1]), ("logaddexp2", (A, B), {}, [0, 1]),
    ("logaddexp", (INF, INF[::-1].copy()), {}, []),
    ("logcumsumexp", (A, 1), {}, [0]), ("logcumsumexp", (A, 0), {}, [0]),
    ("signbit", (INF,), {}, []), ("signbit", (I,), {}, []),
    ("isneginf", (INF,), {}, []), ("isposinf", (INF,), {}, []), ("isreal", (A,), {}, []),
    ("positive", (A,), {}, [0]), ("rsub", (A, B), {}, [0, 1]),
    ("rsub", (A, B), {"alpha": 2.0}, [0, 1]), ("rsub", (A, 2.0), {}, [0]),
    ("isin", (I, np.array([1, 5])), {}, []), ("isin", (I, np.array([1, 5])), {"invert": True}, []),
    ("median", (A,), {}, [0]), ("median", (A, 1), {}, [0]), ("median", (A, 0, True), {}, [0]),
    ("nanmedian", (NAN,), {}, []), ("nanmedian", (NAN, 1), {}, []),
    ("kthvalue", (A, 2), {}, [0]), ("kthvalue", (A, 3, 0, True), {}, [0]),
    ("msort", (A,), {}, [0]), ("nansum", (NAN,), {}, []), ("nansum", (NAN, 1), {}, []),
    ("nanmean", (NAN, 1), {}, []), ("nanmean", (A,), {}, [0]), ("nansum", (A, 0), {}, [0]),
    ("quantile", (A, 0.3), {}, [0]), ("quantile", (A, 0.3, 1, True), {}, [0]),
    ("quantile", (A, np.array([0.25, 0.5, 0.9])), {"dim": 0}, [0]),
    ("quantile", (A, 0.4), {"dim": 1, "interpolation": "lower"}, []),
    ("quantile", (A, 0.4), {"dim": 1, "interpolation": "higher"}, []),
    ("quantile", (A, 0.4), {"dim": 1, "interpolation": "nearest"}, []),
    ("quantile", (A, 0.4), {"dim": 1, "interpolation": "midpoint"}, []),
    ("quantile", (NAN, 0.5, 1), {}, []), ("nanquantile", (NAN, 0.5, 1), {}, []),
    ("nanquantile", (NAN, 0.7), {}, []),
    ("trace", (M[:3],), {}, [0]), ("trace", (I[:, :2],), {}, []),
    ("trapezoid", (A,), {}, [0]), ("trapezoid", (A, V), {}, [0]),
    ("trapezoid", (A,), {"dx": 0.5, "dim": 0}, [0]), ("trapz", (A, V), {}, [0]),
    ("renorm", (A, 2, 0, 1.0), {}, [0]), ("renorm", (A, 1, 1, 1.5), {}, [0]),
    ("mv", (A, V), {}, [0, 1]), ("vdot", (V, V * 2), {}, [0, 1]),
    ("tensordot", (A, M), {"dims": 1}, [0, 1]), ("tensordot", (A, A), {"dims": 2}, [0, 1]),
    ("tensordot", (A, M), {"dims": ([0, 1], [1, 0])}, [0, 1]),
    ("inner", (A, B), {}, [0, 1]), ("kron", (A, M), {}, [0, 1]), ("kron", (V, A), {}, [0, 1]),
    ("movedim", (A.reshape(3, 2, 2), 0, 2), {}, [0]),
    ("movedim", (A.reshape(3, 2, 2), (0, 1), (2, 0)), {}, [0]),
    ("moveaxis", (A.reshape(3, 2, 2), -1, 0), {}, [0]),
    ("ravel", (A,), {}, [0]), ("tile", (A, (2,)), {}, [0]), ("tile", (V, (2, 2)), {}, [0]),
    ("rot90", (A,), {}, [0]), ("rot90", (A, 2), {}, [0]), ("rot90", (A, -1, (1, 0)), {}, [0]),
    ("vsplit", (A.reshape(4, 3), 2), {}, [0]), ("vsplit", (A.reshape(4, 3), [1, 3]), {}, [0]),
    ("vstack", ([V, A[:, :4][0]],), {}, []), ("row_stack", ([A, B],), {}, []),
    ("tensor_split", (A, 3, 1), {}, [0]), ("tensor_split", (A, [1, 5], 1), {}, [0]),
    ("split_with_sizes", (A, [1, 3], 1), {}, [0]), ("take", (A, I), {}, [0]),
    ("select_scatter", (A, W, 1, 2), {}, [0, 1]),
    ("slice_scatter", (A, B[:, :2], 1, 1, 4, 2), {}, [0, 1]),
    ("slice_scatter", (A, B[:2], 0, None, 2), {}, [0, 1]),
    ("narrow_copy", (A, 1, 1, 2), {}, []), ("permute_copy", (A, (1, 0)), {}, []),
    ("select_copy", (A, 0, 1), {}, []), ("t_copy", (A,), {}, []),
    ("transpose_copy", (A, 0, 1), {}, []), ("unsqueeze_copy", (A, 1), {}, []),
    ("squeeze_copy", (A[:1],), {}, []), ("unbind_copy", (A, 1), {}, []),
    ("split_copy", (A, 2, 1), {}, []), ("view_copy", (A, (4, 3)), {}, []),
    ("slice_copy", (A, 1, 0, 3, 2), {}, []), ("split_with_sizes_copy", (A, [2, 2], 1), {}, []),
    ("meshgrid", (V, W), {"indexing": "ij"}, [0, 1]),
    ("meshgrid", (V, W), {"indexing": "xy"}, [0, 1]),
    ("selu", (A,), {}, [0]), ("threshold", (A, 0.1, -1.0), {}, [0]),
    ("prelu", (A, np.array([0.2])), {}, [0, 1]),
    ("layer_norm", (A, (4,)), {}, [0]),
    ("kl_div", (A, P), {}, [0]), ("margin_ranking_loss", (A, B, np.sign(M.T)), {}, [0, 1]),
    ("pairwise_distance", (A, B), {}, [0, 1]), ("pdist", (A,), {}, [0]),
    ("triplet_margin_loss", (A, B, P), {}, [0, 1, 2]),
    ("margin_ranking_loss", (A, B, np.sign(M.T), 0.1, 1), {}, [0, 1]),
    ("triplet_margin_loss", (A, B, P, 1.0, 2.0, 1e-6, False, 2), {}, [0, 1, 2]),
    ("masked_scatter", (A, A > 0, B), {}, [0, 2]),
    ("masked_scatter", (A, (A > 0)[0], B), {}, [0, 2]),
    ("put", (A, np.array([[0, -1], [5, 2]]), W[:2].repeat(2).reshape(2, 2)), {}, [0, 2]),
    ("put", (A, np.array([1, 1, 3]), W), {"accumulate": True}, [0, 2]),
    ("index_put", (A, (np.array([0, 2]), np.array([1, 3])), W[:2]), {}, [0, 2]),
    ("index_reduce", (A, 0, np.array([0, 2, 0]), B, "amax"), {}, []),
    ("index_reduce", (A, 1, np.array([0, 2, 0, 1]), B, "mean"), {"include_self": False}, []),
    ("index_reduce", (P, 0, np.array([1, 1, 0]), P, "prod"), {}, [0, 3]),
    ("mode", (np.array([[1., 2, 2, 3, 3], [4, 4, 1, 1, 5]]), 1), {}, []),
    ("mode", (np.array([[1, 2, 2], [3, 3, 1]]), 0, True), {}, []),
    ("resolve_neg", (A,), {}, [0]), ("nonzero_static", (I > 1,), {"size": 6}, []),
    ("nonzero_static", (I > 1,), {"size": 2, "fill_value": 7}, []),
    ("unique", (I,), {"return_inverse": True, "return_counts": True}, []),
    ("unique", (I,), {"dim": 1}, []),
    ("unique_consecutive", (np.array([1, 1, 2, 2, 3, 1]),),
     {"return_inverse": True, "return_counts": True}, []),
    ("unravel_index", (np.array([5, -1, 7]), (3, 4)), {}, []),
    ("zero_", (A.copy(),), {}, []), ("rrelu", (A,), {}, [0]),
    ("kaiser_window", (6,), {}, []), ("kaiser_window", (5, False, 5.0), {}, []),
    ("nuclear_norm", (A,), {}, [0]), ("norm_except_dim", (A, 2, 1), {}, [0]),
    ("norm_except_dim", (A, 3, -1), {}, [0]), ("unfold_copy", (A, 1, 2, 1), {}, [0]),
    ("orgqr", (M, W[:3]), {}, [0, 1]),
    ("ormqr", (M, W[:3], A.T.copy()), {}, [0, 1, 2]),
    ("ormqr", (M, W[:3], A), {"left": False, "transpose": True}, [0, 1, 2]),
    ("kl_div", (A, P, 1), {}, [0, 1]), ("kl_div", (A, A, 2), {"log_target": True}, [0, 1]),
]


def _ids():
    return [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_forward_and_grad(case):
    name, args, kwargs, diff = case
    ours = getattr(acg, name)(*[_conv(a, acg) for a in args], **kwargs)
    ref = _ref(name, *[_conv(a, torch) for a in args], **kwargs)
    o, r = _flat(ours), _flat(ref)
    assert len(o) == len(r)
    for x, y in zip(o, r):
        assert tuple(x.shape) == tuple(y.shape), name
        assert str(x.dtype).replace("torch.", "") == str(y.dtype).replace("torch.", ""), name
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-6, atol=1e-8,
                                   err_msg=name)
    if not diff:
        return
    ta = [_conv(a, torch) for a in args]
    aa = [_conv(a, acg) for a in args]
    for i in diff:
        ta[i].requires_grad_(True)
        aa[i].requires_grad_(True)
    sumw(_ref(name, *ta, **kwargs), torch).backward()
    sumw(getattr(acg, name)(*aa, **kwargs), acg).backward()
    for i in diff:
        np.testing.assert_allclose(aa[i].grad.numpy(), ta[i].grad.numpy(), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{name} grad {i}")


@pytest.mark.parametrize("name,args", [
    ("logcumsumexp", (A, 1)), ("quantile", (A, 0.3, 1)), ("kron", (A, M)), ("median", (A, 1)),
    ("logaddexp", (A, B)), ("select_scatter", (A, W, 1, 2)), ("rot90", (A,)),
])
def test_grad_modes(name, args, mode):
    aa = [_conv(a, acg) for a in args]
    ta = [_conv(a, torch) for a in args]
    aa[0].requires_grad_(True)
    ta[0].requires_grad_(True)
    out = _flat(getattr(acg, name)(*aa))[0]
    with mode():
        (out * out).sum().backward()
    r = _flat(getattr(torch, name)(*ta))[0]
    (r * r).sum().backward()
    np.testing.assert_allclose(aa[0].grad.numpy(), ta[0].grad.numpy(), rtol=1e-6, atol=1e-8)


METHODS = [
    ("log10", (P,)), ("sinh", (A,)), ("lerp", (A, B, 0.5)), ("logaddexp", (A, B)),
    ("median", (A, 1)), ("kthvalue", (A, 2, 0)), ("movedim", (A, 0, 1)), ("nanmean", (NAN,)),
    ("quantile", (A, 0.5)), ("ravel", (A,)), ("rot90", (A, 1, (0, 1))), ("signbit", (A,)),
    ("tile", (A, (1, 2))), ("kron", (A, B)), ("inner", (A, B)), ("trace", (A,)),
    ("renorm", (A, 2, 1, 1.0)), ("take", (A, I)),
    ("tensor_split", (A, 2)), ("vdot", (V, V)), ("unfold", (V, 0, 2, 2)),
    ("mode", (I,)), ("unique", (I,)), ("put", (A, I[0], W)), ("resolve_neg", (A,)),
    ("mv", (A, V)), ("isposinf", (INF,)),
]


@pytest.mark.parametrize("name,args", METHODS, ids=[m[0] for m in METHODS])
def test_methods(name, args):
    ours = getattr(acg.tensor(args[0]), name)(*[_conv(a, acg) for a in args[1:]])
    ref = getattr(torch.tensor(args[0]), name)(*[_conv(a, torch) for a in args[1:]])
    for x, y in zip(_flat(ours), _flat(ref)):
        np.testing.assert_allclose(np.asarray(x.detach().numpy(), dtype=np.float64),
                                   np.asarray(y.detach().numpy(), dtype=np.float64), rtol=1e-6)


INPLACE = [
    ("log_", P, ()), ("log10_", P, ()), ("log2_", P, ()), ("log1p_", P, ()), ("sin_", A, ()),
    ("sinh_", A, ()), ("tan_", A, ()), ("tanh_", A, ()), ("sigmoid_", A, ()), ("relu_", A, ()),
    ("round_", A * 3, ()), ("trunc_", A * 3, ()), ("rsqrt_", P, ()), ("sqrt_", P, ()),
    ("square_", A, ()), ("reciprocal_", P, ()), ("rad2deg_", A, ()), ("sinc_", A, ()),
    ("negative_", A, ()), ("sign_", A, ()), ("sgn_", A, ()), ("logit_", P / 3, ()),
    ("xlogy_", P, (P,)), ("lerp_", A, (B, 0.25)), ("lt_", A, (B,)), ("le_", A, (B,)),
    ("ne_", A, (B,)), ("less_", A, (B,)), ("remainder_", A, (0.7,)), ("subtract_", A, (B,)),
    ("multiply_", A, (B,)), ("true_divide_", A, (P,)), ("renorm_", A, (2, 0, 1.0)),
    ("lgamma_", P, ()), ("masked_scatter_", A, (A > 0, B)), ("put_", A, (I[0], W)),
    ("index_reduce_", A, (0, np.array([1, 0, 1]), B, "amin")), ("i0_", A, ()),
    ("polygamma_", P, (1,)), ("ldexp_", A, (B,)),
]


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")  # torch's own
@pytest.mark.parametrize("name,x,args", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_methods(name, x, args):
    ours, ref = acg.tensor(x), torch.tensor(x)
    before = ours.detach().numpy().copy()
    r1 = getattr(ours, name)(*[_conv(a, acg) for a in args])
    getattr(ref, name)(*[_conv(a, torch) for a in args])
    assert r1 is ours
    assert not np.array_equal(ours.detach().numpy(), before)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["log_", "log10_", "sigmoid_", "relu_", "round_", "rsqrt_",
                                  "sinh_", "square_", "trunc_", "reciprocal_", "rad2deg_",
                                  "rrelu_", "zero_"])
def test_torch_inplace(name):
    x = A * 2 if name in ("relu_", "round_", "trunc_", "sinh_", "square_", "rrelu_") else P * 2
    ours, ref = acg.tensor(x), torch.tensor(x)
    before = ours.detach().numpy().copy()
    getattr(acg, name)(ours)
    getattr(torch, name)(ref)
    assert not np.array_equal(ours.detach().numpy(), before)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-6)


def test_inplace_grad_and_dtype_error(mode):
    x = acg.tensor(P, requires_grad=True)
    y = x * 1.0
    y.log_()
    y.sinh_()
    with mode():
        y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cosh(np.log(P)) / P, rtol=1e-12)
    with pytest.raises(RuntimeError):
        acg.tensor(I).log_()


def test_factories_and_predicates():
    for f, args, kw in [("logspace", (0, 2, 5), {}), ("logspace", (0, 3, 4, 2), {}),
                        ("tril_indices", (3, 4), {}), ("triu_indices", (4, 3, 1), {}),
                        ("tril_indices", (3, 3, -1), {}), ("scalar_tensor", (2.5,), {}),
                        ("scalar_tensor", (3,), {"dtype": torch.int64})]:
        if "dtype" in kw:
            ours = getattr(acg, f)(*args, dtype=acg.int64)
        else:
            ours = getattr(acg, f)(*args)
        ref = getattr(torch, f)(*args, **kw)
        assert str(ours.dtype) == str(ref.dtype)
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    with pytest.warns(UserWarning):
        r = acg.range(1, 4)
    np.testing.assert_allclose(r.detach().numpy(), [1, 2, 3, 4])
    assert acg.promote_types(acg.int32, acg.float32) == acg.float32
    assert acg.result_type(acg.tensor([1]), 1.0) == acg.float32
    t = acg.tensor(A)
    assert acg.is_same_size(t, acg.tensor(B)) and not acg.is_same_size(t, acg.tensor(M))
    assert acg.is_signed(t) and not acg.is_signed(acg.tensor([1], dtype=acg.uint8))
    assert acg.is_nonzero(acg.tensor([1.0])) and not acg.is_nonzero(acg.tensor(0))
    with pytest.raises(RuntimeError):
        acg.is_nonzero(t)
    assert t.stride() == torch.tensor(A).stride() and t.stride(1) == 1
    assert t.new(2, 3).shape == (2, 3) and t.new([1.0, 2.0]).dtype == t.dtype
    assert t.ndimension() == 2 and t.nelement() == 12 and not t.is_neg()
    assert acg.typename(acg.tensor(np.float32(A))) == torch.typename(torch.tensor(np.float32(A)))
    assert acg.typename(3) == torch.typename(3)


def test_errors():
    t = acg.tensor(A)
    with pytest.raises(RuntimeError):
        acg.mv(t, acg.tensor(W))
    with pytest.raises(IndexError):
        acg.kthvalue(t, 5)
    with pytest.raises(RuntimeError):
        acg.vsplit(acg.tensor(A), 2)
    with pytest.raises(RuntimeError):
        acg.quantile(t, 1.5)
    with pytest.raises(RuntimeError):
        acg.rot90(t, 1, (0, 0))
    with pytest.raises(RuntimeError):
        acg.nanmean(acg.tensor(I))


def test_nextafter_lcm():
    a, b = np.array([1.0, 2.0, 0.0, -1.5]), np.array([2.0, 0.0, -1.0, -1.5])
    cases = [("nextafter", a, b), ("lcm", I[0], I[1]), ("lcm", np.array([-4, 0]), np.array([6, 3]))]
    for f, x, y in cases:
        np.testing.assert_array_equal(getattr(acg, f)(acg.tensor(x), acg.tensor(y)).detach().numpy(),
                                      getattr(torch, f)(torch.tensor(x), torch.tensor(y)).detach().numpy())
    t = acg.tensor(a)
    t.nextafter_(acg.tensor(b))
    np.testing.assert_array_equal(t.detach().numpy(), np.nextafter(a, b))
    with pytest.raises(RuntimeError):
        acg.lcm(acg.tensor(a), acg.tensor(b))


def test_random_fills():
    acg.manual_seed(0)
    x = acg.zeros(20000, dtype=acg.float64)
    x.random_(3, 9)
    v = x.detach().numpy()
    assert v.min() == 3 and v.max() == 8 and np.all(v == np.round(v))
    x.log_normal_(1.0, 0.5)
    logs = np.log(x.detach().numpy())
    assert abs(logs.mean() - 1.0) < 0.03 and abs(logs.std() - 0.5) < 0.03
    rates = acg.full((20000,), 4.0)
    draws = acg.poisson(rates).detach().numpy()
    assert abs(draws.mean() - 4.0) < 0.1 and abs(draws.var() - 4.0) < 0.3
    assert np.all(draws == np.round(draws))
    assert x.new_empty_strided((2, 3), (3, 1)).shape == (2, 3)


@pytest.mark.parametrize("name,args", [("t_", ()), ("transpose_", (0, 1)), ("swapaxes_", (1, 0)),
                                       ("swapdims_", (0, 1)), ("squeeze_", ()),
                                       ("unsqueeze_", (1,)), ("resize_", (2, 3)),
                                       ("resize_", (2, 2))])
def test_shape_inplace(name, args):
    ours, ref = acg.tensor(A[:1].reshape(1, 4)[:, :3]), torch.tensor(A[:1].reshape(1, 4)[:, :3])
    assert getattr(ours, name)(*args) is ours
    getattr(ref, name)(*args)
    assert tuple(ours.shape) == tuple(ref.shape)
    if name != "resize_" or int(np.prod(args)) <= 3:  # torch leaves grown storage uninitialised
        np.testing.assert_array_equal(ours.detach().numpy(), ref.detach().numpy())
    with pytest.raises(RuntimeError):
        getattr(acg.ones(1, 3, requires_grad=True), name)(*args)


@pytest.mark.parametrize("name", ["solve", "symeig", "lstsq", "eig", "reinforce"])
def test_removed_methods_raise_like_torch(name):
    args = {"solve": 1, "lstsq": 1, "reinforce": 1}.get(name, 0)
    with pytest.raises(RuntimeError, match="removed"):
        getattr(torch.eye(3), name)(*[torch.eye(3)] * args)
    with pytest.raises(RuntimeError, match="removed"):
        getattr(acg.eye(3), name)(*[acg.eye(3)] * args)


def test_resize_and_map2():
    t = acg.tensor(A)
    r = t.resize(2, 5)
    assert r.shape == (2, 5) and t.shape == (3, 4)
    np.testing.assert_array_equal(r.detach().numpy().ravel(), A.ravel()[:10])
    assert t.resize_as(acg.tensor(W)).shape == (3,)
    ref = torch.tensor(A)
    ref.map2_(torch.tensor(B), torch.tensor(P), lambda a, b, c: a * b + c)
    t.map2_(acg.tensor(B), acg.tensor(P), lambda a, b, c: a * b + c)
    np.testing.assert_allclose(t.detach().numpy(), ref.detach().numpy(), rtol=1e-12)


def test_vmap_and_flags():
    f = lambda x: (x * x).sum()  # noqa: E731
    np.testing.assert_allclose(acg.vmap(f)(acg.tensor(A)).detach().numpy(),
                               torch.vmap(f)(torch.tensor(A)).detach().numpy(), rtol=1e-12)
    for name in ["is_anomaly_enabled", "is_anomaly_check_nan_enabled", "is_autocast_cpu_enabled",
                 "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "is_warn_always_enabled",
                 "is_autocast_cache_enabled"]:
        assert getattr(acg, name)() == getattr(torch, name)(), name
    with pytest.warns(UserWarning, match="Anomaly"):  # torch's own warning on entry
        with acg.autograd.detect_anomaly(), torch.autograd.detect_anomaly():
            assert acg.is_anomaly_enabled() and torch.is_anomaly_enabled()
    assert acg.init_num_threads() is None
    assert not acg.is_storage(acg.tensor(A)) and not acg.is_distributed(acg.tensor(A))
