"""The meta device: shapes and dtypes without data, as PyTorch's ``device("meta")``
(``model.to("meta")`` for torch.func's ensembling, ``to_empty`` to give it storage)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.func import functional_call, stack_module_state, vmap


def _behaviour(T):
    """What a program sees of meta tensors, as comparable values."""
    x = T.ones(2, 3).to("meta")
    y = (x @ x.T + 1).softmax(-1).sum(0)
    out = [repr(x), str(x.device), x.is_meta, T.ones(1).is_meta, tuple(y.shape), repr(y),
           repr(T.empty(3, 4, device="meta")), repr(T.nn.Parameter(T.empty(2, device="meta")))]
    for bad in (x.item, x.tolist, lambda: x.to("cpu"), x.numpy,
                lambda: T.nn.Linear(2, 3).to("meta").to("cpu")):
        with pytest.raises(Exception) as info:
            bad()
        out.append((type(info.value).__name__, str(info.value)))
    m = T.nn.Linear(2, 3).to("meta")
    out += [m.weight.is_meta, isinstance(m.weight, T.nn.Parameter), m.weight.requires_grad]
    m.to_empty(device="cpu")
    out += [m.weight.is_meta, str(m.weight.device), tuple(m.weight.shape),
            isinstance(m.weight, T.nn.Parameter)]
    return out


def test_meta_tensors_behave_as_pytorchs():
    got = _behaviour(acg)
    assert got[:4] == ["tensor(..., device='meta', size=(2, 3))", "meta", True, False]
    assert got[4] == (2,) and got[5] == "tensor(..., device='meta', size=(2,))"
    assert got[-7:] == [True, True, True, False, "cpu", (3, 2), True]
    torch = pytest.importorskip("torch")
    want = _behaviour(torch)
    assert got == [tuple(w) if isinstance(w, torch.Size) else w for w in want]


def test_ensembling_with_a_meta_base_model(mode):
    """torch.func's model-ensembling tutorial: stacked parameters, a meta copy of one model
    as the stateless base, vmap over functional_call: each slice is that model's output,
    and gradients reach the stacked parameters."""
    acg.manual_seed(0)
    models = [acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.Tanh(), acg.nn.Linear(4, 2))
              for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    x = acg.randn(5, 3)

    def f(p, b, x):
        return functional_call(base, (p, b), (x,))
    out = vmap(f, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), atol=1e-6)
    with mode():
        out.pow(2).sum().backward()
    for i, m in enumerate(models):
        m(x).pow(2).sum().backward()
        for name, p in m.named_parameters():
            np.testing.assert_allclose(params[name].grad[i].numpy(), p.grad.numpy(), atol=1e-5)
