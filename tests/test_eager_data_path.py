"""The eager data path of issue 19 (slice writes, scalar writes, factories, tensors from
lists, TensorDataset, default_collate, a makemore-style DataLoader epoch): values against
PyTorch, gradients through index writes in every mode, and the number of kernel programs
a slice write runs (the last step of a write is never read: its shape is computed)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.kernels import _xp

torch = pytest.importorskip("torch")

# (tensor shape, index, value): value None -> a tensor of the target's shape; "row" -> a
# tensor broadcast from one row; a number -> that scalar
WRITES: list[tuple[tuple, Any, Any]] = [
    ((17,), slice(5, None), -1), ((17,), slice(1, 6), None), ((17,), 16, 9),
    ((17,), slice(2, 10, 3), 7), ((17,), slice(-4, None), None), ((17,), slice(20, 30), 3),
    ((3, 4), 1, None), ((3, 4), (slice(None), 2), 5.0), ((3, 4), (slice(1, None), slice(1, 3)),
                                                             None),
    ((3, 4), (None, 0), 8.0), ((2, 3, 4), (Ellipsis, 1), None),
    ((2, 3, 4), (1, slice(0, 2)), "row"),
    ((2, 3, 4), (0, 1, 2), -2.5), ((3, 4), ([0, 2],), None), ((3, 4), (slice(None), [1, 3]), 0.5),
]


def _value(lib: Any, value: Any, target_shape: tuple, dtype: Any) -> Any:
    rng = np.random.default_rng(1)
    if value is None:
        return lib.tensor(rng.integers(-9, 9, target_shape).astype(dtype))
    if value == "row":
        return lib.tensor(rng.integers(-9, 9, target_shape[-1:]).astype(dtype))
    return value


@pytest.mark.parametrize("shape,index,value", WRITES, ids=[f"{s}-{i}" for s, i, _ in WRITES])
@pytest.mark.parametrize("dtype", [np.int64, np.float32])
def test_index_write_matches_torch(shape: tuple, index: Any, value: Any, dtype: type) -> None:
    base = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)
    target = base[index].shape
    got, want = acg.tensor(base), torch.tensor(base)
    got[index] = _value(acg, value, target, dtype)
    want[index] = _value(torch, value, target, dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert got.dtype == want.numpy().dtype and got._version == 1


def test_write_of_the_wrong_shape_is_torchs_error() -> None:
    with pytest.raises(RuntimeError) as ours:
        acg.zeros(17)[1:6] = acg.ones(4)
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(17)[1:6] = torch.ones(4)
    assert "expand" in str(ours.value) and "expand" in str(theirs.value)


def test_write_through_a_view_reaches_its_base() -> None:
    got, want = acg.zeros(4, 5), torch.zeros(4, 5)
    for lib, t in ((acg, got), (torch, want)):
        v = t[1:3]
        v[:, 2:] = lib.ones(3) * 2
        v[0, 0] = 7.0
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _grads(lib: Any, mode: Callable | None) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    x0, v0, w0 = (rng.standard_normal(s) for s in ((4, 6), (2, 3), (6,)))
    x, v, w = (lib.tensor(a, requires_grad=True) for a in (x0, v0, w0))
    y = x * 1.5
    y[1:3, 2:5] = v * v
    y[3] = w
    y[:, 0] = -1.0
    y[0, 1:] = 0.25
    loss = (y * y.sum(0)).sum()
    if mode is None:
        loss.backward()
    else:
        with mode():
            loss.backward()
    return [t.grad.numpy() for t in (x, v, w)]


def test_gradients_through_index_writes_in_every_mode(mode) -> None:
    for ours, theirs in zip(_grads(acg, mode), _grads(torch, None)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def _program_calls(fn: Callable[[], Any]) -> int:
    """Kernel calls made by ``fn`` (of kernels/_jit.py's ``call``, via cProfile)."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.runcall(fn)
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    return sum(v[1] for (f, _, name), v in stats.items()
               if f.endswith("kernels/_jit.py") and name == "call")


def test_a_slice_write_does_not_read_its_target() -> None:
    y, ix = acg.zeros(17, dtype=acg.long), acg.tensor([3, 4, 5, 6, 7])
    y[1:6] = ix  # warm
    with _xp.forced("xla"):  # the op chain (the path of tensors with autograd history)
        assert _program_calls(lambda: y.__setitem__(slice(1, 6), ix)) == 2  # scatter, copy_
        assert _program_calls(lambda: y.__setitem__(slice(5, None), -1)) == 3  # full, ..


def test_a_plain_host_tensor_is_indexed_by_numpy_without_kernels() -> None:
    """No autograd history, a numpy value: reads are numpy views, writes one copy."""
    y, ix = acg.zeros(17, dtype=acg.long), acg.tensor([3, 4, 5, 6, 7])
    y[1:6] = ix  # warm (and y becomes a host value)
    assert type(y._store) is np.ndarray
    assert _program_calls(lambda: y.__setitem__(slice(1, 6), ix)) == 0
    assert _program_calls(lambda: y.__setitem__(slice(5, None), -1)) == 0
    assert _program_calls(lambda: y[2:9]) == 0 and _program_calls(lambda: y[3]) == 0
    ref = np.zeros(17, np.int64)
    ref[1:6] = [3, 4, 5, 6, 7]
    ref[5:] = -1
    np.testing.assert_array_equal(y.numpy(), ref)
    v = y[2:9]
    v[1] = 42  # a write through the view reaches y, as in PyTorch
    assert y[3].item() == 42 and y[2:9].tolist() == ref[2:9].tolist()[:1] + [42] + ref[4:9].tolist()
    before = y._version
    y[0] = 1
    assert y._version == before + 1  # autograd's version counter sees the write
    with pytest.raises(IndexError, match="index 17 is out of bounds for dimension 0 with size 17"):
        y[17] = 1
    assert y.numpy()[0] == 1  # a failed write left the value as it was


# -- the makemore sample, TensorDataset, default_collate, DataLoader ---------------------------
def _makemore(lib: Any, word: list[int], max_len: int) -> tuple[Any, Any]:
    ix = lib.tensor(word, dtype=lib.long)
    x = lib.zeros(max_len + 1, dtype=lib.long)
    y = lib.zeros(max_len + 1, dtype=lib.long)
    x[1:1 + len(ix)] = ix
    y[:len(ix)] = ix
    y[len(ix) + 1:] = -1
    return x, y


@pytest.mark.parametrize("word", [[5], [1, 2, 3], list(range(1, 12))])
def test_makemore_sample_matches_torch(word: list[int]) -> None:
    for ours, theirs in zip(_makemore(acg, word, 11), _makemore(torch, word, 11)):
        assert ours.tolist() == theirs.tolist() and ours.dtype == acg.long


@pytest.mark.parametrize("data", [[3, 4, 5], [[1.5, 2.0], [3.0, -1.0]], [True, False], 7, 2.5,
                                  [], [[1, 2], [3, 4]], np.arange(6).reshape(2, 3)])
@pytest.mark.parametrize("dtype", [None, "long", "float64", "float32"])
def test_tensor_from_data_matches_torch(data: Any, dtype: str | None) -> None:
    ours = acg.tensor(data, dtype=getattr(acg, dtype) if dtype else None)
    theirs = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    assert ours.tolist() == theirs.tolist()
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("size", [(17,), ((2, 3),), ([4],), (2, 0), ((),)])
@pytest.mark.parametrize("factory", ["zeros", "ones", "empty"])
def test_factories_match_torch(size: tuple, factory: str) -> None:
    for dtype in (None, "long", "bool", "float64"):
        kw = {"dtype": getattr(acg, dtype)} if dtype else {}
        ours = getattr(acg, factory)(*size, **kw)
        theirs_kw = {"dtype": getattr(torch, dtype)} if dtype else {}
        theirs = getattr(torch, factory)(*size, **theirs_kw)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype) == str(theirs.dtype)
        if factory != "empty":
            assert ours.tolist() == theirs.tolist()


def test_tensor_dataset_and_collate_match_torch() -> None:
    X = np.arange(40).reshape(10, 4)
    Y = np.arange(10) % 3
    batches = {}
    for lib in (acg, torch):
        ds = lib.utils.data.TensorDataset(lib.tensor(X), lib.tensor(Y))
        assert [t.tolist() for t in ds[3]] == [X[3].tolist(), int(Y[3])]
        loader = lib.utils.data.DataLoader(ds, batch_size=4)
        batches[lib.__name__] = [[t.tolist() for t in b] for b in loader]
        collated = lib.utils.data.default_collate([ds[i] for i in (0, 5, 9)])
        assert [t.tolist() for t in collated] == [X[[0, 5, 9]].tolist(), Y[[0, 5, 9]].tolist()]
    assert batches["autograd_compile"] == batches["torch"]


def test_makemore_epoch_matches_torch() -> None:
    from autograd_compile.benchmarks.data import char_dataset, words
    names = words(40, seed=3)
    epochs = {}
    for lib in (acg, torch):
        loader = lib.utils.data.DataLoader(char_dataset(lib, names), batch_size=16)
        epochs[lib.__name__] = [(x.tolist(), y.tolist()) for x, y in loader]
    assert epochs["autograd_compile"] == epochs["torch"]
    assert len(epochs["torch"]) == 3 and len(epochs["torch"][-1][0]) == 8


@pytest.mark.parametrize("array", [np.arange(12).reshape(3, 4).T, np.arange(12.0)[::3],
                                   np.array(3.5, np.float32), np.zeros((0, 3)),
                                   np.array([True, False]), np.arange(5, dtype=np.uint8),
                                   np.arange(4, dtype=np.float16), np.array([1 + 2j])])
def test_host_transfer_makes_what_device_put_makes(array: np.ndarray) -> None:
    import jax
    from autograd_compile.kernels._transfer import to_device
    ours, theirs = to_device(array), jax.device_put(array)
    np.testing.assert_array_equal(np.asarray(ours), array)
    assert (ours.dtype, ours.shape, ours.sharding, ours.committed) == \
        (theirs.dtype, theirs.shape, theirs.sharding, theirs.committed)


def test_tensor_from_a_list_lands_on_the_default_device() -> None:
    import jax
    cpu = jax.devices("cpu")[-1]
    with jax.default_device(cpu):
        t = acg.tensor([1, 2, 3])
    assert t.__jax_array__().devices() == {cpu} and t.tolist() == [1, 2, 3]


@pytest.mark.parametrize("src_dtype,dst", [("float64", "long"), ("long", "float32"),
                                          ("float32", "bool"), ("float32", "float32")])
def test_copy_into_another_dtype_casts_as_torch(src_dtype: str, dst: str) -> None:
    """In-place results keep the target's dtype (cast only where the dtypes differ)."""
    src = np.array([1.7, -2.2, 0.0, 3.9])
    got = acg.zeros(4, dtype=getattr(acg, dst))
    want = torch.zeros(4, dtype=getattr(torch, dst))
    got.copy_(acg.tensor(src, dtype=getattr(acg, src_dtype)))
    want.copy_(torch.tensor(src, dtype=getattr(torch, src_dtype)))
    assert got.tolist() == want.tolist() and str(got.dtype) == str(want.dtype)


def _list_op_grads(lib: Any, mode: Callable | None) -> list[np.ndarray]:
    """cat and stack of lists where only some tensors require grad (the dispatcher scans
    lists for the autograd key); nested lists reach the op as well."""
    rng = np.random.default_rng(2)
    a0, b0, c0 = (rng.standard_normal((2, 3)) for _ in range(3))
    a = lib.tensor(a0, requires_grad=True)
    b, c = lib.tensor(b0), lib.tensor(c0, requires_grad=True)
    y = lib.cat([b, a, c], 0) * lib.stack([c, b, a]).sum(0).repeat(3, 1)
    y = lib.block_diag(*[a, b]).sum() + y.sum()
    if mode is None:
        y.backward()
    else:
        with mode():
            y.backward()
    return [a.grad.numpy(), c.grad.numpy()]


def test_lists_of_tensors_carry_the_autograd_key_in_every_mode(mode) -> None:
    for ours, theirs in zip(_list_op_grads(acg, mode), _list_op_grads(torch, None)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert acg.stack([acg.zeros(2), acg.ones(2, requires_grad=True)]).grad_fn is not None
    assert acg.stack([acg.zeros(2), acg.ones(2)]).grad_fn is None
