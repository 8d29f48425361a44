"""Symbolic sizes: ``SymInt``/``SymBool`` over sympy, guarded by a ``ShapeEnv``.

A compiled graph traced with concrete sizes must be retraced when sizes change,
unless the sizes were *symbolic* while tracing.  This module supplies the
symbolic integers (modelled on PyTorch's ``SymInt``/``ShapeEnv``, written from
scratch) and records every decision a trace takes on them as a *guard*.

Tutorial
--------
1. A ``ShapeEnv`` owns the symbols.  ``create_symint(hint, source)`` makes a
   positive integer symbol ``s0, s1, ...`` whose *hint* is the concrete size
   seen while tracing.  Sizes 0 and 1 are specialised: they stay Python ints.

>>> env = ShapeEnv()
>>> n = env.create_symint(6, source="sizes[0]")
>>> n, env.create_symint(1)
(s0, 1)

2. Arithmetic builds sympy expressions; every result carries its hint, and
   results that are constant fold back to plain Python ints.

>>> m = n * 2 + 1
>>> m, hint_int(m), n - n, type(n - n).__name__
(2*s0 + 1, 13, 0, 'int')

3. Branching on a symbolic value decides via the hint and records a guard;
   facts true for every size (``n >= 1``) record nothing.

>>> if m > 10:
...     branch = "big"
>>> bool(n >= 2), env.format_guards()
(True, ['2*s0 + 1 > 10'])

4. ``check_guards`` answers "can the graph traced for 6 be reused for this
   size?"; ``failing_guard`` says why not.

>>> env.check_guards([7]), env.check_guards([4])
(True, False)
>>> env.failing_guard([4])
'2*s0 + 1 > 10 is false for s0=4 (sizes[0])'

5. ``int(n)`` (or ``operator.index``) specialises: it guards ``s0 == 6``.

>>> int(n), env.format_guards()[-1]
(6, 's0 == 6')

Design notes
------------
* ``SymInt``/``SymFloat``/``SymBool`` hold one field, ``node`` (a ``SymNode``
  with ``expr``, ``shape_env`` and ``hint``).  Hashing is by identity, so they
  can be dict and weak-dict keys; ``==`` builds a ``SymBool`` instead.
* Every operator goes through ``_dispatch``: with a ``SymDispatchMode`` active,
  the mode's ``__sym_dispatch__(func, types, args, kwargs)`` runs instead (with
  the mode popped, so ``func(*args)`` computes the real result).
* ``SymProxyTracker``/``set_proxy``/``get_proxy`` map symbols to a tracer's
  proxies through weak references only.
* ``statically_known`` stays cheap (it runs on every branch a trace takes): a
  relation between polynomials is decided by the coefficient signs of
  ``lhs - rhs`` with each size written ``lower + t`` (``t >= 0``); floor, Mod,
  Max... are never simplified (``sympy.simplify`` took up to a second per fact
  and nearly always gave up), so such a branch is guarded instead, which is
  always sound. Proofs are shared by every ``ShapeEnv`` (keyed by the condition
  and its symbols' lower bounds).

Where each part lives: :mod:`.shape_env` (symbols and guards), :mod:`.sym_types` (the
symbolic scalars and their arithmetic), :mod:`.sym_mode` (the SymDispatchMode and the weak
symbol -> proxy maps), :mod:`.prover` (cheap proofs of facts about sizes). This module is
their one public face, at the place PyTorch keeps it
(``torch.fx.experimental.symbolic_shapes``, also importable from
``autograd_compile.fx.experimental.symbolic_shapes``).
"""
from __future__ import annotations

from .shape_env import Guard, ShapeEnv
from .sym_mode import (SymDispatchMode, SymProxyTracker, _mode_popped, _WeakIdKeyDict,
                       current_sym_dispatch_mode, get_proxy, has_proxy, set_proxy)
from .sym_types import (SymBool, SymFloat, SymInt, SymNode, guard_int, hint_int, is_symbolic,
                        sym_int, sym_max, sym_min, sym_not)

__all__ = [
    "Guard", "ShapeEnv", "SymNode", "SymInt", "SymFloat", "SymBool",
    "SymDispatchMode", "current_sym_dispatch_mode", "SymProxyTracker",
    "set_proxy", "get_proxy", "has_proxy", "sym_max", "sym_min", "sym_not",
    "sym_int", "guard_int", "hint_int", "is_symbolic",
]
