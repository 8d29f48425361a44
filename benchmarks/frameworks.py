"""The handful of functions a workload's model needs, once per framework.

Each workload writes its model once, against an :class:`Ops` table; the same
function then builds the autograd_compile graph, the plain-JAX loss that the
floor differentiates, and the PyTorch graph. Python operators (``@ * +``)
work unchanged on all three tensor types, so only the named functions differ.

>>> import numpy as np
>>> x = np.ones((2, 3), np.float32)
>>> float(JAX_OPS.mean(JAX_OPS.tanh(x)))  # doctest: +ELLIPSIS
0.76...
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile import demo

CLIP_NORM = 1.0  # the demo's max row norm for logits gradients
LN_EPS = 1e-5


@dataclass(frozen=True)
class Ops:
    """A framework's spelling of every function the workloads call."""

    name: str
    linear: Callable[[Any, Any, Any], Any]      # x @ w.T + b, w is [out, in]
    tanh: Callable[[Any], Any]
    sigmoid: Callable[[Any], Any]
    gelu: Callable[[Any], Any]                  # tanh approximation
    layer_norm: Callable[[Any, Any, Any], Any]  # over the last dim, eps 1e-5
    softmax: Callable[[Any], Any]               # over the last dim
    swap_last: Callable[[Any], Any]             # transpose the last two dims
    mean: Callable[[Any], Any]                  # mean of every element
    cross_entropy: Callable[[Any, Any], Any]    # logits [N, C], int labels [N]
    clip_rows_grad: Callable[[Any], Any]        # identity forward; backward clips row norms


# -- autograd_compile ---------------------------------------------------------------------

def _acg_clip(pure: bool) -> Callable[[acg.Tensor], acg.Tensor]:
    """Register the demo's clipping hook on a tensor (traced inline when ``pure``)."""
    def install(t: acg.Tensor) -> acg.Tensor:
        hook = demo.clip_rows(CLIP_NORM)
        t.register_hook(acg.compiled_autograd.pure_hook(hook) if pure else hook)
        return t
    return install


ACG_OPS = Ops(
    name="acg",
    linear=F.linear,
    tanh=lambda x: x.tanh(),
    sigmoid=lambda x: x.sigmoid(),
    gelu=partial(F.gelu, approximate="tanh"),
    layer_norm=lambda x, w, b: F.layer_norm(x, x.shape[-1], w, b, LN_EPS),
    softmax=lambda x: F.softmax(x, -1),
    swap_last=lambda x: x.transpose(-2, -1),
    mean=lambda x: x.mean(),
    cross_entropy=F.cross_entropy,
    clip_rows_grad=_acg_clip(pure=False),
)

#: The same, with hooks marked ``pure_hook`` so compiled autograd traces them into XLA.
ACG_PURE_OPS = dataclasses.replace(ACG_OPS, name="acg-pure", clip_rows_grad=_acg_clip(pure=True))


# -- JAX ----------------------------------------------------------------------------------

@jax.custom_vjp
def _jax_clip_rows(x: jax.Array) -> jax.Array:
    return x


def _jax_clip_fwd(x: jax.Array) -> tuple[jax.Array, None]:
    return x, None


def _jax_clip_bwd(_: None, g: jax.Array) -> tuple[jax.Array]:
    norms = jnp.sqrt(jnp.sum(g * g, axis=1, keepdims=True))
    return (g * (CLIP_NORM / jnp.maximum(norms, CLIP_NORM)),)


_jax_clip_rows.defvjp(_jax_clip_fwd, _jax_clip_bwd)


def _jax_layer_norm(x: jax.Array, w: jax.Array, b: jax.Array) -> jax.Array:
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + LN_EPS) * w + b


def _jax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))


JAX_OPS = Ops(
    name="jax",
    linear=lambda x, w, b: x @ w.T + b,
    tanh=jnp.tanh,
    sigmoid=jax.nn.sigmoid,
    gelu=partial(jax.nn.gelu, approximate=True),
    layer_norm=_jax_layer_norm,
    softmax=partial(jax.nn.softmax, axis=-1),
    swap_last=lambda x: jnp.swapaxes(x, -1, -2),
    mean=jnp.mean,
    cross_entropy=_jax_cross_entropy,
    clip_rows_grad=_jax_clip_rows,
)


# -- PyTorch (optional) ---------------------------------------------------------------------

def torch_ops() -> Ops:
    """The PyTorch table; imports torch, so call it only when torch is wanted."""
    import torch
    import torch.nn.functional as TF

    def clip(t: "torch.Tensor") -> "torch.Tensor":
        def hook(g: "torch.Tensor") -> "torch.Tensor":
            norms = (g * g).sum(dim=1, keepdim=True).sqrt()
            return g * (CLIP_NORM / torch.clamp(norms, min=CLIP_NORM))
        t.register_hook(hook)
        return t

    return Ops(
        name="torch",
        linear=TF.linear,
        tanh=torch.tanh,
        sigmoid=torch.sigmoid,
        gelu=partial(TF.gelu, approximate="tanh"),
        layer_norm=lambda x, w, b: TF.layer_norm(x, (x.shape[-1],), w, b, LN_EPS),
        softmax=partial(torch.softmax, dim=-1),
        swap_last=lambda x: x.transpose(-2, -1),
        mean=torch.mean,
        cross_entropy=TF.cross_entropy,
        clip_rows_grad=clip,
    )


def inv_sqrt(n: int) -> float:
    """``1/sqrt(n)``: the attention scale (a Python float, lifted by compiled autograd)."""
    return 1.0 / math.sqrt(n)
