"""``nn.init``: fill a tensor in place from a distribution (no autograd recorded).

>>> import autograd_compile as acg
>>> w = acg.empty(64, 32) if hasattr(acg, "empty") else acg.zeros(64, 32)
>>> _ = acg.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
>>> bool(w.abs().max().item() <= 1 / 32 ** 0.5)
True

Every initialiser returns the tensor it filled and accepts ``generator=`` (a
``Generator`` to draw from instead of the global one).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from ..autograd.grad_mode import no_grad
from ..kernels import api as A
from ..kernels.api_select import argsort as _argsort
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye",
           "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
           "orthogonal", "sparse"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale for a nonlinearity (``tanh``: 5/3, ``relu``: sqrt(2), ...).

    >>> round(calculate_gain("leaky_relu", 0.2), 4)
    1.3868
    """
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _draw(factory: Any, tensor: Tensor, generator: Any) -> Tensor:
    """Samples shaped and typed like ``tensor`` (from ``generator`` when given)."""
    kwargs = {"generator": generator} if generator is not None else {}
    return factory(*tensor.shape, dtype=tensor.dtype, **kwargs)


def _fill(tensor: Tensor, values: Tensor) -> Tensor:
    with no_grad():
        tensor.copy_(values)
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    return _fill(tensor, _draw(A.rand, tensor, generator) * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None
            ) -> Tensor:
    """Fill with samples from N(mean, std^2)."""
    return _fill(tensor, _draw(A.randn, tensor, generator) * std + mean)


def _normal_mass(lo: float, hi: float) -> float:
    """P(lo <= Z <= hi) for a standard normal Z."""
    return 0.5 * (math.erf(hi / math.sqrt(2)) - math.erf(lo / math.sqrt(2)))


def _trunc_standard(tensor: Tensor, lo: float, hi: float, generator: Any) -> Tensor:
    """Exact samples of Z | lo <= Z <= hi by rejection: normal proposals when the
    interval holds enough mass, else uniform proposals on [lo, hi] accepted with
    probability exp((m^2 - z^2) / 2), m the point of [lo, hi] nearest 0."""
    use_normal = _normal_mass(lo, hi) >= 0.25
    peak = min(max(0.0, lo), hi)
    out = done = None
    for _ in range(1000):
        if use_normal:
            z = _draw(A.randn, tensor, generator)
            ok = (z >= lo) & (z <= hi)
        else:
            z = _draw(A.rand, tensor, generator) * (hi - lo) + lo
            ok = _draw(A.rand, tensor, generator) <= ((peak * peak - z * z) * 0.5).exp()
        if out is None:
            out, done = z, ok
        else:  # keep accepted samples, fill the rest from this round
            out, done = A.where(done, out, z), done | ok
        if bool(done.all()):
            return out
    raise RuntimeError(f"trunc_normal_: could not sample within [{lo}, {hi}]")


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std^2) samples conditioned on [a, b] (bounds in value units)."""
    if tensor.numel() == 0:
        return tensor
    z = _trunc_standard(tensor, (a - mean) / std, (b - mean) / std, generator)
    return _fill(tensor, (z * std + mean).clamp(a, b))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    return _fill(tensor, A.full(list(tensor.shape), val, dtype=tensor.dtype))


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, A.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """U(-bound, bound), bound = gain * sqrt(3 / fan) (He et al., 2015)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else uniform_(tensor, -math.sqrt(3.0) * std,
                                               math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """N(0, std^2), std = gain / sqrt(fan)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix, uniform over the orthogonal group (QR of a
    Gaussian matrix with the signs of R's diagonal folded into Q; Saxe et al., 2013); dims
    after the first are flattened.

    >>> import autograd_compile as acg
    >>> w = acg.nn.init.orthogonal_(acg.empty(3, 5))
    >>> bool(((w @ w.T) - acg.eye(3)).abs().max() < 1e-5)
    True
    """
    import jax.numpy as jnp
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = A.randn(rows, cols, dtype=tensor.dtype, **_gen(generator))._data
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))  # the Haar measure (Mezzadri, 2007)
    if rows < cols:
        q = q.T
    return _fill(tensor, Tensor(q.reshape(tensor.shape) * gain))


def _gen(generator: Any) -> dict:
    return {"generator": generator} if generator is not None else {}


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None
            ) -> Tensor:
    """Fill a 2-D tensor with N(0, std^2) samples, then zero ``ceil(sparsity * rows)``
    randomly chosen entries of each column (Martens, 2010)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    values = _draw(A.randn, tensor, generator) * std
    # each column zeroes the first num_zeros rows of its own uniform random permutation
    # (PyTorch draws a randperm per column; argsort of iid uniforms has the same law)
    ranks = _argsort(_argsort(A.rand(rows, cols, **_gen(generator)), dim=0), dim=0)
    keep = (ranks >= num_zeros).to(tensor.dtype)
    return _fill(tensor, values * keep)


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta (the identity map of each
    group's first ``min(out/groups, in)`` channels)."""
    import numpy as np
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for c in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + c, c) + centre] = 1
    return _fill(tensor, A.tensor(values, dtype=tensor.dtype))


def _make_deprecate(meth: Any) -> Any:
    """PyTorch's old names without the trailing underscore: same function, FutureWarning."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use ``{new_name}``."
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
