"""``LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search, as ``torch.optim``.

Every parameter is viewed as one flat vector; the two-loop recursion builds the direction from
the last ``history_size`` curvature pairs, and each iteration asks the closure for a new loss
and gradient. The control flow is data dependent (line search, stopping tests), so it runs in
Python over jax arrays, one closure call per function evaluation, as PyTorch does.

>>> import autograd_compile as acg
>>> w = acg.nn.Parameter(acg.tensor([3.0, -2.0], dtype=acg.float64))
>>> opt = acg.optim.LBFGS([w], line_search_fn="strong_wolfe")
>>> def closure():
...     opt.zero_grad(); loss = ((w - 1.0) ** 2).sum(); loss.backward(); return loss
>>> _ = opt.step(closure); [round(v, 6) for v in w.tolist()]
[1.0, 1.0]
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import jax.numpy as jnp

from ..autograd.grad_mode import enable_grad
from ..tensor import Tensor, _make
from .optimizer import Optimizer

__all__ = ["LBFGS"]

Array = Any


def _cubic_minimum(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                   bounds: tuple[float, float] | None = None) -> float:
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to ``bounds``."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:  # no real minimiser: bisect the interval
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(pos, lo), hi)


class _Point:
    """One trial of the line search: step t, loss f, flat gradient g, slope gtd = g . d."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t: float, f: float, g: Array, gtd: float) -> None:
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate: Callable[[float], tuple[float, Array]], d: Array, start: _Point,
                  t: float, c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                  max_ls: int = 25) -> tuple[float, Array, float, int]:
    """Bracket then zoom (Nocedal & Wright, alg. 3.5/3.6) with cubic interpolation.

    Returns ``(loss, flat_grad, t, evaluations)`` at the accepted step.
    """
    d_norm = float(jnp.max(jnp.abs(d)))
    f0, gtd0 = start.f, start.gtd

    def trial(step: float) -> _Point:
        f, g = evaluate(step)
        return _Point(step, f, g, float(jnp.vdot(g, d)))

    new, prev = trial(t), _Point(0.0, f0, start.g, gtd0)
    evals, it, done, bracket = 1, 0, False, None
    while it < max_ls:  # phase 1: find an interval that holds a Wolfe point
        if new.f > f0 + c1 * new.t * gtd0 or (it > 1 and new.f >= prev.f):
            bracket = [prev, new]
            break
        if abs(new.gtd) <= -c2 * gtd0:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, new]
            break
        step = _cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                              bounds=(new.t + 0.01 * (new.t - prev.t), new.t * 10))
        prev, new = new, trial(step)
        evals += 1
        it += 1
    if it == max_ls:
        bracket = [_Point(0, f0, start.g, gtd0), new]
    assert bracket is not None
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    insufficient = False
    while not done and it < max_ls:  # phase 2: zoom into the bracket
        if abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change:
            break
        a, b = bracket
        step = _cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        eps = 0.1 * (top - bottom)
        if min(top - step, step - bottom) < eps:  # too close to an end: step back inside
            if insufficient or step >= top or step <= bottom:
                step = top - eps if abs(step - top) < abs(step - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        new = trial(step)
        evals += 1
        it += 1
        if new.f > f0 + c1 * new.t * gtd0 or new.f >= bracket[low].f:
            bracket[high] = new
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd0:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """L-BFGS (one parameter group); ``step(closure)`` runs up to ``max_iter`` iterations.

    >>> import autograd_compile as acg
    >>> opt = acg.optim.LBFGS([acg.nn.Parameter(acg.ones(2))])
    >>> opt.defaults["max_eval"], opt.defaults["history_size"]
    (25, 100)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if not 0.0 <= float(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params: list[Tensor] = self.param_groups[0]["params"]

    def _load_entry(self, param: Tensor, name: str, value: Any) -> Any:
        # flat vectors and lists of them: no per-parameter shape to check
        if isinstance(value, list):
            return [_make(_array(v)) if hasattr(v, "shape") else v for v in value]
        return _make(_array(value)) if hasattr(value, "shape") and value.ndim > 0 else (
            float(value) if hasattr(value, "shape") else value)

    # -- the flat view ----------------------------------------------------------------------
    def _flat_grad(self) -> Array:
        return jnp.concatenate([jnp.zeros(p.numel(), p.dtype) if p._grad is None
                                else p._grad._data.reshape(-1) for p in self._params])

    def _params_data(self) -> list[Array]:
        return [p._data for p in self._params]

    def _set(self, arrays: list[Array]) -> None:
        for p, a in zip(self._params, arrays):
            p._data = a
            p._version += 1

    def _moved(self, base: list[Array], t: float, d: Array) -> list[Array]:
        """``base + t d`` parameter by parameter (d is the flat direction)."""
        out, offset = [], 0
        for a in base:
            n = a.size
            out.append(a + (t * d[offset:offset + n]).reshape(a.shape).astype(a.dtype))
            offset += n
        return out

    # -- the step ---------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Minimise ``closure()`` (which must zero the grads, backward and return the loss)."""
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        line_search = group["line_search_fn"]

        def evaluate() -> float:
            with enable_grad():
                return float(closure())

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        g = self._flat_grad()
        if float(jnp.max(jnp.abs(g))) <= tol_grad:
            return orig_loss
        mem = _Memory.load(state)
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                mem.reset(g)
            else:
                mem.update(g, history)
                mem.d = mem.direction(g, state, history)
            mem.prev_g, mem.prev_loss = g, loss
            t = (min(1.0, 1.0 / float(jnp.sum(jnp.abs(g)))) * lr if state["n_iter"] == 1
                 else lr)
            gtd = float(jnp.vdot(g, mem.d))
            if gtd > -tol_change:  # not a descent direction
                break
            ls_evals = 0
            base = self._params_data()
            if line_search is not None:
                if line_search != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")

                def along(step: float, d: Array = mem.d) -> tuple[float, Array]:
                    self._set(self._moved(base, step, d))
                    f = evaluate()
                    grad = self._flat_grad()
                    self._set(base)
                    return f, grad

                loss, g, t, ls_evals = _strong_wolfe(along, mem.d, _Point(0.0, loss, g, gtd), t,
                                                     tolerance_change=tol_change,
                                                     max_ls=max_eval - evals)
                self._set(self._moved(base, t, mem.d))
                optimal = float(jnp.max(jnp.abs(g))) <= tol_grad
            else:
                self._set(self._moved(base, t, mem.d))
                optimal = False
                if n_iter != max_iter:  # re-evaluate at the new point (not after the last)
                    loss = evaluate()
                    g = self._flat_grad()
                    optimal = float(jnp.max(jnp.abs(g))) <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            mem.t = t
            if (n_iter == max_iter or evals >= max_eval or optimal
                    or float(jnp.max(jnp.abs(mem.d * t))) <= tol_change
                    or abs(loss - mem.prev_loss) < tol_change):
                break
        mem.store(state)
        return orig_loss


class _Memory:
    """The curvature pairs (``old_dirs`` y, ``old_stps`` s, ``ro`` 1/y.s) and the last step."""

    def __init__(self, state: dict) -> None:
        self.d = _array(state.get("d"))
        self.t = state.get("t")
        self.old_dirs = [_array(v) for v in state.get("old_dirs") or []]
        self.old_stps = [_array(v) for v in state.get("old_stps") or []]
        self.ro = [float(v) for v in state.get("ro") or []]
        self.h_diag = float(state.get("H_diag", 1) or 1)
        self.prev_g = _array(state.get("prev_flat_grad"))
        self.prev_loss = state.get("prev_loss")

    @classmethod
    def load(cls, state: dict) -> "_Memory":
        return cls(state)

    def reset(self, g: Array) -> None:
        self.d, self.old_dirs, self.old_stps, self.ro, self.h_diag = -g, [], [], [], 1.0

    def update(self, g: Array, history: int) -> None:
        """Keep the pair (y, s) of the last step when it has positive curvature."""
        y, s = g - self.prev_g, self.d * self.t
        ys = float(jnp.vdot(y, s))
        if ys > 1e-10:
            if len(self.old_dirs) == history:
                self.old_dirs.pop(0), self.old_stps.pop(0), self.ro.pop(0)
            self.old_dirs.append(y)
            self.old_stps.append(s)
            self.ro.append(1.0 / ys)
            self.h_diag = ys / float(jnp.vdot(y, y))

    def direction(self, g: Array, state: dict, history: int) -> Array:
        """The two-loop recursion: d = -H g with H from the stored pairs."""
        al = [0.0] * len(self.old_dirs)
        q = -g
        for i in range(len(self.old_dirs) - 1, -1, -1):
            al[i] = float(jnp.vdot(self.old_stps[i], q)) * self.ro[i]
            q = q - al[i] * self.old_dirs[i]
        r = q * self.h_diag
        for i in range(len(self.old_dirs)):
            be = float(jnp.vdot(self.old_dirs[i], r)) * self.ro[i]
            r = r + (al[i] - be) * self.old_stps[i]
        state["al"] = al + [None] * (history - len(al))
        return r

    def store(self, state: dict) -> None:
        """Back into ``state`` with PyTorch's keys (tensors as Tensors, scalars as floats)."""
        state.update(d=_make(self.d), t=self.t, old_dirs=[_make(v) for v in self.old_dirs],
                     old_stps=[_make(v) for v in self.old_stps], ro=list(self.ro),
                     H_diag=self.h_diag, prev_flat_grad=_make(self.prev_g),
                     prev_loss=self.prev_loss)


def _array(value: Any) -> Any:
    """A jax array from a state entry (our Tensor, a torch tensor from a loaded dict, or None)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return value._data
    if hasattr(value, "detach"):
        return jnp.asarray(value.detach().cpu().numpy())
    return jnp.asarray(value)
