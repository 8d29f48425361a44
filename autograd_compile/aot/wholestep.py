"""The whole training step as one XLA program (DESIGN §11).

``acg.compile(train_step)`` on a function that runs the forward, ``loss.backward()``,
``opt.step()`` and ``opt.zero_grad()`` (with ``clip_grad_norm_`` and a scheduler's
``step()`` where present) traces all of it into one ``jax.jit`` program:

1. **State.** Every parameter and buffer of the modules the function reaches
   (closure and globals), every parameter of the optimizers it reaches, their
   ``.grad`` (when not None) and each optimizer's per-parameter state tensors are
   program inputs; their values after the step are program outputs, written back
   after each call (and donated: XLA reuses their buffers, memory does not double).
   Which ``.grad`` are None and which state entries exist is guarded, so the first
   step (optimizer state created lazily) is one trace and every later step another:
   two traces in all, one program per step, never one per step.
2. **Trace.** The function runs once with those tensors' ``_data`` swapped for JAX
   tracers: our eager ops, our autograd engine (``loss.backward()``: every backward
   formula's ops land in the same program) and the optimizer's update rule all run
   on tracers. Python hyperparameters (``group["lr"]``, betas, ...) are traced
   scalar inputs read at every call, so a scheduler never bakes a stale lr.
3. **Python state outside tensors.** A scheduler's ``step()`` only changes Python
   floats; the trace records where it was called (before or after ``opt.step()``)
   and every call replays it eagerly at that place, around the program.
   Random draws take fresh keys per call (one input key, folded per draw).
   A tensor the function reads through its closure, globals or arguments is an
   input; one it reaches through a container of those (a metric in a dict, a mask in
   a list, an attribute of a helper object) is found by its path (:mod:`.paths`) and
   is an input too, resolved again at every call, and an output written back if the
   step writes it in place (``box["correct"] += ...``). Any other tensor it reads
   (made inside the step, or out of reach) is a constant guarded by identity.
4. **Donation.** An array that something besides its tensor holds (a ``clone()``,
   ``detach()`` or ``state_dict()`` copy shares it) is copied before the call, so
   the donation never deletes what the user kept.

Hooks marked ``compiled_autograd.pure_hook`` are traced into the program. Any other Python
hook on a parameter (``register_hook``, ``register_post_accumulate_grad_hook``) or on a
module the step reaches (forward, forward pre-, full backward and backward pre-hooks)
**splits the step at the backward** (:mod:`.split`), logged once with the hook's name
(``fullgraph=True`` raises): the step's Python runs, each module's forward through its own
``acg.compile`` program (a module with an impure hook below it runs its forward eagerly, its
hook-free children compiled), ``loss.backward()`` under ``compiled_autograd.enable("jax")``
(every hook a host call at its eager place, as often and in eager's order), the optimizer as
eager (its update is one program). The decision is known before any trace (no step trace is
spent on it) and kept per guard set; which hooks are registered is guarded, so removing the
hook makes the step one program again.

``return loss.item()`` (numbers returned alone or in tuples, lists and dicts) stays one
program: inside the trace ``.item()`` gives a placeholder (:mod:`.deferred`) that becomes a
program output, read back as eager's Python number after the call; any other use of it
(a branch, arithmetic, keeping it in a list) is data-dependent Python.

What cannot be one program otherwise makes the whole call run eagerly, logged once with the
reason and the source line (``fullgraph=True`` raises): ``.item()`` or a branch on a
tensor value, a scheduler stepped between two optimizer steps, a Python hook together with
DistributedDataParallel. A tensor the step stores on a module (llama2.c's
``self.last_loss = loss``) is a program output, stored there after each call.

>>> import autograd_compile as acg
>>> model = acg.nn.Linear(3, 1)
>>> opt = acg.optim.SGD(model.parameters(), lr=0.1)
>>> @acg.compile(fullgraph=True)
... def train_step(x, y):
...     loss = ((model(x) - y) ** 2).mean()
...     loss.backward()
...     opt.step()
...     opt.zero_grad()
...     return loss
>>> losses = [float(train_step(acg.ones(4, 3), acg.zeros(4, 1))) for _ in range(3)]
>>> losses[2] < losses[0], model.weight.grad is None
(True, True)
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import operator
import sys
import threading
import traceback
import types
import warnings
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np

from ..amp.grad_scaler import GradScaler
from ..dispatch.keys import TLS
from ..kernels._xp import _ARRAY
from ..modes import DispatchMode
from ..nn.modules import Module
from ..nn.parameter import Parameter
from ..optim.optimizer import Optimizer, _as_floats
from ..optim._lr_base import LRScheduler
from ..runtime_checks import collecting, raise_failed
from ..tensor import Tensor, _make
from ..tracing.fake import MetaTensor
from .deferred import DeferredItem
from .paths import Path, paths_to, resolve
from .program import counters
from .split import Routers, hook_dicts, hook_token, impure_hook, run_split
from .trace import NotTraceable, _describe, python_random_kept, user_line
from .tree import flatten, flatten_call, floats_free, unflatten
from .values import ValuePlaces, code_names, user_code, value_places

_TRACING = threading.local()


def wants_whole_step(fn: Callable, referenced: Callable[[Callable], list[Any]]) -> bool:
    """A function that reaches an optimizer, or calls ``backward``, itself or through the
    plain Python functions it calls by name (``def step(x): return train(x)``), is a step;
    ``referenced(fn)`` lists what a function reads from its closure and globals."""
    values, codes = reached(fn, referenced)
    if any(isinstance(v, (Optimizer, LRScheduler)) for v in values):
        return True
    return any("backward" in code_names(c) for c in codes)


def reached(fn: Callable, referenced: Callable[[Callable], list[Any]], depth: int = 3,
            walked: list[tuple[Callable, list[Any]]] | None = None
            ) -> tuple[list[Any], list[Any]]:
    """(the values ``fn`` reads: closure, globals, defaults; and those of the user's own
    functions it reads, ``depth`` levels deep), and the code objects walked. ``walked``
    gets each function walked and what it read (see :func:`reached_again`)."""
    values: list[Any] = []
    codes: list[Any] = []
    seen: set[int] = set()

    def walk(f: Callable, depth: int) -> None:
        seen.add(id(f))
        codes.append(getattr(f, "__code__", None))
        mine = _reads(f, referenced)
        if walked is not None:
            walked.append((f, mine))
        values.extend(mine)
        for v in mine:
            if depth > 1 and isinstance(v, types.FunctionType) and id(v) not in seen and \
                    user_code(v):
                walk(v, depth - 1)
    walk(fn, depth)
    return values, codes


def _reads(f: Callable, referenced: Callable[[Callable], list[Any]]) -> list[Any]:
    return referenced(f) + list(getattr(f, "__defaults__", None) or ()) + \
        list((getattr(f, "__kwdefaults__", None) or {}).values())


def reached_again(walked: list[tuple[Callable, list[Any]]],
                  referenced: Callable[[Callable], list[Any]]) -> bool:
    """Every function :func:`reached` walked still reads the very same objects (so the
    walk, which only looks at those, would find what it found)."""
    return all(_same(_reads(f, referenced), was) for f, was in walked)


class _Entry:
    """One trace of the step: its guards, its program and how to write results back."""

    __slots__ = ("sig", "program", "consts", "meta", "after", "checks")

    def __init__(self, sig: tuple, program: Any, consts: list, meta: dict) -> None:
        self.sig, self.program, self.consts, self.meta = sig, program, consts, meta
        self.after: tuple | None = None  # held_metas after a call: fixed by the program
        self.checks: Callable | None = None  # the value checks' own program (bounds)


class _View:
    """What one call reads: the tensors, grads, optimizer state and hyperparameters."""

    def __init__(self, modules: list[Module], module_tensors: list[Tensor], opts: list,
                 lifted: list[Tensor]) -> None:
        self.opts, self.modules = opts, modules
        self.hook_dicts = hook_dicts(modules)
        self.places = ValuePlaces()  # set by WholeStep._view: where plain values are read
        # DistributedDataParallel wrappers among them (found once: the step's hot path)
        self.ddps = [m for m in modules if hasattr(m, "spmd") and hasattr(m, "_to_mesh")]
        # (a module on the "meta" device holds shapes only, torch.func's ensembling base:
        # no state of the program, functional_call gives it its tensors)
        tensors = [t for t in module_tensors if not isinstance(t, MetaTensor)]
        seen = {id(t) for t in tensors}
        for o in opts:
            for g in o.param_groups:
                for p in g["params"]:
                    if id(p) not in seen:
                        seen.add(id(p))
                        tensors.append(p)
        self.tensors = tensors
        # tensors read from the closure, globals or defaults: inputs, never donated
        self.lifted = [t for t in lifted if id(t) not in seen]
        # optimizer state: (opt index, parameter, key, tensor)
        self.state = [(i, p, k, v) for i, o in enumerate(opts) for g in o.param_groups
                      for p in g["params"] for k, v in o.state.get(p, {}).items()]
        for _, p, k, v in self.state:
            if not isinstance(v, Tensor):
                raise NotTraceable(f"optimizer state {k!r} is a {type(v).__name__}, not a tensor")
        self.hypers = [[{n: _as_floats(g[n]) for n in type(o)._hyper} for g in o.param_groups]
                       for o in opts]

    def again(self) -> "_View":
        """The same objects, hyperparameters re-read (a scheduler or the user changed them)."""
        v = object.__new__(_View)
        v.opts, v.modules, v.tensors, v.lifted, v.state, v.ddps, v.hook_dicts, v.places = \
            self.opts, self.modules, self.tensors, self.lifted, self.state, self.ddps, \
            self.hook_dicts, self.places
        if "fixed" in self.__dict__:
            v.fixed = self.fixed
        if "arrays" in self.__dict__:  # held()'s arrays move on (a second holder would copy)
            v.arrays = self.__dict__.pop("arrays")
        v.hypers = [[{n: _as_floats(g[n]) for n in type(o)._hyper} for g in o.param_groups]
                    for o in self.opts]
        return v

    def signature(self, leaves: list[Tensor], spec: tuple, last: _Written | None) -> tuple:
        fixed = self.__dict__.get("fixed")
        if fixed is None:  # what holds while the objects do (kept by again())
            fixed = self.fixed = (tuple([id(t) for t in self.tensors]),
                                  tuple([(i, id(p), k) for i, p, k, _ in self.state]))
        # read every call: freezing a parameter or flipping nesterov between steps retraces
        flags = (tuple([t._requires_grad for t in self.tensors]),
                 tuple([o._static(g) for o in self.opts for g in o.param_groups]))
        return (TLS.grad_enabled, tuple([m.training for m in self.modules]), spec,
                tuple([(_meta(t._data), t._requires_grad) for t in leaves]),
                self.held(last), tuple([(_meta(t._data), t._requires_grad) for t in self.lifted]),
                fixed, flags,
                tuple([len(v) if isinstance(v, tuple) else -1 for hs in self.hypers
                       for h in hs for v in h.values()]),
                hook_token(self.tensors, self.hook_dicts),
                # Python values the trace baked in: modules' attributes, globals, closure
                (tuple([m._acg_plain for m in self.modules]), self.places.read()))

    def held(self, last: _Written | None) -> tuple:
        """The shapes and dtypes of the state the program reads and writes (parameters and
        buffers, their ``.grad``, optimizer state), for the guard. Those ``last`` recorded
        when every array is still the one the previous call wrote (the usual step: nothing
        touched them in between); read off each array otherwise. Keeps the arrays for
        :meth:`inputs`."""
        arrays = self.arrays = self._state_arrays()
        datas, _, gstores, _, sstores = arrays
        if last is not None and last.tensors is self.tensors and _same(datas, last.datas) \
                and _same([t._grad for t in self.tensors], last.grad_owners) \
                and _same(gstores, last.grads) and _same(sstores, last.states):
            return last.metas
        return held_metas(self)

    def _state_arrays(self) -> tuple:
        """(the parameters' and buffers' arrays, the ``.grad`` tensors, their arrays, the
        optimizer state tensors, their arrays): what the program reads and donates."""
        grads = [t._grad for t in self.tensors if t._grad is not None]
        states = [v for *_, v in self.state]
        return (_arrays(self.tensors), grads, _arrays(grads), states, _arrays(states))

    def inputs(self, leaves: list[Tensor], key: Any) -> tuple:
        arrays = self.__dict__.pop("arrays", None) or self._state_arrays()
        datas, grads, gstores, states, sstores = arrays
        return ([t._data for t in leaves], _owned(self.tensors, datas), _owned(grads, gstores),
                _owned(states, sstores), _scalars(self.hypers), key,
                [t._data for t in self.lifted])


def _arrays(tensors: list[Tensor]) -> list[Any]:
    """Their ``_data``, without the property call where the store is a jax array already
    (a step's state always is, after the first call)."""
    return [s if type(s := t._store) is _ARRAY else t._data for t in tensors]


def _same(now: list, was: list) -> bool:
    return len(now) == len(was) and all(map(operator.is_, now, was))


def held_metas(view: _View) -> tuple:
    """(shape, dtype) of every parameter and buffer, ``.grad`` (None where it is) and
    optimizer state tensor of ``view``."""
    return (tuple([_meta(t._data) for t in view.tensors]),
            tuple([None if t._grad is None else _meta(t._grad._data) for t in view.tensors]),
            tuple([_meta(v._data) for *_, v in view.state]))


class _Written:
    """What a call wrote back (the arrays, the ``.grad`` tensors and their metas): the next
    call's guard compares identities instead of reading every shape again."""

    __slots__ = ("tensors", "datas", "grad_owners", "grads", "states", "metas")

    def __init__(self, tensors: list[Tensor], datas: list, grads: list, states: list,
                 metas: tuple) -> None:
        self.tensors, self.datas, self.grads, self.states = tensors, datas, grads, states
        self.grad_owners = [t._grad for t in tensors]
        self.metas = metas


class WholeStep:
    """``acg.compile`` of a training step: traces keyed by guards, each one program."""

    def __init__(self, owner: Any, referenced: Callable[[Callable], list], limit: int,
                 unsupported: type[Exception], module_state: Callable) -> None:
        self.owner = owner  # the CompiledFunction (its fn, modules, fullgraph, logging)
        self.referenced, self.limit, self.unsupported = referenced, limit, unsupported
        self.entries: list[_Entry] = []
        self.failed: list[tuple[tuple, str]] = []  # guards whose trace failed, and why
        self.split: list[tuple[tuple, str]] = []  # guards under which the step runs split
        self.sizes_seen: set[tuple] = set()  # guards that differed only in sizes, run once
        self.routers = Routers(lambda m, name: _compiled_forward(owner, m, name))
        self.modules = module_state(lambda: [])
        self._last: tuple | None = None  # (found objects, view, module tensors, state token)
        self._written: _Written | None = None  # what the last call wrote back
        # tensors the step reads through containers (box["correct"]): where they are, each
        # an input at every call (paths.py); those reached by no path are constants
        self.lift_paths: list[tuple[tuple[int, Path], Any]] = []  # (where, its root)
        # what the step function reads (closure, globals, its helpers'), re-walked on change
        self._reached: tuple[list[tuple[Callable, list]], list] = ([], [])

    def __call__(self, args: tuple, kwargs: dict) -> Any:
        owner, limit = self.owner, self.limit
        leaves, spec = flatten_call(args, kwargs, keyed=False)
        if any(not isinstance(t, Tensor) for t in leaves):
            leaves = [t for t in leaves if isinstance(t, Tensor)]
        try:
            view = self._view(args, kwargs)
            placed = _placed_on_mesh(view, leaves)
            if placed is not leaves:  # DDP's batch split, as its forward would do it
                leaves = placed
                args, kwargs = unflatten(spec, iter(leaves))
            sig = view.signature(leaves, spec, self._written)
            self._written = None  # its arrays must not count as a second holder (_owned)
        except NotTraceable as e:
            return self._eager(str(e), args, kwargs)
        for entry in self.entries:
            if entry.sig == sig and all(t._data is d for t, d in entry.consts):
                counters["cache_hits"] += 1
                return self._run(entry, view, leaves, args, kwargs)
        for failed, why in self.failed:  # traced before and failed: eager, not traced again
            if failed == sig:
                return self._eager(why, args, kwargs)
        for split, why in self.split:  # a Python hook: split at the backward, never traced
            if split == sig:
                return self._split(why, view, args, kwargs)
        why = None if view.ddps else impure_hook(view.tensors, view.modules)
        if why is not None:  # known before tracing: no trace is spent on it
            return self._remember_split(sig, why, view, args, kwargs)
        if self._new_sizes(sig):
            counters["eager_sizes"] += 1
            return owner._fn(*args, **kwargs)
        if self.entries:
            counters["retraces"] += 1
        if len(self.entries) >= limit:
            return self._eager(f"hit the cache size limit ({limit} traces)",
                               args, kwargs)
        counters["traces"] += 1
        entry = _Entry(sig, None, [], {})
        entry.program = jax.jit(_body(owner._fn, spec, view, entry, self._reached[1]),
                                donate_argnums=(1, 2, 3))
        try:
            out = self._run(entry, view, leaves, args, kwargs, first=True)
        except _Lift as e:  # tensors it reached through containers: inputs, by path
            if len(self.lift_paths) + len(e.paths) > _LIFT_LIMIT:
                self.failed.append((sig, str(e)))
                return self._eager(str(e), args, kwargs)
            self.lift_paths += [(w, self._reached[1][w[0]]) for w in e.paths]
        except _Hooked as e:  # a hook registered while the step ran
            if not view.ddps:
                return self._remember_split(sig, str(e), view, args, kwargs)
            self.failed.append((sig, str(e)))
            return self._eager(str(e), args, kwargs)
        except NotTraceable as e:
            if len(self.failed) < limit:
                self.failed.append((sig, str(e)))
            return self._eager(str(e), args, kwargs)
        else:
            return out
        # traced again with them, outside the handler (its traceback holds the arrays)
        return self(args, kwargs)

    def _new_sizes(self, sig: tuple) -> bool:
        """Whether this call runs eagerly because only its inputs' sizes or its float
        arguments' values are new: XLA compiles one program per shape (seconds), and a float
        argument is a constant of the program, so a size or value seen once (the padded
        length of one batch, the last smaller batch, a mixup ``lam`` drawn each step) runs as
        eager would, and gets its program when it repeats; a step whose sizes and floats
        never change compiles at its first call as before."""
        if not self.entries or self.owner.fullgraph:
            return False
        loose = _sizes_free(sig)
        if all(_sizes_free(e.sig) != loose for e in self.entries):
            return False  # something besides the sizes changed: trace
        if sig in self.sizes_seen:
            return False  # the second time: compile it
        if len(self.sizes_seen) >= _SIZES_REMEMBERED:
            self.sizes_seen.clear()
        self.sizes_seen.add(sig)
        return True

    def _remember_split(self, sig: tuple, why: str, view: _View, args: tuple,
                        kwargs: dict) -> Any:
        if len(self.split) < self.limit:
            self.split.append((sig, why))
        return self._split(why, view, args, kwargs)

    def _split(self, why: str, view: _View, args: tuple, kwargs: dict) -> Any:
        """The step split at the backward (:mod:`.split`): forwards compiled per module,
        the backward under compiled autograd with every hook in place, the optimizer as
        eager. ``fullgraph=True`` raises instead."""
        owner = self.owner
        if owner.fullgraph:
            raise self.unsupported(f"acg.compile(fullgraph=True): {owner.__qualname__} cannot be "
                                   f"traced into one step program: {why}")
        owner._warn_once(why, f"acg.compile: splitting {owner.__qualname__} at the backward "
                         f"(forward compiled per module, backward under compiled autograd, "
                         f"optimizer eager): {why}")
        counters["split_runs"] += 1
        return run_split(owner._fn, args, kwargs, self.routers.get(view.modules))

    def reset(self) -> None:
        """Forget every trace and every fallback decision."""
        self.entries.clear()
        self.failed.clear()
        self.split.clear()
        self._written = None
        self.lift_paths.clear()
        self.routers.clear()

    def _view(self, args: tuple, kwargs: dict) -> _View:
        """The modules, optimizers and tensors the step reaches: its closure, the globals it
        names, its defaults and its (non-tensor) arguments."""
        walked, reads = self._reached
        if not walked or not reached_again(walked, self.referenced):
            walked.clear()
            reads = reached(self.owner._fn, self.referenced, walked=walked)[0]
            self._reached = (walked, reads)
            # a path holds while its root is the object it started from (else: re-found)
            self.lift_paths = [(w, root) for w, root in self.lift_paths
                               if w[0] < len(reads) and reads[w[0]] is root]
        found = reads + _objects(args) + _objects(tuple(kwargs.values()))
        for where, _ in self.lift_paths:
            t = resolve(reads, where)
            if isinstance(t, Tensor):
                found.append(t)
        ms = self.modules
        last = self._last
        if last is not None and len(found) == len(last[0]) and \
                all(map(operator.is_, found, last[0])):
            module_tensors = ms.tensors()
            view = last[1]
            if all(map(operator.is_, module_tensors, last[2])) and last[3] == _state_token(view.opts):
                return view.again()  # the same objects: re-read only hyperparameters
        mods, opts, lifted = [], [], []
        for v in found:
            if isinstance(v, Module):
                mods.append(v)
            elif isinstance(v, Optimizer) and all(v is not o for o in opts):
                opts.append(v)
            elif isinstance(v, Tensor) and all(v is not t for t in lifted):
                lifted.append(v)
        ms.roots = lambda: list(mods)  # tensors() extends the list it gets
        module_tensors = ms.tensors()
        view = _View(ms.modules, module_tensors, opts, lifted)
        view.places = value_places(self.owner._fn, ms.modules)
        self._last = (found, view, module_tensors, _state_token(opts))
        return view

    def _eager(self, why: str, args: tuple, kwargs: dict) -> Any:
        owner = self.owner
        if owner.fullgraph:
            raise self.unsupported(f"acg.compile(fullgraph=True): {owner.__qualname__} cannot be "
                              f"traced into one step program: {why}")
        owner._warn_once(why, f"acg.compile: running {owner.__qualname__} eagerly: {why}")
        counters["eager_runs"] += 1
        return owner._fn(*args, **kwargs)

    def _run(self, entry: _Entry, view: _View, leaves: list, args: tuple, kwargs: dict,
             first: bool = False) -> Any:
        if first:  # the trace (lowering runs the body) says where schedulers step
            try:
                with warnings.catch_warnings(), python_random_kept():
                    # a step that leaves some state unchanged (an accumulation-only call)
                    # cannot reuse those buffers: jax says so, harmlessly, at every trace
                    warnings.filterwarnings("ignore", "Some donated buffers were not usable")
                    traced = entry.program.trace(*view.inputs(leaves, _key(0)))
                    lowered = traced.lower()
            except NotTraceable:
                raise
            except Exception as e:  # noqa: BLE001 - reported with the reason, then eager
                raise NotTraceable(_describe(e)) from e
            entry.program = (entry.program, lowered.compile())
            if entry.meta["checked"]:
                entry.checks = _check_program(traced.jaxpr, entry.meta["flags"])
            counters["compiles"] += 1
            self.entries.insert(0, entry)  # kept before it runs: a failed check keeps it
        meta = entry.meta
        for s in meta["before"]:  # a scheduler stepped before opt.step(): the step reads it
            LRScheduler.step(s)
        if meta["before"]:
            view = view.again()
        jitted, compiled = entry.program
        inputs = view.inputs(leaves, _key(meta["keys"]))
        if entry.checks is not None:  # before the step runs: nothing donated or written
            raise_failed(entry.checks(*jax.tree_util.tree_leaves(inputs)))
        outs = (compiled if first else jitted)(*inputs)
        res, datas, grads, states, lifted, stored, _ = outs
        for t, a, changed in zip(view.lifted, lifted, meta["lifted"]):
            if changed:
                t._data = a
                t._version += 1
        tensors = view.tensors
        for t, a in zip(tensors, datas):  # _store: the program's outputs are jax arrays
            t._store = a
        for t in itertools.compress(tensors, meta["mutated"]):
            t._version += 1
        for (m, k, where), a in zip(meta["stored"], stored):  # what it stored on a module
            _store_back(m, k, where, a)
        git = iter(grads)
        for t, has in zip(tensors, meta["grads"]):
            if not has:
                t._grad = None
            elif t._grad is not None:
                t._grad._store = next(git)
            else:
                t._grad = _make(next(git))
        sit = iter(states)
        for i, p, k in meta["state"]:
            st = view.opts[i].state[p]
            if k in st:
                st[k]._store = next(sit)
            else:
                st[k] = _make(next(sit))
        if entry.after is None:
            entry.after = held_metas(view)
        self._written = _Written(tensors, datas, grads, states, entry.after)
        for s in meta["after"]:
            LRScheduler.step(s)
        return unflatten(meta["out_spec"], iter([_make(a).item() if i else _make(a)
                                                  for a, i in zip(res, meta["items"])]))


def _check_program(closed: Any, tree: Any) -> Callable:
    """The step's value checks as a program of their own: the step's trace, keeping only
    the flags (XLA drops what they do not read, mostly all but the index inputs), run
    before the step so a failed check raises eager's error with every tensor untouched
    (the step donates its state: after it, there is nothing to go back to)."""
    def flags(*flat: Any) -> Any:
        outs = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *flat)
        return tree.unflatten(outs[len(outs) - tree.num_leaves:])  # the step's last output
    return jax.jit(flags)


_NO_KEY: list = []
_SCALARS: dict = {}
_LAST_SCALARS: list = [None, None]  # (hyperparameters, their scalars) of the last call


def _scalars(hypers: list) -> list:
    """The hyperparameters as device scalars (weakly typed, as the optimizer makes them),
    re-made only when a value changes: jit would convert each float at every call."""
    if hypers == _LAST_SCALARS[0]:  # the usual call: nothing changed since the last one
        return _LAST_SCALARS[1]
    raw = repr(hypers)  # the key tells 1 from 1.0 and True, which make other dtypes
    hit = _SCALARS.get(raw)
    if hit is None:
        if len(_SCALARS) > 64:
            _SCALARS.clear()
        hit = _SCALARS[raw] = jax.tree_util.tree_map(jnp.asarray, hypers)
    _LAST_SCALARS[:] = [hypers, hit]
    return hit


def _owned(tensors: list[Tensor], arrays: list[Any]) -> list[Any]:
    """The arrays of ``tensors``, to be donated: one that something else also holds (a
    ``clone()`` or ``detach()`` shares its immutable array, as does ``state_dict()``) is
    first replaced in its tensor by a copy, so the donation cannot delete what the other
    holder still reads (it keeps the value from before the step, as a clone should).
    ``arrays``: their ``_data``, replaced in place where copied."""
    for i in range(len(arrays)):
        # held by the tensor, this list and getrefcount's argument
        if sys.getrefcount(arrays[i]) > 3:
            counters["donation_copies"] += 1
            arrays[i] = tensors[i]._store = jnp.array(arrays[i], copy=True)
    return arrays


def _key(n: int) -> Any:
    if not n:  # the program draws nothing: any key (one array, made once)
        if not _NO_KEY:
            _NO_KEY.append(jnp.zeros((2,), jnp.uint32))
        return _NO_KEY[0]
    from ..kernels.random import default_generator
    return default_generator.next_key()._data


class _ConstGuard(DispatchMode):
    """While tracing: tensors ops read that are not inputs become guarded constants;
    tensors ops make are the step's own (a label it fills, a mask it builds), which it
    may write in place: they are made again at every call."""

    def __init__(self, consts: list, known: set[int]) -> None:
        self.consts, self.known = consts, known

    def __acg_dispatch__(self, func: Any, types: tuple, args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        for a in _tensors(args) + _tensors(tuple(kwargs.values())):
            d = a._data
            if not isinstance(d, jax.core.Tracer) and id(a) not in self.known:
                self.known.add(id(a))
                self.consts.append((a, d))
        out = func(*args, **kwargs)
        for t in _tensors(out if isinstance(out, (tuple, list)) else (out,)):
            self.known.add(id(t))
        return out


_SIZES_REMEMBERED = 4096  # guards seen once at new sizes (forgotten all at once past it)


def _sizes_free(sig: tuple) -> tuple:
    """A step's guard without the sizes of its inputs (arguments and lifted tensors) and the
    values of its float arguments and module attributes: the dtypes, ranks and requires_grad
    stay."""
    def loose(metas: tuple) -> tuple:
        return tuple([((len(shape), dtype), rg) for (shape, dtype), rg in metas])
    return sig[:2] + (floats_free(sig[2]), loose(sig[3]), sig[4], loose(sig[5])) + sig[6:-1]


def _meta(a: Any) -> tuple:
    aval = a.aval  # one attribute; jax's .shape and .dtype properties each read it
    return (aval.shape, aval.dtype)


def _state_token(opts: list) -> tuple:
    """Changes when an optimizer's state gains (or loses) a parameter or an entry, or an entry
    is replaced by another tensor."""
    return tuple([(id(p), tuple([id(v) for v in st.values()])) for o in opts
                  for p, st in o.state.items()])


def _objects(values: tuple) -> list[Any]:
    """Modules, optimizers and schedulers passed as arguments (in lists, tuples, dicts)."""
    out: list[Any] = []
    for v in values:
        if isinstance(v, (Module, Optimizer, LRScheduler)):
            out.append(v)
        elif type(v) in (list, tuple):
            out += _objects(tuple(v))
        elif type(v) is dict:
            out += _objects(tuple(v.values()))
    return out


def _placed_on_mesh(view: _View, leaves: list[Tensor]) -> list[Tensor]:
    """A step that reaches an SPMD ``DistributedDataParallel`` gets its tensor arguments
    split over the DDP mesh along DDP's ``dim`` (this process's part of the global batch),
    as DDP's forward splits its inputs: the program then runs on global arrays, with the
    gradient reductions inside. ``leaves`` itself when there is nothing to place."""
    ddps = view.ddps
    if not ddps:
        return leaves
    local = [m for m in ddps if not m.spmd]
    if local:  # PyTorch's DDP (init_process_group): gradients averaged on the host
        raise NotTraceable(
            "DistributedDataParallel joined by init_process_group averages gradients over "
            "the processes on the host after backward; that does not compose with the "
            "whole-step compile yet (use acg.distributed.init() for the SPMD global batch)")
    meshes = {id(m.mesh): m.mesh for m in ddps}
    if len(meshes) > 1:
        raise NotTraceable("the step reaches DistributedDataParallel modules on different meshes")
    ddp = ddps[0]
    try:
        placed = [ddp._to_mesh(t) for t in leaves]
    except ValueError as e:  # a tensor argument that does not split over the mesh
        raise NotTraceable(f"DistributedDataParallel cannot split a step argument: {e}") from e
    return placed if any(a is not b for a, b in zip(placed, leaves)) else leaves


def _keep_sharding(a: Any, sharding: Any) -> Any:
    """An output of the step keeps its input's placement over several devices (so its
    buffer is donated in place and the next step reads the same layout)."""
    if isinstance(sharding, jax.sharding.NamedSharding) and sharding.mesh.size > 1 and \
            isinstance(a, jax.core.Tracer):
        return jax.lax.with_sharding_constraint(a, sharding)
    return a


def _tensors(values: tuple) -> list[Tensor]:
    out = []
    for v in values:
        if isinstance(v, Tensor):
            out.append(v)
        elif type(v) in (list, tuple):
            out += _tensors(tuple(v))
    return out


def _body(fn: Callable, spec: tuple, view: _View, entry: _Entry, reads: list[Any]
          ) -> Callable:
    """The step as a function of arrays; running it (under ``jax.jit``) is the trace.
    ``reads``: what the step reads (closure, globals), where :func:`_consts_seen` looks
    for the tensors it read that are not inputs."""
    tensors, opts, state = view.tensors, view.opts, view.state

    def body(arg_arrays: list, datas: list, grads: list, states: list, hypers: list,
             key: Any, lifted: list) -> tuple:
        if getattr(_TRACING, "active", False):
            raise NotTraceable("a compiled training step calls another one")
        leaves = [_make(a) for a in arg_arrays]
        args, kwargs = unflatten(spec, iter(leaves))
        events: list[tuple[str, Any]] = []
        draws = [0]
        items: list[DeferredItem] = []
        with _swapped(view, datas, grads, states, hypers, events, key, draws, lifted,
                      items) as snap:
            _check_hooks(view)
            known = {id(t) for t in tensors + view.lifted} | {id(t) for t in leaves} | \
                {id(v) for *_, v in state} | \
                {id(t._grad) for t in tensors if t._grad is not None}
            try:
                with _ConstGuard(entry.consts, known), collecting() as checks:
                    out = fn(*args, **kwargs)
                    flags = checks.pack()  # index bounds, class targets: see _run
            except BaseException:
                _consts_restored(entry.consts)  # the step's own error is the one raised
                raise
            _consts_seen(entry.consts, reads)
            returned: dict[int, DeferredItem] = {}  # ``return loss.item()``: read after
            outs, out_spec = flatten(_items_out(out, returned), keyed=False)
            _items_kept(items, returned)
            stored = _stored(view, snap)
            res = [o._data for o in outs]
            entry.meta["items"] = [id(o) in returned for o in outs]
            # parameters, gradients and same-shaped optimizer state keep the parameter's
            # placement (DDP's replicated or sharded layout) across steps
            where = {id(t): getattr(d, "sharding", None) for t, d, *_ in snap["t"]}
            raw_datas = [t._data for t in tensors]
            new_datas = [a if a is d else _keep_sharding(a, where[id(t)])
                         for t, a, d in zip(tensors, raw_datas, datas)]
            new_grads = [_keep_sharding(t._grad._data, where[id(t)]) for t in tensors
                         if t._grad is not None]
            new_state = [(i, p, k, v) for i, o in enumerate(opts) for g in o.param_groups
                         for p in g["params"] for k, v in o.state.get(p, {}).items()]
            state_out = [_keep_sharding(v._data, where.get(id(p)))
                         if tuple(v.shape) == tuple(p.shape) else v._data
                         for _, p, _, v in new_state]
            ev = [e for e, _ in events]
            if "opt" in ev and "sched" in ev:
                first_opt = ev.index("opt")
                last_opt = len(ev) - 1 - ev[::-1].index("opt")
                if any(e == "sched" for e in ev[first_opt:last_opt]):
                    raise NotTraceable("a scheduler steps between two optimizer steps")
            before = [s for (e, s), k in zip(events, range(len(events)))
                      if e == "sched" and ("opt" not in ev or k < ev.index("opt"))]
            after = [s for e, s in events if e == "sched" and s not in before]
            entry.meta.update(
                out_spec=out_spec, grads=[t._grad is not None for t in tensors],
                mutated=[a is not d for a, d in zip(raw_datas, datas)],
                state=[(i, p, k) for i, p, k, _ in new_state],
                before=before, after=after, keys=draws[0])
            new_lifted = [t._data for t in view.lifted]
            entry.meta["lifted"] = [a is not d for a, d in zip(new_lifted, lifted)]
            entry.meta["stored"] = [(m, k, where) for m, k, where, _ in stored]
            entry.meta["checked"] = flags is not None
            entry.meta["flags"] = jax.tree_util.tree_structure(flags)  # with their values
            return (res, new_datas, new_grads, state_out, new_lifted,
                    [t._data for *_, t in stored], flags)

    return body


@contextlib.contextmanager
def _swapped(view: _View, datas: list, grads: list, states: list, hypers: list,
             events: list, key: Any, draws: list, lifted: list, items: list
             ) -> Iterator[dict]:
    """Install the tracers into the real objects for the trace; put everything back.
    ``items`` gets each :class:`.deferred.DeferredItem` the step's ``.item()`` made."""
    from ..kernels import random as krandom
    tensors, opts = view.tensors, view.opts
    snap = {
        "t": [(t, t._data, t._grad, t._version, t._acc_ref, t.grad_fn)
              for t in tensors + view.lifted],
        "g": [(t._grad, t._grad._data) for t in tensors if t._grad is not None],
        "s": [(v, v._data) for *_, v in view.state],
        "opt": [(o, {p: dict(d) for p, d in o.state.items()}, [dict(g) for g in o.param_groups])
                for o in opts],
        "mods": [(m, dict(m.__dict__)) for m in view.modules],
        "regs": [(m, dict(m._parameters), dict(m._buffers)) for m in view.modules],
    }
    git = iter(grads)
    for t, d in zip(tensors, datas):
        t._data = d
        if t._grad is not None:
            t._grad = _make(next(git))  # a fresh tensor: the real grad object is untouched
    for (*_, v), d in zip(view.state, states):
        v._data = d
    for t, d in zip(view.lifted, lifted):
        t._data = d
    orig_step, orig_sched, orig_key = Optimizer.step, LRScheduler.step, krandom.Generator.next_key
    hyper_of = {id(o): h for o, h in zip(opts, hypers)}

    def opt_step(self: Optimizer, closure: Any = None) -> Any:
        if closure is not None:
            raise NotTraceable("opt.step(closure) re-evaluates the loss in Python")
        events.append(("opt", self))
        if id(self) not in hyper_of:
            raise NotTraceable(f"the step uses a {type(self).__name__} it does not reach "
                               "through its closure or globals")
        return orig_step(self)

    def sched_step(self: LRScheduler, *a: Any, **k: Any) -> None:
        if a or k:
            raise NotTraceable(f"{type(self).__name__}.step() takes a value (a metric or an "
                               "epoch) computed by the step")
        events.append(("sched", self))

    def next_key(gen: Any) -> Tensor:
        if gen is not krandom.default_generator:
            raise NotTraceable("a random op draws from a Generator other than the default one")
        draws[0] += 1
        return _make(jax.random.fold_in(key, draws[0]))

    def item(self: Tensor) -> Any:
        if isinstance(self._data, jax.core.Tracer) and self.numel() == 1:
            d = DeferredItem(self)  # a number once the program ran: see deferred.py
            items.append(d)
            return d
        return orig_item(self)

    def hyper(self: Optimizer, index: int, group: dict) -> dict:
        h = hyper_of[id(self)][index]
        return {n: tuple(v) if isinstance(v, list) else v for n, v in h.items()}

    def tolist(self: Tensor) -> Any:
        if isinstance(self._data, jax.core.Tracer):  # Python numbers of traced values
            raise NotTraceable(f"tolist() reads a tensor's values into Python (data-dependent "
                               f"Python){user_line(traceback.extract_stack())}")
        return orig_tolist(self)

    def scale(self: GradScaler, outputs: Any) -> Any:
        if self._enabled:  # its inf/NaN check decides in Python whether opt.step() runs
            raise NotTraceable("a GradScaler skips or takes the optimizer step by the gradients' "
                               f"values (data-dependent Python)"
                               f"{user_line(traceback.extract_stack())}")
        return orig_scale(self, outputs)

    orig_item, orig_scale, orig_tolist = Tensor.item, GradScaler.scale, Tensor.tolist
    Tensor.item = item  # type: ignore[method-assign]
    Tensor.tolist = tolist  # type: ignore[method-assign]
    GradScaler.scale = scale  # type: ignore[method-assign]
    Optimizer.step = opt_step  # type: ignore[method-assign]
    LRScheduler.step = sched_step  # type: ignore[method-assign]
    krandom.Generator.next_key = next_key  # type: ignore[method-assign]
    for o in opts:
        o._hyperparameters = types.MethodType(hyper, o)
    _TRACING.active = True
    try:
        yield snap
    finally:
        _TRACING.active = False
        Optimizer.step, LRScheduler.step = orig_step, orig_sched  # type: ignore[method-assign]
        krandom.Generator.next_key = orig_key  # type: ignore[method-assign]
        Tensor.item = orig_item  # type: ignore[method-assign]
        Tensor.tolist = orig_tolist  # type: ignore[method-assign]
        GradScaler.scale = orig_scale  # type: ignore[method-assign]
        for t, d, g, ver, acc, fn in snap["t"]:
            t._data, t._grad, t._version, t._acc_ref, t.grad_fn = d, g, ver, acc, fn
        for g, d in snap["g"]:
            g._data = d
        for v, d in snap["s"]:
            v._data = d
        for o, st, groups in snap["opt"]:
            o.__dict__.pop("_hyperparameters", None)
            o.state.clear()
            o.state.update(st)
            for g, saved in zip(o.param_groups, groups):
                g.update(saved)
        _modules_restored(snap)  # (a failed trace too: no tracer stays on a module)


def _modules_restored(snap: dict) -> None:
    """Every module as before the trace: its parameter and buffer registries, and no
    attribute left holding a traced tensor."""
    for m, params, bufs in snap["regs"]:
        for reg, before in ((m._parameters, params), (m._buffers, bufs)):
            if len(reg) != len(before) or any(reg.get(k) is not v for k, v in before.items()):
                reg.clear()
                reg.update(before)
    for m, before in snap["mods"]:
        for k, v in list(m.__dict__.items()):
            if before.get(k) is not v and _traced(v):
                if k in before:
                    m.__dict__[k] = before[k]
                else:
                    del m.__dict__[k]


def _traced(v: Any) -> bool:
    return isinstance(v, Tensor) and isinstance(v._data, jax.core.Tracer)


def _compiled_forward(owner: Any, module: Module, name: str) -> Callable:
    """``acg.compile`` of one module's forward, as the step was compiled (its ``dynamic``),
    never ``fullgraph`` (a module that cannot be traced runs eagerly, logged once)."""
    cf = type(owner)(module.forward, owner.dynamic, False, module=module)
    cf.__qualname__ = name
    return cf


def _check_hooks(view: _View) -> None:
    """Python hooks would run once, at the trace: only pure ones may be traced in; any other
    splits the step at the backward (:mod:`.split`)."""
    why = impure_hook(view.tensors, view.modules)
    if why is not None:
        raise _Hooked(why)


def _items_out(value: Any, returned: dict[int, DeferredItem]) -> Any:
    """``value`` with each :class:`DeferredItem` in it (through tuples, lists and dicts)
    replaced by a tensor of its value, kept in ``returned`` by that tensor's id."""
    if type(value) is DeferredItem:
        t = _make(value.tensor._data)
        returned[id(t)] = value
        return t
    if type(value) in (list, tuple):
        return type(value)([_items_out(v, returned) for v in value])
    if type(value) is dict:
        return {k: _items_out(v, returned) for k, v in value.items()}
    return value


def _items_kept(items: list[DeferredItem], returned: dict[int, DeferredItem]) -> None:
    """Every ``.item()`` of the trace is returned, or dropped: one kept elsewhere (appended
    to a list) would be a placeholder there after the call, so the step runs eagerly."""
    out = {id(d) for d in returned.values()}
    for i in range(len(items)):
        # held by ``items`` and getrefcount's argument, and by nothing of the user's
        if id(items[i]) not in out and sys.getrefcount(items[i]) > 2:
            _purge(items)
            raise NotTraceable("the step keeps the value of a tensor's .item() (in a list, "
                               "a dict or an attribute): only returning it is deferred")


def _purge(items: list[DeferredItem]) -> None:
    """Take the trace's placeholders out of the lists and dicts (attributes included) that
    hold them: the eager run that follows puts the real numbers there, as it would."""
    ids = {id(d) for d in items}
    for d in list(items):
        for ref in gc.get_referrers(d):
            if ref is items:
                continue
            if type(ref) is list:
                ref[:] = [v for v in ref if id(v) not in ids]
            elif type(ref) is dict:
                for k in [k for k, v in ref.items() if id(v) in ids]:
                    del ref[k]


class _Hooked(NotTraceable):
    """A hook that is not ``pure_hook``: the step runs split at the backward."""


class _Lift(NotTraceable):
    """The trace read tensors that are not inputs but that the step reaches through a
    container (a metric kept in a dict, a mask in a list): inputs from the next trace on,
    found again at each call by their paths (:mod:`.paths`)."""

    def __init__(self, paths: list[tuple[int, Path]]) -> None:
        super().__init__(f"the step reads {len(paths)} tensor(s) through containers")
        self.paths = paths


_LIFT_LIMIT = 64  # paths kept per step function (each one a program input)


def _consts_restored(consts: list[tuple[Tensor, Any]]) -> list[tuple[Tensor, Any]]:
    """Each of ``consts`` the trace wrote in place (it holds a tracer) gets its array back;
    those, with the arrays."""
    written = [(t, d) for t, d in consts if t._store is not d]
    for t, d in written:
        t._store = d
    return written


def _consts_seen(consts: list[tuple[Tensor, Any]], reads: list[Any]) -> None:
    """After the trace, the tensors it read that are not inputs: each written in place
    gets its array back (it holds a tracer now). Those reached through a container become
    inputs (:class:`_Lift`); the others (made inside the step, or out of reach) stay
    constants guarded by identity, unless written, which one program cannot do."""
    written = _consts_restored(consts)
    if not consts:
        return
    where = paths_to([t for t, _ in consts], reads, (Tensor, Optimizer, LRScheduler))
    lost = [t for t, _ in written if id(t) not in where]
    if lost:
        raise NotTraceable(f"the step writes in place to a tensor of shape "
                           f"{tuple(lost[0].shape)} that it reaches through none of its "
                           "closure, globals or arguments")
    paths = [where[id(t)] for t, _ in consts if id(t) in where]
    if paths:
        raise _Lift(paths)


def _stored(view: _View, snap: dict) -> list[tuple[Module, str, str, Tensor]]:
    """Tensors the step stored on a module: an attribute (llama2.c's ``self.last_loss =
    ...``) or a parameter or buffer rebound (an EMA's ``self.count = self.count * 0.9 +
    ...``). Each is returned as ``(module, name, "__dict__" / "_parameters" / "_buffers",
    tensor)``, to become a program output stored there, as a real tensor, after each call
    (:func:`_store_back`); :func:`_swapped` takes the trace's values off the module."""
    stored = []
    for m, before in snap["mods"]:
        for k, v in list(m.__dict__.items()):
            if _traced(v) and before.get(k) is not v:
                stored.append((m, k, "__dict__", v))
    for m, params, bufs in snap["regs"]:
        for where, before in (("_parameters", params), ("_buffers", bufs)):
            for k, v in getattr(m, where).items():
                if _traced(v) and before.get(k) is not v:
                    stored.append((m, k, where, v))
    return stored


def _store_back(m: Module, k: str, where: str, a: Any) -> None:
    """A stored tensor's value after a call. A rebound parameter or buffer of the same
    shape and dtype takes the value in place: the module keeps one object, so the guards
    on its identity hold and the next call reuses the program (eagerly it would be a
    new object each call; only a reference kept to the old one could tell)."""
    if where == "__dict__":
        m.__dict__[k] = _make(a)
        return
    reg = getattr(m, where)
    old = reg.get(k)
    if old is not None and tuple(old.shape) == tuple(a.shape) and \
            np.dtype(old.dtype) == np.dtype(a.dtype):
        old._store = a
        old._version += 1
    else:
        reg[k] = Parameter(_make(a)) if where == "_parameters" else _make(a)
