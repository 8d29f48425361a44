"""Grouped and scaled matrix multiplies (``F.grouped_mm``, ``F.scaled_mm``,
``F.scaled_grouped_mm``) and the float8 dtypes they read (issue 20/21 leftovers).

``grouped_mm`` is one op (a ``jax.lax.ragged_dot`` or a masked ``einsum``; backward by
``jax.vjp``): the Mixture-of-Experts product where ``offs`` cuts a 2-d operand into groups.
The scaled forms are compositions: float8 operands widened to float32, multiplied by their
decoding scales (TensorWise: one scale; RowWise: one per row of ``mat_a`` and per column of
``mat_b``), multiplied, and cast to ``output_dtype``, as PyTorch's CPU kernels do. Block-wise
recipes (MX/NVFP4 formats) and swizzled scales raise PyTorch's ValueError.

>>> import autograd_compile as acg, autograd_compile.nn.functional as F
>>> a, b = acg.ones(6, 8), acg.ones(3, 8, 4)
>>> F.grouped_mm(a, b, offs=acg.tensor([2, 4, 6], dtype=acg.int32)).shape
(6, 4)
"""
from __future__ import annotations

import enum
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile._dtype import of as dtype_of, scalar_type_name
from autograd_compile.tensor import Tensor
from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop, wants

__all__ = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
F_ALL = ["grouped_mm", "scaled_mm", "scaled_grouped_mm", "ScalingType", "SwizzleType"]

float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz = map(dtype_of, (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"))
_FLOAT8 = frozenset(map(np.dtype, (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                                   float8_e5m2fnuz)))
_MM_DTYPES = frozenset(map(np.dtype, (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64)))


class _ScalingType(enum.Enum):
    """How a scaled_mm operand was scaled (PyTorch's ``F.ScalingType``)."""
    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class _SwizzleType(enum.Enum):
    """The layout of a scale tensor (PyTorch's ``F.SwizzleType``)."""
    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


ScalingType, SwizzleType = _ScalingType, _SwizzleType


# -- grouped_mm: one op ----------------------------------------------------------------------

def _group_ids(offs: Any, n: int) -> Any:
    """Group of each of n positions along the jagged dimension (G: past ``offs[-1]``)."""
    return (jnp.arange(n)[None, :] >= offs[:, None]).sum(0)


def _grouped_mm_kernel(a: Any, b: Any, offs: Any = None) -> Any:
    if a.ndim == 3 and b.ndim == 3:
        return jnp.matmul(a, b)
    groups = offs.shape[0]
    if a.ndim == 2 and b.ndim == 3:  # MoE forward: rows of a cut into groups
        sizes = jnp.diff(offs.astype(jnp.int32), prepend=0)
        return jax.lax.ragged_dot(a, b, sizes, preferred_element_type=a.dtype)
    if a.ndim == 3:  # columns of b cut into groups: out[:, n] = a[g(n)] @ b[:, n]
        mask = _group_ids(offs, b.shape[1])[None, :] == jnp.arange(groups)[:, None]
        return jnp.einsum("gmk,kn,gn->mn", a, b, mask.astype(a.dtype))
    # both 2-d (MoE weight gradient): the contraction dimension cut into groups
    mask = _group_ids(offs, a.shape[1])[None, :] == jnp.arange(groups)[:, None]
    return jnp.einsum("mk,gk,kn->gmn", a, mask.astype(a.dtype), b)


def _grouped_mm_check(a: Any, b: Any, offs: Any = None) -> None:
    """PyTorch's errors (texts of ``_grouped_mm``), on real or fake tensors."""
    for name, m in (("mat_a", a), ("mat_b", b)):
        if m.ndim not in (2, 3):
            raise RuntimeError(f"{name} has to be 2 or 3d")
        if np.dtype(m.dtype) not in _MM_DTYPES:
            raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                               f"{scalar_type_name(m.dtype)}")
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise RuntimeError(f"grouped_mm: expected mat_a and mat_b to have the same dtype, got "
                           f"{scalar_type_name(a.dtype)} and {scalar_type_name(b.dtype)}")
    if (offs is None) != (a.ndim == 3 and b.ndim == 3):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if "
                           "both matrices are 3d")
    if offs is not None and (np.dtype(offs.dtype) != np.int32 or offs.ndim != 1):
        raise RuntimeError("Offsets have to be int32" if np.dtype(offs.dtype) != np.int32
                           else "offs has to be 1D")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise RuntimeError("batched dimension has to match")


def _grouped_mm_rule(a: Any, b: Any, offs: Any = None) -> TensorMeta:
    _grouped_mm_check(a, b, offs)
    if a.ndim == 3 and b.ndim == 3:
        shape = (a.shape[0], a.shape[1], b.shape[2])
    elif a.ndim == 2 and b.ndim == 3:
        shape = (a.shape[0], b.shape[2])
    elif a.ndim == 3:
        shape = (a.shape[1], b.shape[1])
    else:
        shape = (offs.shape[0], a.shape[0], b.shape[1])
    return TensorMeta(tuple(shape), a.dtype)


def _grouped_mm_backward(g: Any, a: Any, b: Any, offs: Any, out: Any) -> tuple:
    """Each gradient is itself a grouped_mm (of another layout), so double backward is free:
    2d-3d gives 2d-3d and 2d-2d; 3d-2d gives 2d-2d and 3d-2d; 2d-2d gives 3d-2d and 2d-3d."""
    ga = _grouped_mm(g, b.transpose(-2, -1), offs) if wants(a) else None
    gb = _grouped_mm(a.transpose(-2, -1), g, offs) if wants(b) else None
    return ga, gb, None


_grouped_mm = defop("grouped_mm(Tensor mat_a, Tensor mat_b, Tensor? offs=None) -> Tensor",
                    _grouped_mm_kernel, shape=_grouped_mm_rule, check=True,
                    backward=_grouped_mm_backward,
                    save={"mat_a": ("mat_b", "offs"), "mat_b": ("mat_a", "offs")})


def grouped_mm(mat_a: Tensor, mat_b: Tensor, *, offs: Tensor | None = None,
               bias: Tensor | None = None, out_dtype: Any = None) -> Tensor:
    """Grouped matrix multiply (Mixture-of-Experts): with a 2-d operand, ``offs`` (int32, the
    end of each group) cuts its jagged dimension into groups; two 3-d operands multiply batch by
    batch. Rows (or columns) past ``offs[-1]`` are zero (PyTorch leaves them unwritten).

    >>> import autograd_compile as acg, autograd_compile.nn.functional as F
    >>> x, w = acg.ones(4, 8), acg.ones(2, 8, 3)
    >>> F.grouped_mm(x, w, offs=acg.tensor([1, 4], dtype=acg.int32)).sum().item()
    96.0
    """
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and np.dtype(out_dtype) != np.dtype(mat_a.dtype):
        # PyTorch accumulates 16-bit inputs in float32 when asked; other changes are refused
        if not (np.dtype(out_dtype) == np.float32 and np.dtype(mat_a.dtype) in
                (np.dtype(jnp.bfloat16), np.dtype(jnp.float16))):
            raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
        _grouped_mm_check(mat_a, mat_b, offs)
        mat_a, mat_b = mat_a.float(), mat_b.float()
    return _grouped_mm(mat_a, mat_b, offs)


# -- scaled_mm / scaled_grouped_mm: compositions -------------------------------------------------

def _one(v: Any, what: str) -> Any:
    """A single recipe/scale/swizzle (PyTorch also takes one-element lists)."""
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise ValueError(f"Invalid scaling configuration: got {len(v)} {what}, only "
                             "single-level scaling (TensorWise or RowWise) is supported")
        return v[0]
    return v


def _swizzle_ok(swizzle: Any) -> None:
    for s in swizzle if isinstance(swizzle, (list, tuple)) else [swizzle]:
        if s is not None and s != _SwizzleType.NO_SWIZZLE:
            raise ValueError("CPU does not support swizzle.")


def _bad_config(a: Tensor, b: Tensor, sa: Tensor, sb: Tensor, rows: str, cols: str) -> None:
    raise ValueError(
        "Invalid scaling configuration.\n- For TensorWise scaling, a and b should be float8, "
        "scales should be float and singletons.\n- For RowWise scaling, a and b should be "
        f"float8, scales should be float, scale_a should be ({rows}) and scale_b should be "
        f"({cols}), and both should be contiguous.\nGot mat_a.dtype()={scalar_type_name(a.dtype)}, "
        f"scale_a.dtype()={scalar_type_name(sa.dtype)}, scale_a.size()={list(sa.shape)}, "
        f"mat_b.dtype()={scalar_type_name(b.dtype)}, scale_b.dtype()={scalar_type_name(sb.dtype)}, "
        f"scale_b.size()={list(sb.shape)}")


def _recipes(a: Tensor, b: Tensor, sa: Tensor, ra: Any, sb: Tensor, rb: Any,
             row_shapes: tuple, rows: str, cols: str) -> str:
    """"tensor" or "row" after PyTorch's checks (float8 operands, float32 scales)."""
    ok = (np.dtype(a.dtype) in _FLOAT8 and np.dtype(b.dtype) in _FLOAT8
          and np.dtype(sa.dtype) == np.float32 and np.dtype(sb.dtype) == np.float32)
    if ok and ra == rb == _ScalingType.TensorWise and sa.numel() == 1 and sb.numel() == 1:
        return "tensor"
    if ok and ra == rb == _ScalingType.RowWise and (tuple(sa.shape), tuple(sb.shape)) == \
            row_shapes:
        return "row"
    _bad_config(a, b, sa, sb, rows, cols)
    raise AssertionError  # unreachable: _bad_config raises


def _finish(out: Tensor, bias: Tensor | None, output_dtype: Any, like: Tensor) -> Tensor:
    if bias is not None:
        if bias.dim() != 1 or bias.shape[0] != out.shape[-1]:
            raise ValueError(f"Bias must be size {out.shape[-1]} but got {bias.numel()}")
        out = out + bias.float()
    return out.to(like.dtype if output_dtype is None else output_dtype)


def scaled_mm(mat_a: Tensor, mat_b: Tensor, scale_a: Any, scale_recipe_a: Any, scale_b: Any,
              scale_recipe_b: Any, swizzle_a: Any = None, swizzle_b: Any = None,
              bias: Tensor | None = None, output_dtype: Any = jnp.bfloat16,
              contraction_dim: Sequence[int] = (), use_fast_accum: bool = False) -> Tensor:
    """``(mat_a * scale_a) @ (mat_b * scale_b) + bias`` for float8 operands, accumulated in
    float32 and cast to ``output_dtype`` (None: mat_a's dtype). TensorWise: one float32 scale
    each; RowWise: ``scale_a`` (M, 1) and ``scale_b`` (1, N).

    >>> import autograd_compile as acg, autograd_compile.nn.functional as F
    >>> a = acg.ones(2, 4).to(acg.float8_e4m3fn); b = acg.ones(4, 3).to(acg.float8_e4m3fn)
    >>> F.scaled_mm(a, b, acg.tensor(2.), F.ScalingType.TensorWise, acg.tensor(.5),
    ...             F.ScalingType.TensorWise, output_dtype=acg.float32).tolist()[0]
    [4.0, 4.0, 4.0]
    """
    sa, ra, sb, rb = (_one(v, w) for v, w in ((scale_a, "scales"), (scale_recipe_a, "recipes"),
                                               (scale_b, "scales"), (scale_recipe_b, "recipes")))
    _swizzle_ok(swizzle_a), _swizzle_ok(swizzle_b)
    if mat_a.dim() != 2 or mat_b.dim() != 2:
        raise ValueError(f"{'mat_a' if mat_a.dim() != 2 else 'mat_b'} must be a matrix")
    (m, k), (k2, n) = mat_a.shape, mat_b.shape
    if k != k2:
        raise ValueError(f"mat_a and mat_b shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    kind = _recipes(mat_a, mat_b, sa, ra, sb, rb, ((m, 1), (1, n)), f"{m}, 1", f"1, {n}")
    out = mat_a.float() @ mat_b.float()
    out = out * (sa.reshape(()) * sb.reshape(())) if kind == "tensor" else out * sa * sb
    return _finish(out, bias, output_dtype, mat_a)


def _grouped_row_scales(a: Tensor, b: Tensor, offs: Any) -> tuple[tuple, str, str]:
    """The RowWise scale shapes PyTorch expects for each grouped layout."""
    if a.dim() == 2 and b.dim() == 3:
        return ((a.shape[0],), (b.shape[0], b.shape[2])), f"{a.shape[0]}", \
            f"{b.shape[0]}, {b.shape[2]}"
    if a.dim() == 3 and b.dim() == 3:
        return ((a.shape[0], a.shape[1]), (b.shape[0], b.shape[2])), \
            f"{a.shape[0]}, {a.shape[1]}", f"{b.shape[0]}, {b.shape[2]}"
    if a.dim() == 3:
        return ((a.shape[0], a.shape[1]), (b.shape[1],)), f"{a.shape[0]}, {a.shape[1]}", \
            f"{b.shape[1]}"
    g = offs.shape[0] if offs is not None else 1
    return ((g * a.shape[0],), (g * b.shape[1],)), f"{g * a.shape[0]}", f"{g * b.shape[1]}"


def scaled_grouped_mm(mat_a: Tensor, mat_b: Tensor, scale_a: Any, scale_recipe_a: Any,
                      scale_b: Any, scale_recipe_b: Any, swizzle_a: Any = None,
                      swizzle_b: Any = None, bias: Tensor | None = None,
                      offs: Tensor | None = None, output_dtype: Any = jnp.bfloat16,
                      contraction_dim: Sequence[int] = (), use_fast_accum: bool = False
                      ) -> Tensor:
    """:func:`grouped_mm` of float8 operands with decoding scales. TensorWise: one scale each;
    RowWise, per layout (PyTorch's): 2d x 3d ``scale_a`` (M_total,), ``scale_b`` (G, N);
    3d x 3d (G, M) and (G, N); 3d x 2d (G, M) and (N_total,); 2d x 2d (G*M,) and (G*N,).

    >>> import autograd_compile as acg, autograd_compile.nn.functional as F
    >>> a = acg.ones(4, 8).to(acg.float8_e4m3fn); w = acg.ones(2, 8, 3).to(acg.float8_e4m3fn)
    >>> F.scaled_grouped_mm(a, w, acg.ones(4), F.ScalingType.RowWise, acg.ones(2, 3),
    ...     F.ScalingType.RowWise, offs=acg.tensor([1, 4], dtype=acg.int32)).shape
    (4, 3)
    """
    sa, ra, sb, rb = (_one(v, w) for v, w in ((scale_a, "scales"), (scale_recipe_a, "recipes"),
                                               (scale_b, "scales"), (scale_recipe_b, "recipes")))
    _swizzle_ok(swizzle_a), _swizzle_ok(swizzle_b)
    a, b = mat_a, mat_b
    if a.dim() in (2, 3) and b.dim() in (2, 3):
        shapes, rows, cols = _grouped_row_scales(a, b, offs)
    else:
        raise RuntimeError(f"{'mat_a' if a.dim() not in (2, 3) else 'mat_b'} has to be 2 or 3d")
    kind = _recipes(a, b, sa, ra, sb, rb, shapes, rows, cols)
    af, bf = a.float(), b.float()
    if kind == "tensor":
        out = grouped_mm(af, bf, offs=offs) * (sa.reshape(()) * sb.reshape(()))
        return _finish(out, bias, output_dtype, a)
    if a.dim() == 2 and b.dim() == 2:  # scales differ per group: apply to the (G, M, N) result
        g = offs.shape[0] if offs is not None else 1
        out = grouped_mm(af, bf, offs=offs) * sa.reshape(g, -1, 1) * sb.reshape(g, 1, -1)
        return _finish(out, bias, output_dtype, a)
    af = af * sa.unsqueeze(-1)  # one scale per row of a (any layout)
    bf = bf * (sb.unsqueeze(-2) if b.dim() == 3 else sb)  # one per column of b (per group)
    return _finish(grouped_mm(af, bf, offs=offs), bias, output_dtype, a)


# -- stft / istft: compositions (frames by unfold, fft, overlap-add by fold) ----------------------
__all__ += ["stft", "istft"]
_ISTFT_WARNED, _STFT_WARNED = [False], [False]


def _acg() -> Any:
    import autograd_compile
    return autograd_compile


def _stft_desc(op: str, x: Tensor, n_fft: int, hop: int, win: int, window: Any, **kw: Any
               ) -> str:
    """PyTorch's prefix of stft/istft errors: the call written out."""
    shape = f"[{', '.join(map(str, x.shape))}]"
    wtext = "None" if window is None else f"Tensor[{window.shape[0]}]"
    rest = "".join(f", {k}={v}" for k, v in kw.items())
    return (f"{op}(Tensor{shape}, n_fft={n_fft}, hop_length={hop}, win_length={win}, "
            f"window={wtext}{rest})")


def _padded_window(window: Tensor | None, n_fft: int, win: int, like: Tensor) -> Tensor:
    """The window centred in n_fft samples (a rectangle of win_length ones when None)."""
    acg = _acg()
    w = acg.ones(win, dtype=like.real.dtype if like.is_complex() else like.dtype) \
        if window is None else window
    left = (n_fft - win) // 2
    return F_pad(w, (left, n_fft - win - left)) if win < n_fft else w


def F_pad(x: Tensor, pad: tuple, mode: str = "constant") -> Tensor:  # noqa: N802
    return _acg().nn.functional.pad(x, pad, mode=mode)  # attribute, not import: no circle


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> Tensor:
    """Short-time Fourier transform (PyTorch's): frames of ``n_fft`` samples every
    ``hop_length`` (default n_fft // 4), times the window, Fourier-transformed; result
    ``(batch?, freq, frames)``, complex (``return_complex=True``) or as (..., 2) reals.

    >>> import autograd_compile as acg
    >>> acg.stft(acg.ones(64), 16, window=acg.ones(16), return_complex=True).shape
    (9, 17)
    """
    acg = _acg()
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if not return_complex:
        import warnings
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if window is None and not _STFT_WARNED[0]:  # PyTorch warns once per process
        import warnings
        _STFT_WARNED[0] = True
        warnings.warn("A window was not provided. A rectangular window will be applied,which is "
                      "known to cause spectral leakage. Other windows such as torch.hann_window "
                      "or torch.hamming_window are recommended to reduce spectral leakage.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    x = input
    if center:
        if x.dim() not in (1, 2):
            raise RuntimeError(f"{_stft_desc('stft', x, n_fft, hop, win, window)} : expected a "
                               "1D or 2D tensor")
        x = F_pad(x.reshape(1, 1, -1) if x.dim() == 1 else x.unsqueeze(1),
                  (n_fft // 2, n_fft // 2), pad_mode).reshape(
                      (-1,) if input.dim() == 1 else (input.shape[0], -1))
    desc = _stft_desc("stft", x, n_fft, hop, win, window)
    _stft_checks(desc, x, n_fft, hop, win, window)
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if align_to_window:  # frames start where the window starts, not where n_fft starts
        left = (n_fft - win) // 2
        n = 1 + (x.shape[-1] - win) // hop
        x = F_pad(x, (left, n_fft - win - left))[..., :(n - 1) * hop + n_fft]
    frames = x.unfold(-1, n_fft, hop) * _padded_window(window, n_fft, win, x)
    spec = acg.fft.rfft(frames, dim=-1) if onesided else acg.fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (n_fft ** -0.5)
    spec = spec.transpose(-1, -2)
    return spec if return_complex else acg.view_as_real(spec)


def _stft_checks(desc: str, x: Tensor, n_fft: int, hop: int, win: int, window: Any) -> None:
    if x.dim() not in (1, 2):
        raise RuntimeError(f"{desc} : expected a 1D or 2D tensor")
    length = x.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{desc} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{desc} : expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{desc} : expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(f"{desc} : expected a 1D window tensor of size equal to "
                           f"win_length={win}, but got window with size {list(window.shape)}")


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """Inverse of :func:`stft` (PyTorch's): inverse transform of each frame, times the window,
    overlap-added and divided by the overlap-added squared window.

    >>> import autograd_compile as acg
    >>> x = acg.arange(64.0)
    >>> w = acg.hann_window(16)
    >>> y = acg.istft(acg.stft(x, 16, window=w, return_complex=True), 16, window=w)
    >>> bool(acg.allclose(x, y, atol=1e-3))
    True
    """
    acg = _acg()
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if window is None and not _ISTFT_WARNED[0]:
        import warnings
        _ISTFT_WARNED[0] = True
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion "
                      "lossless.To generate a window, use e.g. torch.hann_window.",
                      UserWarning, stacklevel=2)
    onesided = input.shape[-2] != n_fft if onesided is None else onesided
    if onesided and (return_complex or (window is not None and window.is_complex())):
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    batched = input.dim() == 3
    spec = (input if batched else input.unsqueeze(0)).transpose(-1, -2)  # (B, frames, freq)
    if normalized:
        spec = spec * (n_fft ** 0.5)
    frames = acg.fft.irfft(spec, n=n_fft, dim=-1) if onesided else acg.fft.ifft(spec, dim=-1)
    if not return_complex and frames.is_complex():
        frames = frames.real
    w = _padded_window(window, n_fft, win, frames)
    n_frames = spec.shape[1]
    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * w, total, n_fft, hop)
    env = _overlap_add((w * w).expand(1, n_frames, n_fft), total, n_fft, hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else total - n_fft // 2 if center else total
    y, env = y[..., start:min(end, total)], env[..., start:min(end, total)]
    if _concrete(env) and float(env.abs().min()) < 1e-11:  # fake/traced: values unknown
        raise RuntimeError(f"{_stft_desc('istft', input, n_fft, hop, win, window)} window "
                           "overlap add min: 1")
    y = y / env
    if end > total:
        y = F_pad(y, (0, end - total))
    return y if batched else y.squeeze(0)


def _concrete(t: Tensor) -> bool:
    data = getattr(t, "_data", None)
    return type(t) is Tensor and isinstance(data, jax.Array) and \
        not isinstance(data, jax.core.Tracer)


def _overlap_add(frames: Tensor, total: int, n_fft: int, hop: int) -> Tensor:
    """Sum of (B, frames, n_fft) frames placed every ``hop`` samples: (B, total)."""
    F = _acg().nn.functional
    if frames.is_complex():
        return _acg().complex(_overlap_add(frames.real, total, n_fft, hop),
                              _overlap_add(frames.imag, total, n_fft, hop))
    out = F.fold(frames.transpose(-1, -2), output_size=(1, total), kernel_size=(1, n_fft),
                 stride=(1, hop))
    return out.reshape(frames.shape[0], total)


# -- the rest of the torch / Tensor long tail ------------------------------------------------------
__all__ += ["as_strided_", "view_as_real_copy", "view_as_complex_copy", "fork", "wait",
            "thread_safe_generator", "layout", "memory_format", "strided", "contiguous_format",
            "channels_last", "channels_last_3d", "preserve_format"]


def as_strided_(input: Tensor, size: Sequence[int], stride: Sequence[int],
                storage_offset: int | None = None) -> Tensor:
    """``input`` becomes ``as_strided(input, size, stride, storage_offset)`` in place (its value
    replaced: our tensors own their values, so a later as_strided_ reads the new value, not the
    original storage)."""
    if input.requires_grad:
        raise RuntimeError("as_strided_: changing the shape in place of a tensor that requires "
                           "grad is not supported here; use the out-of-place as_strided()")
    input._set_data(_acg().as_strided(input, size, stride, storage_offset)._data)
    return input


def view_as_real_copy(input: Tensor) -> Tensor:
    """``view_as_real`` (already a copy here: JAX arrays do not alias)."""
    return _acg().view_as_real(input)


def view_as_complex_copy(input: Tensor) -> Tensor:
    return _acg().view_as_complex(input)


class Future:
    """A finished ``torch.Future`` (what :func:`fork` returns: eager PyTorch runs the forked
    function at once, too)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def wait(self) -> Any:
        return self._value

    value = wait

    def done(self) -> bool:
        return True

    def then(self, callback: Any) -> "Future":
        return Future(callback(self))


def fork(func: Any, *args: Any, **kwargs: Any) -> Future:
    """``torch.fork`` outside TorchScript: runs ``func`` now; :func:`wait` returns its value.

    >>> import autograd_compile as acg
    >>> acg.wait(acg.fork(lambda a: a + 1, 2))
    3
    """
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    return future.wait()


def thread_safe_generator() -> Any:
    """The worker's thread-local generator in a thread DataLoader worker, else None (random ops
    then use the global generator), as PyTorch. Our workers are processes: None."""
    from autograd_compile.utils.data import get_worker_info
    info = get_worker_info()
    if info is not None and getattr(info, "worker_method", None) == "thread":
        return getattr(getattr(info, "rng", None), "torch_generator", None)
    return None


class _Named:
    """A named singleton (``torch.strided``, ``torch.contiguous_format``): prints as PyTorch."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"torch.{self._name}"

    def __reduce__(self) -> Any:
        return (getattr, (_acg(), self._name))


class layout(_Named):  # noqa: N801  (PyTorch's name)
    """``torch.layout``: only ``strided`` exists here (sparse layouts are left out)."""


class memory_format(_Named):  # noqa: N801
    """``torch.memory_format``: accepted by ``to``/``contiguous``/``empty_like``; a JAX array
    has no strides, so every format reads the same values."""


strided = layout("strided")
contiguous_format, channels_last = memory_format("contiguous_format"), \
    memory_format("channels_last")
channels_last_3d, preserve_format = memory_format("channels_last_3d"), \
    memory_format("preserve_format")


def install_tail_c_methods(cls: type) -> None:
    """Tensor methods of this file: stft, istft, as_strided_, layout."""
    for name in ("stft", "istft", "as_strided_"):
        if not hasattr(cls, name):
            setattr(cls, name, globals()[name])
    if not hasattr(cls, "layout"):
        cls.layout = property(lambda self: strided)


# -- the aten flat-weight recurrent entries (torch.lstm, gru, rnn_tanh, rnn_relu) ----------------
__all__ += ["lstm", "gru", "rnn_tanh", "rnn_relu"]


def _flat_rnn(mode: str, input: Tensor, hx: Tensor, cx: Tensor | None, params: Sequence[Tensor],
              has_biases: bool, num_layers: int, dropout: float, train: bool,
              bidirectional: bool, batch_first: bool) -> tuple:
    """What ``nn.LSTM``/``GRU``/``RNN`` call: every layer and direction as one ``rnn_layer``
    op, weights read from ``params`` in PyTorch's order (w_ih, w_hh[, b_ih, b_hh][, w_hr])."""
    from .rnn import rnn_layer
    acg = _acg()
    dirs = 2 if bidirectional else 1
    per = len(params) // (num_layers * dirs)
    if per * num_layers * dirs != len(params) or per != 2 + 2 * has_biases + (
            per == 3 + 2 * has_biases):
        raise RuntimeError(f"{mode.lower()}: expected {num_layers * dirs} groups of weights, "
                           f"got {len(params)} tensors")
    x = input.transpose(0, 1) if batch_first else input
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = list(params[k * per:(k + 1) * per])
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if per == 3 + 2 * has_biases else None
            out, hn, cn, _, _ = rnn_layer(x, hx[k], None if cx is None else cx[k], w[0], w[1],
                                          b_ih, b_hh, w_hr, None, mode, d == 1)
            outs.append(out)
            hs.append(hn)
            cs.append(cn)
        x = outs[0] if dirs == 1 else acg.cat(outs, 2)
        if dropout and train and layer < num_layers - 1:
            x = acg.nn.functional.dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    return out, acg.stack(hs, 0), (acg.stack(cs, 0) if cx is not None else None)


def lstm(input: Tensor, hx: Sequence[Tensor], params: Sequence[Tensor], has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool
         ) -> tuple:
    """``torch.lstm``: (output, h_n, c_n) of a multi-layer LSTM over flat weights."""
    out, h, c = _flat_rnn("LSTM", input, hx[0], hx[1], params, has_biases, num_layers, dropout,
                          train, bidirectional, batch_first)
    return out, h, c


def _single(mode: str) -> Any:
    def run(input: Tensor, hx: Tensor, params: Sequence[Tensor], has_biases: bool,
            num_layers: int, dropout: float, train: bool, bidirectional: bool,
            batch_first: bool) -> tuple:
        out, h, _ = _flat_rnn(mode, input, hx, None, params, has_biases, num_layers, dropout,
                              train, bidirectional, batch_first)
        return out, h
    run.__name__ = run.__qualname__ = mode.lower()
    run.__doc__ = f"``torch.{mode.lower()}``: (output, h_n) over flat weights."
    return run


gru, rnn_tanh, rnn_relu = _single("GRU"), _single("RNN_TANH"), _single("RNN_RELU")
