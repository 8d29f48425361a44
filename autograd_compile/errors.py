"""Error construction: every op error names the op, the shapes and the dtypes.

Error classes follow PyTorch (RuntimeError for shape/dtype problems), so code
that catches PyTorch's errors works unchanged.
"""
from __future__ import annotations

from typing import Any


class OpError(RuntimeError):
    """An op failed on its inputs; the message names the op, shapes and dtypes."""


class OpIndexError(OpError, IndexError):
    """A dimension or index out of range (PyTorch raises IndexError for these)."""


def shape_list(shape: Any) -> list:
    """A shape for messages: symbolic sizes shown as the sizes they stand for."""
    return [int(getattr(getattr(d, "node", None), "hint", d)) for d in shape]


def describe_value(value: Any) -> str:
    """'Tensor[2, 3] float32' for tensors, repr for everything else."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"Tensor{shape_list(shape)} {getattr(value.dtype, 'name', value.dtype)}"
    if isinstance(value, (list, tuple)) and any(hasattr(v, "shape") for v in value):
        return "[" + ", ".join(describe_value(v) for v in value) + "]"
    return repr(value)


def describe_args(op: Any, args: tuple, kwargs: dict) -> str:
    """One 'name: value' line per argument, using the schema's names when known."""
    names = [a.name for a in op.schema.arguments] if getattr(op, "schema", None) else []
    parts = []
    for i, v in enumerate(args):
        parts.append(f"{names[i] if i < len(names) else i}: {describe_value(v)}")
    parts += [f"{k}: {describe_value(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def op_error(op: Any, args: tuple, kwargs: dict, cause: BaseException) -> OpError:
    """Wrap a kernel failure into an OpError that says what was called with what."""
    if isinstance(cause, OpError):
        return cause
    reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
    cls = OpIndexError if isinstance(cause, IndexError) else OpError
    return cls(f"{op.qualname if hasattr(op, 'qualname') else op}: {reason}\n"
               f"  called with ({describe_args(op, args, kwargs)})")
