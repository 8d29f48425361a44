"""Tensor semantics older PyTorch programs lean on, against PyTorch: ``t.data`` shares
storage (in-place writes land in ``t``, unrecorded), ``p.data = x``, factories with
``size=``, the legacy tensor types, ``acg.dtype``, mse/l1 broadcasting warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
import autograd_compile.nn.functional as F
from conftest import assert_close

torch = pytest.importorskip("torch")
from _torch_compare import load_torch_state  # noqa: E402


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_manual_sgd_through_data_learns_as_torch(mode):
    # the old idiom `p.data.add_(-lr * p.grad)`: it must change p itself
    torch.manual_seed(0)
    theirs = torch.nn.Linear(3, 2)
    ours = nn.Linear(3, 2)
    load_torch_state(ours, theirs)
    x, y = _x(8, 3), _x(8, 2, seed=1)
    for _ in range(3):
        ours.zero_grad(), theirs.zero_grad()
        loss = ((ours(acg.tensor(x)) - acg.tensor(y)) ** 2).mean()
        with mode():
            loss.backward()
        ((theirs(torch.tensor(x)) - torch.tensor(y)) ** 2).mean().backward()
        for p, tp in zip(ours.parameters(), theirs.parameters()):
            p.data.add_(-0.1 * p.grad)
            tp.data.add_(-0.1 * tp.grad)
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        assert p.requires_grad and p.is_leaf
        assert_close(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_data_writes_are_unrecorded_and_seen_by_saved_tensors(mode):
    # PyTorch: in-place on .data bumps no version counter; backward uses the new value
    for lib in ("ours", "torch"):
        if lib == "ours":
            p = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = (p * p).sum()
            p.data.mul_(2.0)
            with mode():
                y.backward()
            ours = p.grad.numpy(), p.detach().numpy()
        else:
            tp = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
            ty = (tp * tp).sum()
            tp.data.mul_(2.0)
            ty.backward()
            theirs = tp.grad.numpy(), tp.detach().numpy()
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])
    d = acg.ones(2, requires_grad=True).data
    assert not d.requires_grad and d.grad_fn is None


def test_data_assignment_replaces_value_and_shape():
    p = nn.Parameter(acg.zeros(2, 3))
    p.data = acg.ones(4)
    assert isinstance(p, nn.Parameter) and p.requires_grad and tuple(p.shape) == (4,)
    assert_close(p.detach().numpy(), np.ones(4))
    view = p.data[1:3]  # a view of .data writes through as well
    view.fill_(5.0)
    assert_close(p.detach().numpy(), [1, 5, 5, 1])


@pytest.mark.parametrize("factory", ["zeros", "ones", "rand", "randn", "empty"])
def test_factories_take_size_keyword_and_sequences(factory):
    fn = getattr(acg, factory)
    for size in ((2, 3), [2, 3], acg.Size([2, 3])):
        assert tuple(fn(size=size).shape) == tuple(getattr(torch, factory)(size=size).shape)
        assert tuple(fn(size).shape) == (2, 3)
    assert fn(size=(2, 3), dtype=acg.float64).dtype == acg.float64
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        fn(2, size=(2, 3))


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor",
                                  "BoolTensor", "ByteTensor", "ShortTensor", "CharTensor",
                                  "HalfTensor"])
def test_legacy_constructors_as_torch(name):
    ours_t, theirs_t = getattr(acg, name), getattr(torch, name)
    shaped = ours_t(2, 3)
    assert tuple(shaped.shape) == (2, 3)
    assert str(shaped.dtype).split(".")[-1] == str(theirs_t(2, 3).dtype).split(".")[-1]
    data = [[1, 0], [3, 4]]
    got, want = ours_t(data), theirs_t(data)
    assert_close(got.detach().numpy().astype(np.float64), want.detach().numpy().astype(np.float64))
    assert str(got.dtype) == str(want.dtype)  # "torch.float32" as PyTorch prints it
    assert isinstance(got, ours_t) and not isinstance(acg.zeros(2, dtype=acg.complex64),
                                                      ours_t)
    assert ours_t().shape == tuple(theirs_t().shape)
    assert tuple(ours_t(acg.Size([3])).shape) == (3,)
    assert ours_t.dtype == got.dtype



@pytest.mark.parametrize("args", [(), (3,), (2, 3), ("size",), ([1, 2],), ("ndarray",),
                                  ((1.5, 2),), ("long",), ("double",)],
                         ids=lambda a: str(a))
def test_tensor_legacy_constructor_as_torch(args):
    """``torch.Tensor(...)``: ``nn.Parameter(torch.Tensor(16, 4))`` in older modules, and
    CleanRL's ``torch.Tensor(env.reset())`` of a float64 array, which must be float32."""
    def build(lib):
        made = {"size": lib.Size([2, 2]), "ndarray": np.linspace(0, 1, 4).reshape(2, 2),
                "long": lib.tensor([1, 2]), "double": lib.tensor([1.0, 2.0], dtype=lib.float64)}
        return lib.Tensor(*[made.get(a, a) if isinstance(a, str) else a for a in args])
    got, want = build(acg), build(torch)
    assert str(got.dtype) == str(want.dtype) and tuple(got.shape) == tuple(want.shape)
    if want.numel() and args not in ((3,), (2, 3), ("size",)):  # (sizes: uninitialised)
        assert_close(got.numpy(), want.numpy())
    p = acg.nn.Parameter(acg.Tensor(16, 4))
    assert p.dtype == acg.float32 and p.requires_grad


def test_tensor_legacy_constructor_errors_as_torch():
    for bad in ((3.0,), ("a",)):
        with pytest.raises(TypeError) as ours:
            acg.Tensor(*bad)
        with pytest.raises(TypeError) as theirs:
            torch.Tensor(*bad)
        assert str(ours.value) == str(theirs.value)

def test_legacy_types_from_tensors_and_isinstance():
    t = acg.FloatTensor(acg.tensor([1, 2]))
    assert t.dtype == acg.float32 and t.tolist() == [1.0, 2.0]
    assert isinstance(acg.zeros(2), acg.FloatTensor)
    assert not isinstance(acg.zeros(2), acg.LongTensor)
    assert isinstance(acg.tensor([1, 2]), acg.LongTensor)


def test_dtype_isinstance():
    for dt in (acg.float32, acg.float64, acg.int64, acg.bool, acg.float16):
        assert isinstance(dt, acg.dtype)
    assert isinstance(acg.zeros(2).dtype, acg.dtype)
    assert not isinstance("float32", acg.dtype) and not isinstance(3, acg.dtype)
    with pytest.raises(TypeError):
        acg.dtype()


@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss"])
def test_broadcasting_target_warns_as_torch(loss):
    x, y = _x(2, 3), _x(2, 1, seed=1)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        want = getattr(torch.nn.functional, loss)(torch.tensor(x), torch.tensor(y))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        got = getattr(F, loss)(acg.tensor(x), acg.tensor(y))
    assert len(ours) == len(theirs) == 1
    assert str(ours[0].message).replace("acg.Size", "torch.Size") == str(theirs[0].message)
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(F, loss)(acg.tensor(x), acg.tensor(x))  # same shapes: silent


def test_is_inference_marks_tensors_made_in_inference_mode():
    x = acg.ones(2, requires_grad=True)
    with acg.inference_mode():
        made, computed = acg.zeros(3), x * 2
        with acg.inference_mode(False):
            normal = acg.ones(1)
    assert made.is_inference() and computed.is_inference() and acg.is_inference(computed)
    assert not (x.is_inference() or normal.is_inference() or acg.ones(1).is_inference())
    with acg.no_grad():  # no_grad is not inference mode
        assert not (x * 2).is_inference()
    torch = pytest.importorskip("torch")
    with torch.inference_mode():
        theirs = torch.zeros(3)
        with torch.inference_mode(False):
            theirs_normal = torch.ones(1)
    assert theirs.is_inference() and not theirs_normal.is_inference()
