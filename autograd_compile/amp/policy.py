"""Autocast's op tables: which ops run in the lower precision, which in float32, per device.

The lists follow PyTorch's "Autocast Op Reference" (and ``aten/src/ATen/autocast_mode.*``),
by op name without the overload (``pow`` covers ``pow.Tensor_Scalar`` and the others; the
in-place ``pow_`` is a different name, so in-place ops are never autocast, as in PyTorch).
Names of ops this project does not define yet are kept: an op defined later under that
name is autocast without a change here. Where our op is one fused op but PyTorch's is a
composite of listed ops, the fused op takes the policy its composite ends up with
(``cross_entropy``: log_softmax + nll_loss run in float32; on CPU ``einsum`` and our
``convolution`` reach bmm / _convolution, which run in bfloat16; on CUDA ``rms_norm``'s
pow / rsqrt run in float32).

Policies:

- ``lower``: floating inputs are cast to the autocast dtype (float16 / bfloat16).
- ``fp32``: floating inputs are cast to float32.
- ``fp32_set_opt_dtype``: float32 unless the call passes an explicit ``dtype=``.
- ``promote``: inputs are cast to the widest floating type among them.
- ``banned``: raises (binary_cross_entropy under CUDA autocast, as PyTorch).

Only tensors that are floating, not float64, and on the autocast's device are cast.

Our ops reach these names three ways: an op of the same name (``mm``, ``linear``); one of our
fused ops that covers several of PyTorch's (``conv_transpose`` is conv_transpose1d/2d/3d,
``pad`` is reflection_pad2d and the others): :data:`FUSED` names the PyTorch op from the
call's arguments; or a Python-level function that PyTorch runs as one aten op (``addmm``,
``prelu``, ``kl_div``: a composition of other ops here), decorated with
:func:`.autocast_mode.autocast_op` under PyTorch's name: it takes that name's policy, and its
body runs with autocast off, as PyTorch's kernel does, so the ops it is built of are not cast
again (``dot`` on CPU stays float32 although it is a matmul here).

>>> from autograd_compile.amp.policy import policy_of
>>> policy_of("cuda", "softmax.int"), policy_of("cpu", "softmax.int"), policy_of("cpu", "mm")
('fp32_set_opt_dtype', None, 'lower')
"""
from __future__ import annotations

from typing import Any, Callable

LOWER, FP32, FP32_SET_OPT_DTYPE, PROMOTE, BANNED = (
    "lower", "fp32", "fp32_set_opt_dtype", "promote", "banned")

# -- CUDA (also what PyTorch uses for XPU, MPS and other GPU-like backends) -----------------
# (scaled_dot_product_attention_nograd, in both lower lists, is our no-gradient twin of it)
_CUDA_LOWER = """
    _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d conv_transpose2d
    conv_transpose3d convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
    linear addbmm baddbmm bmm chain_matmul linalg_multi_dot lstm_cell gru_cell rnn_tanh_cell
    rnn_relu_cell scaled_dot_product_attention cudnn_convolution cudnn_convolution_transpose
    scaled_dot_product_attention_nograd
"""
_CUDA_FP32 = """
    acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow
    softplus layer_norm native_layer_norm group_norm frobenius_norm nuclear_norm
    cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
    hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss
    margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
    upsample_nearest1d upsample_nearest2d upsample_nearest3d upsample_linear1d
    upsample_bilinear2d upsample_trilinear3d upsample_bicubic2d norm
    cross_entropy rms_norm
"""
_CUDA_FP32_SET_OPT_DTYPE = """
    prod softmax log_softmax cumprod cumsum linalg_vector_norm linalg_matrix_norm sum
"""
_CUDA_PROMOTE = """
    addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot
    scatter_add
"""
_CUDA_BANNED = "binary_cross_entropy"

# -- CPU ---------------------------------------------------------------------------------
_CPU_LOWER = """
    conv1d conv2d conv3d bmm mm linalg_vecdot baddbmm addmm _addmm_activation addbmm linear
    _convolution convolution matmul conv_tbc mkldnn_rnn_layer conv_transpose1d
    conv_transpose2d conv_transpose3d prelu scaled_dot_product_attention
    _native_multi_head_attention einsum scaled_dot_product_attention_nograd
"""
_CPU_FP32 = """
    avg_pool3d binary_cross_entropy grid_sampler polar prod quantile nanquantile stft cdist
    grid_sampler_2d grid_sampler_3d trace view_as_complex cholesky cholesky_inverse
    cholesky_solve inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d
    max_unpool3d adaptive_avg_pool3d reflection_pad1d reflection_pad2d replication_pad1d
    replication_pad2d replication_pad3d mse_loss cosine_embedding_loss nll_loss nll_loss2d
    hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy_loss cross_entropy
    l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss ctc_loss kl_div multilabel_margin_loss
    binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn
    fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft
    linalg_cond linalg_matrix_rank linalg_solve linalg_cholesky linalg_svdvals
    linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv
    linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd
    triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
    multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig
    linalg_eigh linalg_lstsq linalg_inv_ex
"""
# (layer_norm / rms_norm are not listed: as PyTorch's CPU kernels, ours take a bfloat16 input
# with float32 weights, compute in float32 and give the input's dtype)
_CPU_PROMOTE = "stack cat index_copy"


def _table(**lists: str) -> dict[str, str]:
    """``{op name: policy}`` from whitespace-separated name lists keyed by policy."""
    table: dict[str, str] = {}
    for policy, names in lists.items():
        for name in names.split():
            assert name not in table, f"{name} is listed twice"
            table[name] = policy
    return table


TABLES: dict[str, dict[str, str]] = {
    "cuda": _table(lower=_CUDA_LOWER, fp32=_CUDA_FP32,
                   fp32_set_opt_dtype=_CUDA_FP32_SET_OPT_DTYPE, promote=_CUDA_PROMOTE,
                   banned=_CUDA_BANNED),
    "cpu": _table(lower=_CPU_LOWER, fp32=_CPU_FP32, promote=_CPU_PROMOTE),
}

DEFAULT_DTYPES = {"cpu": "bfloat16", "cuda": "float16"}  # PyTorch's per-device defaults

BANNED_MESSAGES = {
    "binary_cross_entropy": (
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to "
        "autocast.\nMany models use a sigmoid layer right before the binary cross entropy "
        "layer.\nIn this case, combine the two layers using "
        "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss. "
        " binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast."),
}


# -- our fused ops: PyTorch's op name from the arguments (in schema order) --------------------
def _by_rank(prefix: str, at: int) -> Callable[[list], str]:
    """``{prefix}{n}d``, n the length of the per-dim list argument ``at``."""
    return lambda args: f"{prefix}{len(args[at])}d"


def _pad(args: list) -> str | None:
    """pad(self, pad, mode, value): reflect / replicate have an op per rank; constant and
    circular are compositions in PyTorch (not autocast)."""
    kind = {"reflect": "reflection_pad", "replicate": "replication_pad"}.get(args[2])
    return f"{kind}{len(args[1]) // 2}d" if kind else None


def _hermitian_fft(name: str) -> Callable[[list], str]:
    """fft_hfftn / fft_ihfftn(self, s, dim, norm): hfft / ihfft when one dim is transformed."""
    def resolve(args: list) -> str:
        x, s, dim = args[0], args[1], args[2]
        n = len(dim) if dim is not None else len(s) if s is not None else x.ndim
        return name if n == 1 else name + "n"
    return resolve


FUSED: dict[str, Callable[[list], str | None]] = {
    "conv_transpose": _by_rank("conv_transpose", 3),  # (input, weight, bias, stride, ...)
    "max_pool_nd_with_indices": _by_rank("max_pool", 1),  # (self, kernel_size, ...)
    "avg_pool_nd": _by_rank("avg_pool", 1),
    "adaptive_avg_pool_nd": _by_rank("adaptive_avg_pool", 1),  # (self, output_size)
    "adaptive_max_pool_nd": _by_rank("adaptive_max_pool", 1),
    "fractional_max_pool_nd": _by_rank("fractional_max_pool", 1),
    "pad": _pad,
    "upsample_nd": lambda args: f"upsample_{args[2]}{len(args[1])}d",  # (self, size, mode)
    "fft_hfftn": _hermitian_fft("fft_hfft"),
    "fft_ihfftn": _hermitian_fft("fft_ihfft"),
}


def policy_of(device_type: str, op_name: str, args: Any = None) -> str | None:
    """The policy of an op (its name, overload allowed) under ``device_type``'s autocast; a
    fused op's (:data:`FUSED`) needs its arguments in schema order.

    >>> policy_of("cpu", "conv_transpose", [None, None, None, [1, 1]])
    'lower'
    """
    base = op_name.partition(".")[0]
    if base in FUSED:
        base = FUSED[base](args) if args is not None else None
    return TABLES[device_type].get(base) if base is not None else None
