"""``acg.utils.checkpoint``: activation checkpointing (PyTorch's ``torch.utils.checkpoint``).

The checkpointed forward runs under ``no_grad`` and keeps only its inputs (and the random
state); the backward reruns the function with grad enabled, from the same random state, and
differentiates the rerun. Gradients equal the unchecked function's, dropout included.

>>> import autograd_compile as acg
>>> from autograd_compile.utils.checkpoint import checkpoint
>>> x = acg.tensor([1.0, 2.0], requires_grad=True)
>>> checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False).sum().backward()
>>> [round(v, 4) for v in x.grad.tolist()]
[1.0806, -2.6146]
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, ContextManager, Iterable

from autograd_compile.autograd.engine import grad as _grad
from autograd_compile.autograd.function import Function
from autograd_compile.autograd.grad_mode import enable_grad, is_grad_enabled
from autograd_compile.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop"]

_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be "
    "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
    "without use_reentrant will raise an exception. use_reentrant=False is "
    "recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")
_SEQUENTIAL_WARNING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
    "parameter should be passed explicitly. "
    "In version 2.9 we will raise an exception if use_reentrant "
    "is not passed. use_reentrant=False is "
    "recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool) -> Any:
    """PyTorch's switch for stopping a checkpoint's recomputation once the tensors backward
    needs are recomputed. Here the recomputation always runs the whole function (PyTorch's
    ``enable=False``): side effects after the last saved tensor, a forward hook of the last
    layer, run again in backward; gradients are the same either way.

    >>> import autograd_compile as acg
    >>> with set_checkpoint_early_stop(False):
    ...     y = checkpoint(acg.nn.Linear(2, 1), acg.ones(1, 2, requires_grad=True),
    ...                    use_reentrant=False)
    """
    yield  # (nothing to switch: every recomputation here is PyTorch's enable=False one)


def noop_context_fn() -> tuple[ContextManager, ContextManager]:
    """The default ``context_fn``: no context around the forward nor the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _rng_state() -> Any:
    from autograd_compile.kernels import random as R
    return R.default_generator.get_state()


def _set_rng_state(state: Any) -> None:
    from autograd_compile.kernels import random as R
    R.default_generator.set_state(state)


def _closure_leaves(function: Callable) -> list[Tensor]:
    """Tensors requiring grad that ``function`` reaches besides its arguments: the parameters
    of a module (or a module's bound method), and tensors or modules its closure, defaults
    or the globals it names hold."""
    from autograd_compile.nn.module import Module
    found: list[Any] = []
    owner = getattr(function, "__self__", None)
    for obj in (function, owner):
        if isinstance(obj, Module):
            found.append(obj)
    for cell in getattr(function, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    found.extend(getattr(function, "__defaults__", None) or ())
    code, glb = getattr(function, "__code__", None), getattr(function, "__globals__", {})
    found.extend(glb[n] for n in (code.co_names if code else ()) if n in glb)  # global modules
    leaves: list[Tensor] = []
    for obj in found:
        if isinstance(obj, Module):
            leaves.extend(p for p in obj.parameters() if p.requires_grad)
        elif isinstance(obj, Tensor) and obj.requires_grad:
            leaves.append(obj)
        elif isinstance(obj, (list, tuple)):
            leaves.extend(p for m in obj if isinstance(m, Module) for p in m.parameters()
                          if p.requires_grad)
    seen: set[int] = set()
    return [t for t in leaves if not (id(t) in seen or seen.add(id(t)))]


class _Checkpoint(Function):
    """Forward without saving intermediates; backward reruns ``run`` and differentiates it."""

    @staticmethod
    def forward(ctx: Any, run: Callable, n_args: int, preserve: bool, recompute_ctx: Callable,
                *tensors: Tensor) -> Any:
        ctx.run, ctx.n_args, ctx.preserve, ctx.recompute_ctx = run, n_args, preserve, recompute_ctx
        ctx.rng = _rng_state() if preserve else None
        ctx.save_for_backward(*tensors)
        out = run(*tensors[:n_args])
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o.detach() if isinstance(o, Tensor) else o for o in outs)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        tensors = ctx.saved_tensors
        args, leaves = tensors[:ctx.n_args], tensors[ctx.n_args:]
        create_graph = is_grad_enabled()  # the engine records the backward: double backward
        inputs = list(args) if create_graph else [a.detach().requires_grad_(a.requires_grad)
                                                  for a in args]
        state = _rng_state() if ctx.preserve else None
        if ctx.preserve:
            _set_rng_state(ctx.rng)  # the rerun draws the forward's dropout masks again
        try:
            with enable_grad(), ctx.recompute_ctx():
                out = ctx.run(*inputs)
        finally:
            if ctx.preserve:
                _set_rng_state(state)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grad_outputs)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        wrt = [t for t in (*inputs, *leaves) if t.requires_grad]
        if not pairs or not wrt:
            return (None,) * 4 + (None,) * len(tensors)
        grads = iter(_grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                           allow_unused=True, create_graph=create_graph))
        result = [next(grads) if t.requires_grad else None for t in (*inputs, *leaves)]
        return (None, None, None, None, *result)


def _split(args: tuple, kwargs: dict) -> tuple[list[Tensor], Callable]:
    """The tensor arguments (positional and keyword), and how to rebuild the call from them."""
    flat = list(args) + list(kwargs.values())
    where = [i for i, a in enumerate(flat) if isinstance(a, Tensor)]
    keys = list(kwargs)

    def rebuild(tensors: Iterable[Tensor]) -> tuple[tuple, dict]:
        full = list(flat)
        for i, t in zip(where, tensors):
            full[i] = t
        return tuple(full[:len(args)]), dict(zip(keys, full[len(args):]))
    return [flat[i] for i in where], rebuild


def _traced(tensors: list[Tensor]) -> bool:
    """Inside ``acg.compile``'s joint trace: the forward is one graph there and the
    partitioner decides what the backward keeps (its random draws are key inputs of the
    program, which a Python rerun could not replay)."""
    from autograd_compile.aot.trace import _SwapMode
    from autograd_compile.modes import current_modes
    from autograd_compile.tracing.fake import FakeTensor
    return (any(isinstance(t, FakeTensor) for t in tensors)
            or any(isinstance(m, _SwapMode) for m in current_modes()))


def _marked(run: Callable, tensors: list[Tensor]) -> Any:
    """``run(*tensors)``; inside ``acg.compile``'s joint trace, the nodes it adds are marked
    ``meta["recompute"]`` so the partitioner recomputes them in the backward program instead
    of saving them (rematerialisation: the checkpoint is part of the program)."""
    from autograd_compile.aot.trace import _SwapMode
    from autograd_compile.modes import current_modes
    swap = next((m for m in current_modes() if isinstance(m, _SwapMode)), None)
    if swap is None:
        return run(*tensors)
    graph = swap.state.tracer.graph
    before = set(graph.nodes)
    out = run(*tensors)
    for n in graph.nodes:
        if n not in before and n.op == "call_function":
            n.meta["recompute"] = True
    return out


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple[ContextManager, ContextManager]] = noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True,
               **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its intermediates for backward; the
    backward recomputes them (with the same random state when ``preserve_rng_state``).

    Both ``use_reentrant`` values give the non-reentrant semantics (gradients also reach the
    parameters of modules the function closes over).

    >>> import autograd_compile as acg
    >>> lin = acg.nn.Linear(2, 1)
    >>> x = acg.ones(3, 2, requires_grad=True)
    >>> checkpoint(lin, x, use_reentrant=False).sum().backward()
    >>> lin.weight.grad.tolist()
    [[3.0, 3.0]]
    """
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_ctx, _ = context_fn()
    tensors, rebuild = _split(args, kwargs)
    leaves = [t for t in _closure_leaves(function) if all(t is not a for a in tensors)]
    if use_reentrant and is_grad_enabled() and not any(
            t.requires_grad for t in tensors) and not leaves:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)

    shape: list[bool] = []  # whether the function returned a tuple (set by the forward)

    def run(*ts: Tensor) -> Any:
        a, kw = rebuild(ts)
        out = function(*a, **kw)
        shape[:] = [isinstance(out, tuple)]
        return out

    def recompute_ctx() -> ContextManager:
        return context_fn()[1]
    if (_traced(tensors) or not is_grad_enabled()
            or not any(t.requires_grad for t in (*tensors, *leaves))):
        with forward_ctx:
            return _marked(run, tensors)  # nothing to differentiate, or acg.compile's trace
    with forward_ctx:
        outs = _Checkpoint.apply(run, len(tensors), preserve, recompute_ctx, *tensors, *leaves)
    return outs if shape[0] else outs[0]


def checkpoint_sequential(functions: Any, segments: int, input: Tensor,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run a sequence of modules (or an ``nn.Sequential``) in ``segments`` chunks, each
    checkpointed but the last (whose activations backward needs at once).

    >>> import autograd_compile as acg
    >>> net = acg.nn.Sequential(acg.nn.Linear(2, 2), acg.nn.ReLU(), acg.nn.Linear(2, 1))
    >>> x = acg.ones(4, 2, requires_grad=True)
    >>> y = checkpoint_sequential(net, 2, x, use_reentrant=False)
    >>> tuple(y.shape)
    (4, 1)
    """
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    from autograd_compile.nn.module import Module
    if isinstance(functions, Module):
        functions = list(functions.children())
    functions = list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]

        def run(x: Any, chunk: list = chunk) -> Any:
            for f in chunk:
                x = f(x)
            return x
        run_leaves = chunk  # closure: the chunk's modules give the parameters
        input = checkpoint(_bind(run, run_leaves), input, use_reentrant=use_reentrant,  # noqa: A001
                           preserve_rng_state=preserve)
    for f in functions[end + 1:]:
        input = f(input)  # noqa: A001
    return input


def _bind(run: Callable, chunk: list) -> Callable:
    """``run`` as a closure over ``chunk`` (so its modules' parameters are found)."""
    def call(x: Any) -> Any:
        return run(x, chunk)
    return call
