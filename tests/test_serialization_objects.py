"""acg.save / acg.load of any picklable object, as torch.save / torch.load: argparse Namespaces,
paths, dataclasses, numpy arrays, scalars and RNG states round-trip as themselves; a
weights_only=True load refuses every global outside PyTorch's default list with PyTorch's
message until the program admits it (add_safe_globals, safe_globals). Torch, where installed,
is the oracle both ways."""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import decimal
import doctest
import enum
import fractions
import importlib
import io
import pathlib
import pickle
import pickletools
import random
import threading
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile import serialization as S

_REFUSED = r"(?s)Weights only load failed.*Unsupported global: GLOBAL {} was not an allowed global"


# -- objects a training script puts in a checkpoint ---------------------------------------------
@dataclasses.dataclass
class Config:
    lr: float
    layers: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Frozen:
    name: str
    size: int = 3


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a, self.b = a, b

    def __eq__(self, other: object) -> bool:
        return type(other) is Slotted and (self.a, self.b) == (other.a, other.b)


class Color(enum.Enum):
    RED = 1
    GREEN = 2


Point = collections.namedtuple("Point", "x y")


class Outer:
    class Inner:
        pass


class Node:
    def __init__(self, name: str) -> None:
        self.name, self.next = name, None


def _objects() -> dict[str, Any]:
    """Plain Python objects (no tensors): the same dict works in acg and in torch."""
    return {"args": argparse.Namespace(lr=1e-4, output_dir=pathlib.Path("/tmp/out"), ids={3, 1}),
            "cfg": Config(0.1, [64, 64]), "frozen": Frozen("vit"), "slots": Slotted(1, "x"),
            "dd": collections.defaultdict(list, a=[1, 2]), "fs": frozenset({"a", "b"}),
            "when": datetime.datetime(2024, 5, 6, 7, 8, 9), "day": datetime.date(2024, 1, 2),
            "gap": datetime.timedelta(hours=3), "color": Color.GREEN, "pt": Point(1, 2),
            "dec": decimal.Decimal("1.25"), "frac": fractions.Fraction(3, 4), "rng": range(2, 9, 3),
            "cls": Outer.Inner, "fn": len, "none_t": type(None), "ell": ..., "c": 1 + 2j,
            "sl": slice(1, None, 2), "od": collections.OrderedDict(b=1, a=2),
            "ctr": collections.Counter("aab"), "py_rng": random.Random(3).getstate()}


def _numpy_objects() -> dict[str, Any]:
    return {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "i8": np.array([-3, 7], np.int8),
            "u16": np.array([65535], np.uint16), "b": np.array([True, False]),
            "c64": np.array([1 + 2j], np.complex64), "zero_d": np.array(2.5),
            "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
            "strided": np.arange(10)[::3], "objects": np.array([None, "s", 1], dtype=object),
            "records": np.array([(1, 2.0)], dtype=[("a", "i4"), ("b", "f8")]),
            "s32": np.float32(1.5), "s64": np.float64(0.9), "i64": np.int64(7),
            "bool": np.bool_(True), "cplx": np.complex64(1 - 1j), "dtype": np.dtype("float16"),
            "stype": np.float32, "state": np.random.RandomState(0).get_state(),
            "gen_state": np.random.default_rng(0).bit_generator.state}


def _round_trip(obj: Any, **load_kw: Any) -> Any:
    buf = io.BytesIO()
    acg.save(obj, buf)
    buf.seek(0)
    return acg.load(buf, **load_kw)


def _assert_numpy_equal(out: dict[str, Any], ref: dict[str, Any]) -> None:
    for k, v in ref.items():
        assert type(out[k]) is type(v), k
        if isinstance(v, (np.ndarray, np.generic)):
            assert out[k].dtype == v.dtype, k
            np.testing.assert_array_equal(out[k], v)
        elif k == "state":
            assert out[k][0] == v[0] and out[k][2:] == v[2:]
            np.testing.assert_array_equal(out[k][1], v[1])
        else:
            assert out[k] == v, k


@pytest.fixture(autouse=True)
def _no_safe_globals_left():
    yield
    S.clear_safe_globals()


# -- round trips in acg alone -------------------------------------------------------------------
def test_python_objects_round_trip_as_themselves() -> None:
    ref = _objects()
    out = _round_trip(ref, weights_only=False)
    assert list(out) == list(ref)
    for k, v in ref.items():
        assert type(out[k]) is type(v) and out[k] == v, k
    assert out["cls"] is Outer.Inner and out["fn"] is len and out["none_t"] is type(None)
    assert out["args"].output_dir == Path("/tmp/out") and out["ell"] is ...


def test_tensors_inside_objects_stay_shared_and_cycles_survive() -> None:
    w = acg.arange(3).float()
    head, tail = Node("head"), Node("tail")
    head.next, tail.next = tail, head  # a cycle through object state
    shared = [1, 2]
    out = _round_trip({"args": argparse.Namespace(w=w, p=acg.nn.Parameter(acg.ones(2))),
                       "w": w, "loop": head, "a": shared, "b": shared}, weights_only=False)
    assert out["args"].w is out["w"] and out["w"].tolist() == [0.0, 1.0, 2.0]
    assert isinstance(out["args"].p, acg.nn.Parameter) and out["args"].p.requires_grad
    assert out["loop"].next.next is out["loop"] and out["loop"].next.name == "tail"
    assert out["a"] is out["b"]


def test_numpy_arrays_scalars_and_rng_states_round_trip_with_type_and_dtype() -> None:
    ref = _numpy_objects()
    out = _round_trip(ref, weights_only=False)
    _assert_numpy_equal(out, ref)
    rs = np.random.RandomState()
    rs.set_state(out["state"])  # a restored numpy RNG continues the saved stream
    assert rs.random() == np.random.RandomState(0).random()
    bf = _round_trip(np.array([1.5, -2.0], dtype=acg.bfloat16.dtype), weights_only=False)
    assert type(bf) is np.ndarray and bf.dtype == acg.bfloat16.dtype
    assert bf.astype(np.float32).tolist() == [1.5, -2.0]


def test_torch_dtypes_and_numpy_dtypes_stay_apart() -> None:
    out = _round_trip({"acg": acg.float16, "np": np.dtype("float16"), "t": np.float16},
                      weights_only=False)
    assert out["acg"] is acg.float16 and type(out["np"]) is type(np.dtype("float16"))
    assert out["t"] is np.float16


def test_unpicklable_objects_fail_with_their_place_and_leave_no_file(tmp_path: Path) -> None:
    def local() -> None:
        pass
    cases = [({"f": lambda: 0}, r"cannot save function .*<lambda> at \['f'\]: it is not "),
             ({"m": [1, threading.Lock()]}, r"cannot save lock at \['m'\]\[1\]: cannot pickle"),
             ({"g": (i for i in range(2))}, r"cannot save generator at \['g'\]"),
             (argparse.Namespace(fn=local), r"cannot save function .*local at "
                                            r"\.__dict__\['fn'\]")]
    for obj, message in cases:
        with pytest.raises(TypeError, match=message) as info:
            acg.save(obj, tmp_path / "bad.pt")
        assert isinstance(info.value, pickle.PicklingError)  # what pickle's callers catch
    assert list(tmp_path.iterdir()) == []


# -- weights_only=True: PyTorch's default list, plus what the program admits ---------------------
def test_weights_only_refuses_unknown_globals_with_pytorchs_message(tmp_path: Path) -> None:
    path = tmp_path / "ck.pt"
    acg.save({"model": acg.nn.Linear(2, 2).state_dict(), "args": argparse.Namespace(lr=1)}, path)
    with pytest.raises(pickle.UnpicklingError, match=_REFUSED.format(r"argparse\.Namespace")):
        acg.load(path)
    with pytest.raises(pickle.UnpicklingError, match=_REFUSED.format(r"argparse\.Namespace")):
        acg.load(path, weights_only=True)
    assert S.get_unsafe_globals_in_checkpoint(path) == ["argparse.Namespace"]
    assert acg.load(path, weights_only=False)["args"].lr == 1


def test_add_safe_globals_admits_a_class_and_the_context_manager_only_inside(
        tmp_path: Path) -> None:
    path = tmp_path / "ck.pt"
    acg.save({"args": argparse.Namespace(lr=0.5, out=Path("/x"))}, path)
    posix = type(Path("/x"))
    S.add_safe_globals([argparse.Namespace])
    assert S.get_safe_globals() == [argparse.Namespace]
    refused = _REFUSED.format(r"pathlib\." + posix.__name__)
    with pytest.raises(pickle.UnpicklingError, match=refused):
        acg.load(path)  # the Namespace is admitted, the path inside it is not yet
    with S.safe_globals([posix]):
        assert acg.load(path)["args"].out == Path("/x")
        assert set(S.get_safe_globals()) == {argparse.Namespace, posix}
    assert S.get_safe_globals() == [argparse.Namespace]
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        acg.load(path)
    S.clear_safe_globals()
    assert S.get_safe_globals() == []
    assert acg.serialization.add_safe_globals is S.add_safe_globals  # torch.serialization's place


def test_numpy_under_weights_only_needs_its_globals_admitted(tmp_path: Path) -> None:
    path = tmp_path / "np.pt"
    ref = {"a": np.arange(3), "s": np.float32(2.5), "st": np.random.RandomState(1).get_state()}
    acg.save(ref, path)
    with pytest.raises(pickle.UnpicklingError,
                       match=_REFUSED.format(r"numpy\._core\.multiarray\._reconstruct")):
        acg.load(path)
    with S.safe_globals(_numpy_globals()):
        out = acg.load(path)
    assert type(out["a"]) is np.ndarray and out["a"].dtype == np.int64
    assert type(out["s"]) is np.float32 and out["s"] == 2.5
    np.testing.assert_array_equal(out["st"][1], ref["st"][1])


def _numpy_globals() -> list[Any]:
    """What torch's docs tell a program to admit for numpy arrays, scalars and RNG states."""
    core = importlib.import_module("numpy._core.multiarray" if hasattr(np, "_core")
                                   else "numpy.core.multiarray")
    return [core._reconstruct, core.scalar, np.ndarray, np.dtype, np.dtypes.Int64DType,
            np.dtypes.Float32DType, np.dtypes.UInt32DType]


def test_numpy_1_spelling_and_tuple_entries(tmp_path: Path) -> None:
    buf = io.BytesIO()
    acg.save({"a": np.arange(3)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, \
            zipfile.ZipFile(tmp_path / "old.pt", "w") as dst:
        for info in src.infolist():  # the file a numpy 1 program writes: numpy.core.multiarray
            raw = src.read(info)
            dst.writestr(info, raw.replace(b"numpy._core.", b"numpy.core.")
                         if info.filename.endswith("data.pkl") else raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy.core DeprecationWarning: mapped, not imported
        assert acg.load(tmp_path / "old.pt", weights_only=False)["a"].tolist() == [0, 1, 2]
    with S.safe_globals(_numpy_globals()):
        assert acg.load(tmp_path / "old.pt")["a"].tolist() == [0, 1, 2]
    S.add_safe_globals([(Config, "elsewhere.Config")])
    assert S.get_safe_globals() == [(Config, "elsewhere.Config")]
    S.clear_safe_globals()
    for bad, error in [((Config,), ValueError), ((Config, 3), TypeError)]:
        S.add_safe_globals([bad])
        with pytest.raises(error, match="Expected"):
            acg.load(tmp_path / "old.pt")
        S.clear_safe_globals()


def test_admitted_classes_get_their_state_and_admit_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "cfg.pt"
    ref = {"cfg": Config(0.1, [1]), "frozen": Frozen("x"), "slots": Slotted(2, 3)}
    acg.save(ref, path)
    with S.safe_globals([Config, Frozen, Slotted]):
        assert acg.load(path) == ref  # __dict__, a frozen dataclass and __slots__ state
    acg.save(Config(0.1, [Frozen("inner")]), path)
    with S.safe_globals([Config]), pytest.raises(
            pickle.UnpicklingError, match=_REFUSED.format(rf"{__name__}\.Frozen")):
        acg.load(path)


def test_a_missing_class_in_a_full_load_names_it(tmp_path: Path) -> None:
    payload = b"\x80\x02c" + __name__.encode() + b"\nNoSuchClass\n)\x81."
    with zipfile.ZipFile(tmp_path / "gone.pt", "w") as zf:
        zf.writestr("archive/data.pkl", payload)
    with pytest.raises(AttributeError, match=f"{__name__}.NoSuchClass, which does not exist"):
        acg.load(tmp_path / "gone.pt", weights_only=False)


@pytest.mark.parametrize("module", ["pickle_write", "pickle_read", "allowlist", "modules", ""])
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module("autograd_compile.serialization" + (f".{module}" * bool(module)))
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# -- with PyTorch as the oracle ------------------------------------------------------------------
def _globals_in(buf: io.BytesIO) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        raw = zf.read(next(n for n in zf.namelist() if n.endswith("data.pkl")))
    return [arg for op, arg, _ in pickletools.genops(raw) if op.name == "GLOBAL"]


def test_torch_reads_our_objects_as_themselves(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ref = {**_objects(), **_numpy_objects()}
    acg.save({**ref, "w": acg.tensor([1.5, 2.0]), "ns": argparse.Namespace(t=acg.ones(2))},
             tmp_path / "ours.pt")
    back = torch.load(tmp_path / "ours.pt", weights_only=False)
    for k in _objects():
        assert type(back[k]) is type(ref[k]) and back[k] == ref[k], k
    _assert_numpy_equal({k: back[k] for k in _numpy_objects()}, _numpy_objects())
    assert isinstance(back["w"], torch.Tensor) and back["w"].tolist() == [1.5, 2.0]
    assert back["ns"].t.tolist() == [1.0, 1.0]


def test_torch_weights_only_reads_ours_with_the_same_safe_globals(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "ours.pt"
    acg.save({"model": acg.nn.Linear(2, 3).state_dict(), "args": argparse.Namespace(lr=2),
              "a": np.arange(3), "s": np.float32(2.5)}, path)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL argparse.Namespace was not"):
        torch.load(path, weights_only=True)
    admitted = [argparse.Namespace, *_numpy_globals()]
    with torch.serialization.safe_globals(admitted):
        theirs = torch.load(path, weights_only=True)
    with S.safe_globals(admitted):
        ours = acg.load(path)
    assert theirs["args"] == ours["args"] == argparse.Namespace(lr=2)
    assert type(theirs["s"]) is type(ours["s"]) is np.float32
    np.testing.assert_array_equal(theirs["a"], ours["a"])
    assert list(theirs["model"]) == list(ours["model"]) == ["weight", "bias"]


def test_we_read_torchs_objects_as_themselves(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    ref = {**_objects(), **_numpy_objects()}
    for zipped in (True, False):
        path = tmp_path / f"theirs{zipped}.pt"
        obj = {**ref, "w": torch.tensor([1.5, 2.0]), "ns": argparse.Namespace(t=torch.ones(2))}
        torch.save(obj, path, _use_new_zipfile_serialization=zipped)
        ck = acg.load(path, weights_only=False)
        for k in _objects():
            assert type(ck[k]) is type(ref[k]) and ck[k] == ref[k], k
        _assert_numpy_equal({k: ck[k] for k in _numpy_objects()}, _numpy_objects())
        assert isinstance(ck["w"], acg.Tensor) and ck["w"].tolist() == [1.5, 2.0]
        assert isinstance(ck["ns"].t, acg.Tensor) and ck["ns"].t.tolist() == [1.0, 1.0]


def test_we_refuse_what_torch_refuses_and_admit_what_it_admits(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "rng_state.pth"  # HF Trainer's RNG checkpoint
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                "cpu": torch.get_rng_state(), "best_metric": np.float64(0.9)}, path)
    global_ = r"numpy\._core\.multiarray\._reconstruct"
    with pytest.raises(pickle.UnpicklingError, match=_REFUSED.format(global_)):
        torch.load(path, weights_only=True)
    with pytest.raises(pickle.UnpicklingError, match=_REFUSED.format(global_)):
        acg.load(path)
    admitted = [*_numpy_globals(), np.dtypes.Float64DType]
    with torch.serialization.safe_globals(admitted):
        theirs = torch.load(path, weights_only=True)
    with S.safe_globals(admitted):
        ours = acg.load(path)
    assert S.get_unsafe_globals_in_checkpoint(path) == sorted(
        torch.serialization.get_unsafe_globals_in_checkpoint(path))
    for st in (ours, acg.load(path, weights_only=False)):
        assert sorted(st) == sorted(theirs) and st["python"] == theirs["python"]
        assert type(st["best_metric"]) is np.float64 and st["best_metric"] == 0.9
        np.testing.assert_array_equal(st["numpy"][1], theirs["numpy"][1])
        np.testing.assert_array_equal(np.asarray(st["cpu"]), theirs["cpu"].numpy())


def test_objects_are_pickled_with_the_globals_torch_writes() -> None:
    torch = pytest.importorskip("torch")
    ref = {**_objects(), **_numpy_objects()}
    ours, theirs = io.BytesIO(), io.BytesIO()
    acg.save({**ref, "w": acg.ones(2), "v": acg.zeros(3)}, ours)
    torch.save({**ref, "w": torch.ones(2), "v": torch.zeros(3)}, theirs)
    assert _globals_in(ours) == _globals_in(theirs)


def test_a_whole_torch_module_loads_as_ours(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    net = torch.nn.Linear(3, 2)
    torch.save(net, tmp_path / "net.pt")
    ours = acg.load(tmp_path / "net.pt", weights_only=False)
    assert isinstance(ours, acg.nn.Linear) and ours.in_features == 3
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(ours(acg.tensor(x)).detach()),
                               net(torch.tensor(x)).detach().numpy(), rtol=1e-6)
