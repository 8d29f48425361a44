"""Op-table cases for the tails area (kernels/api_tail_c.py): grouped_mm in its four layouts;
test_ops.py runs them through every check (forward vs jnp, backward vs jax.vjp and numerical
gradients in float64, double backward, fake and symbolic shapes).

References slice each group out and multiply it on its own (no masks, no ragged_dot), so a
wrong group boundary shows.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

import autograd_compile as acg
import autograd_compile.nn.functional as F
from _op_spec import Case, T

OFFS = np.array([2, 2, 5], np.int32)  # an empty middle group, and rows past offs[-1]
KOFFS = np.array([3, 6, 8], np.int32)


def _starts(offs):
    return [0] + [int(o) for o in offs[:-1]]


def _ref_2d3d(a, b, offs):
    out = jnp.zeros((a.shape[0], b.shape[2]), a.dtype)
    for g, (s, e) in enumerate(zip(_starts(offs), offs)):
        out = out.at[s:e].set(a[s:e] @ b[g])
    return out


def _ref_3d2d(a, b, offs):
    out = jnp.zeros((a.shape[1], b.shape[1]), a.dtype)
    for g, (s, e) in enumerate(zip(_starts(offs), offs)):
        out = out.at[:, s:e].set(a[g] @ b[:, s:e])
    return out


def _ref_2d2d(a, b, offs):
    return jnp.stack([a[:, s:e] @ b[s:e] for s, e in zip(_starts(offs), offs)])


def _gmm(a, b, offs=None):
    return F.grouped_mm(a, b, offs=None if offs is None else acg.tensor(offs))


TAILS_CASES = [
    Case("grouped_mm_2d_3d", _gmm, _ref_2d3d, (T(6, 4), T(3, 4, 5), OFFS), double=True),
    Case("grouped_mm_3d_3d", _gmm, lambda a, b: a @ b, (T(3, 2, 4), T(3, 4, 5))),
    Case("grouped_mm_3d_2d", _gmm, _ref_3d2d, (T(3, 2, 4), T(4, 6), OFFS), double=True),
    Case("grouped_mm_2d_2d", _gmm, _ref_2d2d, (T(2, 8), T(8, 3), KOFFS), double=True),
]


# -- stft / istft: a direct DFT of each frame as the reference ------------------------------------
def _stft_ref(x, n_fft, hop, w):
    pad = n_fft // 2
    xp = jnp.concatenate([x[..., 1:pad + 1][..., ::-1], x, x[..., -pad - 1:-1][..., ::-1]], -1)
    n_frames = 1 + (xp.shape[-1] - n_fft) // hop
    frames = jnp.stack([xp[..., t * hop:t * hop + n_fft] for t in range(n_frames)], -2) * w
    k = jnp.arange(n_fft // 2 + 1)[:, None] * jnp.arange(n_fft)[None, :]
    dft = jnp.exp(-2j * jnp.pi * k / n_fft)
    spec = jnp.einsum("...tn,fn->...ft", frames, dft)
    return jnp.stack([spec.real, spec.imag], -1)


HANN8 = np.hanning(8)


def _round_trip(x):
    w = acg.tensor(HANN8).to(x.dtype)
    spec = acg.stft(x, 8, hop_length=2, window=w, return_complex=True)
    return acg.istft(spec, 8, hop_length=2, window=w)
TAILS_CASES += [
    Case("stft_hann", lambda x: acg.view_as_real(acg.stft(
        x, 8, hop_length=3, window=acg.tensor(HANN8).to(x.dtype), return_complex=True)),
        lambda x: _stft_ref(x, 8, 3, HANN8), (T(2, 20),), double=True),
    Case("istft_of_stft", lambda x: _round_trip(x) * x, lambda x: x * x, (T(20),)),
]
