"""Compiled autograd: capture a whole backward pass, hooks included, into one graph.

>>> import autograd_compile as acg
>>> x = acg.ones(4, requires_grad=True)
>>> with acg.compiled_autograd.enable("jax"):
...     (x * x).sum().backward()
>>> x.grad.tolist(), acg.compiled_autograd.counters["captures"] >= 1
([2.0, 2.0, 2.0, 2.0], True)

Every backward under :func:`enable` goes like this:

1. **Collect** (every call): one walk over the autograd graph builds the cache
   key (node types, structure, dtypes, hook counts, specialised constants) and
   gathers what is lifted: saved tensors, sizes, float scalars, hooks, leaves.
2. **Look up**: a cache hit whose guards hold (sizes that were equal are still
   equal, SymInt guards, specialised scalars) is reused.
3. **Capture** (on a miss): an :class:`AutogradCompilerInstance` replays the
   same walk the eager engine does, running each node's own ``apply`` on fake
   tensors with symbolic sizes under proxy tracing; hooks become ``call_hook``
   nodes against the ``hooks`` input (hooks marked :func:`pure_hook` are traced
   inline). ``compiler_fn(graph_module)`` gives the callable that is cached.
4. **Run**: ``compiled(inputs, sizes, scalars, hooks, leaves)`` computes the
   gradients, calls hooks at their eager positions and writes ``.grad``.

The modules, in the order a backward meets them:

- :mod:`.api`: :class:`enable`/:class:`disable`, :data:`counters`, :func:`pure_hook`, and
  the registry of named compilers the backends fill (this package never imports them).
- :mod:`.collect`: what is read from each node type (one visitor per type): the key
  material, and the lifted runtime inputs.
- :mod:`.fastpath`: the cache-hit fast path for backwards without hooks (one walk, an
  exact key, one program call).
- :mod:`.cache`: the cache and the two runners the engine calls (:func:`.cache.run_fast`,
  :func:`.cache.run_compiled`).
- :mod:`.capture`: :class:`AutogradCompilerInstance`, the replay on fakes that records
  the graph.
- :mod:`.runtime`: the functions a captured graph calls at run time (hooks, ``.grad``
  writes), with eager semantics.

Lifted scalars (numbers that are graph inputs) and symbolic sizes belong to tracing
(:mod:`autograd_compile.tracing`), which fake tensors and ``acg.compile`` share.
"""
from __future__ import annotations

from .api import (counters, current_compiler, disable, enable, lookup_backend, pure_hook,
                  register_backend)
from .cache import reset
from .capture import AutogradCompilerInstance

CACHE_SIZE_LIMIT = 256  # distinct graphs kept (like torch._dynamo's cache_size_limit)
RECOMPILE_LIMIT = 8     # guard-failure recaptures kept per graph structure

__all__ = ["enable", "disable", "reset", "counters", "pure_hook", "AutogradCompilerInstance",
           "current_compiler", "CACHE_SIZE_LIMIT", "RECOMPILE_LIMIT", "register_backend",
           "lookup_backend"]
