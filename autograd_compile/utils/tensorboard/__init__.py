"""``torch.utils.tensorboard``: log scalars, histograms, images, text and hyperparameters
for TensorBoard, with no dependency on ``tensorboard`` or ``protobuf``.

>>> import os, tempfile
>>> import autograd_compile as torch
>>> from autograd_compile.utils.tensorboard import SummaryWriter
>>> with tempfile.TemporaryDirectory() as logdir:
...     with SummaryWriter(logdir) as writer:
...         for step in range(3):
...             loss = torch.tensor(1.0 / (step + 1))
...             writer.add_scalar("loss/train", loss, step)
...         writer.add_histogram("weights", torch.randn(100), 0)
...         writer.add_image("sample", torch.rand(3, 8, 8), 0)
...         writer.add_text("notes", "first run", 0)
...     print(os.listdir(logdir)[0][:20])
events.out.tfevents.

Then ``tensorboard --logdir <dir>`` shows them. How it is built, bottom up:

- :mod:`._proto` encodes protobuf fields by hand (varints, doubles, length-delimited), and
  :mod:`.summary` uses it to build the few messages TensorBoard reads: ``Summary`` with its
  ``Value`` (simple_value, ``HistogramProto``, ``Summary.Image``, ``TensorProto`` with
  ``SummaryMetadata`` naming the plugin: scalars, text, hparams, pr_curves, custom_scalars).
  Each function mirrors PyTorch's ``torch/utils/tensorboard/summary.py``: same fields, same
  values, same default histogram buckets; PNGs come from Pillow when it is installed (so they
  are byte for byte PyTorch's), else from a small zlib writer in :mod:`._png`.
- :mod:`._record` frames each serialized ``Event`` as a TFRecord (length, masked CRC32C of
  the length, data, masked CRC32C of the data) into ``events.out.tfevents.<time>.<host>.
  <pid>.<n><suffix>``, from a daemon thread: ``add_*`` only queues (``max_queue`` records),
  the thread writes and flushes every ``flush_secs``; ``flush()`` and ``close()`` write all.
- :mod:`.writer` holds PyTorch's ``SummaryWriter`` API on top. ``add_scalars`` writes each
  curve through its own writer in a subdirectory and ``add_hparams`` writes into
  ``<log_dir>/<time>``, as PyTorch does, so TensorBoard shows them as separate runs.

What is different from PyTorch: ``add_graph`` writes a minimal graph (one node per leaf
module, no edges: the model is not traced); ``add_video``, ``add_mesh``,
``add_onnx_graph`` and ``add_image_with_boxes`` are not implemented; the first record names
this package as its writer.
"""
from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
