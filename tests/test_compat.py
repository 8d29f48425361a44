"""Start-up settings and legacy names PyTorch programs use: the default dtype, matmul
precision, determinism, ``torch.backends.*``, ``Size``/``finfo``/``iinfo``, ``Tensor.type``."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


@pytest.fixture
def float64_default():
    acg.set_default_dtype(acg.float64)
    yield
    acg.set_default_dtype(acg.float32)


@pytest.fixture
def restore_precision():
    yield
    jax.config.update("jax_default_matmul_precision", None)
    acg._flags._state["precision"] = None


def test_default_dtype_governs_factories_scalars_and_layers(float64_default):
    f64 = np.dtype("float64")
    assert acg.get_default_dtype() == f64
    ints = acg.tensor([1, 2])
    assert acg.tensor([1.5]).dtype == f64 and acg.ones(2).dtype == f64
    assert acg.randn(3).dtype == f64 and acg.arange(0, 1, 0.25).dtype == f64
    assert (ints * 2.5).dtype == f64 and ints.float().dtype == np.dtype("float32")
    assert acg.nn.Linear(2, 3).weight.dtype == f64
    assert "dtype" not in repr(acg.tensor([1.5]))  # the default float is implied
    assert "dtype=torch.float32" in repr(acg.tensor([1.5], dtype=acg.float32))  # as PyTorch


def test_default_dtype_reverts_and_rejects_integers(float64_default):
    acg.set_default_dtype(acg.float32)
    assert acg.ones(1).dtype == np.dtype("float32")
    assert (acg.tensor([1, 2]) * 2.5).dtype == np.dtype("float32")  # cached kernels retraced
    with pytest.raises(TypeError, match="only floating-point types are supported"):
        acg.set_default_dtype(acg.int64)


def test_float64_default_trains_like_jax_in_every_mode(float64_default, mode):
    acg.manual_seed(0)
    lin = acg.nn.Linear(4, 2)
    x = acg.randn(5, 4)
    with mode():
        ((lin(x).tanh() * 0.5) ** 2).sum().backward()

    def loss(w, b):
        return ((jnp.tanh(x.detach().numpy() @ w.T + b) * 0.5) ** 2).sum()
    gw, gb = jax.grad(loss, (0, 1))(lin.weight.detach().numpy(), lin.bias.detach().numpy())
    assert lin.weight.grad.dtype == np.dtype("float64")
    assert_close(lin.weight.grad.numpy(), gw, rtol=1e-12)
    assert_close(lin.bias.grad.numpy(), gb, rtol=1e-12)


def test_matmul_precision_maps_onto_jax(restore_precision):
    for name, xla in [("highest", "float32"), ("high", "tensorfloat32"), ("medium", "bfloat16")]:
        acg.set_float32_matmul_precision(name)
        assert acg.get_float32_matmul_precision() == name
        assert jax.config.jax_default_matmul_precision == xla
    acg.backends.cuda.matmul.allow_tf32 = False
    assert acg.get_float32_matmul_precision() == "highest"
    assert acg.backends.cuda.matmul.allow_tf32 is False
    acg.backends.cuda.matmul.allow_tf32 = True
    assert acg.get_float32_matmul_precision() == "high"
    with pytest.raises(RuntimeError, match="Invalid float32 matmul precision 'fast'"):
        acg.set_float32_matmul_precision("fast")
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    assert_close((acg.tensor(a) @ acg.tensor(a)).numpy(), a @ a, rtol=2e-2, atol=2e-2)


def test_deterministic_algorithms_flag():
    try:
        acg.use_deterministic_algorithms(True, warn_only=True)
        assert acg.are_deterministic_algorithms_enabled()
        assert acg.is_deterministic_algorithms_warn_only_enabled()
    finally:
        acg.use_deterministic_algorithms(False)
    assert not acg.are_deterministic_algorithms_enabled()


def test_backends_switches():
    assert acg.backends.mps.is_available() is False and acg.backends.mps.is_built() is False
    assert acg.backends.cudnn.is_available() == acg.cuda.is_available()
    assert acg.cuda.is_bf16_supported() == acg.cuda.is_available()
    acg.backends.cuda.enable_flash_sdp(False)
    assert acg.backends.cuda.flash_sdp_enabled() is False
    acg.backends.cuda.enable_flash_sdp(True)
    assert acg.backends.get("jax") is acg.backends.jax_backend  # the compilers stay where they were


def test_size_finfo_iinfo_match_numpy():
    s = acg.Size([2, 3, 4])
    assert s == (2, 3, 4) and s.numel() == 24 and isinstance(s, tuple)
    assert acg.finfo(acg.float32).eps == np.finfo(np.float32).eps
    assert acg.finfo(acg.float16).max == np.finfo(np.float16).max
    assert acg.finfo().eps == np.finfo(np.float32).eps  # the default dtype's
    assert acg.finfo(acg.bfloat16).bits == 16
    assert acg.iinfo(acg.int64).max == np.iinfo(np.int64).max
    assert acg.iinfo(acg.uint8).min == 0


def test_tensor_type_and_pin_memory():
    x = acg.ones(3)
    assert x.type() == "torch.FloatTensor"
    assert acg.tensor([1]).type() == "torch.LongTensor"
    assert acg.tensor([True]).type() == "torch.BoolTensor"
    assert x.type(acg.int64).dtype == np.dtype("int64")
    assert x.type("torch.DoubleTensor").dtype == np.dtype("float64")
    assert x.pin_memory() is x and not x.is_pinned()
    assert x.to("cpu", non_blocking=True).dtype == x.dtype


def test_repr_hides_default_int_and_bool_dtypes():
    assert repr(acg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(acg.tensor([True, False])) == "tensor([ True, False])"
    assert repr(acg.tensor([1], dtype=acg.int32)) == "tensor([1], dtype=torch.int32)"


def test_docstring_examples_run(restore_precision):
    import doctest
    from autograd_compile import _flags, _types
    from autograd_compile.backends import cuda, cudnn, mps
    from autograd_compile.kernels import api
    for module in (_flags, _types, cuda, cudnn, mps):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
    finder = doctest.DocTestFinder()
    for fn in (api.get_default_dtype, api.set_default_dtype):
        for test in finder.find(fn, globs={}):
            assert doctest.DocTestRunner().run(test).failed == 0
    assert acg.get_default_dtype() == np.dtype("float32")


def test_zero_dim_tensors_format_like_numbers():
    loss = acg.tensor(1.23456)
    assert f"{loss:.2f}" == "1.23" and f"{acg.tensor(7):04d}" == "0007"
    assert f"{acg.ones(2)}" == str(acg.ones(2))
    with pytest.raises(TypeError):
        f"{acg.ones(2):.2f}"


def test_accelerator_answers_from_jax_devices():
    assert acg.accelerator.is_available() == acg.cuda.is_available()
    want = acg.device("cuda") if acg.cuda.is_available() else None
    assert acg.accelerator.current_accelerator() == want
    assert acg.accelerator.device_count() == acg.cuda.device_count()
