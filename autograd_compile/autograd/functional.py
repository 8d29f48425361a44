"""``acg.autograd.functional``: PyTorch's jacobian, hessian, vjp, jvp, hvp, vhp, computed with
our autograd (``acg.autograd.grad``), so ``create_graph=True`` gives results that differentiate
again; ``strict`` raises where an output does not depend on an input.

>>> import autograd_compile as acg
>>> from autograd_compile.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, acg.tensor([1.0, 2.0])).tolist()
[[2.0, 0.0], [0.0, 4.0]]
"""
from __future__ import annotations

from typing import Any, Callable

from autograd_compile.tensor import Tensor

from .engine import grad as _grad
from .grad_mode import enable_grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _tuple(x: Any, arg: str, fn: str) -> tuple[bool, tuple]:
    """(was a tuple, the tensors as a tuple), checking each is a Tensor as PyTorch does."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the value at index {i} has type {type(t)}.")
    return is_tuple, items


def _grad_ready(inputs: tuple, create_graph: bool) -> tuple:
    """Fresh leaves (or graph-connected views when ``create_graph``) that require grad."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(True) for t in inputs)


def _grads(outputs: tuple, inputs: tuple, grad_outputs: Any, create_graph: bool,
           strict: bool, fn: str) -> tuple:
    """d(outputs . grad_outputs)/d(inputs), zeros where independent (an error when strict)."""
    needed = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not needed:
        got: tuple = (None,) * len(inputs)
    else:
        got = _grad([o for o, _ in needed], list(inputs), [g for _, g in needed],
                    create_graph=create_graph, retain_graph=True, allow_unused=True)
    out = []
    for i, (g, x) in enumerate(zip(got, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            g = x.new_zeros(tuple(x.shape)) if hasattr(x, "new_zeros") else x.detach() * 0
        out.append(g)
    return tuple(out)


def _finish(items: tuple, create_graph: bool, was_tuple: bool) -> Any:
    items = items if create_graph else tuple(t.detach() for t in items)
    return items if was_tuple else items[0]


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    in_tuple, xs = _tuple(inputs, "inputs", "vjp")
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")
            vs: tuple = (outs[0].new_ones(tuple(outs[0].shape)),)
        else:
            vs = _tuple(v, "v", "vjp")[1]
        got = _grads(outs, xs, vs, create_graph, strict, "vjp")
    return _finish(outs, create_graph, out_tuple), _finish(got, create_graph, in_tuple)


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), J v), by the double-vjp trick (a vjp is linear in its cotangent)."""
    in_tuple, xs = _tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        vs: tuple = (xs[0].new_ones(tuple(xs[0].shape)),)
    else:
        vs = _tuple(v, "v", "jvp")[1]
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "jvp")
        us = tuple(o.new_zeros(tuple(o.shape)).requires_grad_(True) for o in outs)
        g = _grads(outs, xs, us, True, strict, "jvp")
        jv = _grads(g, us, vs, create_graph, strict, "jvp")
    return _finish(outs, create_graph, out_tuple), _finish(jv, create_graph, out_tuple)


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian: for outputs o_i and inputs x_j, J[i][j] of shape o_i.shape + x_j.shape."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                         'If your function has more outputs than inputs, "forward-mode" tends to '
                         'be more performant. Otherwise, prefer to use "reverse-mode".')
    import autograd_compile as acg
    in_tuple, xs = _tuple(inputs, "inputs", "jacobian")
    _check_vectorize("jacobian", vectorize, strict, create_graph, strategy)
    if vectorize and not create_graph:  # one batched program (JAX's vmap over vjp or jvp)
        jac = acg.func.jacfwd if strategy == "forward-mode" else acg.func.jacrev
        return _vectorized(jac(func, tuple(range(len(xs)))), xs, in_tuple)
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "jacobian")
        rows = []
        for o in outs:
            flat = o.reshape(-1)
            per_input: list = [[] for _ in xs]
            for k in range(flat.numel()):
                onehot = acg.zeros(flat.numel(), dtype=o.dtype)
                onehot[k] = 1
                got = _grads((o,), xs, (onehot.reshape(tuple(o.shape)),), create_graph,
                             strict, "jacobian")
                for j, g in enumerate(got):
                    per_input[j].append(g)
            rows.append(tuple(
                (acg.stack(gs) if gs else x.new_zeros((0,) + tuple(x.shape))).reshape(
                    tuple(o.shape) + tuple(x.shape)) for gs, x in zip(per_input, xs)))
    rows = [_finish(r, create_graph, True) for r in rows]
    rows = [r if in_tuple else r[0] for r in rows]
    return tuple(rows) if out_tuple else rows[0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of scalar ``func``: the Jacobian of its gradient."""
    in_tuple, xs = _tuple(inputs, "inputs", "hessian")
    _check_vectorize("hessian", vectorize, strict, create_graph, outer_jacobian_strategy)
    if vectorize and not create_graph:
        import autograd_compile as acg
        outer = acg.func.jacfwd if outer_jacobian_strategy == "forward-mode" else acg.func.jacrev
        nums = tuple(range(len(xs)))
        return _vectorized(outer(acg.func.jacrev(_scalar(func), nums), nums), xs, in_tuple)

    def gradient(*ys: Any) -> Any:
        out = func(*ys)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        g = _grads((out.reshape(()),), ys, (out.new_ones(()),), True, strict, "hessian")
        return g if in_tuple else g[0]
    return jacobian(gradient, xs if in_tuple else xs[0], create_graph, strict, vectorize,
                    outer_jacobian_strategy)


def _check_vectorize(fn: str, vectorize: bool, strict: bool, create_graph: bool,
                     strategy: str) -> None:
    """PyTorch's refusals for the vectorized and forward-mode Jacobians."""
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                  '`strategy="forward-mode"` are not supported together (yet). '
                                  'Please either set `create_graph=False` or '
                                  '`strategy="reverse-mode"`.')


def _vectorized(jac: Callable, xs: tuple, in_tuple: bool) -> Any:
    """``jac(*xs)`` (per output, a tuple over inputs) in PyTorch's nesting."""
    got = jac(*[x.detach() for x in xs])
    out_tuple = isinstance(got[0], (tuple, list))
    rows = [tuple(r) for r in got] if out_tuple else [tuple(got)]
    rows = [r if in_tuple else r[0] for r in rows]
    return tuple(rows) if out_tuple else rows[0]


def _scalar(func: Callable) -> Callable:
    """``func`` checked to return a single element (hessian's requirement), as a 0-d tensor."""
    def scalar(*ys: Any) -> Any:
        out = func(*ys)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        return out.reshape(())
    return scalar


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for scalar ``func``."""
    in_tuple, xs = _tuple(inputs, "inputs", "vhp")
    vs = _tuple(v, "v", "vhp")[1] if v is not None else None
    if vs is None and (len(xs) != 1 or xs[0].numel() != 1):
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    with enable_grad():
        xs = _grad_ready(xs, create_graph)
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hvp should contain "
                               "a single element")
        g = _grads((out.reshape(()),), xs, (out.new_ones(()),), True, strict, "vhp")
        vs = vs if vs is not None else (xs[0].new_ones(tuple(xs[0].shape)),)
        h = _grads(g, xs, vs, create_graph, strict, "vhp")
    return _finish((out,), create_graph, False), _finish(h, create_graph, in_tuple)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), H v); for the twice-differentiable functions here H is symmetric."""
    return vhp(func, inputs, v, create_graph, strict)
