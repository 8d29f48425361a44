"""``torch.set_printoptions``: how tensors print (digits, summarising long tensors).

Until a program sets them, tensors print with numpy's defaults; each option given here
(and PyTorch's profiles "default", "short", "full") then applies to every tensor's repr.

>>> import autograd_compile as acg
>>> acg.set_printoptions(precision=2)
>>> acg.tensor([0.12345, 1.5])
tensor([0.12, 1.50])
>>> from autograd_compile import _printing; _printing.reset()  # (numpy's printing again)
"""
from __future__ import annotations

from typing import Any

_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)}
_OPTIONS: dict[str, Any] = {}  # what the program set; empty: numpy's defaults


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """PyTorch's options: digits after the point, the element count above which a tensor
    prints summarised, items kept at each end then, the line width, and scientific
    notation (None: chosen by the values)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Unknown profile {profile!r}: use 'default', 'short' or 'full'")
        _OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            _OPTIONS[name] = value
    _OPTIONS["sci_mode"] = sci_mode


def reset() -> None:
    """Forget every option set: tensors print with numpy's defaults again."""
    _OPTIONS.clear()


def get_printoptions() -> dict[str, Any]:
    """The options in effect (PyTorch's defaults for those never set)."""
    return {**_PROFILES["default"], "sci_mode": None,
            **{k: v for k, v in _OPTIONS.items() if v is not None}}


def array2string_options() -> dict[str, Any]:
    """``np.array2string`` keywords for the options the program set."""
    if not _OPTIONS:
        return {}
    out: dict[str, Any] = {}
    if "precision" in _OPTIONS:
        out.update(precision=_OPTIONS["precision"], floatmode="fixed")
    if "threshold" in _OPTIONS:
        threshold = _OPTIONS["threshold"]
        out["threshold"] = int(min(threshold, 2 ** 62))
    if "edgeitems" in _OPTIONS:
        out["edgeitems"] = _OPTIONS["edgeitems"]
    if "linewidth" in _OPTIONS:
        out["max_line_width"] = _OPTIONS["linewidth"]
    sci = _OPTIONS.get("sci_mode")
    if sci is not None:
        digits = _OPTIONS.get("precision", 4)
        out["formatter"] = {"float_kind": (lambda v: f"{v:.{digits}e}") if sci else
                            (lambda v: f"{v:.{digits}f}")}
    return out
