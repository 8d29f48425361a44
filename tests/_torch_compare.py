"""PyTorch as the oracle for a module: load torch's state_dict into ours (the keys must be
equal), run both on the same inputs, compare outputs and the gradients of inputs and
parameters. Tests using it call ``pytest.importorskip("torch")`` first."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import autograd_compile as acg
from conftest import assert_close


def to_acg(t: Any, requires_grad: bool = False) -> Any:
    """A torch tensor (or numpy array) as one of ours, same dtype and values."""
    value = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    return acg.tensor(value, requires_grad=requires_grad)


def load_torch_state(ours: Any, theirs: Any) -> None:
    """Copy torch's parameters and buffers into ``ours``; the key lists must match."""
    theirs_sd = theirs.state_dict()
    assert list(ours.state_dict()) == list(theirs_sd)
    ours.load_state_dict({k: to_acg(v) for k, v in theirs_sd.items()})


def compare_with_torch(ours: Any, theirs: Any, inputs: Sequence[np.ndarray], mode: Any,
                       kwargs: dict | None = None, torch_kwargs: dict | None = None,
                       grad_inputs: Sequence[bool] | None = None, rtol: float = 1e-5,
                       atol: float = 1e-5, out: Callable[[Any], Any] = lambda y: y,
                       run: Callable[..., Any] | None = None) -> None:
    """Forward values and every gradient (inputs marked in ``grad_inputs``, all
    parameters) of ``out(ours(*inputs))`` against torch's, backward run under ``mode()``;
    ``run`` (for example ``acg.compile(ours)``) replaces ``ours`` for the forward."""
    import torch
    kwargs = kwargs or {}
    torch_kwargs = kwargs if torch_kwargs is None else torch_kwargs
    grad_inputs = [np.issubdtype(np.asarray(x).dtype, np.floating) for x in inputs] \
        if grad_inputs is None else grad_inputs
    t_in = [torch.tensor(x, requires_grad=g) for x, g in zip(inputs, grad_inputs)]
    a_in = [acg.tensor(x, requires_grad=g) for x, g in zip(inputs, grad_inputs)]
    t_out = out(theirs(*t_in, **torch_kwargs))
    a_out = out((run or ours)(*a_in, **kwargs))
    assert tuple(a_out.shape) == tuple(t_out.shape)
    assert_close(a_out.detach().numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    cot = np.random.default_rng(0).standard_normal(tuple(t_out.shape)).astype(
        t_out.detach().numpy().dtype)
    t_out.backward(torch.tensor(cot))
    with mode():
        a_out.backward(acg.tensor(cot))
    for a, t, g in zip(a_in, t_in, grad_inputs):
        if g:
            assert_close(a.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
    t_params = dict(theirs.named_parameters())
    a_params = dict(ours.named_parameters())
    assert list(a_params) == list(t_params)
    for name, tp in t_params.items():
        ap = a_params[name]
        if tp.grad is None:
            assert ap.grad is None or not np.any(ap.grad.numpy()), name
        else:
            assert ap.grad is not None, name
            assert_close(ap.grad.numpy(), tp.grad.numpy(), rtol=rtol, atol=atol)
