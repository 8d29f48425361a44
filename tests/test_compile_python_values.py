"""``acg.compile`` and a module's plain attributes (``self.p``, ``self.temperature``,
``self.use_cache``): the trace bakes them in as constants, so a changed value must not
reuse it (torch.compile guards them). A value seen once runs eagerly, one that repeats is
traced, and setting an earlier value back finds its trace again."""
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


class Tempered(acg.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = acg.nn.Linear(3, 3)
        self.temperature = 1.0
        self.use_bias_shift = False

    def forward(self, x):
        y = self.lin(x) / self.temperature
        return y + 1 if self.use_bias_shift else y


def _eager_and_compiled():
    acg.manual_seed(0)
    m = Tempered()
    return m, acg.compile(m)


def test_changed_attributes_are_seen_and_old_traces_reused():
    m, f = _eager_and_compiled()
    x = acg.randn(2, 3)
    acg.aot.counters.clear()
    seen = []
    for temp, shift in [(1.0, False), (2.0, False), (2.0, False), (2.0, True), (2.0, True),
                        (1.0, False), (0.5, False)]:
        m.temperature, m.use_bias_shift = temp, shift
        with acg.no_grad():
            seen.append((f(x).numpy(), m(x).numpy()))
    for got, want in seen:
        assert_close(got, want)
    c = acg.aot.counters
    # traced: (1.0, False), then (2.0, False) and (2.0, True) each on their second call;
    # (1.0, False) back is a cache hit; 0.5 (and the first 2.0 and True) ran eagerly
    assert (c["traces"], c["eager_floats"], c["cache_hits"]) == (3, 3, 1), dict(c)


def test_dropout_probability_on_a_schedule():
    acg.manual_seed(0)
    drop = acg.nn.Dropout(0.5)
    f = acg.compile(drop)
    x = acg.ones(1000)
    assert 0.3 < (f(x) == 0).float().mean().item() < 0.7
    drop.p = 0.0  # a schedule turns dropout off: every element kept
    for _ in range(3):
        assert_close(f(x).numpy(), np.ones(1000))


def test_fullgraph_traces_a_new_value_at_once():
    m, _ = _eager_and_compiled()
    f = acg.compile(m, fullgraph=True)
    x = acg.randn(2, 3)
    acg.aot.counters.clear()
    with acg.no_grad():
        f(x)
        m.temperature = 3.0
        assert_close(f(x).numpy(), m(x).numpy())
    assert acg.aot.counters["traces"] == 2 and acg.aot.counters["eager_floats"] == 0


def test_retrace_reason_names_module_attributes(caplog):
    from test_compile import _retraced_because
    m, _ = _eager_and_compiled()
    f = acg.compile(m, fullgraph=True)
    x = acg.randn(2, 3)
    with acg.no_grad():
        f(x)
        m.temperature = 4.0
        why = _retraced_because(caplog, lambda: f(x))
    assert "Python values read (module attributes, globals, closure) changed" in why, why


def test_tokens_follow_values_not_history():
    from autograd_compile.nn.module import plain_token
    a, b = Tempered(), Tempered()
    assert a._acg_plain == b._acg_plain != 0
    a.temperature = 2.0
    assert a._acg_plain != b._acg_plain
    a.temperature = 1.0
    assert a._acg_plain == b._acg_plain
    a.temperature = 1  # an int is another constant (x * 1 keeps an int tensor int)
    assert a._acg_plain != b._acg_plain
    t = a._acg_plain
    a.cache = acg.ones(1)  # tensors and modules are not plain: no change
    a.eval()
    assert a._acg_plain == t
    del a.use_bias_shift
    assert a._acg_plain != t
    assert plain_token(dict(b.__dict__)) == b._acg_plain


def test_pickled_module_gets_a_token_of_this_process():
    import copy
    import pickle
    m = Tempered()
    m.temperature = 7.0
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert clone._acg_plain == m._acg_plain and clone.temperature == 7.0


def test_whole_step_sees_a_changed_attribute():
    acg.manual_seed(0)
    m = Tempered()
    opt = acg.optim.SGD(m.parameters(), lr=0.1)
    x = acg.randn(4, 3)

    @acg.compile
    def step():
        opt.zero_grad()
        loss = m(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    acg.manual_seed(0)
    ref = Tempered()
    ropt = acg.optim.SGD(ref.parameters(), lr=0.1)
    for temp in [1.0, 1.0, 2.0, 2.0, 2.0, 0.5]:
        m.temperature = ref.temperature = temp
        got = step().item()
        ropt.zero_grad()
        want = ref(x).square().mean()
        want.backward()
        ropt.step()
        assert abs(got - want.item()) < 1e-6
    for p, q in zip(m.parameters(), ref.parameters()):
        assert_close(p.detach().numpy(), q.detach().numpy())


# -- globals, closures, config objects --------------------------------------------------------
SCALE = 2.0
USE_SHIFT = False


class _Args:  # an argparse.Namespace-like config read inside the region
    beta = 0.5


ARGS = _Args()


def _shifted(y):
    return y + 1 if USE_SHIFT else y  # a helper the region calls reads a global too


def _scaled(x):
    return _shifted(x * SCALE) * ARGS.beta


def test_globals_helpers_and_config_objects_are_guarded():
    global SCALE, USE_SHIFT
    f = acg.compile(_scaled, fullgraph=True)
    x = acg.arange(3.0)
    try:
        for scale, shift, beta in [(2.0, False, 0.5), (3.0, False, 0.5), (3.0, True, 0.5),
                                   (3.0, True, 4.0), (2.0, False, 0.5)]:
            SCALE, USE_SHIFT, ARGS.beta = scale, shift, beta
            assert_close(f(x).numpy(), _scaled(x).numpy())
        assert acg.aot.counters["cache_hits"] >= 1  # the first values again: its trace
    finally:
        SCALE, USE_SHIFT, ARGS.beta = 2.0, False, 0.5


def test_closure_variables_are_guarded(mode):
    """KL annealing through a closure: the compiled loss and its gradients follow the
    weight, with the backward in every mode."""
    acg.manual_seed(0)
    lin = acg.nn.Linear(3, 2)
    x = acg.randn(4, 3)
    kl_weight = 0.0

    @acg.compile
    def loss_fn(x):
        h = lin(x)
        return h.square().mean() + kl_weight * h.abs().mean()

    for w in [0.0, 0.0, 0.5, 0.5, 1.0]:
        kl_weight = w
        lin.zero_grad()
        with mode():
            loss_fn(x).backward()
        got = [p.grad.numpy().copy() for p in lin.parameters()]
        lin.zero_grad()
        h = lin(x)
        (h.square().mean() + w * h.abs().mean()).backward()
        for g, p in zip(got, lin.parameters()):
            assert_close(g, p.grad.numpy())


def test_a_region_storing_python_values_runs_eagerly_once_traced(caplog):
    calls = {"n": 0}

    class Counting(acg.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            calls["n"] += 1
            return x + 1

    m = Counting()
    f = acg.compile(m)
    acg.aot.counters.clear()
    x = acg.ones(2)
    for _ in range(4):
        assert_close(f(x).numpy(), [2.0, 2.0])
    assert m.calls == 4 and calls["n"] == 4  # as eagerly: every call counted once
    assert acg.aot.counters["traces"] == 2  # found storing twice: eager for good
    assert "stores a Python value in Counting.calls" in caplog.text
    with pytest.raises(acg.aot.Unsupported, match="stores a Python value"):
        acg.compile(Counting(), fullgraph=True)(x)


STEP = 0


def test_global_counter_in_a_whole_step_counts_every_call():
    global STEP
    acg.manual_seed(0)
    m = acg.nn.Linear(3, 1)
    opt = acg.optim.SGD(m.parameters(), lr=0.1)
    x = acg.randn(4, 3)

    @acg.compile
    def step():
        global STEP
        STEP += 1
        opt.zero_grad()
        loss = m(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    STEP = 0
    for _ in range(4):
        step()
    assert STEP == 4


def test_a_store_done_once_is_traced_after_it():
    """Lazy initialisation (a flag set on the first call) runs that call eagerly and is
    traced from the next one: not eager for good."""
    class LazyScale(acg.nn.Module):
        def __init__(self):
            super().__init__()
            self.ready = False
            self.w = acg.nn.Parameter(acg.ones(3))

        def forward(self, x):
            if not self.ready:
                self.ready = True
            return x * self.w

    m = LazyScale()
    f = acg.compile(m)
    acg.aot.counters.clear()
    x = acg.arange(3.0)
    for _ in range(4):
        assert_close(f(x).detach().numpy(), [0.0, 1.0, 2.0])
    assert m.ready is True
    c = acg.aot.counters
    assert (c["traces"], c["eager_runs"], c["cache_hits"]) == (2, 1, 2), dict(c)
