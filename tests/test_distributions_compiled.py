"""Distributions built inside ``acg.compile`` (``fullgraph=True``): argument and sample
validation does not break the trace, the program gives eager's values and gradients, and a call
on invalid values raises eager's ``ValueError``, same text, from the check fused into the
program. One table of programs drives every test; torch (when installed) checks the values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.distributions as AD
from autograd_compile.aot.program import counters
from conftest import assert_close

_RNG = np.random.default_rng(0)
_L = np.array([[1.0, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.2, 0.1, 1.5]])


@dataclass(frozen=True)
class Prog:
    """``fn(D, *args)`` -> a scalar; ``args`` valid (floats differentiated), ``bad`` the
    same with one argument replaced by an invalid value (key: its position)."""

    name: str
    fn: Callable[..., Any]
    args: tuple
    bad: dict


_TABLE = [
    Prog("normal", lambda D, mu, s, x: D.Normal(mu, s).log_prob(x).sum(),
         (_RNG.normal(size=3), np.array([0.5, 1.0, 2.0]), _RNG.normal(size=3)),
         {1: np.array([1.0, -1.0, 2.0])}),
    Prog("normal_exp_scale", lambda D, mu, ls, x: D.Normal(mu, ls.exp()).log_prob(x).sum(),
         (_RNG.normal(size=3), _RNG.normal(size=3), _RNG.normal(size=3)),
         {1: np.array([0.0, np.nan, 1.0])}),
    Prog("categorical_logits", lambda D, lg, a: (D.Categorical(logits=lg).log_prob(a).sum()
                                                 + D.Categorical(logits=lg).entropy().sum()),
         (_RNG.normal(size=(4, 3)), np.array([0, 2, 1, 1])), {1: np.array([0, 3, 1, 1])}),
    Prog("bernoulli_probs", lambda D, p, y: D.Bernoulli(probs=p).log_prob(y).sum(),
         (np.array([0.2, 0.5, 0.9]), np.array([1.0, 0.0, 1.0])),
         {0: np.array([0.2, 1.5, 0.9])}),
    Prog("mvn_scale_tril", lambda D, mu, L, x: D.MultivariateNormal(
        mu, scale_tril=L).log_prob(x).sum(), (_RNG.normal(size=3), _L, _RNG.normal(size=(2, 3))),
        {1: _L * np.array([1.0, -1.0, 1.0])}),
    Prog("independent_normal", lambda D, mu, s, x: D.Independent(D.Normal(mu, s), 1)
         .log_prob(x).sum(), (_RNG.normal(size=(2, 3)), np.full((2, 3), 0.7),
                              _RNG.normal(size=(2, 3))), {1: -np.full((2, 3), 0.7)}),
    Prog("transformed_exp", lambda D, mu, s, y: D.TransformedDistribution(
        D.Normal(mu, s), [D.transforms.ExpTransform()]).log_prob(y).sum(),
        (_RNG.normal(size=3), np.array([0.5, 1.0, 2.0]), np.array([0.5, 1.0, 3.0])),
        {2: np.array([0.5, -1.0, 3.0])}),
]
_BY_NAME = {p.name: p for p in _TABLE}


def _tensors(lib: Any, args: tuple) -> list:
    return [lib.tensor(a, requires_grad=bool(np.issubdtype(a.dtype, np.floating)))
            for a in args]


def _run(fn: Callable, lib: Any, D: Any, args: tuple) -> tuple[np.ndarray, list]:
    """The value and the gradient of every differentiated argument."""
    ts = _tensors(lib, args)
    out = fn(D, *ts)
    out.backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts if t.requires_grad]


def _error(fn: Callable, args: tuple) -> str:
    with pytest.raises(ValueError) as info:
        fn(AD, *_tensors(acg, args))
    return str(info.value)


def _bad_args(p: Prog) -> tuple:
    return tuple(p.bad.get(i, a) for i, a in enumerate(p.args))


@pytest.mark.parametrize("name", list(_BY_NAME))
def test_compiled_whole_with_eager_values_and_gradients(name: str) -> None:
    p = _BY_NAME[name]
    compiled = acg.compile(p.fn, fullgraph=True)
    before = counters["eager_runs"]
    want, want_grads = _run(p.fn, acg, AD, p.args)
    for _ in range(2):  # the trace, then the cached program
        got, grads = _run(compiled, acg, AD, p.args)
        assert_close(got, want, rtol=1e-12, atol=1e-12)
        for g, w in zip(grads, want_grads, strict=True):
            assert_close(g, w, rtol=1e-12, atol=1e-12)
    assert counters["eager_runs"] == before


@pytest.mark.parametrize("name", list(_BY_NAME))
def test_compiled_program_raises_eagers_value_error(name: str) -> None:
    """The check runs on each call's values: valid, invalid, then valid again."""
    p = _BY_NAME[name]
    compiled = acg.compile(p.fn, fullgraph=True)
    want = _error(p.fn, _bad_args(p))
    _run(compiled, acg, AD, p.args)
    assert _error(compiled, _bad_args(p)) == want
    _run(compiled, acg, AD, p.args)
    fresh = acg.compile(p.fn, fullgraph=True)  # traced on the invalid values themselves
    assert _error(fresh, _bad_args(p)) == want


@pytest.mark.parametrize("off", ["default", "argument"])
@pytest.mark.parametrize("name", list(_BY_NAME))
def test_compiled_without_validation(name: str, off: str) -> None:
    """Validation off: no check in the program, eager's (unchecked) values on invalid data."""
    p = _BY_NAME[name]
    if off == "argument":
        dist_fn = _validate_off(p.fn)
    else:
        dist_fn = p.fn
    prev = AD.Distribution._validate_args
    AD.Distribution.set_default_validate_args(off != "default")
    try:
        compiled = acg.compile(dist_fn, fullgraph=True)
        for args in (p.args, _bad_args(p)):
            want = _outcome(dist_fn, args)
            got = _outcome(compiled, args)
            assert got[0] == want[0]
            assert_close(got[1], want[1], rtol=1e-12, atol=1e-12) if got[0] == "value" else \
                _same_text(got[1], want[1])
    finally:
        AD.Distribution.set_default_validate_args(prev)


def _outcome(fn: Callable, args: tuple) -> tuple[str, Any]:
    """("value", the result) or (the error's type, its text): unchecked, a categorical's
    action out of range still fails in gather, eagerly and in the program alike."""
    try:
        return "value", fn(AD, *_tensors(acg, args)).detach().numpy()
    except Exception as e:  # noqa: BLE001 - compared with eager's below
        return type(e).__name__, str(e)


def _same_text(got: str, want: str) -> None:
    assert got == want


def _validate_off(fn: Callable) -> Callable:
    """``fn`` with every distribution it builds given ``validate_args=False``."""
    def run(D: Any, *args: Any) -> Any:
        return fn(_NoValidation(D), *args)
    return run


class _NoValidation:
    """A distributions namespace whose classes default ``validate_args`` to False."""

    def __init__(self, D: Any) -> None:
        self._D = D

    def __getattr__(self, name: str) -> Any:
        cls = getattr(self._D, name)
        if not isinstance(cls, type) or not issubclass(cls, self._D.Distribution):
            return cls
        return lambda *a, **k: cls(*a, **{"validate_args": False, **k})


def test_message_shows_traced_autograd_suffix_and_scalars() -> None:
    """The rebuilt message prints tensors as eager did: a grad_fn of the trace, a 0-d
    parameter's value in the distribution's repr."""
    def f(loc: Any, log_s: Any) -> Any:
        return AD.Normal(loc, log_s.exp() - 2.0).log_prob(acg.tensor(0.0))
    compiled = acg.compile(f, fullgraph=True)
    for args, shown in (((np.array(0.5), np.array(0.0)), "Normal(loc: 0.5, scale: -1.0)"),
                        ((np.array([0.5, 1.0]), np.array([0.0, 1.0])), "grad_fn=<ExpandBackward0>"),
                        ((np.array([0.5]), np.array([0.0])), "grad_fn=<ExpandBackward0>")):
        want = _error(lambda D, *a: f(*a), args)
        assert shown in want
        assert _error(lambda D, *a: compiled(*a), args) == want


@pytest.mark.parametrize("name", list(_BY_NAME))
def test_values_and_errors_against_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    p = _BY_NAME[name]
    want, want_grads = _run(p.fn, torch, torch.distributions, p.args)
    got, grads = _run(acg.compile(p.fn, fullgraph=True), acg, AD, p.args)
    assert_close(got, want, rtol=1e-10, atol=1e-10)
    for g, w in zip(grads, want_grads, strict=True):
        assert_close(g, w, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError) as info:
        p.fn(torch.distributions, *_tensors(torch, _bad_args(p)))
    head = str(info.value).split(" of distribution")[0].split(" to be within")[0]
    assert _error(acg.compile(p.fn, fullgraph=True), _bad_args(p)).startswith(head)


def test_docstring_examples_run() -> None:
    import doctest

    from autograd_compile import runtime_checks
    from autograd_compile.distributions import _checks
    for module in (_checks, runtime_checks):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_a_training_step_that_builds_a_distribution_is_one_program():
    """REINFORCE/PPO's step under acg.compile(train_step): Normal(mu, sigma).log_prob with
    validation on is one program with eager's losses and parameters; an invalid scale
    raises eager's ValueError before the step runs, parameters untouched."""
    def setup():
        mu = acg.nn.Parameter(acg.zeros(3))
        log_std = acg.nn.Parameter(acg.zeros(3))
        opt = acg.optim.Adam([mu, log_std], lr=0.1)

        def step(action, shift):
            opt.zero_grad()
            dist = acg.distributions.Normal(mu, log_std.exp() + shift)
            loss = -(dist.log_prob(action).sum() + 0.01 * dist.entropy().sum())
            loss.backward()
            opt.step()
            return loss
        return mu, step

    (mu1, eager), (mu2, step) = setup(), setup()
    compiled = acg.compile(step, fullgraph=True)
    acg.aot.reset()
    shift = acg.zeros(3)
    for i in range(4):
        a = acg.tensor([0.5, -1.0, 2.0]) * (i + 1)
        assert abs(float(eager(a, shift)) - float(compiled(a, shift))) <= 1e-5
        np.testing.assert_allclose(mu2.detach().numpy(), mu1.detach().numpy(), atol=1e-6)
    before = mu2.detach().numpy().copy()
    with pytest.raises(ValueError) as want:
        eager(a, shift - 5.0)
    with pytest.raises(ValueError) as got:
        compiled(a, shift - 5.0)
    assert str(got.value).split(" but found")[0] == str(want.value).split(" but found")[0]
    np.testing.assert_array_equal(mu2.detach().numpy(), before)
    assert acg.aot.counters["eager_runs"] == 0


def test_a_compiled_actor_returning_a_distribution_gives_eager_values(mode, caplog):
    """PPO/SAC actors return ``Normal(mean, std)`` from forward: the object would hold the
    trace's tensors, so the region runs eagerly (one log line) with eager's values."""
    class Actor(acg.nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = acg.nn.Linear(3, 2)
            self.logstd = acg.nn.Parameter(acg.zeros(1, 2))

        def forward(self, x):
            m = self.mean(x)
            return acg.distributions.Normal(m, self.logstd.expand_as(m).exp())
    results = []
    for compiled in (False, True):
        acg.manual_seed(0)
        a = Actor()
        net = acg.compile(a) if compiled else a
        with mode():
            d = net(acg.ones(4, 3))
            loss = -d.log_prob(acg.zeros(4, 2)).sum()
            loss.backward()
        assert tuple(d.batch_shape) == (4, 2) and type(d.batch_shape[0]) is int
        results.append((float(loss), a.logstd.grad.numpy().copy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)
    assert "returns a Normal object holding traced tensors" in caplog.text
