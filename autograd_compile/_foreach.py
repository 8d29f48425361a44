"""PyTorch's ``torch._foreach_*``: one op over lists of tensors (EMA updates, hand-written
optimizers: timm's ``ModelEmaV3`` calls ``_foreach_lerp_``).

PyTorch fuses each into few kernels; here each is the op per tensor (every tensor is its own
array), with PyTorch's argument rules: a second argument may be a scalar, a list of scalars
or tensors (one per tensor) or one tensor; out-of-place forms return a tuple, in-place forms
(``_foreach_add_``) write each tensor and return the list itself, as PyTorch 2.13's do.
Autograd and every mode are the per-tensor ops'.

>>> import autograd_compile as acg
>>> ema, new = [acg.zeros(2), acg.ones(3)], [acg.ones(2), acg.full((3,), 3.0)]
>>> acg._foreach_lerp_(ema, new, 0.5) is ema
True
>>> [t.tolist() for t in ema], [t.tolist() for t in acg._foreach_add(ema, [1.0, 2.0])]
([[0.5, 0.5], [2.0, 2.0, 2.0]], [[1.5, 1.5], [4.0, 4.0, 4.0]])
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .tensor import Tensor

# per-tensor ops by arity; each has ``_foreach_<name>`` and ``_foreach_<name>_``
_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
          "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc")
_BINARY = "add sub mul div clamp_max clamp_min maximum minimum pow"
_TERNARY = "addcdiv addcmul lerp"


def _per_tensor(value: Any, n: int) -> list:
    """An argument as one value per tensor: a list or tuple gives its items (of the right
    number), anything else is the same for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            if value and all(isinstance(v, Tensor) for v in value):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                                   f"and {len(value)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(value)
    return [value] * n


def _columns(tensors: Sequence[Tensor], args: tuple, kwargs: dict) -> list[tuple[tuple, dict]]:
    n = len(tensors)
    cols = [_per_tensor(a, n) for a in args]
    kcols = {k: _per_tensor(v, n) for k, v in kwargs.items()}
    return [(tuple(c[i] for c in cols), {k: v[i] for k, v in kcols.items()}) for i in range(n)]


def _out_of_place(name: str, fn: Callable) -> Callable:
    def foreach(self: Sequence[Tensor], *args: Any, **kwargs: Any) -> tuple:
        if not isinstance(self, (list, tuple)):  # _foreach_pow(2.0, exponents): a scalar base
            exps = args[0]
            return tuple(fn(self, e, *args[1:], **kwargs) for e in exps)
        return tuple(fn(t, *a, **k) for t, (a, k) in zip(self, _columns(self, args, kwargs)))
    foreach.__name__ = foreach.__qualname__ = f"_foreach_{name}"
    foreach.__doc__ = f"``{name}`` of each tensor of a list (PyTorch's ``_foreach_{name}``)."
    return foreach


def _in_place(name: str, fn: Callable | None = None) -> Callable:
    method = f"{name}_"

    def foreach_(self: Sequence[Tensor], *args: Any, **kwargs: Any) -> Sequence[Tensor]:
        for t, (a, k) in zip(self, _columns(self, args, kwargs)):
            if hasattr(t, method):
                getattr(t, method)(*a, **k)
            else:  # (maximum_, minimum_: no Tensor method of ours) the result copied in
                t.copy_(fn(t, *a, **k))
        return self
    foreach_.__name__ = foreach_.__qualname__ = f"_foreach_{name}_"
    foreach_.__doc__ = f"``{method}`` on each tensor of a list, in place."
    return foreach_


def _value_positional(foreach: Callable) -> Callable:
    """``_foreach_addcmul(self, t1, t2, scalars)``: the fourth argument is ``value=``."""
    def call(self: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
        return foreach(self, tensor1, tensor2, value=value)
    call.__name__ = call.__qualname__ = foreach.__name__
    call.__doc__ = foreach.__doc__
    return call


def _build() -> dict[str, Callable]:
    import autograd_compile as acg
    found: dict[str, Callable] = {}
    for name in f"{_UNARY} {_BINARY} {_TERNARY}".split():
        fn = getattr(acg, name)
        found[f"_foreach_{name}"] = _out_of_place(name, fn)
        found[f"_foreach_{name}_"] = _in_place(name, fn)
    for name in ("addcmul", "addcdiv"):  # foreach takes their ``value`` positionally too
        for key in (f"_foreach_{name}", f"_foreach_{name}_"):
            found[key] = _value_positional(found[key])
    found["_foreach_clone"] = _out_of_place("clone", lambda t: t.clone())
    found["_foreach_max"] = _out_of_place("max", lambda t: t.max())
    found["_foreach_mm"] = _out_of_place("mm", lambda a, b: a.mm(b))
    found["_foreach_norm"] = _out_of_place(
        "norm", lambda t, ord=2, dtype=None: acg.linalg.vector_norm(t, ord, dtype=dtype))
    found["_foreach_powsum"] = _out_of_place(
        "powsum", lambda t, exponent=2, dtype=None: (t.abs() ** exponent).sum(dtype=dtype))
    found["_foreach_copy_"] = _in_place("copy")
    found["_foreach_zero_"] = _in_place("zero")
    return found


def install(namespace: dict) -> None:
    """Put every ``_foreach_*`` into ``namespace`` (the package's)."""
    namespace.update(_build())
