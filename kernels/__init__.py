"""The operator library: every op defined once (schema, JAX kernel, shape rule, backward).

Importing registers the ops, module by module (each block: schema, kernel, shape rule,
backward formula): factories, elementwise, indexing, reductions, shape, linalg, nn, random
(sampling ops and the Generator), sorting (sort, topk, einsum, isclose), index_reduce
(index_add/copy/fill, scatter_reduce), rearrange (roll, repeat_interleave, diff, ...), search (searchsorted, bucketize,
bincount).
:mod:`._defop` holds the registration helpers, :mod:`._jit` runs each kernel as one jitted
program, :mod:`.api` and :mod:`._methods` are the Python surface (``acg.*`` and Tensor
methods), :mod:`.views` makes in-place ops on views write through to their base.
"""
from . import factories, elementwise, indexing, reductions, shape, linalg, nn  # noqa: F401
from . import attention, conv, losses, random, sorting  # noqa: F401
from . import index_reduce, rearrange, search  # noqa: F401

__all__ = ["factories", "elementwise", "indexing", "reductions", "shape", "linalg", "nn",
           "attention", "conv", "losses", "random", "sorting",
           "index_reduce", "rearrange", "search"]
# -- recurrent layers (rnn): the time loop as one scan op -----------------------------------------
from . import rnn  # noqa: F401,E402
__all__ += ["rnn"]
# -- vision (conv transpose, N-d pools, interpolation, fold/unfold) --
from . import vision  # noqa: F401,E402
__all__ += ["vision"]
from . import linalg_more  # noqa: E402,F401  (funclin: linalg, complex ops through _bridge)
from . import fft_special  # noqa: E402,F401  (funclin: fft, special through _bridge)
# distributions (wt/dist): special functions, Cholesky/triangular solve and samplers, dist_* names
from . import special_dist  # noqa: F401,E402

# -- area actloss: CTC loss (one lax.scan forward, its vjp backward) ---------------------------
from . import ctc  # noqa: E402,F401
__all__ += ["ctc"]
