"""``acg.compile``: the user-facing wrapper, its cache and its fallbacks."""
from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import logging
import operator
import weakref
from typing import Any, Callable, Iterator

from .. import config
from ..amp.autocast_mode import active_state as active_autocast
from ..compiled_autograd.runtime import picker
from ..dispatch.keys import TLS
from ..kernels._xp import _ARRAY
from ..nn.modules import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from .escape import SideEffect, Sinks
from .guards import SizeGuards, signature_diff
from .partition import partition
from .paths import paths_to, resolve
from .program import Region, counters
from .trace import NotTraceable, _describe, python_random_kept, trace_joint
from .tree import flatten, flatten_call, floats_free
from .values import ValuePlaces, cell_value, value_places
from .wholestep import WholeStep, wants_whole_step

log = config.get_logger("aot")
_PLAIN = frozenset({Tensor, Parameter})  # classes whose shape and dtype are Tensor's
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")
CACHE_SIZE_LIMIT = 8  # traces kept per compiled function (like torch's cache_size_limit)
BACKENDS = ("jax",)
# PyTorch's backend names, as ported programs spell them: all select the one XLA compiler
TORCH_BACKENDS = frozenset({"inductor", "eager", "aot_eager", "aot_eager_default_partitioner",
                            "aot_eager_decomp_partition", "cudagraphs", "openxla",
                            "openxla_eval", "ts", "aot_ts", "tvm", "onnxrt"})
_LIVE: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()
_SIG_LABELS = ["grad mode", "training flags", "argument structure or constants",
               "argument tensors (dtype, requires_grad, rank)",
               "parameters and buffers (identity, dtype, requires_grad, shape)",
               "autocast state", "Python values read (module attributes, globals, closure)"]


def _values_free(sig: tuple) -> tuple:
    """A signature without its float arguments' values and modules' plain attributes."""
    return sig[:2] + (floats_free(sig[2]),) + sig[3:-1]


class Unsupported(RuntimeError):
    """``fullgraph=True`` and the region cannot be traced as one graph (the message
    says why); like ``torch._dynamo.exc.Unsupported``."""


class _Entry:
    """One trace: the signature and sizes it serves, and its region (None: eager)."""

    __slots__ = ("sig", "sizes", "region", "lifted", "hooks", "loose")

    def __init__(self, sig: tuple, sizes: SizeGuards | None, region: Region | None) -> None:
        self.sig, self.sizes, self.region = sig, sizes, region
        # an eager entry for a region that stores Python values: serves every value of them
        self.loose: tuple | None = None
        self.hooks: tuple | None = None  # an eager entry: the module hooks when it was made
        # tensors the region read through containers (box["shift"]): (index in the
        # region's extras, where from the roots, (shape, dtype, requires_grad) traced)
        self.lifted: list[tuple[int, Any, tuple]] = []


class CompiledFunction:
    """``fn`` traced into forward/backward programs on first call, cached by guards."""

    def __init__(self, fn: Callable, dynamic: bool | None, fullgraph: bool,
                 module: Module | None = None) -> None:
        functools.update_wrapper(self, fn, updated=())
        self._fn, self._module = fn, module
        self.dynamic, self.fullgraph = dynamic, fullgraph
        self._entries: list[_Entry] = []
        self._auto: set[int] = set()  # argument size positions seen to change: symbolic next
        self._floats_seen: set[tuple] = set()  # guards new only in float values, run once
        self._warned: set[str] = set()
        self._stores = 0  # traces that found the region storing a Python value
        roots = (lambda: [module]) if module is not None else \
            (lambda: [v for v in _referenced(fn) if isinstance(v, Module)])
        self._modules = ModuleState(roots)
        self._places: tuple[list, ValuePlaces] | None = None  # (for these modules, places)
        # a training step (it reaches an optimizer or calls backward): one program per step
        self._whole = WholeStep(self, _referenced, CACHE_SIZE_LIMIT, Unsupported,
                                ModuleState) if module is None and \
            wants_whole_step(fn, _referenced) else None
        _LIVE.add(self)

    # -- the hot path ----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._whole is not None:
            return self._whole(args, kwargs)
        leaves, spec = flatten_call(args, kwargs)
        state = self._modules.tensors()
        metas, sizes = [], []
        for t in leaves:  # one shape read per argument: its rank (signature), its sizes
            a = t._store
            if type(a) is _ARRAY and type(t) in _PLAIN:  # Tensor.shape/.dtype, read off
                a = a.aval  # the jax value's aval without two property calls each
                shape, dtype = a.shape, a.dtype
            else:
                shape, dtype = t.shape, t.dtype
            metas.append((dtype, t._requires_grad, len(shape)))
            sizes.extend(shape)
        sig = self._signature(leaves, spec, state, tuple(metas))
        if self.dynamic:
            sizes += [s for t in state for s in t.shape]
        for entry in self._entries:
            if (entry.sig == sig or entry.loose is not None and entry.loose == _values_free(sig)) \
                    and (entry.sizes is None or entry.sizes.failure(sizes) is None) \
                    and (not entry.lifted or self._relift(entry)):
                if entry.region is None and entry.hooks != self._modules.hooks():
                    self._entries.remove(entry)  # a hook it failed on is gone (or one came):
                    break                        # trace again, as torch's hook guards do
                counters["cache_hits"] += 1
                return self._run(entry, args, kwargs, leaves, state)
        entry = self._miss(args, kwargs, leaves, state, sig, sizes)
        return self._run(entry, args, kwargs, leaves, state)

    def _run(self, entry: _Entry | None, args: tuple, kwargs: dict, leaves: list,
             state: list) -> Any:
        if entry is None or entry.region is None:
            counters["eager_runs"] += 1
            return self._fn(*args, **kwargs)
        return entry.region(leaves + state)

    def _roots(self) -> list[Any]:
        """Where the tensors the region reads besides its inputs are looked for: the module,
        and what the function reads from its closure and globals."""
        fn = self._fn if self._module is None else type(self._module).forward
        fn = getattr(fn, "__func__", fn)
        return ([self._module] if self._module is not None else []) + _referenced(fn)

    def _relift(self, entry: _Entry) -> bool:
        """The tensors now at the places the region read them from become its inputs
        (another tensor put there is read, as eager would); False where one is gone or
        differs in shape, dtype or requires_grad (a retrace)."""
        roots, region = self._roots(), entry.region
        now = []
        for i, where, meta in entry.lifted:
            t = resolve(roots, where)
            if not isinstance(t, Tensor) or (tuple(t.shape), t.dtype, t.requires_grad) != meta:
                return False
            now.append((i, t))
        for i, t in now:
            region.extras[i] = ("lifted", t)
        return True

    def _lift_paths(self, region: Region) -> list[tuple[int, Any, tuple]]:
        lifted = [(i, src) for i, (kind, src) in enumerate(region.extras) if kind == "lifted"]
        if not lifted:
            return []
        where = paths_to([src for _, src in lifted], self._roots(), (Tensor,))
        return [(i, where[id(src)], (tuple(src.shape), src.dtype, src.requires_grad))
                for i, src in lifted if id(src) in where]

    def _signature(self, leaves: list[Tensor], spec: tuple, state: list[Tensor],
                   metas: tuple | None = None) -> tuple:
        dyn = self.dynamic
        if metas is None:
            metas = tuple([(t.dtype, t._requires_grad, t.ndim) for t in leaves])
        return (TLS.grad_enabled, self._modules.training(), spec, metas,
                tuple([(id(t), t.dtype, t._requires_grad, t.ndim if dyn else t.shape)
                       for t in state]), active_autocast(),
                (self._modules.plain(), self._values().read()))

    def _values(self) -> ValuePlaces:
        """Where the region's code reads plain Python values (found again when its modules
        change)."""
        mods = self._modules.modules
        if self._places is None or self._places[0] is not mods:
            fn = self._fn if self._module is None else None
            self._places = (mods, value_places(fn, mods))
        return self._places[1]

    # -- a miss: trace, or fall back --------------------------------------------------------
    def _miss(self, args: tuple, kwargs: dict, leaves: list, state: list, sig: tuple,
              sizes: list[int]) -> _Entry | None:
        if self._entries:
            counters["retraces"] += 1
            if config.log_enabled("aot"):
                log.debug("%s: retracing: %s", self.__qualname__, self._why(sig, sizes))
        if self._new_floats(sig):
            counters["eager_floats"] += 1
            return None
        if len(self._entries) >= CACHE_SIZE_LIMIT:
            self._warn_once("limit", f"acg.compile: {self.__qualname__} hit the cache size limit "
                            f"({CACHE_SIZE_LIMIT} traces); running it eagerly for new guards. "
                            f"Last miss: {self._why(sig, sizes)}")
            return None
        self._mark_dynamic(sig, sizes)
        try:
            with python_random_kept():
                entry = self._trace(args, kwargs, leaves, state, sig)
        except NotTraceable as e:
            if self.fullgraph:
                raise Unsupported(f"acg.compile(fullgraph=True): {self.__qualname__} cannot be "
                                  f"traced into one graph: {e}") from e
            self._warn_once(str(e), f"acg.compile: running {self.__qualname__} eagerly: {e}")
            entry = _Entry(sig, None, None)
            entry.hooks = self._modules.hooks()
            if isinstance(e.__cause__, SideEffect):
                # a store once (lazy init: self.ready = True) runs eagerly that call and is
                # traced again after; a second one means every call stores: eager for good
                self._stores += 1
                if self._stores > 1:
                    entry.loose = _values_free(sig)
        self._entries.insert(0, entry)
        return entry

    def _trace(self, args: tuple, kwargs: dict, leaves: list, state: list, sig: tuple
               ) -> _Entry:
        counters["traces"] += 1
        _, in_spec = flatten((args, kwargs), keyed=False)
        fn = self._module if self._module is not None else self._fn
        dynamic: Any = self.dynamic
        if dynamic is None and self._auto:  # automatic dynamic: leading sizes and changed ones
            dims = [d for t in leaves for d in range(t.ndim)]
            dynamic = [d == 0 or i in self._auto for i, d in enumerate(dims)]
        sinks = Sinks(self._modules.modules, self._fn)
        with _registries_kept(self._modules.modules):
            joint = trace_joint(fn, in_spec, leaves, _arg_names(self._fn, args, kwargs),
                                list(zip(self._modules.names, state)), dynamic, sig[0], sinks)
        try:
            region = Region(joint, partition(joint))
        except Exception as e:  # noqa: BLE001 - a graph we cannot build: eager, with why
            raise NotTraceable(_describe(e)) from e
        if config.log_enabled("aot"):
            bw = region.backward_graph
            log.debug("%s: traced\nforward:\n%s\nbackward:\n%s\nguards: %s", self.__qualname__,
                      region.forward_graph.code, bw.code if bw is not None else "(none)",
                      joint.sizes.shape_env.format_guards())
        entry = _Entry(sig, joint.sizes, region)
        entry.lifted = self._lift_paths(region)
        return entry

    def _new_floats(self, sig: tuple) -> bool:
        """Whether this call runs eagerly because only its float arguments' values are new
        (a temperature, a loss weight), or its modules' plain attributes (``model.drop.p``
        on a schedule): a float is a constant of the trace, and a trace per value costs a
        compile each; a value seen once runs as eager would, and is traced
        when it repeats. (``fullgraph=True`` traces at once.)"""
        if self.fullgraph:
            return False
        loose = _values_free(sig)
        if not any(e.region is not None and e.sig != sig and _values_free(e.sig) == loose
                   for e in self._entries):
            return False
        if sig in self._floats_seen:
            return False  # the second time: trace it
        if len(self._floats_seen) >= 256:
            self._floats_seen.clear()
        self._floats_seen.add(sig)
        return True

    def _mark_dynamic(self, sig: tuple, sizes: list[int]) -> None:
        """A size that differs from a trace of the same signature becomes symbolic at this
        trace (like torch's automatic dynamic shapes): a growing sequence retraces once, not
        once per length."""
        if self.dynamic is not None:
            return
        for e in self._entries:
            if e.sig == sig and e.sizes is not None and len(e.sizes.hints) == len(sizes):
                self._auto.update(i for i, (a, b) in enumerate(zip(e.sizes.hints, sizes))
                                  if a != b)

    def _why(self, sig: tuple, sizes: list[int]) -> str:
        """The difference to the closest cached trace (the longest equal signature prefix)."""
        if not self._entries:
            return "first call"

        def agree(e: _Entry) -> int:
            return next((i for i, (a, b) in enumerate(zip(e.sig, sig)) if a != b), len(sig))
        entry = max(self._entries, key=agree)
        if entry.sig != sig:
            return signature_diff(entry.sig, sig, _SIG_LABELS)
        return (entry.sizes.failure(sizes) if entry.sizes is not None else None) or \
            "guards failed"

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logging.getLogger("autograd_compile").warning(message)

    def _reset(self) -> None:
        self._entries.clear()
        if self._whole is not None:
            self._whole.reset()
        self._auto.clear()
        self._warned.clear()


class ModuleState:
    """The modules a region reads (a compiled Module, or those a function reaches through
    its closure and globals): their parameters and buffers are graph inputs and their
    ``training`` flags are guarded. Rebuilt only when a module, parameter or buffer is
    added, removed or replaced, which one identity comparison per call detects."""

    def __init__(self, roots: Callable[[], list[Module]]) -> None:
        self.roots = roots
        self.modules: list[Module] = []
        self.names: list[str] = []
        self._regs: list[dict] = []
        self._seen: list[Any] = [object()]  # never matches: the first call builds
        self._pick: Callable[[list], tuple] = lambda vals: ()

    def tensors(self) -> list[Tensor]:
        """The parameters and buffers, in ``named_parameters()`` then ``named_buffers()``
        order (a tied parameter once)."""
        vals = self.roots()
        vals += [v for r in self._regs for v in r.values()]
        seen = self._seen
        if len(vals) != len(seen) or not all(map(operator.is_, vals, seen)):
            vals = self._rebuild()
        return list(self._pick(vals))

    def training(self) -> tuple[bool, ...]:
        return tuple([m.training for m in self.modules])

    def plain(self) -> tuple[int, ...]:
        """Every module's plain-attribute token (``nn.module.plain_token``): a trace bakes
        ``self.p`` in, so a changed value must not reuse it."""
        return tuple([m._acg_plain for m in self.modules])

    def hooks(self) -> tuple:
        """Every module's hooks (their ids): read where a region ran eagerly, so removing
        the hook it failed on makes it trace again."""
        return tuple([tuple(getattr(m, k, ())) for m in self.modules for k in _HOOK_DICTS])

    def _rebuild(self) -> list:
        roots = self.roots()
        mods: list[Module] = []
        for r in roots:
            mods.extend(m for m in r.modules() if all(m is not f for f in mods))
        self.modules = mods
        self._regs = [d for m in mods for k in ("_parameters", "_buffers", "_modules")
                      if isinstance(d := m.__dict__.get(k), dict)]
        vals = list(roots) + [v for r in self._regs for v in r.values()]
        named: list[tuple[str, Tensor]] = []
        for i, r in enumerate(roots):
            prefix = "" if len(roots) == 1 else f"m{i}"
            named += list(r.named_parameters(prefix=prefix))
            named += list(r.named_buffers(prefix=prefix)) if hasattr(r, "named_buffers") else []
        first: dict[int, int] = {}
        for k, v in enumerate(vals):
            first.setdefault(id(v), k)
        kept, ids = [], set()
        for n, t in named:  # a tensor shared by two roots is one input
            if id(t) in first and id(t) not in ids:
                ids.add(id(t))
                kept.append((n, t))
        self.names = [n for n, _ in kept]
        self._pick = picker([first[id(t)] for _, t in kept])
        self._seen = vals
        return vals


@contextlib.contextmanager
def _registries_kept(modules: list[Module]) -> Iterator[None]:
    """A parameter or buffer re-assigned inside the trace would leave a fake tensor in the
    module: put the originals back, and report it (the region then runs eagerly)."""
    regs = [m.__dict__[r] for m in modules for r in ("_parameters", "_buffers")
            if isinstance(m.__dict__.get(r), dict)]
    before = [dict(r) for r in regs]
    try:
        yield
    finally:
        changed = [k for r, b in zip(regs, before) for k in set(r) | set(b)
                   if r.get(k) is not b.get(k)]
        for r, b in zip(regs, before):
            r.clear()
            r.update(b)
    if changed:
        raise NotTraceable(f"the region assigns module state ({', '.join(sorted(changed))}) "
                           "instead of writing it in place")


def _referenced(fn: Callable) -> list[Any]:
    """Values a function reads from its closure cells and from its globals by name. Each
    position is fixed by the code object (a cell, then a name it uses; None where empty or
    unbound), so an index into the list means the same place at every call (paths.py)."""
    values = [cell_value(c) for c in getattr(fn, "__closure__", None) or ()]
    code, glb = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    if code is not None:
        values += [glb.get(n) for n in code.co_names]
    return values


def _arg_names(fn: Callable, args: tuple, kwargs: dict) -> list[str]:
    """A readable placeholder name for each argument tensor (in flatten order)."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, a in enumerate(args):
        base = params[i] if i < len(params) else f"arg{i}"
        names += _leaf_names(base, a)
    for k, v in kwargs.items():
        names += _leaf_names(k, v)
    return names


def _leaf_names(base: str, value: Any) -> list[str]:
    leaves, _ = flatten(value)
    if len(leaves) == 1 and isinstance(value, Tensor):
        return [base]
    return [f"{base}_{j}" for j in range(len(leaves))]


class OptimizedModule(Module):
    """What ``acg.compile(module)`` returns: a Module running ``module`` compiled.

    As PyTorch's, it holds the original as its child ``_orig_mod``: it shares the original's
    parameters, buffers and submodules, ``train()``/``eval()`` act on them, attributes read
    through, and ``state_dict()``/``named_parameters()`` name them ``_orig_mod.<name>`` (so a
    checkpoint of a ``torch.compile``'d model loads, and one of ours loads in PyTorch).
    ``copy.deepcopy`` copies the original and compiles the copy afresh (an EMA model).
    """

    def __init__(self, mod: Module, dynamic: bool | None, fullgraph: bool) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", CompiledFunction(mod.forward, dynamic, fullgraph,
                                                               module=mod))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        place = getattr(self._orig_mod, "_place_inputs", None)
        if place is not None:  # DDP: the batch split over its mesh before the trace
            args, kwargs = place(args, kwargs)
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)  # the registries (``_orig_mod`` is a child)
        except AttributeError:
            if name.startswith("__") or "_modules" not in self.__dict__ or \
                    "_orig_mod" not in self.__dict__["_modules"]:
                raise
        return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __deepcopy__(self, memo: dict) -> "OptimizedModule":
        # traces are caches of the original's identity: the copy traces its own
        new = OptimizedModule(copy.deepcopy(self._orig_mod, memo), self._compiled.dynamic,
                              self._compiled.fullgraph)
        memo[id(self)] = new
        return new

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def compile(model: Callable | None = None, *, backend: str = "jax", dynamic: bool | None = None,
            fullgraph: bool = False, mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """Trace a function or Module into one XLA program forward and one backward.

    Like ``torch.compile``: the first call traces ``model`` on fake inputs with
    symbolic sizes (parameters and buffers are graph inputs), derives the backward
    from the same trace, and runs each as one jitted program; later calls reuse the
    trace while its guards hold (grad mode, ``training``, dtypes, requires_grad,
    parameter identity, sizes, the autocast state). ``dynamic=None`` (default) makes the
    leading (batch) size of each argument symbolic, so one trace serves every batch size,
    and every other size static; ``True`` makes all sizes symbolic (parameters' too), ``False`` none.
    What cannot be traced (``.item()``, ``.numpy()``, Python branches on tensor
    values, hooks registered inside) runs eagerly, logged once; ``fullgraph=True``
    raises :class:`Unsupported` instead. ``mode`` and ``options`` are accepted for
    PyTorch compatibility and have no effect, as are PyTorch's backend names
    (``"inductor"``, ``"eager"``, ``"aot_eager"``...: each compiles to XLA as ``"jax"``
    does); ``disable=True`` returns ``model``.

    >>> import autograd_compile as acg
    >>> @acg.compile
    ... def f(x, w):
    ...     return (x @ w).tanh().sum()
    >>> x, w = acg.ones(4, 3), acg.ones(3, 2, requires_grad=True)
    >>> f(x, w).backward(); round(w.grad.tolist()[0][0], 4)
    0.0395
    """
    if model is None:
        return functools.partial(compile, backend=backend, dynamic=dynamic, fullgraph=fullgraph,
                                 mode=mode, options=options, disable=disable)
    if callable(backend):
        raise TypeError("acg.compile: a callable backend (a custom compiler_fn) is not "
                        "supported: acg.compile lowers its traces to XLA itself; use "
                        "compiled_autograd.enable(compiler_fn) for the backward graph")
    if backend not in BACKENDS and backend not in TORCH_BACKENDS:
        raise ValueError(f"acg.compile: unknown backend {backend!r}; expected one of "
                         f"{list(BACKENDS) + sorted(TORCH_BACKENDS)}")
    if not callable(model):
        raise TypeError(f"acg.compile expects a callable or a Module, got "
                        f"{type(model).__name__}")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, dynamic, fullgraph)
    return CompiledFunction(model, dynamic, fullgraph)


def reset() -> None:
    """Forget every trace of every compiled function and zero the counters."""
    for cf in list(_LIVE):
        cf._reset()
    counters.clear()
