"""Summary protos, encoded: one function per kind of value a ``SummaryWriter`` logs.

Each returns the bytes of a ``Summary`` message (TensorBoard's ``summary.proto``), built
field by field with :mod:`._proto`, with the same fields and values that PyTorch's
``torch.utils.tensorboard.summary`` puts in its protos.

>>> scalar("loss", 0.5)
b'\\n\\x0b\\n\\x04loss\\x15\\x00\\x00\\x00?'
"""
from __future__ import annotations

import struct
from typing import Any

import numpy as np

from . import _proto as pb
from ._png import encode_png

# TensorFlow's DataType enum (types.proto)
DT_FLOAT, DT_DOUBLE, DT_INT32, DT_UINT8, DT_INT16, DT_INT8, DT_STRING = 1, 2, 3, 4, 5, 6, 7
DT_INT64, DT_BOOL, DT_BFLOAT16, DT_HALF = 9, 10, 14, 19


def make_np(x: Any) -> np.ndarray:
    """Our tensors, numpy arrays and Python numbers (and nested lists) as a numpy array;
    a Python number becomes a 1-element array, as in PyTorch."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if hasattr(x, "detach"):  # a tensor: leave the graph, then read the value on the host
        x = x.detach()
    return np.asarray(x)


# ---- the common messages -------------------------------------------------------------

def plugin_metadata(plugin_name: str, content: bytes = b"") -> bytes:
    """``SummaryMetadata`` with only its ``plugin_data`` (name, content) set."""
    return pb.msg(1, pb.string(1, plugin_name) + pb.data(2, content))


def tensor_proto(dtype: int, shape: tuple[int, ...] | None = None, *, float_val=(),
                 double_val=(), int_val=(), string_val=(), int64_val=(), bool_val=(),
                 half_val=(), uint32_val=()) -> bytes:
    """A ``TensorProto``; ``shape=None`` leaves ``tensor_shape`` unset, ``()`` sets it empty."""
    out = pb.varint(1, dtype)
    if shape is not None:
        out += pb.msg(2, b"".join(pb.msg(2, pb.varint(1, d)) for d in shape))
    return (out + pb.packed_floats(5, float_val) + pb.packed_doubles(6, double_val)
            + pb.packed_varints(7, int_val) + pb.repeated(8, string_val)
            + pb.packed_varints(10, int64_val) + pb.packed_varints(11, bool_val)
            + pb.packed_varints(13, half_val) + pb.packed_varints(16, uint32_val))


def value(tag: str, *, simple_value: float | None = None, image: bytes | None = None,
          histo: bytes | None = None, audio: bytes | None = None,
          tensor: bytes | None = None, metadata: bytes | None = None) -> bytes:
    """A ``Summary.Value``: the tag, one of its ``value`` oneof and, maybe, metadata."""
    out = pb.string(1, tag)
    if simple_value is not None:
        out += pb.float32(2, simple_value, keep=True)
    for num, body in ((4, image), (5, histo), (6, audio), (8, tensor)):
        if body is not None:
            out += pb.msg(num, body)
    return out + (pb.msg(9, metadata) if metadata is not None else b"")


def summary(*values: bytes) -> bytes:
    return b"".join(pb.msg(1, v) for v in values)


# ---- scalars and tensors -------------------------------------------------------------

def scalar(tag: str, x: Any, new_style: bool = False, double_precision: bool = False) -> bytes:
    arr = make_np(x).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"add_scalar({tag!r}): the value should have one element, got "
                             f"shape {arr.shape}; log x.mean() or add_histogram instead")
    v = float(arr)
    if not new_style:
        return summary(value(tag, simple_value=v))
    t = (tensor_proto(DT_DOUBLE, double_val=[v]) if double_precision
         else tensor_proto(DT_FLOAT, float_val=[v]))
    return summary(value(tag, tensor=t, metadata=plugin_metadata("scalars")))


def _float_bits(values: np.ndarray) -> list[int]:
    # PyTorch stores half and bfloat16 as the int32 bits of each value's float32 form
    return [struct.unpack("<i", struct.pack("<f", v))[0] for v in values.tolist()]


# numpy dtype kind+size -> (DataType, TensorProto field), as PyTorch maps its dtypes
_TENSOR_FIELDS = {
    "f2": (DT_HALF, "half_val"), "bfloat16": (DT_BFLOAT16, "half_val"),
    "f4": (DT_FLOAT, "float_val"), "f8": (DT_DOUBLE, "double_val"),
    "i1": (DT_INT8, "int_val"), "i2": (DT_INT16, "int_val"), "i4": (DT_INT32, "int_val"),
    "i8": (DT_INT64, "int64_val"), "u1": (DT_UINT8, "uint32_val"), "b1": (DT_BOOL, "bool_val"),
}


def tensor(tag: str, x: Any) -> bytes:
    """``add_tensor``: the whole tensor in a ``TensorProto`` (plugin ``tensor``)."""
    arr = make_np(x)
    key = "bfloat16" if arr.dtype.name == "bfloat16" else f"{arr.dtype.kind}{arr.dtype.itemsize}"
    if key not in _TENSOR_FIELDS:
        raise ValueError(f"add_tensor({tag!r}): unsupported dtype {arr.dtype}; supported: "
                         "float16/bfloat16/32/64, int8/16/32/64, uint8, bool")
    dtype, field = _TENSOR_FIELDS[key]
    flat = arr.reshape(-1)
    vals = _float_bits(flat.astype(np.float32)) if field == "half_val" else flat.tolist()
    t = tensor_proto(dtype, tuple(arr.shape), **{field: vals})
    return summary(value(tag, tensor=t, metadata=plugin_metadata("tensor")))


# ---- histograms ----------------------------------------------------------------------

def default_bins() -> list[float]:
    """``bins='tensorflow'``: edges ±1e-12·1.1^k up to 1e20, and 0 (as PyTorch builds them,
    by repeated multiplication, so the edges are the same floats)."""
    pos, v = [], 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


def histogram_raw(tag: str, min: float, max: float, num: float, sum: float,
                  sum_squares: float, bucket_limits, bucket_counts) -> bytes:
    h = (pb.double(1, min) + pb.double(2, max) + pb.double(3, num) + pb.double(4, sum)
         + pb.double(5, sum_squares) + pb.packed_doubles(6, bucket_limits)
         + pb.packed_doubles(7, bucket_counts))
    return summary(value(tag, histo=h))


def histogram(tag: str, x: Any, bins: Any, max_bins: int | None = None) -> bytes:
    """Counts with ``np.histogram(values, bins)``, merged to at most ``max_bins`` buckets,
    trimmed to the non-empty range plus an empty bucket in front (TensorBoard reads each
    ``bucket_limit`` as its bucket's right edge)."""
    values = make_np(x).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError(f"add_histogram({tag!r}): the input has no element")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % step)).reshape(-1, step).sum(axis=1)
        limits = np.append(limits[:-1:step], limits[-1])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError(f"add_histogram({tag!r}): no value falls inside the bins")
    first, last = int(nonzero[0]), int(nonzero[-1])
    counts = np.concatenate([[0], counts[first:last + 1]])
    return histogram_raw(tag, values.min(), values.max(), len(values), values.sum(),
                         values.dot(values), limits[first:last + 2].tolist(), counts.tolist())


# ---- images and audio ----------------------------------------------------------------

def make_grid(nchw: np.ndarray, ncols: int = 8) -> np.ndarray:
    """A batch of images tiled row by row into one CHW image (gray ones made RGB)."""
    if nchw.shape[1] == 1:
        nchw = np.concatenate([nchw] * 3, axis=1)
    if nchw.ndim != 4 or nchw.shape[1] != 3:
        raise AssertionError(f"images should be N×3×H×W or N×1×H×W, got {nchw.shape}")
    n, _, h, w = nchw.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=nchw.dtype)
    for i in range(n):
        r, c = divmod(i, ncols)
        canvas[:, r * h:(r + 1) * h, c * w:(c + 1) * w] = nchw[i]
    return canvas


def to_hwc(arr: np.ndarray, dataformats: str) -> np.ndarray:
    """An image or batch in any layout (NCHW, NHWC, CHW, HWC, HW...) as one H×W×C image."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(f"dataformats {dataformats!r} repeats a dimension")
    if arr.ndim != len(fmt):
        raise AssertionError(f"the image has shape {arr.shape} but dataformats is "
                             f"{dataformats!r}; pass the layout it has, e.g. 'HWC'")
    if len(fmt) == 4:
        return make_grid(arr.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    return np.stack([arr.transpose([fmt.find(c) for c in "HW"])] * 3, axis=2)


def image(tag: str, x: Any, dataformats: str = "NCHW") -> bytes:
    """uint8 images are taken as they are, any other dtype as 0-1 and scaled by 255."""
    hwc = to_hwc(make_np(x), dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    hwc = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    h, w, c = hwc.shape
    img = pb.varint(1, h) + pb.varint(2, w) + pb.varint(3, c) + pb.data(4, encode_png(hwc))
    return summary(value(tag, image=img))


def audio(tag: str, x: Any, sample_rate: int = 44100) -> bytes:
    """Mono samples in [-1, 1] as a 16-bit WAV."""
    import io
    import wave
    arr = make_np(x).squeeze()
    if abs(arr).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        arr = arr.clip(-1, 1)
    if arr.ndim != 1:
        raise AssertionError(f"add_audio({tag!r}): expected one channel, got shape {arr.shape}")
    pcm = (arr * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(sample_rate)
        f.writeframes(pcm.tobytes())
    a = (pb.float32(1, sample_rate) + pb.varint(2, 1) + pb.varint(3, pcm.shape[-1])
         + pb.data(4, buf.getvalue()) + pb.string(5, "audio/wav"))
    return summary(value(tag, audio=a))


# ---- text, PR curves, custom scalars --------------------------------------------------

def text(tag: str, text_string: str) -> bytes:
    t = tensor_proto(DT_STRING, (1,), string_val=[text_string.encode("utf-8")])
    return summary(value(tag + "/text_summary", tensor=t, metadata=plugin_metadata("text")))


def compute_curve(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int,
                  weights: Any = None) -> np.ndarray:
    """Rows tp, fp, tn, fn, precision, recall at thresholds i/(num_thresholds-1)."""
    w = 1.0 if weights is None else weights
    idx = np.int32(np.floor(predictions * (num_thresholds - 1)))
    pos = labels.astype(np.float64)
    bucket = lambda wt: np.histogram(idx, bins=num_thresholds,  # noqa: E731
                                     range=(0, num_thresholds - 1), weights=wt)[0]
    tp = np.cumsum(bucket(pos * w)[::-1])[::-1]
    fp = np.cumsum(bucket((1.0 - pos) * w)[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve_raw(tag: str, data: np.ndarray, num_thresholds: int) -> bytes:
    content = pb.varint(2, num_thresholds)  # PrCurvePluginData(version=0, num_thresholds)
    t = tensor_proto(DT_FLOAT, data.shape, float_val=data.reshape(-1).tolist())
    return summary(value(tag, tensor=t, metadata=plugin_metadata("pr_curves", content)))


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int = 127,
             weights: Any = None) -> bytes:
    num_thresholds = min(num_thresholds, 127)  # as PyTorch: more breaks the plugin
    data = compute_curve(make_np(labels), make_np(predictions), num_thresholds, weights)
    return pr_curve_raw(tag, data, num_thresholds)


def custom_scalars(layout: dict[str, dict[str, list]]) -> bytes:
    """``{category: {chart title: ["Multiline", tags] | ["Margin", [value, lower, upper]]}}``
    as a ``Layout`` proto in a string tensor, the custom-scalars plugin's config."""
    categories = []
    for title, charts in layout.items():
        body = pb.string(1, title)
        for chart_title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError(f"a Margin chart takes 3 tags (value, lower, upper), "
                                         f"got {tags}")
                series = pb.string(1, tags[0]) + pb.string(2, tags[1]) + pb.string(3, tags[2])
                content = pb.msg(3, pb.msg(1, series))
            else:
                content = pb.msg(2, pb.repeated(1, tags))
            body += pb.msg(2, pb.string(1, chart_title) + content)
        categories.append(body)
    layout_pb = b"".join(pb.msg(2, c) for c in categories)
    t = tensor_proto(DT_STRING, (), string_val=[layout_pb])
    return summary(value("custom_scalars__config__", tensor=t,
                         metadata=plugin_metadata("custom_scalars")))


# ---- hyperparameters (the hparams plugin) ---------------------------------------------

_FLOAT64, _STRING, _BOOL = 3, 1, 2  # hparams' DataType enum


def _struct_value(v: Any) -> bytes:
    """A ``google.protobuf.Value``; as in PyTorch, a bool counts as a number (bool is int)."""
    if isinstance(v, str):
        return pb.string(3, v, keep=True)
    if isinstance(v, (bool, np.bool_)) and not isinstance(v, (int, float)):
        return pb.varint(4, bool(v), keep=True)
    return pb.double(2, float(v), keep=True)


def _hparam_kind(k: str, v: Any) -> int:
    if isinstance(v, (int, float, np.number)) or hasattr(v, "detach"):
        return _FLOAT64
    if isinstance(v, str):
        return _STRING
    if isinstance(v, (bool, np.bool_)):
        return _BOOL
    raise ValueError(f"add_hparams: hparam {k!r} is a {type(v).__name__}; a value should be "
                     "one of int, float, str, bool, or a one-element tensor")


def _check_domains(hparam_dict: dict, domains: dict) -> None:
    for k, v in domains.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")


def _plugin_summary(tag: str, data_field: int, body: bytes) -> bytes:
    content = pb.msg(data_field, body)  # HParamsPluginData(version=0, <data_field>=body)
    return summary(value(tag, metadata=plugin_metadata("hparams", content)))


def hparams(hparam_dict: dict, metric_dict: dict,
            hparam_domain_discrete: dict | None = None) -> tuple[bytes, bytes, bytes]:
    """PyTorch's three summaries: the experiment (hparam and metric names), the session start
    (this run's hparam values) and the session end (status success)."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("hparam_dict and metric_dict should be dictionary.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing "
                        "logged.")
    _check_domains(hparam_dict, domains)
    infos, start = [], b""
    for k, v in hparam_dict.items():
        if v is None:
            continue
        kind = _hparam_kind(k, v)
        if hasattr(v, "detach"):
            v = make_np(v).reshape(-1)[0]
        start += pb.msg(1, pb.string(1, k) + pb.msg(2, _struct_value(v)))  # map entry
        info = pb.string(1, k) + pb.varint(4, kind)
        if k in domains:
            info += pb.msg(5, b"".join(pb.msg(1, _struct_value(d)) for d in domains[k]))
        infos.append(info)
    metrics = [pb.msg(1, pb.string(2, k)) for k in metric_dict]  # MetricInfo(MetricName(tag))
    experiment = b"".join(pb.msg(4, i) for i in infos) + b"".join(pb.msg(5, m) for m in metrics)
    return (_plugin_summary("_hparams_/experiment", 2, experiment),
            _plugin_summary("_hparams_/session_start_info", 3, start),
            _plugin_summary("_hparams_/session_end_info", 4, pb.varint(1, 1)))
