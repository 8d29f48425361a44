"""``SummaryWriter`` and ``FileWriter``, with PyTorch's signatures and defaults."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

import numpy as np

from . import _embedding, summary as S
from . import _proto as pb
from ._png import figure_to_image
from ._record import EventFileWriter, event

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in ``log_dir``; ``add_summary`` takes an encoded ``Summary``
    (from :mod:`.summary`), ``add_event`` an encoded ``Event`` body without time or step."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: float = 120,
                 filename_suffix: str = "") -> None:
        self._args = (str(log_dir), max_queue, flush_secs, filename_suffix)
        self.event_writer = EventFileWriter(*self._args)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, body: bytes = b"", step: int | None = None,
                  walltime: float | None = None) -> None:
        t = time.time() if walltime is None else walltime
        self.event_writer.add_event(event(t, step) + body)

    def add_summary(self, summary: bytes, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        self.add_event(pb.msg(5, summary), global_step, walltime)

    def add_graph(self, graph_def: bytes, walltime: float | None = None) -> None:
        self.add_event(pb.data(4, graph_def, keep=True), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        """After ``close``: go on in a new event file of the same directory."""
        if self.event_writer._closed:
            self.event_writer = EventFileWriter(*self._args)


def _default_logdir(comment: str) -> str:
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir``, from a background thread so that
    logging does not slow the training loop. See the package docstring for an example.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``; ``purge_step``
    tells TensorBoard to hide the events of a crashed run from that step on; a writer holds
    ``max_queue`` events before ``add_*`` blocks, and flushes to disk every ``flush_secs``.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10,
                 flush_secs: float = 120, filename_suffix: str = "") -> None:
        self.log_dir = log_dir if log_dir else _default_logdir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._embeddings: list[dict] = []
        self._get_file_writer()
        self.default_bins = S.default_bins()

    def _new_writer(self, logdir: str) -> FileWriter:
        return FileWriter(logdir, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self) -> FileWriter:
        """The main file writer; opened again (in a new file) after ``close``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = self._new_writer(self.log_dir)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # TensorBoard purges steps >= this one
                fw, step = self.file_writer, self.purge_step
                fw.add_event(pb.data(3, b"brain.Event:2", keep=True), step)
                fw.add_event(pb.msg(7, pb.varint(1, 1)), step)  # SessionLog(status=START)
                self.purge_step = None
        return self.file_writer

    def _add(self, summary: bytes, global_step: Any = None, walltime: Any = None) -> None:
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self) -> str:
        return self.log_dir

    # ---- scalars ---------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """One value of a curve. ``new_style`` stores it as a tensor (plugin ``scalars``),
        in float64 with ``double_precision``; else as the classic ``simple_value`` (float32)."""
        self._add(S.scalar(tag, scalar_value, new_style, double_precision), global_step,
                  walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Several curves in one chart: each key gets its own writer in the subdirectory
        ``<log_dir>/<main_tag with / as _>_<key>``, logging the tag ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, v in tag_scalar_dict.items():
            path = root + "/" + main_tag.replace("/", "_") + "_" + tag
            if path not in self.all_writers:
                self.all_writers[path] = self._new_writer(path)
            self.all_writers[path].add_summary(S.scalar(main_tag, v), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        self._add(S.tensor(tag, tensor), global_step, walltime)

    # ---- histograms ------------------------------------------------------------------
    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """``bins`` is ``'tensorflow'`` (exponential buckets ±1e-12·1.1^k), any of numpy's
        bin names (``'auto'``, ``'fd'``, ``'sqrt'`` ...), a count or the edges."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(S.histogram(tag, values, bins, max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,
                          sum_squares: float, bucket_limits: Any, bucket_counts: Any,
                          global_step: int | None = None,
                          walltime: float | None = None) -> None:
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                  bucket_counts), global_step, walltime)

    # ---- images, figures, audio, text ------------------------------------------------
    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """A float image in [0, 1] or a uint8 one in [0, 255]; layout ``dataformats``
        (``CHW``, ``HWC``, ``HW``)."""
        self._add(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """A batch of images, tiled 8 to a row into one image."""
        self._add(S.image(tag, img_tensor, dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None,
                   close: bool = True, walltime: float | None = None) -> None:
        """A matplotlib figure (or a list of them), rendered with the Agg backend."""
        fmt = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, fmt)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None,
                  sample_rate: int = 44100, walltime: float | None = None) -> None:
        self._add(S.audio(tag, snd_tensor, sample_rate), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Markdown text, shown under ``<tag>/text_summary``."""
        self._add(S.text(tag, text_string), global_step, walltime)

    # ---- hparams, PR curves, custom scalars ------------------------------------------
    def add_hparams(self, hparam_dict: dict, metric_dict: dict,
                    hparam_domain_discrete: dict | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """One run of a hyperparameter search: written, as PyTorch does, by a new writer in
        ``<log_dir>/<run_name>`` (default: the current time), with the metrics as scalars."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        summaries = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w:
            for s in summaries:
                w._get_file_writer().add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any,
                     global_step: int | None = None, num_thresholds: int = 127,
                     weights: Any = None, walltime: float | None = None) -> None:
        self._add(S.pr_curve(tag, labels, predictions, num_thresholds, weights), global_step,
                  walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any,
                         precision: Any, recall: Any, global_step: int | None = None,
                         num_thresholds: int = 127, weights: Any = None,
                         walltime: float | None = None) -> None:
        data = np.stack([S.make_np(a) for a in (true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall)])
        self._add(S.pr_curve_raw(tag, data, min(num_thresholds, 127)), global_step, walltime)

    def add_custom_scalars(self, layout: dict) -> None:
        """Charts for the custom-scalars tab:
        ``{'Losses': {'both': ['Multiline', ['loss/train', 'loss/val']]}}``."""
        self._add(S.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # ---- embeddings and graphs -------------------------------------------------------
    def add_embedding(self, mat: Any, metadata: list | None = None, label_img: Any = None,
                      global_step: int | None = None, tag: str = "default",
                      metadata_header: list | None = None) -> None:
        """Points for the projector: ``mat`` is N×D, ``metadata`` N labels (or rows under
        ``metadata_header``), ``label_img`` N×C×H×W images in [0, 1]."""
        mat = S.make_np(mat)
        step = 0 if global_step is None else global_step
        subdir = f"{str(step).zfill(5)}/{_embedding.encode_tag(tag)}"
        root = self._get_file_writer().get_logdir()
        path = os.path.join(root, subdir)
        if os.path.isdir(path):
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        elif os.path.exists(path):
            raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")
        os.makedirs(path, exist_ok=True)
        info: dict[str, Any] = {"tensor_name": f"{tag}:{str(step).zfill(5)}",
                                "tensor_path": f"{subdir}/tensors.tsv"}
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _embedding.write_tsv(metadata, path, metadata_header)
            info["metadata_path"] = f"{subdir}/metadata.tsv"
        if label_img is not None:
            if mat.shape[0] != S.make_np(label_img).shape[0]:
                raise AssertionError("#images should equal with #data points")
            info["sprite"] = (f"{subdir}/sprite.png", _embedding.write_sprite(label_img, path))
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        _embedding.write_matrix(mat, path)
        self._embeddings.append(info)
        with open(os.path.join(root, "projector_config.pbtxt"), "w") as f:
            f.write(_embedding.config_pbtxt(self._embeddings))

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """A minimal graph: one node per leaf module, named by its path (so TensorBoard's
        graph tab shows the module tree), op = its class. No data-flow edges: the model is
        not traced. ``input_to_model``, ``verbose`` and ``use_strict_trace`` are accepted."""
        if not hasattr(model, "named_modules"):
            return
        root = type(model).__name__
        nodes = []
        for name, m in model.named_modules():
            if name and next(iter(m.children()), None) is None:
                node = pb.string(1, f"{root}/{name.replace('.', '/')}")
                nodes.append(node + pb.string(2, type(m).__name__))
        graph = b"".join(pb.msg(1, n) for n in nodes) + pb.msg(4, pb.varint(1, 22))
        self._get_file_writer().add_graph(graph)

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None,
                  fps: int = 4, walltime: float | None = None) -> None:
        """Not written: PyTorch needs moviepy for it; this prints, as PyTorch without it."""
        print("add_video needs package moviepy")

    # ---- lifetime --------------------------------------------------------------------
    def flush(self) -> None:
        """Write every queued event of every writer (including add_scalars') to disk."""
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self) -> None:
        """Flush and close every file; a later ``add_*`` opens a new file. Closing twice is
        fine."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
