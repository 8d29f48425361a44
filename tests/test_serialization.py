"""acg.save / acg.load: exact round trips, a safe format, clear errors, exact resumption."""
from __future__ import annotations

import collections
import io
import math
import zipfile

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.optim import lr_scheduler as L

DTYPES = ["float32", "float64", "bfloat16", "float16", "int32", "int64", "bool", "uint8"]


def _round_trip(obj):
    buf = io.BytesIO()
    acg.save(obj, buf)
    buf.seek(0)
    return acg.load(buf)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_values_and_dtypes(dtype):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((3, 4)) * 10).astype(np.dtype(getattr(acg, dtype)))
    for shape in [(3, 4), (), (0, 2)]:
        t = acg.tensor(values.reshape(-1)[: math.prod(shape)].reshape(shape))
        out = _round_trip(t)
        assert out.dtype == t.dtype and out.shape == t.shape
        np.testing.assert_array_equal(np.asarray(out), np.asarray(t))


def test_nested_containers_round_trip(tmp_path):
    shared = acg.arange(3).float()
    obj = {"a": [1, 2.5, None, True, "s", (shared, shared)],
           3: collections.OrderedDict([("x", -0.0), ("y", float("inf"))]),
           "c": collections.Counter({5: 2}), "big": 2 ** 70, "np": np.arange(4, dtype=np.int16),
           "dt": np.dtype("float32"), "empty": {}, "t": ()}
    path = tmp_path / "ckpt.acg"
    acg.save(obj, path)
    out = acg.load(str(path), weights_only=False)  # numpy objects: as torch.load, not weights only
    assert out["a"][:5] == [1, 2.5, None, True, "s"] and isinstance(out["a"][5], tuple)
    assert out["a"][5][0] is out["a"][5][1] and out["a"][5][0].tolist() == [0.0, 1.0, 2.0]
    assert isinstance(out[3], collections.OrderedDict) and list(out[3]) == ["x", "y"]
    assert math.copysign(1, out[3]["x"]) == -1 and out[3]["y"] == math.inf
    assert out["c"] == collections.Counter({5: 2}) and isinstance(out["c"], collections.Counter)
    assert out["big"] == 2 ** 70 and out["np"].dtype == np.int16 and out["np"].tolist() == [0, 1,
                                                                                          2, 3]
    assert out["dt"] == np.float32 and out["empty"] == {} and out["t"] == ()
    assert math.isnan(_round_trip(float("nan")))


def test_requires_grad_and_parameters_preserved():
    p = acg.nn.Parameter(acg.ones(2))
    frozen = acg.nn.Parameter(acg.ones(2), requires_grad=False)
    t = acg.ones(2, requires_grad=True)
    out = _round_trip({"p": p, "f": frozen, "t": t, "d": t.detach()})
    assert isinstance(out["p"], acg.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["f"], acg.nn.Parameter) and not out["f"].requires_grad
    assert out["t"].requires_grad and out["t"].is_leaf and not out["d"].requires_grad


def test_unpicklable_objects_are_refused():
    # what Python's pickle refuses (torch.save pickles everything else, as we do)
    import threading
    with pytest.raises(TypeError, match=r"cannot save lock at \['m'\]\[1\]"):
        acg.save({"m": [1, threading.Lock()]}, io.BytesIO())
    with pytest.raises(TypeError, match="cannot save function"):
        acg.save(lambda: 0, io.BytesIO())
    with pytest.raises(TypeError, match="cannot save generator"):
        acg.save((i for i in range(2)), io.BytesIO())


def _net():
    return acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.BatchNorm1d(8), acg.nn.ReLU(),
                             acg.nn.LayerNorm(8), acg.nn.Linear(8, 2))


def test_module_state_dict_with_buffers_round_trips(tmp_path):
    net = _net()
    net(acg.randn(6, 4))  # training mode: BatchNorm's running statistics move
    acg.save(net.state_dict(), tmp_path / "net.acg")
    sd = acg.load(tmp_path / "net.acg")
    assert list(sd) == list(net.state_dict()) and isinstance(sd, collections.OrderedDict)
    assert sd["1.num_batches_tracked"].dtype == acg.int64
    fresh = _net()
    fresh.load_state_dict(sd)
    net.eval(), fresh.eval()
    x = acg.randn(3, 4)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), net(x).detach().numpy())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(np.asarray(fresh.state_dict()[k]), np.asarray(v))


def _saved_bytes():
    buf = io.BytesIO()
    acg.save({"w": acg.arange(64).float()}, buf)
    return buf.getvalue()


def test_corrupt_and_foreign_files_raise_naming_the_file(tmp_path):
    raw = _saved_bytes()
    cases = {"truncated": raw[: len(raw) // 2], "garbage": b"not a checkpoint at all",
             "empty": b""}
    flipped = bytearray(raw)
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        info = zf.getinfo("archive/data/0")
    data_at = info.header_offset + 30 + len(info.filename) + len(info.extra)
    flipped[data_at + 40] ^= 0xFF  # inside the tensor's bytes: the CRC catches it
    cases["flipped"] = bytes(flipped)
    for name, data in cases.items():
        path = tmp_path / f"{name}.acg"
        path.write_bytes(data)
        with pytest.raises(RuntimeError, match=f"{name}.acg is not a valid autograd_compile"):
            acg.load(path)
    pickled = tmp_path / "torch.pt"
    with zipfile.ZipFile(pickled, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02")  # a PyTorch archive cut short
    with pytest.raises(RuntimeError, match="torch.pt is not a valid autograd_compile or PyTorch"):
        acg.load(pickled)
    with pytest.raises(FileNotFoundError):
        acg.load(tmp_path / "missing.acg")


def test_map_location_and_weights_only_flag():
    out = _round_trip({"w": acg.ones(2)})
    buf = io.BytesIO(_saved_bytes())
    cpu = acg.load(buf, map_location="cpu", weights_only=False)["w"]
    assert cpu._data.devices() == {__import__("jax").devices("cpu")[0]}
    assert out["w"].tolist() == [1.0, 1.0] and cpu.tolist() == list(map(float, range(64)))


def _setup(kind):
    acg.manual_seed(0)
    model = [acg.nn.Linear(4, 8), acg.nn.Linear(8, 2)]
    params = [p for m in model for p in m.parameters()]
    if kind == "adamw":
        opt = acg.optim.AdamW([{"params": params[:2]}, {"params": params[2:], "lr": 3e-3,
                                                         "weight_decay": 0.0}], lr=1e-2)
        sched = L.SequentialLR(opt, [L.LinearLR(opt, 0.2, total_iters=3),
                                     L.CosineAnnealingLR(opt, T_max=6)], milestones=[3])
    else:
        opt = acg.optim.SGD(params, lr=0.05, momentum=0.9, dampening=0.1)
        sched = L.OneCycleLR(opt, max_lr=0.1, total_steps=12)
    return model, opt, sched


def _train(model, opt, sched, steps, start, mode):
    rng = np.random.default_rng(start)
    for _ in range(steps):
        x = acg.tensor(rng.standard_normal((5, 4)).astype(np.float32))
        opt.zero_grad()
        loss = (model[1](model[0](x).tanh()) ** 2).mean()
        with mode():
            loss.backward()
        opt.step()
        sched.step()
    return [p.detach().numpy() for m in model for p in m.parameters()]


@pytest.mark.parametrize("kind", ["adamw", "sgd"])
def test_resumed_training_equals_uninterrupted(kind, mode, tmp_path):
    model, opt, sched = _setup(kind)
    _train(model, opt, sched, 4, 0, mode)
    path = tmp_path / "run.acg"
    acg.save({"model": [m.state_dict() for m in model], "optimizer": opt.state_dict(),
              "scheduler": sched.state_dict(), "epoch": 4}, path)
    expected = _train(model, opt, sched, 5, 1, mode)

    ckpt = acg.load(path)
    model2, opt2, sched2 = _setup(kind)
    _train(model2, opt2, sched2, 1, 7, mode)  # diverge first, so loading must undo it
    for m, sd in zip(model2, ckpt["model"]):
        m.load_state_dict(sd)
    opt2.load_state_dict(ckpt["optimizer"])
    sched2.load_state_dict(ckpt["scheduler"])
    resumed = _train(model2, opt2, sched2, 5, 1, mode)
    for a, b in zip(resumed, expected):
        np.testing.assert_array_equal(a, b)
    assert sched2.get_last_lr() == sched.get_last_lr() and ckpt["epoch"] == 4


def test_docstring_examples_run():
    import doctest
    result = doctest.testmod(acg.serialization)
    assert result.failed == 0 and result.attempted > 0
