"""Checkpoints both ways with PyTorch: reading torch.save files (zip and legacy, from committed
fixtures, so without torch too), writing files torch.load(weights_only=True) reads, the
restricted unpickler, whole modules, map_location, mmap, safetensors and atomic saves."""
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.serialization import torch_format

DATA = Path(__file__).parent / "data"
BASE = np.arange(12, dtype=np.float64).reshape(3, 4)
LIN_W = np.arange(6, dtype=np.float32).reshape(2, 3) / 4


def _zip_with_pickle(path: Path, payload: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", b"3\n")
    return path


# -- reading PyTorch's files (fixtures written by torch 2.13) -----------------------------------
def test_reads_a_torch_zip_checkpoint_without_torch() -> None:
    ck = acg.load(DATA / "torch_zip.pt")
    lin = ck["linear"]
    assert isinstance(lin, collections.OrderedDict) and list(lin) == ["weight", "bias"]
    np.testing.assert_array_equal(np.asarray(lin["weight"]), LIN_W)
    assert lin["bias"].tolist() == [-1.0, 0.5]
    d = ck["dtypes"]
    assert [d[k].dtype.name for k in ("bf16", "f16", "i8", "bool", "c64", "i64", "u16")] == [
        "bfloat16", "float16", "int8", "bool", "complex64", "int64", "uint16"]
    assert d["bf16"].float().tolist() == [1.5, -2.0] and d["i8"].tolist() == [-3, 7]
    assert d["bool"].tolist() == [True, False] and d["i64"].tolist() == [2 ** 40]
    assert complex(np.asarray(d["c64"])[0]) == 1 + 2j and d["u16"].tolist() == [65535]


def test_views_strides_offsets_and_tied_tensors() -> None:
    for name in ("torch_zip.pt", "torch_legacy.pt"):
        ck = acg.load(DATA / name)
        v = ck["views"]
        np.testing.assert_array_equal(np.asarray(v["base"]), BASE)
        np.testing.assert_array_equal(np.asarray(v["row"]), BASE[1])
        np.testing.assert_array_equal(np.asarray(v["col"]), BASE[:, 2])
        np.testing.assert_array_equal(np.asarray(v["t"]), BASE.T)
        np.testing.assert_array_equal(np.asarray(v["off"]), BASE.reshape(-1)[5:9])
        assert ck["tied"][0] is ck["tied"][1], name  # one storage, one view: one tensor
        np.testing.assert_array_equal(np.asarray(ck["linear"]["weight"]), LIN_W)


def test_parameters_sizes_dtypes_devices_and_python_values() -> None:
    ck = acg.load(DATA / "torch_zip.pt")
    assert isinstance(ck["param"], acg.nn.Parameter) and ck["param"].requires_grad
    assert isinstance(ck["frozen"], acg.nn.Parameter) and not ck["frozen"].requires_grad
    assert ck["size"] == acg.Size([2, 3]) and isinstance(ck["size"], acg.Size)
    assert ck["dtype"] == acg.float16 and ck["device"] == acg.device("cpu")
    assert ck["misc"] == (1, 2.5, None, "s", b"xy", {1, 2}, 1 + 2j, slice(1, 5, 2))
    assert ck["step"] == 7


def test_torch_state_dict_loads_into_our_module() -> None:
    net = acg.nn.Linear(3, 2)
    net.load_state_dict(acg.load(DATA / "torch_zip.pt")["linear"])
    out = net(acg.tensor([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(np.asarray(out), np.array([[1.0, 2.0, 3.0]]) @ LIN_W.T
                               + [-1.0, 0.5], rtol=1e-6)


# -- the restricted unpickler -------------------------------------------------------------------
class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", [2, 4])
def test_code_in_a_checkpoint_never_runs(tmp_path: Path, protocol: int) -> None:
    marker = tmp_path / "ran"
    path = _zip_with_pickle(tmp_path / "evil.pt",
                            pickle.dumps({"w": _Evil(marker)}, protocol=protocol))
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match=r"global '(posix|os)\.system'"):
            acg.load(path, weights_only=weights_only)
    assert not marker.exists()


def test_calls_of_admitted_classes_are_vetted(tmp_path: Path) -> None:
    # a pickle that gets a dict out of the memo and tries to call one of its methods via REDUCE
    payload = pickle.dumps(collections.OrderedDict, protocol=2)[:-1] + b")R."
    assert acg.load(_zip_with_pickle(tmp_path / "ok.pt", payload)) == collections.OrderedDict()
    bad = b"\x80\x02X\x01\x00\x00\x00a)R."  # call a string
    with pytest.raises(pickle.UnpicklingError, match="a call of str"):
        acg.load(_zip_with_pickle(tmp_path / "bad.pt", bad))


def test_deep_nesting_gives_our_error_not_recursion_error(tmp_path: Path) -> None:
    deep = b"\x80\x02" + b"]" * 100_000 + b"a" * 99_999 + b"."  # lists nested 100,000 deep
    with pytest.raises(pickle.UnpicklingError, match="nests deeper than 10000"):
        acg.load(_zip_with_pickle(tmp_path / "deep.pt", deep))
    marks = b"\x80\x02" + b"(" * 100_000 + b"."
    with pytest.raises(pickle.UnpicklingError, match="nests deeper"):
        acg.load(_zip_with_pickle(tmp_path / "marks.pt", marks))


# -- map_location and mmap -----------------------------------------------------------------------
def _cuda_checkpoint() -> io.BytesIO:
    """A checkpoint whose tensor was saved on cuda:0 (written without a GPU)."""
    writer = torch_format.TorchZipWriter()
    writer._array(np.arange(3, dtype=np.float32), False, False, "cuda:0", "")
    writer.stop()
    buf = io.BytesIO()
    torch_format.write_zip(buf, writer)
    buf.seek(0)
    return buf


def _has_gpu() -> bool:
    try:
        return bool(__import__("jax").devices("gpu"))
    except RuntimeError:
        return False


@pytest.mark.skipif(_has_gpu(), reason="the no-GPU message needs a machine without a GPU")
def test_cuda_locations_on_a_cpu_machine_fail_in_pytorchs_words() -> None:
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        acg.load(_cuda_checkpoint())
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        acg.load(DATA / "torch_zip.pt", map_location="cuda")


def test_map_location_forms() -> None:
    cpu = __import__("jax").devices("cpu")[0]
    seen = []

    def to_cpu(storage, location):  # PyTorch's callable form: (storage, saved location)
        seen.append(location)
        return storage.cpu()

    for where in ("cpu", acg.device("cpu"), cpu, {"cuda:0": "cpu"}, to_cpu,
                  lambda storage, loc: storage):
        t = acg.load(_cuda_checkpoint(), map_location=where)
        assert t.tolist() == [0.0, 1.0, 2.0] and t._data.devices() == {cpu}
    assert seen == ["cuda:0"]


def test_mmap_load_equals_plain_load(tmp_path: Path) -> None:
    path = tmp_path / "m.pt"
    acg.save({"a": acg.arange(100).float(), "b": acg.ones(3, 5, dtype=acg.float16)}, path)
    plain, mapped = acg.load(path), acg.load(path, mmap=True)
    for k in plain:
        np.testing.assert_array_equal(np.asarray(plain[k]), np.asarray(mapped[k]))
    with zipfile.ZipFile(path) as zf:  # storages are 64-byte aligned in the file, as PyTorch's
        for info in zf.infolist():
            if "/data/" in info.filename:
                assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0


# -- writing files PyTorch reads ----------------------------------------------------------------
def test_torch_reads_what_we_write(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    net = acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.BatchNorm1d(4))
    obj = {"model": net.state_dict(), "bf": acg.tensor([1.5, -2.0], dtype=acg.bfloat16),
           "i8": acg.tensor([-3, 7], dtype=acg.int8), "b": acg.tensor([True, False]),
           "p": acg.nn.Parameter(acg.ones(2)), "size": acg.Size([2, 3]), "dt": acg.float16,
           "misc": [1, 2.5, None, "s", b"xy", (1 + 2j,)], "step": 2 ** 40}
    acg.save(obj, tmp_path / "ours.pt")
    back = torch.load(tmp_path / "ours.pt", weights_only=True)
    assert list(back["model"]) == list(net.state_dict())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(back["model"][k].detach().numpy(), np.asarray(v))
        assert str(back["model"][k].dtype) == str(v.dtype)
    assert back["bf"].dtype == torch.bfloat16 and back["bf"].float().tolist() == [1.5, -2.0]
    assert back["i8"].tolist() == [-3, 7] and back["b"].tolist() == [True, False]
    assert isinstance(back["p"], torch.nn.Parameter) and back["p"].requires_grad
    assert back["size"] == torch.Size([2, 3]) and back["dt"] is torch.float16
    assert back["misc"] == [1, 2.5, None, "s", b"xy", (1 + 2j,)] and back["step"] == 2 ** 40


def test_torch_model_and_optimizer_state_continue_training_here(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.Linear(4, 2)
    topt = torch.optim.AdamW(tm.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    for _ in range(3):
        topt.zero_grad()
        torch.nn.functional.mse_loss(tm(x), y).backward()
        topt.step()
    torch.save({"model": tm.state_dict(), "opt": topt.state_dict()}, tmp_path / "ck.pt")
    ck = acg.load(tmp_path / "ck.pt")
    net = acg.nn.Linear(4, 2)
    opt = acg.optim.AdamW(net.parameters(), lr=0.01)
    net.load_state_dict(ck["model"])
    opt.load_state_dict(ck["opt"])
    for _ in range(2):  # one more step each side: the loaded moments must drive the same update
        topt.zero_grad()
        torch.nn.functional.mse_loss(tm(x), y).backward()
        topt.step()
        opt.zero_grad()
        acg.nn.functional.mse_loss(net(acg.tensor(x.detach().numpy())), acg.tensor(y.detach().numpy())).backward()
        opt.step()
    np.testing.assert_allclose(np.asarray(net.weight), tm.weight.detach().numpy(), atol=1e-6)


def test_we_read_torchs_legacy_format_written_now(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    obj = {"a": torch.arange(6.0).reshape(2, 3), "h": torch.ones(2, dtype=torch.float16)}
    obj["v"] = obj["a"][:, 1]
    torch.save(obj, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    ck = acg.load(tmp_path / "old.pt")
    assert ck["a"].tolist() == obj["a"].tolist() and ck["v"].tolist() == [1.0, 4.0]
    assert ck["h"].dtype == acg.float16


# -- whole modules -------------------------------------------------------------------------------
class Net(acg.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width
        self.fc = acg.nn.Linear(3, width)
        self.act = acg.nn.functional.gelu  # a function of the package, stored by name
        self.register_buffer("steps", acg.zeros(()))

    def forward(self, x):
        return self.act(self.fc(x))


def test_whole_module_loads_only_with_weights_only_false(tmp_path: Path) -> None:
    net = Net(4)
    acg.save(net, tmp_path / "net.pt")
    with pytest.raises(pickle.UnpicklingError, match="whole modules.*weights_only=False"):
        acg.load(tmp_path / "net.pt")
    back = acg.load(tmp_path / "net.pt", weights_only=False)
    assert type(back) is Net and back.width == 4 and back.act is acg.nn.functional.gelu
    x = acg.randn(2, 3)
    np.testing.assert_array_equal(np.asarray(back(x)), np.asarray(net(x)))
    assert list(back.state_dict()) == list(net.state_dict())


def test_a_non_module_class_is_refused(tmp_path: Path) -> None:
    w = torch_format.TorchZipWriter()
    w.reduce("autograd_compile.serialization.modules", "rebuild_module",
             lambda: w.tuple_of(["collections", "OrderedDict", {}], ""))
    w.stop()
    path = tmp_path / "x.pt"
    with open(path, "wb") as fh:
        torch_format.write_zip(fh, w)
    with pytest.raises(pickle.UnpicklingError, match="not an nn.Module"):
        acg.load(path, weights_only=False)


# -- formats: our version 1, safetensors ---------------------------------------------------------
def test_version_1_checkpoints_still_load(tmp_path: Path) -> None:
    path = tmp_path / "v1.acg"
    root = {"$t": "dict", "items": [["w", {"$t": "parameter", "requires_grad": True, "id": 0,
                                           "dtype": "float32", "shape": [2]}], ["n", 3]]}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("structure.json", json.dumps({"format": "autograd_compile.checkpoint",
                                                  "version": 1, "root": root}))
        zf.writestr("data/0", np.array([1.0, 2.0], "<f4").tobytes())
    ck = acg.load(path)
    assert isinstance(ck["w"], acg.nn.Parameter) and ck["w"].tolist() == [1.0, 2.0]
    assert ck["n"] == 3


def test_safetensors_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    sd = acg.nn.Linear(3, 2).state_dict()
    acg.save(dict(sd), tmp_path / "m.safetensors")
    back = acg.load(tmp_path / "m.safetensors")
    for k, v in sd.items():
        np.testing.assert_array_equal(np.asarray(back[k]), np.asarray(v))


# -- atomic save ---------------------------------------------------------------------------------
_SLOW_SAVE = """
import sys, time, zipfile
import autograd_compile as acg
real = zipfile.ZipFile.writestr
def slow(self, info, data, *a, **k):
    real(self, info, data, *a, **k)
    if "/data/" in getattr(info, "filename", ""):
        print("writing", flush=True); time.sleep(60)
zipfile.ZipFile.writestr = slow
acg.save({"w": acg.zeros(1000), "v": acg.zeros(1000)}, sys.argv[1])
"""


def test_a_save_killed_halfway_leaves_the_old_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.pt"
    acg.save({"w": acg.ones(3)}, path)
    with subprocess.Popen([sys.executable, "-c", _SLOW_SAVE, str(path)],
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout.readline().strip() == "writing"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert acg.load(path)["w"].tolist() == [1.0, 1.0, 1.0]
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["ckpt.pt"]


def test_a_failed_save_leaves_no_file(tmp_path: Path) -> None:
    import threading
    with pytest.raises(TypeError, match="cannot save lock"):
        acg.save({"x": threading.Lock()}, tmp_path / "bad.pt")
    assert list(tmp_path.iterdir()) == []
