"""PNG encoding (Pillow when installed, else a plain zlib writer) and figure rendering.

>>> import numpy as np
>>> png = write_png(np.zeros((2, 3, 3), np.uint8))
>>> png[:8], png[16:24]
(b'\\x89PNG\\r\\n\\x1a\\n', b'\\x00\\x00\\x00\\x03\\x00\\x00\\x00\\x02')
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

_COLOR_TYPE = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> gray, gray+alpha, RGB, RGBA


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def write_png(hwc: np.ndarray) -> bytes:
    """An 8-bit PNG of an H×W×C uint8 image (C in 1-4), every row with filter 0 (none)."""
    h, w, c = hwc.shape
    if c not in _COLOR_TYPE:
        raise ValueError(f"a PNG has 1 to 4 channels, the image has {c} (shape {hwc.shape})")
    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           np.ascontiguousarray(hwc, np.uint8).reshape(h, w * c)], axis=1)
    header = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[c], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


def encode_png(hwc: np.ndarray) -> bytes:
    """PNG bytes as PyTorch's writer makes them (Pillow) when Pillow is installed."""
    try:
        from PIL import Image
    except ImportError:
        return write_png(hwc)
    import io
    buf = io.BytesIO()
    Image.fromarray(hwc[:, :, 0] if hwc.shape[2] == 1 else hwc).save(buf, format="PNG")
    return buf.getvalue()


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """A matplotlib figure as a CHW uint8 RGB array (a list of them as NCHW)."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(fig: Any) -> np.ndarray:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        rgb = np.asarray(canvas.buffer_rgba())[:, :, :3]
        if close:
            plt.close(fig)
        return np.ascontiguousarray(rgb.transpose(2, 0, 1))

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
