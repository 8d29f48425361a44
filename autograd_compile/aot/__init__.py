"""``acg.compile``: a compiled forward whose backward is derived ahead of time.

Compiled autograd (``acg.compiled_autograd``) makes each *backward* one XLA
program; this package does the same for the *forward*, the analog of
``torch.compile`` with AOT autograd. A tour of what happens to

>>> import autograd_compile as acg
>>> model = acg.nn.Linear(4, 3)
>>> cmodel = acg.compile(model)
>>> loss = cmodel(acg.ones(16, 4)).tanh().sum()
>>> loss.backward()
>>> model.weight.grad.shape, acg.aot.counters["traces"] >= 1
(acg.Size([3, 4]), True)

1. **Guards** (:mod:`.guards`, :mod:`.api`). Each call computes a signature
   (grad mode, every submodule's ``training``, argument structure and constants,
   each tensor's dtype / requires_grad / rank, each parameter's identity, dtype
   and shape) and checks the argument sizes against the trace's symbolic-size
   guards. A hit runs the cached programs; a miss traces again (``ACG_LOGS=aot``
   says why); at most ``api.CACHE_SIZE_LIMIT`` (8) traces are kept per function.

2. **The joint trace** (:mod:`.trace`). The function runs once on fake tensors
   whose argument sizes are SymInts (duck-sized: equal sizes share a symbol; 0
   and 1 specialised), under proxy tracing and with grad mode as at the call, so
   our autograd records nodes on the fakes. Parameters, buffers, any other tensor
   the function reads, and a PRNG key per random draw become graph inputs (a mode
   swaps each real tensor for its fake as ops receive it). Then our own engine
   runs ``autograd.grad`` over those nodes from tangent placeholders, still
   tracing: the backward formulas' ops land in the same graph. In-place writes
   to inputs (BatchNorm's running statistics) are functionalised: their final
   values become outputs and are written back after each call.

3. **Partition** (:mod:`.partition`). Nodes that read a tangent form the
   backward graph; the rest the forward graph. The backward's inputs are saved
   primals (held from the call), saved intermediates (extra forward outputs) and
   the tangents; sizes are recomputed from shapes so it stays symbolic; cheap
   elementwise ops whose inputs are saved anyway are recomputed, not saved.

4. **Run** (:mod:`.program`). The forward graph is one ``jax.jit`` program (each
   op lowered to its eager JAX kernel through the JAX backend's lowering; XLA
   compiles once per concrete shape). Differentiable outputs get one node,
   :class:`CompiledFunctionBackward`, whose backward runs the backward graph as
   one program. Under ``compiled_autograd.enable`` the capture runs that node on
   fakes, and the node then calls the backward graph's code op by op, so its ops
   are inlined into the captured backward: one backward, one program, with
   hooks outside the region (tensor hooks on outputs, post-accumulate hooks on
   parameters) keeping their eager semantics.

5. **A training step** (:mod:`.wholestep`). A function that reaches an optimizer or
   calls ``backward`` is traced differently: it runs once under ``jax.jit`` with the real
   parameters, grads and optimizer state holding tracers, so forward, backward, clipping
   and the update are one program whose state is donated and written back per call.
   A Python hook that is not ``pure_hook`` splits the step at the backward
   (:mod:`.split`): forwards compiled per module, the backward under compiled autograd
   with the hook in place, the optimizer as eager.

What cannot be traced faithfully (``.item()``, ``.numpy()``, Python branches
on tensor values, hooks registered inside, ``.data`` assignments) makes that
call run eagerly, logged once with the reason; ``fullgraph=True`` raises
:class:`Unsupported` instead. Differentiating a region's backward again
(``create_graph=True`` then another backward) raises, as in PyTorch.
"""
from __future__ import annotations

from .api import CompiledFunction, OptimizedModule, Unsupported, compile, reset
from .program import CompiledFunctionBackward, counters

__all__ = ["compile", "reset", "counters", "Unsupported", "OptimizedModule", "CompiledFunction",
           "CompiledFunctionBackward"]
