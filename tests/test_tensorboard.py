"""``torch.utils.tensorboard``: the event files, read back by a reader written here (TFRecord
framing, CRC32C computed bit by bit, protobuf decoded from a schema of the fields we write),
by TensorBoard's own EventAccumulator when installed, and against PyTorch's SummaryWriter
when torch and tensorboard are installed."""
from __future__ import annotations

import doctest
import glob
import importlib
import io
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.utils.tensorboard import SummaryWriter
from autograd_compile.utils.tensorboard._png import write_png

# ---- the reader ------------------------------------------------------------------------


def crc32c_bitwise(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    c = crc32c_bitwise(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path: str) -> list[bytes]:
    buf, i, out = Path(path).read_bytes(), 0, []
    while i < len(buf):
        header = buf[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", buf[i + 8:i + 12])[0] == masked(header)
        data = buf[i + 12:i + 12 + n]
        assert struct.unpack("<I", buf[i + 12 + n:i + 16 + n])[0] == masked(data)
        out.append(data)
        i += 16 + n
    return out


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        b = buf[i]
        n |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            return n, i


def wire_fields(buf: bytes) -> list[tuple[int, int, object]]:
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            assert wire == 2, wire
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        out.append((num, wire, v))
    return out


def _scalar(kind: str, wire: int, v):
    if kind == "double":
        return struct.unpack("<d", v)[0]
    if kind == "float":
        return struct.unpack("<f", v)[0]
    if kind == "string":
        return v.decode("utf-8")
    if kind == "int":
        return v - (1 << 64) if v >= 1 << 63 else v
    if kind == "packed_double":
        return list(np.frombuffer(v, "<f8"))
    if kind == "packed_float":
        return list(np.frombuffer(v, "<f4"))
    if kind == "packed_int":
        vals, i = [], 0
        while i < len(v):
            x, i = _varint(v, i)
            vals.append(x)
        return vals
    return v  # bytes


def decode(buf: bytes, schema: dict) -> dict:
    """Fields by name; a field marked repeated (name ending in []) collects a list."""
    out: dict = {}
    for num, wire, v in wire_fields(buf):
        name, kind = schema[num]
        v = decode(v, kind) if isinstance(kind, dict) else _scalar(kind, wire, v)
        if name.endswith("[]"):
            packed = isinstance(kind, str) and kind.startswith("packed")
            out.setdefault(name[:-2], []).extend(v if packed else [v])
        else:
            assert name not in out, f"{name} twice"
            out[name] = v
    return out


STRUCT_VALUE = {2: ("number_value", "double"), 3: ("string_value", "string"),
                4: ("bool_value", "int")}
HPARAMS = {1: ("version", "int"), 2: ("experiment", {
    4: ("hparam_infos[]", {1: ("name", "string"), 4: ("type", "int"),
                           5: ("domain_discrete", {1: ("values[]", STRUCT_VALUE)})}),
    5: ("metric_infos[]", {1: ("name", {2: ("tag", "string")})})}),
    3: ("session_start_info", {1: ("hparams[]", {1: ("key", "string"),
                                                 2: ("value", STRUCT_VALUE)})}),
    4: ("session_end_info", {1: ("status", "int")})}
LAYOUT = {2: ("category[]", {1: ("title", "string"), 2: ("chart[]", {
    1: ("title", "string"), 2: ("multiline", {1: ("tag[]", "string")}),
    3: ("margin", {1: ("series[]", {1: ("value", "string"), 2: ("lower", "string"),
                                     3: ("upper", "string")})})})})}
TENSOR = {1: ("dtype", "int"), 2: ("tensor_shape", {2: ("dim[]", {1: ("size", "int")})}),
          5: ("float_val[]", "packed_float"), 6: ("double_val[]", "packed_double"),
          7: ("int_val[]", "packed_int"), 8: ("string_val[]", "bytes"),
          10: ("int64_val[]", "packed_int"), 11: ("bool_val[]", "packed_int"),
          16: ("uint32_val[]", "packed_int")}
VALUE = {1: ("tag", "string"), 2: ("simple_value", "float"),
         4: ("image", {1: ("height", "int"), 2: ("width", "int"), 3: ("colorspace", "int"),
                       4: ("encoded_image_string", "bytes")}),
         5: ("histo", {1: ("min", "double"), 2: ("max", "double"), 3: ("num", "double"),
                       4: ("sum", "double"), 5: ("sum_squares", "double"),
                       6: ("bucket_limit[]", "packed_double"), 7: ("bucket[]", "packed_double")}),
         6: ("audio", {1: ("sample_rate", "float"), 2: ("num_channels", "int"),
                       3: ("length_frames", "int"), 4: ("encoded_audio_string", "bytes"),
                       5: ("content_type", "string")}),
         8: ("tensor", TENSOR),
         9: ("metadata", {1: ("plugin_data", {1: ("plugin_name", "string"),
                                               2: ("content", "bytes")})})}
EVENT = {1: ("wall_time", "double"), 2: ("step", "int"), 3: ("file_version", "string"),
         4: ("graph_def", {1: ("node[]", {1: ("name", "string"), 2: ("op", "string")}),
                           4: ("versions", {1: ("producer", "int")})}),
         5: ("summary", {1: ("value[]", VALUE)}), 7: ("session_log", {1: ("status", "int")}),
         10: ("source_metadata", {1: ("writer", "string")})}
PLUGIN_CONTENT = {"hparams": HPARAMS, "pr_curves": {1: ("version", "int"),
                                                     2: ("num_thresholds", "int")}}


def _decode_plugins(ev: dict) -> dict:
    for v in ev.get("summary", {}).get("value", []):
        pd = v.get("metadata", {}).get("plugin_data", {})
        if pd.get("plugin_name") in PLUGIN_CONTENT:
            pd["content"] = decode(pd.get("content", b""), PLUGIN_CONTENT[pd["plugin_name"]])
            if "session_start_info" in pd["content"]:  # a map: its entries have no order
                pd["content"]["session_start_info"]["hparams"].sort(key=lambda e: e["key"])
        if pd.get("plugin_name") == "custom_scalars":
            v["tensor"]["string_val"] = [decode(v["tensor"]["string_val"][0], LAYOUT)]
    return ev


def events(logdir: str | Path, pattern: str = "events.out.tfevents.*") -> list[dict]:
    """Every event of the one event file in ``logdir``."""
    (path,) = glob.glob(os.path.join(str(logdir), pattern))
    return [_decode_plugins(decode(r, EVENT)) for r in read_records(path)]


def values(logdir) -> list[tuple[int, dict]]:
    """(step, Summary.Value) of every summary event."""
    return [(e.get("step", 0), v) for e in events(logdir) if "summary" in e
            for v in e["summary"]["value"]]


# ---- records and files -----------------------------------------------------------------

@pytest.mark.parametrize("module", ["", "._proto", "._record", ".summary", "._png",
                                    "._embedding"])
def test_docstrings_run(module: str) -> None:
    mod = importlib.import_module("autograd_compile.utils.tensorboard" + module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_crc32c_matches_the_bitwise_definition() -> None:
    from autograd_compile.utils.tensorboard._record import crc32c
    assert crc32c(b"123456789") == crc32c_bitwise(b"123456789") == 0xE3069283
    rng = np.random.RandomState(0)
    for n in (0, 1, 7, 8, 9, 15, 16, 17, 100, 1000):
        data = rng.bytes(n)
        assert crc32c(data) == crc32c_bitwise(data), n


def test_file_name_and_first_record(tmp_path: Path) -> None:
    w = SummaryWriter(tmp_path, filename_suffix=".v2")
    w.close()
    (name,) = os.listdir(tmp_path)
    parts = name.split(".")
    assert parts[:3] == ["events", "out", "tfevents"] and len(parts[3]) == 10
    assert name.endswith(f".{socket.gethostname()}.{os.getpid()}.{parts[-2]}.v2")
    (first,) = events(tmp_path)
    assert first["file_version"] == "brain.Event:2"
    assert abs(first["wall_time"] - time.time()) < 60
    assert first["source_metadata"]["writer"] == "autograd_compile.utils.tensorboard"


def test_default_logdir_is_runs_datetime_hostname_comment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        logdir = w.get_logdir()
    parent, leaf = os.path.split(logdir)
    assert parent == "runs" and leaf.endswith("_" + socket.gethostname() + "_lr0.1")
    assert time.strptime(leaf[:14], "%b%d_%H-%M-%S")
    assert len(os.listdir(tmp_path / logdir)) == 1


def test_scalars_old_and_new_style(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 1.5, 3, walltime=123.0)
        w.add_scalar("t", acg.tensor([2.0], requires_grad=True) * 2, 4)
        w.add_scalar("np", np.float64(0.0), 0)
        w.add_scalar("new", acg.tensor(0.25), 5, new_style=True)
        w.add_scalar("dbl", 0.1, 6, new_style=True, double_precision=True)
        with pytest.raises(AssertionError, match="one element"):
            w.add_scalar("bad", np.ones(3))
    evs = events(tmp_path)[1:]
    assert evs[0] == {"wall_time": 123.0, "step": 3,
                      "summary": {"value": [{"tag": "loss", "simple_value": 1.5}]}}
    assert evs[1]["summary"]["value"] == [{"tag": "t", "simple_value": 4.0}]
    assert "step" not in evs[2]  # step 0 is proto3's default: left out
    assert evs[2]["summary"]["value"] == [{"tag": "np", "simple_value": 0.0}]
    scalars_md = {"plugin_data": {"plugin_name": "scalars"}}
    assert evs[3]["summary"]["value"] == [{"tag": "new", "metadata": scalars_md,
                                           "tensor": {"dtype": 1, "float_val": [0.25]}}]
    assert evs[4]["summary"]["value"] == [{"tag": "dbl", "metadata": scalars_md,
                                           "tensor": {"dtype": 2, "double_val": [0.1]}}]


def test_add_scalars_writes_one_subdirectory_per_curve(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": step, "val": 2 * step}, step)
    for key, scale in (("train", 1), ("val", 2)):
        sub = tmp_path / f"run_loss_{key}"
        got = [(s, v["tag"], v["simple_value"]) for s, v in values(sub)]
        assert got == [(s, "run/loss", float(scale * s)) for s in range(3)]
    assert values(tmp_path) == []


def test_histogram_tensorflow_bins(tmp_path: Path) -> None:
    x = np.array([-1.0, 0.0, 0.5, 0.5, 2.0])
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("h", acg.tensor(x), 7)
        bins = w.default_bins
    (step, v), = values(tmp_path)
    h = v["histo"]
    assert step == 7 and (h["min"], h["max"], h["num"]) == (-1.0, 2.0, 5.0)
    assert h["sum"] == 2.0 and h["sum_squares"] == 5.5
    # the exponential edges of PyTorch: ±1e-12 * 1.1**k below 1e20, and 0
    assert len(bins) == 2 * 774 + 1 and bins[774] == 0 and bins[775] == 1e-12
    counts, edges = np.histogram(x, bins=bins)
    nz = np.flatnonzero(counts)
    assert h["bucket"] == [0.0] + counts[nz[0]:nz[-1] + 1].tolist()
    assert h["bucket_limit"] == edges[nz[0]:nz[-1] + 2].tolist()
    assert sum(h["bucket"]) == 5


def test_histogram_numpy_bins_max_bins_and_raw(tmp_path: Path) -> None:
    rng = np.random.RandomState(0)
    x = rng.randn(500)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("auto", x, bins="auto")
        w.add_histogram("ten", x, bins=10, max_bins=4)
        w.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 1)
        with pytest.raises(ValueError, match="bucket_limits"):
            w.add_histogram_raw("bad", 0, 3, 6, 9, 17, [1, 2], [1, 2, 3])
    (_, auto), (_, ten), (_, raw) = values(tmp_path)
    counts, edges = np.histogram(x, bins="auto")
    assert auto["histo"]["bucket"][1:] == counts.tolist()
    assert auto["histo"]["bucket_limit"] == edges.tolist()
    c10, e10 = np.histogram(x, bins=10)  # 10 bins in groups of 2, then trimmed
    merged = np.pad(c10, (0, 0)).reshape(5, 2).sum(1)
    assert ten["histo"]["bucket"][1:] == merged.tolist()
    assert ten["histo"]["bucket_limit"] == np.append(e10[:-1:2], e10[-1]).tolist()
    assert raw["histo"] == {"max": 3.0, "num": 6.0, "sum": 9.0, "sum_squares": 17.0,
                            "bucket_limit": [1.0, 2.0, 3.0], "bucket": [1.0, 2.0, 3.0]}


# ---- images --------------------------------------------------------------------------

def read_png(png: bytes) -> np.ndarray:
    """Decode a PNG: Pillow's when installed, else ours (filter 0 rows only)."""
    try:
        from PIL import Image
        return np.asarray(Image.open(io.BytesIO(png)))
    except ImportError:
        return _read_plain_png(png)


def _read_plain_png(png: bytes) -> np.ndarray:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    i, chunks = 8, {}
    while i < len(png):
        (n,) = struct.unpack(">I", png[i:i + 4])
        kind, body = png[i + 4:i + 8], png[i + 8:i + 8 + n]
        assert struct.unpack(">I", png[i + 8 + n:i + 12 + n])[0] == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        i += 12 + n
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    c = {0: 1, 4: 2, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    assert depth == 8 and (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, c).squeeze(-1) if c == 1 else rows[:, 1:].reshape(h, w, c)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_the_plain_png_writer_round_trips(channels: int) -> None:
    img = np.random.RandomState(channels).randint(0, 256, (5, 7, channels)).astype(np.uint8)
    got = _read_plain_png(write_png(img))
    assert (got.reshape(5, 7, channels) == img).all()
    pil = pytest.importorskip("PIL.Image")
    assert (np.asarray(pil.open(io.BytesIO(write_png(img)))).reshape(5, 7, channels) == img).all()


def test_images_in_every_layout(tmp_path: Path) -> None:
    rng = np.random.RandomState(1)
    chw = rng.rand(3, 4, 6).astype(np.float32)
    hwc8 = rng.randint(0, 256, (4, 6, 3)).astype(np.uint8)
    batch = rng.rand(10, 1, 2, 3).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", acg.tensor(chw), 1)
        w.add_image("hwc", hwc8, 1, dataformats="HWC")
        w.add_image("hw", chw[0], 1, dataformats="HW")
        w.add_images("nchw", acg.tensor(batch), 1)
        with pytest.raises(AssertionError, match="dataformats"):
            w.add_image("bad", chw, dataformats="HWC5")
    got = {v["tag"]: v["image"] for _, v in values(tmp_path)}
    expect_chw = (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    for tag, pixels in (("chw", expect_chw), ("hwc", hwc8),
                        ("hw", np.repeat(expect_chw[:, :, :1], 3, axis=2))):
        img = got[tag]
        assert (img["height"], img["width"], img["colorspace"]) == (4, 6, 3)
        assert (read_png(img["encoded_image_string"]) == pixels).all(), tag
    grid = got["nchw"]  # 10 images, 8 to a row: 2 rows of 8 columns
    assert (grid["height"], grid["width"], grid["colorspace"]) == (4, 24, 3)
    pixels = read_png(grid["encoded_image_string"])
    first = (batch[0, 0] * 255).clip(0, 255).astype(np.uint8)
    assert (pixels[:2, :3, 0] == first).all() and (pixels[2:, 6:] == 0).all()


def test_images_without_pillow_use_the_plain_writer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL now fails
    img = np.random.RandomState(2).randint(0, 256, (3, 5, 4)).astype(np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("rgba", img, dataformats="HWC")
    (_, v), = values(tmp_path)
    assert v["image"]["encoded_image_string"] == write_png(img)
    assert (_read_plain_png(v["image"]["encoded_image_string"]) == img).all()


def test_add_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 3)
    (step, v), = values(tmp_path)
    assert step == 3 and (v["image"]["height"], v["image"]["width"]) == (50, 100)
    assert not plt.fignum_exists(fig.number)  # close=True closed it


# ---- text, audio, tensors, hparams, PR curves, custom scalars ----------------------------

def test_text_and_tensor_and_audio(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "héllo *md*", 2)
        w.add_tensor("t", np.arange(6, dtype=np.int64).reshape(2, 3), 1)
        w.add_audio("a", np.linspace(-1, 1, 8), 1, sample_rate=8000)
    (s, text), (_, ten), (_, aud) = values(tmp_path)
    assert s == 2 and text == {
        "tag": "notes/text_summary", "metadata": {"plugin_data": {"plugin_name": "text"}},
        "tensor": {"dtype": 7, "tensor_shape": {"dim": [{"size": 1}]},
                   "string_val": ["héllo *md*".encode()]}}
    assert ten["tensor"] == {"dtype": 9, "tensor_shape": {"dim": [{"size": 2}, {"size": 3}]},
                             "int64_val": [0, 1, 2, 3, 4, 5]}
    a = aud["audio"]
    assert (a["sample_rate"], a["num_channels"], a["length_frames"]) == (8000.0, 1, 8)
    assert a["content_type"] == "audio/wav" and a["encoded_audio_string"][:4] == b"RIFF"


def test_hparams_three_summaries_in_a_timed_subdirectory(tmp_path: Path) -> None:
    before = time.time()
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "opt": "sgd", "flag": True, "none": None},
                      {"hparam/acc": 0.75}, hparam_domain_discrete={"opt": ["sgd", "adam"]})
        with pytest.raises(TypeError):
            w.add_hparams([("lr", 1)], {})
    (run,) = [p for p in os.listdir(tmp_path) if (tmp_path / p).is_dir()]
    assert before <= float(run) <= time.time()
    exp, start, end, metric = [v for _, v in values(tmp_path / run)]
    content = [v["metadata"]["plugin_data"]["content"] for v in (exp, start, end)]
    assert [v["tag"] for v in (exp, start, end)] == [
        "_hparams_/experiment", "_hparams_/session_start_info", "_hparams_/session_end_info"]
    assert content[0] == {"experiment": {"hparam_infos": [
        {"name": "lr", "type": 3}, {"name": "opt", "type": 1, "domain_discrete": {
            "values": [{"string_value": "sgd"}, {"string_value": "adam"}]}},
        {"name": "flag", "type": 3}],  # a bool is a number, as in PyTorch
        "metric_infos": [{"name": {"tag": "hparam/acc"}}]}}
    assert content[1] == {"session_start_info": {"hparams": [
        {"key": "flag", "value": {"number_value": 1.0}},
        {"key": "lr", "value": {"number_value": 0.1}},
        {"key": "opt", "value": {"string_value": "sgd"}}]}}
    assert content[2] == {"session_end_info": {"status": 1}}
    assert metric == {"tag": "hparam/acc", "simple_value": 0.75}


def test_pr_curve(tmp_path: Path) -> None:
    labels = np.array([1, 0, 1, 1, 0])
    preds = np.array([0.9, 0.8, 0.4, 0.2, 0.1])
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", acg.tensor(labels), acg.tensor(preds), 1, num_thresholds=3)
    (_, v), = values(tmp_path)
    assert v["metadata"]["plugin_data"] == {"plugin_name": "pr_curves",
                                            "content": {"num_thresholds": 3}}
    data = np.array(v["tensor"]["float_val"]).reshape(6, 3)
    # thresholds 0, 0.5, 1: predictions >= t count as positive
    np.testing.assert_allclose(data[:4], [[3, 1, 0], [2, 1, 0], [0, 1, 2], [0, 2, 3]])
    np.testing.assert_allclose(data[4:], [[0.6, 0.5, 0], [1, 1 / 3, 0]], rtol=1e-6)


def test_custom_scalars(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars({"Loss": {"both": ["Multiline", ["l/train", "l/val"]],
                                       "band": ["Margin", ["m", "lo", "hi"]]}})
    (_, v), = values(tmp_path)
    assert v["tag"] == "custom_scalars__config__"
    assert v["tensor"]["tensor_shape"] == {}
    assert v["tensor"]["string_val"] == [{"category": [{"title": "Loss", "chart": [
        {"title": "both", "multiline": {"tag": ["l/train", "l/val"]}},
        {"title": "band", "margin": {"series": [{"value": "m", "lower": "lo", "upper": "hi"}]}},
    ]}]}]


def test_embedding_projector_files(tmp_path: Path) -> None:
    mat = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    imgs = np.random.RandomState(0).rand(3, 1, 4, 5)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(acg.tensor(mat), metadata=["a", "b", "c"], label_img=imgs, tag="x/y")
        w.add_embedding(mat, global_step=2)
    sub = tmp_path / "00000" / "x%2fy"
    assert (sub / "tensors.tsv").read_text() == "0.0\t0.25\n0.5\t0.75\n1.0\t1.25\n"
    assert (sub / "metadata.tsv").read_text() == "a\nb\nc\n"
    assert read_png((sub / "sprite.png").read_bytes()).shape == (10, 10, 3)
    assert (tmp_path / "projector_config.pbtxt").read_text() == (
        'embeddings {\n  tensor_name: "x/y:00000"\n  metadata_path: "00000/x%2fy/metadata.tsv"\n'
        '  sprite {\n    image_path: "00000/x%2fy/sprite.png"\n    single_image_dim: 5\n'
        '    single_image_dim: 4\n  }\n  tensor_path: "00000/x%2fy/tensors.tsv"\n}\n'
        'embeddings {\n  tensor_name: "default:00002"\n'
        '  tensor_path: "00002/default/tensors.tsv"\n}\n')


def test_add_graph_writes_the_module_tree(tmp_path: Path) -> None:
    model = acg.nn.Sequential(acg.nn.Linear(2, 3), acg.nn.ReLU())
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, acg.randn(1, 2))
    (graph,) = [e["graph_def"] for e in events(tmp_path) if "graph_def" in e]
    assert graph == {"node": [{"name": "Sequential/0", "op": "Linear"},
                              {"name": "Sequential/1", "op": "ReLU"}],
                     "versions": {"producer": 22}}


# ---- lifetime: queue, flush, close, purge ------------------------------------------------

def test_training_loop_logging_every_step(tmp_path: Path) -> None:
    model = acg.nn.Linear(3, 1)
    opt = acg.optim.SGD(model.parameters(), lr=0.1)
    x, y = acg.randn(16, 3), acg.randn(16, 1)
    w = SummaryWriter(tmp_path, max_queue=3, flush_secs=3600)
    losses = []
    for step in range(50):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        w.add_scalar("loss", loss, step)
        w.add_histogram("weight", model.weight, step)
        losses.append(loss.item())
    w.close()
    got = [(s, v) for s, v in values(tmp_path)]
    assert [(s, v["simple_value"]) for s, v in got if v["tag"] == "loss"] == [
        (s, pytest.approx(l, rel=1e-6)) for s, l in enumerate(losses)]
    assert sum(v["tag"] == "weight" for _, v in got) == 50


def test_close_flushes_and_a_later_add_opens_a_new_file(tmp_path: Path) -> None:
    w = SummaryWriter(tmp_path, max_queue=1000, flush_secs=3600)
    for i in range(200):
        w.add_scalar("x", i, i)
    w.close()
    assert [v["simple_value"] for _, v in values(tmp_path)] == list(map(float, range(200)))
    w.close()  # twice is fine
    w.add_scalar("x", 7.0, 500)
    w.flush()
    files = sorted(glob.glob(str(tmp_path / "events.*")))
    assert len(files) == 2
    w.close()


def test_flush_secs_flushes_without_close(tmp_path: Path) -> None:
    w = SummaryWriter(tmp_path, max_queue=100, flush_secs=0.05)
    w.add_scalar("x", 1.0, 1)
    deadline = time.time() + 10
    while len(values(tmp_path)) < 1 and time.time() < deadline:
        time.sleep(0.02)
    assert values(tmp_path)[0][1]["simple_value"] == 1.0
    w.close()


def test_purge_step_records(tmp_path: Path) -> None:
    with SummaryWriter(tmp_path, purge_step=42) as w:
        w.add_scalar("x", 1.0, 42)
    evs = events(tmp_path)
    assert evs[1]["step"] == 42 and evs[1]["file_version"] == "brain.Event:2"
    assert evs[2]["step"] == 42 and evs[2]["session_log"] == {"status": 1}


def test_importing_it_loads_neither_matplotlib_nor_pillow() -> None:
    code = ("import sys, autograd_compile as torch\n"
            "from autograd_compile.utils.tensorboard import SummaryWriter\n"
            "assert torch.utils.tensorboard.SummaryWriter is SummaryWriter\n"
            "print(sorted(m for m in ('matplotlib', 'PIL') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:]


# ---- TensorBoard's reader and PyTorch's writer (when installed) ------------------------

def test_tensorboard_reads_our_files(tmp_path: Path) -> None:
    ea_mod = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("h", np.arange(10.0), 1)
        w.add_image("img", np.ones((3, 4, 5)), 1)
        w.add_text("t", "hello", 1)
    acc = ea_mod.EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [
        (0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    (h,) = acc.Histograms("h")
    assert h.step == 1 and h.histogram_value.num == 10 and h.histogram_value.max == 9
    (img,) = acc.Images("img")
    assert (img.width, img.height) == (5, 4) and img.encoded_image_string[:4] == b"\x89PNG"
    (t,) = acc.Tensors("t/text_summary")
    assert t.tensor_proto.string_val == [b"hello"]


def _log_everything(w, tensor) -> None:
    """The same calls for both writers (walltime given where the API takes one)."""
    rng = np.random.RandomState(0)
    x = rng.randn(300).astype(np.float32)
    kw = {"walltime": 100.0}
    w.add_scalar("a", 1.5, 3, **kw)
    w.add_scalar("b", tensor([2.0]), 4, new_style=True, **kw)
    w.add_scalar("c", 0.1, 5, new_style=True, double_precision=True, **kw)
    w.add_scalars("m/s", {"x": 1.0, "y": 2.0}, 1, **kw)
    w.add_histogram("h", tensor(x), 1, **kw)
    w.add_histogram("h2", x, 1, bins="fd", max_bins=5, **kw)
    w.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 1, **kw)
    w.add_image("i1", tensor(rng.rand(3, 5, 7).astype(np.float32)), 2, **kw)
    w.add_image("i2", (rng.rand(5, 7, 3) * 255).astype(np.uint8), 2, dataformats="HWC", **kw)
    w.add_images("i3", tensor(rng.rand(10, 1, 4, 4).astype(np.float32)), 2, **kw)
    w.add_text("t", "hello **world**", 2, **kw)
    w.add_pr_curve("pr", rng.randint(0, 2, 50), rng.rand(50), 3, **kw)
    w.add_custom_scalars({"cat": {"c1": ["Multiline", ["a", "b"]],
                                  "c2": ["Margin", ["a", "b", "c"]]}})
    w.add_tensor("ten", tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), 1, **kw)
    w.add_hparams({"lr": 0.1, "opt": "adam", "bs": 32}, {"hp/acc": 0.5},
                  hparam_domain_discrete={"bs": [16, 32]}, run_name="hp")
    w.add_embedding(rng.rand(4, 3).astype(np.float32), metadata=["a", "b", "c", "d"])


def _tree(logdir: Path) -> dict[str, list[dict]]:
    """Every event file's events without wall times, by directory; other files' text."""
    out: dict = {}
    for path in sorted(logdir.rglob("*")):
        rel = str(path.parent.relative_to(logdir)) if "tfevents" in path.name else \
            str(path.relative_to(logdir))
        if "tfevents" in path.name:
            evs = [_decode_plugins(decode(r, EVENT)) for r in read_records(str(path))]
            for e in evs:
                e.pop("wall_time", None)
                e.pop("source_metadata", None)
            out[rel] = evs
        elif path.is_file():
            out[rel] = path.read_text()
    return out


def test_same_records_as_pytorch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    tw = pytest.importorskip("torch.utils.tensorboard")
    with tw.SummaryWriter(tmp_path / "torch") as w:
        _log_everything(w, torch.tensor)
    with SummaryWriter(tmp_path / "ours") as w:
        _log_everything(w, acg.tensor)
    theirs, ours = _tree(tmp_path / "torch"), _tree(tmp_path / "ours")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key


def test_a_program_that_never_closes_keeps_its_events(tmp_path: Path) -> None:
    code = ("from autograd_compile.utils.tensorboard import SummaryWriter\n"
            f"w = SummaryWriter({str(tmp_path)!r}, max_queue=1000, flush_secs=3600)\n"
            "for i in range(100):\n    w.add_scalar('x', i, i)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert [v["simple_value"] for _, v in values(tmp_path)] == list(map(float, range(100)))
