"""Top-level names and paths PyTorch programs use: ``__version__``/``version``, ``inf``/``nan``/
``pi``, ``_assert``, ``broadcast_shapes``, ``set_printoptions``, ``set_default_device``,
storage queries (``data_ptr``), ``nn.modules.utils`` and the private base-class paths."""
import math

import pytest

import autograd_compile as acg
from autograd_compile import _printing


def test_version_compares_like_torch_version():
    from packaging import version
    v = acg.__version__
    assert v.startswith("2.13.0+acg.") and version.parse(v) >= version.parse("1.10")
    assert v >= "2.0" and v < "3" and v >= (2, 13) and v > (2, 9, 1) and not v < "2.13"
    assert acg.version.__version__ == v and acg.version.hip is None
    assert acg.version.cuda is None or isinstance(acg.version.cuda, str)
    assert tuple(int(x) for x in v.split("+")[0].split(".")[:2]) == (2, 13)


def test_constants_and_assert():
    assert acg.inf == math.inf and math.isnan(acg.nan) and acg.pi == math.pi and acg.e == math.e
    assert acg.newaxis is None and acg.zeros(3)[acg.newaxis].shape == (1, 3)
    acg._assert(acg.tensor(True), "fine")
    with pytest.raises(AssertionError, match="must be positive"):
        acg._assert(acg.tensor(-1.0) > 0, "must be positive")


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((1,), (4, 1, 3)), (5,), ((), (2, 3)),
                                    ((0, 1), (1, 4)), ((2, 0), (1,)), (3, (2, 1))])
def test_broadcast_shapes_matches_torch(shapes):
    torch = pytest.importorskip("torch")
    got = acg.broadcast_shapes(*shapes)
    assert type(got) is acg.Size and tuple(got) == tuple(torch.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (4, 3)), ((1, 3), (2, 1), (5, 1))])
def test_broadcast_shapes_errors_match_torch(shapes):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.broadcast_shapes(*shapes)
    with pytest.raises(RuntimeError) as ours:
        acg.broadcast_shapes(*shapes)
    assert str(ours.value) == str(theirs.value)


def test_broadcast_shapes_by_hand():
    assert acg.broadcast_shapes((2, 1), (1, 3), (3,)) == (2, 3)
    with pytest.raises(RuntimeError, match="negative dimension"):
        acg.broadcast_shapes((-1, 2))


def test_set_printoptions_changes_the_repr():
    try:
        acg.set_printoptions(precision=2)
        assert repr(acg.tensor([0.12345, 1.5])) == "tensor([0.12, 1.50])"
        acg.set_printoptions(sci_mode=True)
        assert repr(acg.tensor([1e-5, 3.0])) == "tensor([1.00e-05, 3.00e+00])"
        acg.set_printoptions(profile="full", sci_mode=False)
        assert "..." not in repr(acg.arange(5000.0))
        acg.set_printoptions(threshold=10, edgeitems=2)
        assert repr(acg.arange(20)) == "tensor([ 0,  1, ..., 18, 19])"
        assert acg.get_printoptions()["threshold"] == 10
        with pytest.raises(ValueError, match="Unknown profile"):
            acg.set_printoptions(profile="tiny")
    finally:
        _printing.reset()
    assert repr(acg.tensor([0.5])) == "tensor([0.5])"


def test_set_default_device_cpu_round_trip():
    acg.set_default_device("cpu")
    try:
        assert acg.get_default_device().type == "cpu" and acg.zeros(2).device.type == "cpu"
    finally:
        acg.set_default_device(None)


def test_storage_queries_identify_shared_tensors():
    lin = acg.nn.Linear(2, 3)
    tied = acg.nn.Embedding(3, 2)
    tied.weight = lin.weight
    assert tied.weight.data_ptr() == lin.weight.data_ptr() != lin.bias.data_ptr()
    assert lin.weight.detach().data_ptr() == lin.weight.data_ptr()
    assert lin.weight.const_data_ptr() == lin.weight.mutable_data_ptr() == lin.weight.data_ptr()
    storage = lin.weight.untyped_storage()
    assert storage.nbytes() == 24 and storage.data_ptr() == lin.weight.data_ptr()
    assert lin.weight.storage_offset() == 0 and lin.weight.share_memory_() is lin.weight
    assert not lin.weight.is_shared()


def test_nn_modules_utils_match_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.modules.utils as tu
    from autograd_compile.nn.modules import utils as u
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for x in (3, (1, 2), [4, 5, 6], "ab"):
            assert getattr(u, name)(x) == getattr(tu, name)(x)
    assert u._reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)
    assert u._list_with_default([None, 3], [1, 2, 5, 6]) == \
        tu._list_with_default([None, 3], [1, 2, 5, 6])


def test_private_base_classes_at_torch_paths():
    from autograd_compile.nn.modules.batchnorm import _BatchNorm, _NormBase
    from autograd_compile.nn.modules.conv import _ConvNd, _ConvTransposeNd
    from autograd_compile.nn.modules.dropout import _DropoutNd
    from autograd_compile.nn.modules.instancenorm import _InstanceNorm
    from autograd_compile.nn.modules.loss import _Loss, _WeightedLoss
    assert isinstance(acg.nn.BatchNorm2d(3), _BatchNorm) and issubclass(_BatchNorm, _NormBase)
    assert isinstance(acg.nn.ConvTranspose2d(1, 1, 2), (_ConvNd, _ConvTransposeNd))
    assert isinstance(acg.nn.Dropout(), _DropoutNd)
    assert isinstance(acg.nn.InstanceNorm1d(2), _InstanceNorm)
    assert isinstance(acg.nn.CrossEntropyLoss(), _WeightedLoss) and issubclass(_WeightedLoss, _Loss)

    class AnyRankBN(_BatchNorm):  # a subclass of the private base, as libraries write them
        def _check_input_dim(self, input):
            pass
    assert AnyRankBN(4)(acg.randn(3, 4)).shape == (3, 4)


def test_memory_format_and_layout_are_accepted_like_torch():
    x = acg.arange(6.0).reshape(2, 3)
    for make in (lambda: x.clone(memory_format=acg.contiguous_format),
                 lambda: acg.clone(x, memory_format=acg.preserve_format),
                 lambda: acg.zeros_like(x, memory_format=acg.preserve_format) + x,
                 lambda: acg.full_like(x, 0.0, memory_format=acg.preserve_format) + x,
                 lambda: acg.ones_like(x, layout=acg.strided) * x):
        assert make().tolist() == x.tolist()
    r = acg.randn_like(x, requires_grad=True, memory_format=acg.preserve_format)
    assert r.requires_grad and r.is_leaf and r.shape == x.shape
