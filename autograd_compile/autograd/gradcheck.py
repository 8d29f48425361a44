"""``gradcheck`` and ``gradgradcheck``: a function's backward against finite differences.

PyTorch's checks, for the custom Functions and ops people write: the analytical Jacobian
(one backward per output element, or one random projection in ``fast_mode``) must match
central differences of the function within ``atol + rtol * |numerical|``; a backward run
twice must agree within ``nondet_tol``; each gradient must have its input's shape (and
dtype, with ``check_grad_dtypes``). A mismatch raises :class:`GradcheckError` or, with
``raise_exception=False``, returns False.

>>> import autograd_compile as acg
>>> x = acg.randn(3, dtype=acg.float64, requires_grad=True)
>>> acg.autograd.gradcheck(lambda t: (t * t.sin()).sum(), (x,))
True
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A gradient check failed (PyTorch's ``torch.autograd.gradcheck.GradcheckError``)."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _floating(t: Any) -> bool:
    return isinstance(t, Tensor) and t.is_floating_point()


def _diff_inputs(inputs: tuple) -> list[int]:
    """Positions of the inputs the check differentiates (tensors that require grad)."""
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]


def _outputs(func: Callable, inputs: tuple) -> list[Tensor]:
    return [o for o in _as_tuple(func(*inputs)) if _floating(o)]


def _warn_precision(inputs: tuple, diff: list[int]) -> None:
    for i in diff:
        if inputs[i].is_floating_point() and inputs[i].element_size() < 8:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point or complex. This check will likely fail if all the "
                          "inputs are not of double precision floating point or complex.")


def _evaluate(func: Callable, inputs: tuple, at: int, values: np.ndarray) -> list[np.ndarray]:
    """The function's float outputs as float64 arrays, with input ``at`` replaced by
    ``values`` (every tensor input a fresh leaf that requires grad as the original did:
    no aliasing, and a function that differentiates inside, as gradgradcheck's does,
    still can)."""
    from .. import tensor
    args = []
    for i, x in enumerate(inputs):
        if i == at:
            x = tensor(values.reshape(tuple(x.shape)), dtype=x.dtype,
                       requires_grad=x.requires_grad)
        elif isinstance(x, Tensor):
            x = x.detach().clone().requires_grad_(x.requires_grad)
        args.append(x)
    return [np.asarray(o.detach().numpy(), dtype=np.float64).ravel()
            for o in _outputs(func, tuple(args))]


def _numerical(func: Callable, inputs: tuple, diff: list[int], eps: float,
               direction: list[np.ndarray] | None = None) -> list[list[np.ndarray]]:
    """Central differences: ``[input][output]`` Jacobian blocks of shape (input numel,
    output numel); with ``direction`` (one vector per input), one row per input: the
    derivative along it."""
    out: list[list[np.ndarray]] = []
    for k, i in enumerate(diff):
        x = np.asarray(inputs[i].detach().numpy(), dtype=np.float64).ravel()
        steps = [direction[k]] if direction is not None else np.eye(x.size)
        rows = []
        for step in steps:
            hi = _evaluate(func, inputs, i, x + eps * step)
            lo = _evaluate(func, inputs, i, x - eps * step)
            rows.append([(a - b) / (2 * eps) for a, b in zip(hi, lo)])
        out.append([np.stack([r[o] for r in rows]) for o in range(len(rows[0]))]
                   if rows else [])
    return out


def _backward(outputs: list[Tensor], diff_inputs: list[Tensor], o: int,
              grad_output: np.ndarray, check_dtypes: bool) -> list[np.ndarray]:
    """One backward of output ``o`` with ``grad_output``: each input's gradient, flat."""
    from .. import tensor
    from .engine import grad
    out = outputs[o]
    if not out.requires_grad:
        return [np.zeros(x.numel()) for x in diff_inputs]
    go = tensor(grad_output.reshape(tuple(out.shape)), dtype=out.dtype)
    grads = grad(out, diff_inputs, go, retain_graph=True, allow_unused=True)
    flat = []
    for x, g in zip(diff_inputs, grads):
        if g is None:
            flat.append(np.zeros(x.numel()))
            continue
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError("Gradient has incorrect size")
        if check_dtypes and g.dtype != x.dtype:
            raise GradcheckError("Gradient has dtype mismatch")
        flat.append(np.asarray(g.detach().numpy(), dtype=np.float64).ravel())
    return flat


def _analytical(outputs: list[Tensor], diff_inputs: list[Tensor], check_dtypes: bool
                ) -> list[list[np.ndarray]]:
    """``[input][output]`` blocks, one backward per output element."""
    blocks = [[np.zeros((x.numel(), o.numel())) for o in outputs] for x in diff_inputs]
    for o, out in enumerate(outputs):
        for e in range(out.numel()):
            onehot = np.zeros(out.numel())
            onehot[e] = 1.0
            for k, g in enumerate(_backward(outputs, diff_inputs, o, onehot, check_dtypes)):
                blocks[k][o][:, e] = g
    return blocks


def _fail(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def _compare(numerical: list, analytical: list, diff: list[int], atol: float, rtol: float,
             raise_exception: bool) -> bool:
    for k, i in enumerate(diff):
        for o, (n, a) in enumerate(zip(numerical[k], analytical[k])):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return _fail(f"Jacobian mismatch for output {o} with respect to input {i},\n"
                             f"numerical:{n}\nanalytical:{a}\n", raise_exception)
    return True


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func(*inputs)`` with respect to the inputs that require
    grad against central differences (PyTorch's ``torch.autograd.gradcheck``). Inputs
    should be float64; ``fast_mode`` compares one random projection ``v^T J u`` instead of
    the whole Jacobian. The batched and forward-mode checks are accepted and not run.

    >>> import autograd_compile as acg
    >>> w = acg.randn(2, 3, dtype=acg.float64, requires_grad=True)
    >>> acg.autograd.gradcheck(lambda w: w.tanh() @ w.T, w, fast_mode=True)
    True
    """
    inputs = _as_tuple(inputs)
    diff = _diff_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")
    _warn_precision(inputs, diff)
    if not check_backward_ad:
        return True
    outputs = _outputs(func, inputs)
    diff_inputs = [inputs[i] for i in diff]
    if fast_mode:
        return _fast_check(func, inputs, diff, outputs, eps, atol, rtol, nondet_tol,
                           check_grad_dtypes, raise_exception)
    analytical = _analytical(outputs, diff_inputs, check_grad_dtypes)
    again = _analytical(outputs, diff_inputs, check_grad_dtypes)
    numerical = _numerical(func, inputs, diff, eps)
    if not _compare(numerical, analytical, diff, atol, rtol, raise_exception):
        return False
    return _reentrant(analytical, again, nondet_tol, raise_exception)


def _reentrant(first: list, second: list, nondet_tol: float, raise_exception: bool) -> bool:
    """A backward run twice with the same inputs gives the same gradients."""
    for a_blocks, b_blocks in zip(first, second):
        for a, b in zip(a_blocks, b_blocks):
            if not np.allclose(a, b, rtol=0.0, atol=nondet_tol):
                return _fail("Backward is not reentrant, i.e., running backward with same "
                             "input and grad_output multiple times gives different values, "
                             "although analytical gradient matches numerical gradient.The "
                             f"tolerance for nondeterminism was {nondet_tol}.", raise_exception)
    return True


def _fast_check(func: Callable, inputs: tuple, diff: list[int], outputs: list[Tensor],
                eps: float, atol: float, rtol: float, nondet_tol: float, check_dtypes: bool,
                raise_exception: bool) -> bool:
    """``v^T J u`` for random unit ``u`` (per input) and ``v`` (per output): one backward
    per output, two evaluations per input."""
    rng = np.random.default_rng(0)
    us = [_unit(rng, inputs[i].numel()) for i in diff]
    vs = [_unit(rng, o.numel()) for o in outputs]
    numerical = _numerical(func, inputs, diff, eps, direction=us)
    diff_inputs = [inputs[i] for i in diff]
    for o in range(len(outputs)):
        grads = _backward(outputs, diff_inputs, o, vs[o], check_dtypes)
        again = _backward(outputs, diff_inputs, o, vs[o], check_dtypes)
        for k, i in enumerate(diff):
            a, n = float(grads[k] @ us[k]), float(numerical[k][o][0] @ vs[o])
            if not np.isclose(a, n, rtol=rtol, atol=atol):
                return _fail(f"Jacobian mismatch for output {o} with respect to input {i},\n"
                             f"numerical:{n}\nanalytical:{a}\n\nThe above quantities relating "
                             "the numerical and analytical jacobians are computed in fast "
                             "mode.", raise_exception)
            if not np.allclose(grads[k], again[k], rtol=0.0, atol=nondet_tol):
                return _reentrant([[grads[k]]], [[again[k]]], nondet_tol, raise_exception)
    return True


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    u = rng.standard_normal(n)
    return u / max(np.linalg.norm(u), 1e-12)


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Second derivatives: :func:`gradcheck` of the map ``(inputs, grad_outputs) ->
    gradients of func`` (PyTorch's ``torch.autograd.gradgradcheck``); ``grad_outputs``
    default to random float tensors that require grad.

    >>> import autograd_compile as acg
    >>> x = acg.randn(3, dtype=acg.float64, requires_grad=True)
    >>> acg.autograd.gradgradcheck(lambda t: t.pow(3).exp(), (x,))
    True
    """
    from .. import tensor
    from .engine import grad
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype,
                                    requires_grad=True) for o in _outputs(func, inputs))
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_grads(*args: Any) -> tuple:
        ins, gos = args[:n], args[n:]
        outs = _outputs(func, ins)
        diff = [ins[i] for i in _diff_inputs(ins)]
        grads = grad(outs, diff, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode)
