"""A training step split at the backward: what ``acg.compile(train_step)`` runs when the only
obstacle to one program is a Python hook that is not ``compiled_autograd.pure_hook``.

Such a hook must run at its place, as often and in the order eager runs it, with the real
gradient: it cannot be traced into the step program (it would run once, at the trace, on
tracers). So the step runs its own Python, with the parts around the hook compiled:

- **Forward.** Every module the step reaches whose descendants carry no *boundary hook*
  (a module backward or backward pre-hook, or a forward or forward pre-hook that is not
  ``pure_hook``) has its ``forward`` routed, for the call, through ``acg.compile``'s forward
  program for that module (one joint trace, one XLA program forward, its backward inlined
  into the captured backward). The outermost such module called wins: inside its program its
  children are traced in, not called separately. A module that carries a boundary hook itself
  still has its own ``forward`` compiled; ``Module.__call__`` runs its hooks around that
  program, in Python, at their places. A module with a boundary hook somewhere below it runs
  its own ``forward`` eagerly (its children are routed). Pure forward hooks of descendants are
  traced into their ancestor's program; a pure hook on a routed module itself runs in Python
  around the program (same values: it is pure).
- **Backward.** ``loss.backward()`` (and any other backward in the step) runs under
  ``compiled_autograd.enable("jax")``: one captured graph, device stretches as XLA programs,
  every Python hook a host call at its eager position (tensor hooks on parameters,
  post-accumulate-grad hooks, module backward hooks, node hooks).
- **Optimizer.** ``opt.step()``, ``opt.zero_grad()``, ``clip_grad_norm_`` and schedulers run
  as they do eagerly (the optimizers already run their update as one program).

The routing lasts for the call only: outside the step every module is what it was.
"""
from __future__ import annotations

import contextlib
import operator
import threading
from typing import Any, Callable, Iterator

from ..compiled_autograd import enable as compiled_backward
from ..dispatch.keys import TLS
from ..nn.modules import Module

_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")
_BW, _ACC = operator.attrgetter("_backward_hooks"), operator.attrgetter("_post_acc_hooks")
_MISSING = object()


class _Inside(threading.local):
    def __init__(self) -> None:
        self.depth = 0  # > 0 while a routed forward runs (its trace, program or fallback)


_INSIDE = _Inside()


def impure_hook(tensors: list, modules: list[Module]) -> str | None:
    """Why the step cannot be one program because of a hook (the first such hook), or None.

    >>> import autograd_compile as acg
    >>> lin = acg.nn.Linear(2, 1)
    >>> impure_hook(list(lin.parameters()), [lin]) is None
    True
    >>> h = lin.weight.register_hook(lambda g: g * 2)
    >>> impure_hook(list(lin.parameters()), [lin])
    'a Python hook (<lambda>) on a parameter of shape (1, 2) is not compiled_autograd.pure_hook'
    """
    for t in tensors:
        for hooks in (t._backward_hooks, t._post_acc_hooks):
            for h in (hooks or {}).values():
                if not getattr(h, "_acg_pure", False):
                    return (f"a Python hook ({_name(h)}) on a parameter of shape "
                            f"{tuple(t.shape)} is not compiled_autograd.pure_hook")
    for m in modules:
        for attr in _HOOKS:
            for h in (getattr(m, attr, None) or {}).values():
                if not getattr(h, "_acg_pure", False):
                    return (f"a Python module hook ({_name(h)}) on {type(m).__name__} is not "
                            "compiled_autograd.pure_hook")
    return None


def hook_dicts(modules: list[Module]) -> list[dict]:
    """The hook registries of ``modules`` (the same objects for a module's lifetime)."""
    return [d for m in modules for a in _HOOKS if (d := m.__dict__.get(a)) is not None]


def hook_token(tensors: list, dicts: list[dict]) -> tuple:
    """Which hooks are registered (their handle ids) on ``tensors`` and in the module hook
    registries ``dicts``: a guard, so registering or removing a hook after a trace makes the
    step decide again (one program, or split). ``()`` when there are none, found at C speed
    (the step's hot path).

    >>> import autograd_compile as acg
    >>> lin = acg.nn.Linear(2, 1)
    >>> ps, ds = list(lin.parameters()), hook_dicts([lin])
    >>> hook_token(ps, ds)
    ()
    >>> h = lin.bias.register_hook(lambda g: g)
    >>> hook_token(ps, ds) != ()
    True
    """
    if not (any(map(_BW, tensors)) or any(map(_ACC, tensors)) or any(dicts)):
        return ()
    return (tuple([(i, tuple(t._backward_hooks or ()), tuple(t._post_acc_hooks or ()))
                   for i, t in enumerate(tensors) if t._backward_hooks or t._post_acc_hooks]),
            tuple([(i, tuple(d)) for i, d in enumerate(dicts) if d]))


def _name(h: Any) -> str:
    return getattr(h, "__qualname__", None) or repr(h)


def _boundary(m: Module) -> bool:
    """A hook a module's forward program cannot hold: a module backward (pre-)hook (its
    identity Function's node hooks), or a forward (pre-)hook that is not pure."""
    if m._backward_hooks or m._backward_pre_hooks:
        return True
    return any(not getattr(h, "_acg_pure", False)
               for attr in ("_forward_pre_hooks", "_forward_hooks")
               for h in (getattr(m, attr, None) or {}).values())


def _children(m: Module) -> list[Module]:
    return [c for c in (m.__dict__.get("_modules") or {}).values() if isinstance(c, Module)]


def _already_compiled(m: Module) -> bool:
    """``acg.compile(module)`` (an OptimizedModule) and DDP wrappers keep their own forward."""
    return "_compiled" in m.__dict__ or (hasattr(m, "spmd") and hasattr(m, "_to_mesh"))


def routable(modules: list[Module]) -> list[Module]:
    """The modules whose forward is routed through a compiled program: no boundary hook
    below them, and not inside a module compiled on its own."""
    below: dict[int, bool] = {}  # id -> a boundary hook strictly below

    def tainted(m: Module, path: frozenset) -> bool:
        if id(m) in below:
            return below[id(m)]
        if id(m) in path:  # a module cycle: leave it eager
            return True
        below[id(m)] = False
        sub = path | {id(m)}
        below[id(m)] = any(_boundary(c) or tainted(c, sub) for c in _children(m))
        return below[id(m)]
    skip: set[int] = set()
    for m in modules:
        if _already_compiled(m):
            skip.update(id(d) for d in m.modules())
    return [m for m in modules if id(m) not in skip and not tainted(m, frozenset())]


class _Forward(Module):
    """``module``'s own forward, without its hooks (the caller's ``Module.__call__`` runs
    them), as the module ``acg.compile`` traces: its parameters and buffers are inputs."""

    def __init__(self, module: Module, forward: Callable) -> None:
        super().__init__()
        self.inner = module
        object.__setattr__(self, "_orig", forward)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig(*args, **kwargs)


class Router:
    """Installed as a module's ``forward`` for the call: its compiled program at the top,
    its own forward when already inside a routed forward or any trace."""

    __slots__ = ("module", "orig", "base", "compiled", "make")

    def __init__(self, module: Module, make: Callable[[Module, str], Callable]) -> None:
        self.module, self.make = module, make
        self.base = module.__dict__.get("forward", _MISSING)  # a forward set on the instance
        self.orig = type(module).forward.__get__(module) if self.base is _MISSING else self.base
        self.compiled: Callable | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _INSIDE.depth or TLS.mode_stack:  # traced into (or run by) an outer program
            return self.orig(*args, **kwargs)
        if self.compiled is None:
            self.compiled = self.make(_Forward(self.module, self.orig),
                                      f"{type(self.module).__name__}.forward")
        _INSIDE.depth += 1
        try:
            return self.compiled(*args, **kwargs)
        finally:
            _INSIDE.depth -= 1


class Routers:
    """One :class:`Router` per module, kept across calls (each holds its compiled forward)."""

    def __init__(self, make: Callable[[Module, str], Callable]) -> None:
        self.make = make
        self.by_id: dict[int, Router] = {}

    def get(self, modules: list[Module]) -> list[Router]:
        out = []
        for m in routable(modules):
            r = self.by_id.get(id(m))
            if r is None or r.module is not m or \
                    m.__dict__.get("forward", _MISSING) is not r.base:
                r = self.by_id[id(m)] = Router(m, self.make)
            out.append(r)
        return out

    def clear(self) -> None:
        self.by_id.clear()


@contextlib.contextmanager
def _routed(routers: list[Router]) -> Iterator[None]:
    saved = [(r.module.__dict__, r.base) for r in routers]
    for r in routers:
        r.module.__dict__["forward"] = r
    try:
        yield
    finally:
        for d, base in saved:
            if base is _MISSING:
                d.pop("forward", None)
            else:
                d["forward"] = base


def run_split(fn: Callable, args: tuple, kwargs: dict, routers: list[Router]) -> Any:
    """``fn`` run with its modules' forwards compiled and its backward under compiled
    autograd (JAX backend); everything else, hooks and the optimizer included, as eager."""
    with _routed(routers), compiled_backward("jax"):
        return fn(*args, **kwargs)
