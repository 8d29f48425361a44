"""Tracing: running code on shapes instead of data, and recording what it did.

Three layers, each built on the one before, all of them dispatch modes (DESIGN §5):

1. **Fake tensors** (:mod:`.fake`): a :class:`~.fake.FakeTensor` has a shape and a dtype
   but no data; under :class:`~.fake.FakeTensorMode` every op runs its *shape rule*
   (registered next to its kernel in ``kernels/``) instead of its kernel.
2. **Symbolic sizes** (:mod:`.symbolic_shapes`): a size may be a ``SymInt`` (a sympy
   symbol with a hint) owned by a ``ShapeEnv``; every branch a trace takes on one is
   recorded as a guard, so one trace serves every size its guards admit. Python numbers
   that should be graph inputs rather than constants are :mod:`.lifted` scalars.
3. **Proxy tracing** (:mod:`.proxy_tensor`): a proxy mode above the fake mode records
   every op, and every size computation, as a node of an fx ``Graph``;
   :func:`~.proxy_tensor.make_fx` turns a function into a ``GraphModule``.

>>> import autograd_compile as acg
>>> from autograd_compile.tracing import make_fx
>>> gm = make_fx(lambda x: (x * 2).sum())(acg.ones(3))
>>> [n.op for n in gm.graph.nodes]
['placeholder', 'call_function', 'call_function', 'output']

Compiled autograd (``autograd_compile.compiled_autograd``) and ``acg.compile``
(``autograd_compile.aot``) are the two users. PyTorch's import paths work too:
``autograd_compile.fx.experimental.proxy_tensor``,
``autograd_compile.fx.experimental.symbolic_shapes`` and
``autograd_compile._subclasses.fake_tensor``.
"""
from __future__ import annotations

from . import fake, lifted, proxy_tensor, symbolic_shapes
from .fake import FakeTensor, FakeTensorMode
from .proxy_tensor import make_fx
from .symbolic_shapes import ShapeEnv, SymBool, SymFloat, SymInt

__all__ = ["fake", "lifted", "proxy_tensor", "symbolic_shapes", "FakeTensor", "FakeTensorMode",
           "make_fx", "ShapeEnv", "SymInt", "SymFloat", "SymBool"]
