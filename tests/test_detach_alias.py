"""``detach()`` shares its tensor's storage as in PyTorch: in-place ops on it (an EMA's
``ema_p.detach().mul_(d)``, ``state_dict()`` values) change the tensor; copies do not."""
import copy
import pickle

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


def test_inplace_on_detached_parameter_and_buffer_write_through():
    p = acg.nn.Parameter(acg.ones(2))
    p.detach().mul_(3.0)
    assert p.tolist() == [3.0, 3.0] and p.requires_grad and p.is_leaf
    bn = acg.nn.BatchNorm1d(2)
    bn.running_mean.detach().add_(1.0)
    assert bn.running_mean.tolist() == [1.0, 1.0]
    assert p.detach().data_ptr() == p.data_ptr()


class _Ema:
    """YOLOv5's ModelEMA update: in place on the EMA model's state_dict values."""

    def __init__(self, model, decay=0.5):
        self.ema, self.decay = copy.deepcopy(model), decay

    def update(self, model):
        msd = model.state_dict()
        with acg.no_grad():
            for k, v in self.ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v *= self.decay
                    v += (1 - self.decay) * msd[k].detach()


def test_ema_through_state_dict_values_moves_the_ema_model(mode):
    acg.manual_seed(0)
    model = acg.nn.Sequential(acg.nn.Linear(3, 4), acg.nn.BatchNorm1d(4))
    ema = _Ema(model)
    start = {k: np.asarray(v).copy() for k, v in ema.ema.state_dict().items()}
    opt = acg.optim.SGD(model.parameters(), lr=0.5)
    with mode():
        model(acg.randn(8, 3)).pow(2).sum().backward()
    opt.step()
    ema.update(model)
    now = model.state_dict()
    for k, v in ema.ema.state_dict().items():
        if v.dtype.is_floating_point:
            assert_close(v, 0.5 * start[k] + 0.5 * np.asarray(now[k]), rtol=1e-6, atol=1e-6)
    assert not np.allclose(np.asarray(ema.ema[0].weight), start["0.weight"])


def test_ema_matches_torch():
    torch = pytest.importorskip("torch")
    tmodel = torch.nn.Linear(3, 2)
    model = acg.nn.Linear(3, 2)
    model.load_state_dict({k: acg.tensor(v.numpy()) for k, v in tmodel.state_dict().items()})
    tema, ema = copy.deepcopy(tmodel), _Ema(model).ema
    for m, e in ((tmodel, tema), (model, ema)):
        with (torch if m is tmodel else acg).no_grad():
            for p in m.parameters():
                p.add_(1.0)
        for k, v in e.state_dict().items():
            v.mul_(0.9).add_(0.1 * m.state_dict()[k].detach())
    for k in tema.state_dict():
        assert_close(ema.state_dict()[k], tema.state_dict()[k].numpy(), rtol=1e-6, atol=1e-6)


def test_copies_of_a_detached_tensor_are_their_own():
    p = acg.nn.Parameter(acg.ones(2))
    for copied in (copy.deepcopy(p.detach()), pickle.loads(pickle.dumps(p.detach())),
                   copy.deepcopy(p.data)):
        copied.add_(5.0)
        assert copied.tolist() == [6.0, 6.0]
    assert p.tolist() == [1.0, 1.0]
    best = copy.deepcopy(acg.nn.Linear(2, 2).state_dict())
    best["weight"].zero_()  # a saved best state is a copy
    assert best["weight"].abs().sum().item() == 0.0


def test_gradients_unaffected_by_writes_through_a_detached_copy(mode):
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    with mode():
        y = (x * 3.0).sum()
        x.detach().mul_(10.0)  # outside autograd, as x.data
        y.backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.tolist() == [10.0, 20.0]


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_write_through_an_alias_inside_acg_compile_runs_eagerly(alias):
    lin = acg.nn.Linear(2, 2)
    w0 = np.asarray(lin.weight).copy()

    @acg.compile
    def step(m, x):  # the trace cannot write into m.weight through an alias: eager, correct
        (m.weight.detach() if alias == "detach" else m.weight.data).mul_(2.0)
        return x * 2

    for _ in range(2):
        out = step(lin, acg.ones(2))
    assert out.tolist() == [2.0, 2.0]
    assert_close(lin.weight, w0 * 4.0)


def test_a_kept_detached_value_does_not_keep_its_tensor_alive():
    """``losses.append(loss.detach())``: the alias holds its base weakly, so the loss, its
    graph and saved activations are freed as in PyTorch."""
    import gc
    import weakref
    x = acg.randn(4, 3, requires_grad=True)
    loss = (x.tanh() * 2.0).sum()
    kept, data_kept = loss.detach(), loss.data
    gone = weakref.ref(loss)
    del loss
    gc.collect()
    assert gone() is None
    kept.add_(1.0)  # writing into an alias whose tensor is gone: just the alias changes
    data_kept.mul_(2.0)
    assert np.isfinite(kept.item()) and np.isfinite(data_kept.item())
