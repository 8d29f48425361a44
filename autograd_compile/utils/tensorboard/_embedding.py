"""``add_embedding``'s projector files, laid out as PyTorch lays them out:

``<logdir>/<step:05d>/<tag>/tensors.tsv`` (one row per point), ``metadata.tsv`` (labels),
``sprite.png`` (the label images tiled in a square), and ``<logdir>/projector_config.pbtxt``
listing every embedding logged so far, in protobuf text format.

>>> print(config_pbtxt([{"tensor_name": "default:00000",
...                      "tensor_path": "00000/default/tensors.tsv"}]), end="")
embeddings {
  tensor_name: "default:00000"
  tensor_path: "00000/default/tensors.tsv"
}
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from ._png import encode_png
from .summary import make_grid, make_np


def encode_tag(tag: str) -> str:
    """The tag as one path component: ``%``, ``/`` and ``\\`` percent-encoded."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def write_tsv(metadata: list, path: str, header: list | None = None) -> None:
    if header:
        if len(header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in "
                                 "metadata")
        lines = ["\t".join(str(e) for e in row) for row in [header, *metadata]]
    else:
        lines = [str(x) for x in metadata]
    with open(os.path.join(path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def write_matrix(mat: np.ndarray, path: str) -> None:
    with open(os.path.join(path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))


def write_sprite(label_img: Any, path: str) -> tuple[int, int]:
    """Tile the N×C×H×W images (0-1) into a square PNG; returns one image's (W, H)."""
    imgs = make_np(label_img)
    grid = make_grid(imgs, ncols=math.ceil(imgs.shape[0] ** 0.5)).transpose(1, 2, 0)
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    with open(os.path.join(path, "sprite.png"), "wb") as f:
        f.write(encode_png(np.uint8((square * 255).clip(0, 255))))
    return imgs.shape[3], imgs.shape[2]


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def config_pbtxt(embeddings: list[dict]) -> str:
    """``ProjectorConfig`` in text format; each dict holds EmbeddingInfo fields (field order:
    tensor_name, metadata_path, sprite, tensor_path)."""
    out = []
    for e in embeddings:
        out.append("embeddings {")
        for key in ("tensor_name", "metadata_path"):
            if key in e:
                out.append(f"  {key}: {_quote(e[key])}")
        if "sprite" in e:
            image_path, dims = e["sprite"]
            out += ["  sprite {", f"    image_path: {_quote(image_path)}"]
            out += [f"    single_image_dim: {d}" for d in dims] + ["  }"]
        out += [f"  tensor_path: {_quote(e['tensor_path'])}", "}"]
    return "".join(line + "\n" for line in out)
