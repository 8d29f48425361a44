"""``Optimizer``: PyTorch's parameter-group contract around one jitted update.

Each algorithm is a pure rule on jax arrays (``_rules.py``); ``step()`` gathers
every parameter with a gradient, its state and its group's hyperparameters,
and calls ONE jitted function that applies the rule to all of them. Float
hyperparameters (``lr``, ``betas``, ...) are runtime inputs of that function,
so a scheduler changing ``group["lr"]`` never recompiles; only options that
change the program's structure (``nesterov``, ``amsgrad``, ...) are static.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.ones(2))
>>> opt = acg.optim.SGD([{"params": [w], "lr": 0.5}])
>>> (w * w).sum().backward(); opt.step(); w.tolist()
[0.0, 0.0]
"""
from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from itertools import chain
from typing import Any, Callable, Iterable

import jax
import jax.numpy as jnp

from .. import journal
from ..autograd.grad_mode import enable_grad
from ..kernels._xp import _ARRAY
from ..tensor import Tensor, _make

_GRAD = Tensor.grad  # the property zero_grad may bypass outside a backward

Rule = Callable[..., tuple[Any, dict]]


class _RequiredParameter:
    """Marks a default that every parameter group must give (PyTorch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


@functools.partial(jax.jit, static_argnums=(0, 1))
def _apply(rule: Rule, statics: tuple, params: tuple, grads: tuple, states: tuple,
           hypers: tuple) -> tuple[tuple, tuple]:
    """Every group's rule over every parameter: the whole ``step()`` as one XLA program."""
    new_params, new_states = [], []
    for opts, ps, gs, ss, h in zip(statics, params, grads, states, hypers):
        out = [_as_real_pairs(rule, p, g, s, h, opts) if jnp.iscomplexobj(p)
               else rule(p, g, s, h, opts) for p, g, s in zip(ps, gs, ss)]
        # a gradient of another dtype must not change the parameter's (PyTorch keeps it)
        new_params.append(tuple(o[0].astype(p.dtype) for o, p in zip(out, ps)))
        new_states.append(tuple(o[1] for o in out))
    return tuple(new_params), tuple(new_states)


def _real_pairs(x: Any) -> Any:
    return jnp.stack([x.real, x.imag], -1)  # torch.view_as_real's layout


def _as_real_pairs(rule: Rule, p: Any, g: Any, s: dict, h: dict, opts: tuple) -> tuple:
    """A complex parameter stepped as PyTorch does: the rule on ``view_as_real`` of the
    parameter, its gradient and its complex state (so |g|, g*g and max act on the real and
    imaginary parts apart); state of the parameter's shape goes back to complex."""
    pairs = p.shape + (2,)
    new_p, new_s = rule(_real_pairs(p), _real_pairs(g.astype(p.dtype)),
                        {k: _real_pairs(v) if jnp.iscomplexobj(v) else v for k, v in s.items()},
                        h, opts)
    back = lambda v: jax.lax.complex(v[..., 0], v[..., 1]) if v.shape == pairs else v  # noqa: E731
    return back(new_p), {k: back(v) for k, v in new_s.items()}


def compile_cache_size() -> int:
    """How many XLA programs the shared update function holds (tests count recompiles)."""
    return _apply._cache_size()


def _as_floats(v: Any) -> float | tuple[float, ...]:
    # float() keeps one abstract signature: an int or a Tensor lr must not retrace
    return tuple(float(x) for x in v) if isinstance(v, (tuple, list)) else float(v)


def _device_scalars(value: float | tuple[float, ...]) -> Any:
    return tuple(map(jnp.asarray, value)) if isinstance(value, tuple) else jnp.asarray(value)


def _write_back(params: list[Tensor], states: list[dict], new_params: tuple,
                new_states: tuple) -> None:
    """The update's outputs into the parameters (in place, as PyTorch) and their state."""
    if journal.active():  # a step inside a backward hook: record, so a failure rolls back
        for p, a in zip(params, new_params):
            p._set_data(a)
    else:
        for p, a in zip(params, new_params):
            p._store = a  # what the ``_data`` setter does, without the call
            p._version += 1
    for s, ns in zip(states, new_states):
        for k, v in ns.items():
            if k in s:
                s[k]._data = v
            else:  # a lazily created entry (SGD's first momentum buffer)
                s[k] = _make(v)


def _value(t: Tensor) -> Any:
    """``t._data`` without the property call where the value is a jax array already."""
    s = t._store
    return s if type(s) is _ARRAY else t._data


def _typename(v: Any) -> str:
    return f"{type(v).__module__}.{type(v).__qualname__}"


class Optimizer:
    """Base class: parameter groups, per-parameter ``state`` and the jitted ``step``.

    Subclasses set ``_rule`` (a pure update), ``_hyper`` (float options passed at run time),
    ``_static(group)`` (options that shape the program) and ``_init_state(p, group)``.
    """

    _rule: Rule
    _hyper: tuple[str, ...] = ("lr",)

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.defaults = defaults
        self._hyper_cache: dict[int, tuple[list, dict]] = {}
        self.state: defaultdict[Any, dict] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {group[k]}" for k in sorted(group) if k != "params"]
        return "\n".join(lines + [")"])

    # -- parameter groups ------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to optimize.

        >>> import autograd_compile as acg
        >>> a, b = acg.nn.Parameter(acg.ones(1)), acg.nn.Parameter(acg.ones(1))
        >>> opt = acg.optim.SGD([a], lr=0.1); opt.add_param_group({"params": [b], "lr": 1.0})
        >>> [g["lr"] for g in opt.param_groups]
        [0.1, 1.0]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        self._check_params(param_group["params"])
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        existing = set(chain.from_iterable(g["params"] for g in self.param_groups))
        if not existing.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    @staticmethod
    def _check_params(params: list[Any]) -> None:
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

    # -- gradients ------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros."""
        direct = set_to_none and not journal.active()  # nothing to record for an undo
        for group in self.param_groups:
            for p in group["params"]:
                if p._grad is None:
                    continue
                if direct and type(p).grad is _GRAD:
                    p._grad = None  # the setter's whole effect outside a backward
                elif set_to_none:
                    p.grad = None
                else:
                    p.grad = _make(jnp.zeros_like(p._grad._data))

    # -- the step -------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        groups = self.param_groups
        live = [[p for p in g["params"] if p._grad is not None] for g in groups]
        if not any(live):
            return loss
        states = [self._states_of(ps, g) for ps, g in zip(live, groups)]
        new_params, new_states = _apply(
            type(self)._rule,
            tuple([self._static(g) for g in groups]),
            tuple([tuple([_value(p) for p in ps]) for ps in live]),
            tuple([tuple([_value(p._grad) for p in ps]) for ps in live]),
            tuple([tuple([{k: v._data for k, v in s.items()} for s in ss]) for ss in states]),
            tuple([self._hyperparameters(i, g) for i, g in enumerate(groups)]))
        for ps, ss, nps, nss in zip(live, states, new_params, new_states):
            _write_back(ps, ss, nps, nss)
        return loss

    def _states_of(self, params: list[Tensor], group: dict) -> list[dict[str, Tensor]]:
        """Each parameter's state dict, created (``_init_state``) at its first step."""
        if self._stateless(group):  # nothing to create: no per-parameter init call per step
            state = self.state
            return [state[p] for p in params]
        out = []
        for p in params:
            state = self.state[p]
            if not state:
                state.update({k: _make(v) for k, v in self._init_state(p._data, group).items()})
            out.append(state)
        return out

    def _hyperparameters(self, index: int, group: dict) -> dict[str, Any]:
        """The group's float options as weakly typed device scalars, re-made only on change.

        Arrays, not Python floats: jit converts floats in a pytree on every call (~100 us
        for Adam's five); weak typing keeps a float32 parameter's update in float32.
        """
        raw = [group[name] for name in self._hyper]
        hit = self._hyper_cache.get(index)
        if hit is not None and hit[0] == raw:
            return hit[1]
        old = hit[1] if hit is not None and len(hit[0]) == len(raw) else {}
        h = {}
        for name, value in zip(self._hyper, raw):
            value = _as_floats(value)
            same = name in old and _as_floats(old[name]) == value
            h[name] = old[name] if same else _device_scalars(value)
        self._hyper_cache[index] = (raw, h)
        return h

    def _static(self, group: dict) -> tuple:
        return ()

    def _init_state(self, p: jax.Array, group: dict) -> dict[str, jax.Array]:
        return {}

    def _stateless(self, group: dict) -> bool:
        """True when ``_init_state`` gives every parameter of ``group`` an empty state."""
        return type(self)._init_state is Optimizer._init_state

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's layout: ``{"state": {index: {...}}, "param_groups": [{..., "params": [index]}]}``.

        >>> import autograd_compile as acg
        >>> w = acg.nn.Parameter(acg.ones(1)); opt = acg.optim.Adam([w])
        >>> (w * w).sum().backward(); opt.step()
        >>> sd = opt.state_dict(); sorted(sd["state"][0]), sd["param_groups"][0]["params"]
        (['exp_avg', 'exp_avg_sq', 'step'], [0])
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): dict(v)
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load what ``state_dict()`` returned; validated first, so a bad dict changes nothing."""
        saved_groups = state_dict["param_groups"]
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"])
               for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in self.param_groups)))
        state: defaultdict[Any, dict] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = {n: self._load_entry(id_map[k], n, x) for n, x in v.items()}
            else:
                state[k] = v
        groups = [{**{k: v for k, v in s.items() if k != "params"}, "params": g["params"]}
                  for g, s in zip(self.param_groups, saved_groups)]
        self.state, self.param_groups = state, groups

    def _load_entry(self, param: Tensor, name: str, value: Any) -> Any:
        """One loaded state entry as this optimizer keeps it (subclasses with other layouts)."""
        return _cast_state(param, name, value)


def _foreign(value: Any) -> Any:
    """A torch tensor (a state_dict saved by torch.optim) as our Tensor; anything else as is."""
    if not isinstance(value, Tensor) and hasattr(value, "detach") and hasattr(value, "numpy"):
        import numpy as np
        return _make(jnp.asarray(np.asarray(value.detach().cpu().numpy())))
    return value


def _cast_state(param: Tensor, name: str, value: Any) -> Any:
    """A fresh tensor for one loaded state entry: param's dtype for floats, 'step' as is."""
    value = _foreign(value)
    if not isinstance(value, Tensor):
        return value
    array = value._data
    if name != "step" and array.ndim > 0:  # 0-d entries (step, mu_product, eta) keep theirs
        factored = array.ndim == param.ndim and all(a in (1, b) for a, b in
                                                    zip(array.shape, param.shape))
        if not factored:  # Adafactor's row/col factors have 1 where they reduce
            raise ValueError(f"loaded optimizer state {name!r} has shape {tuple(array.shape)}, "
                             f"but its parameter has shape {tuple(param.shape)}")
        if jnp.issubdtype(param.dtype, jnp.floating):
            array = array.astype(param.dtype)
    return _make(array)
