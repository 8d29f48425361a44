"""``acg.compile(train_step)``: the whole training step as one program (DESIGN §11).

The oracle is our own eager execution of the same step on an identical copy of the
model (same seed): after every call each parameter, ``.grad``, optimizer state entry
and learning rate must equal what eager leaves (max |diff| <= 1e-6, float32).
"""
from __future__ import annotations

import logging
import warnings
from typing import Any, Callable

import jax
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from autograd_compile.aot import Unsupported, counters

TOL = 1e-6
LONG = [10, pytest.param(50, marks=pytest.mark.slow)]  # steps: the 50-step runs are slow


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 3))


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 2 * 2, 3))


def _setup(model_fn: Callable[[], nn.Module], opt_fn: Callable, sched_fn: Callable | None,
           clip: float | None, zero: str, loss_fn: Callable) -> tuple:
    """A fresh (model, optimizer, scheduler, step) from seed 0."""
    acg.manual_seed(0)
    model = model_fn()
    opt = opt_fn(model)
    sched = sched_fn(opt) if sched_fn is not None else None

    def train_step(x, y):
        if zero == "first":
            opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        if zero == "none":
            opt.zero_grad(set_to_none=True)
        elif zero == "zeros":
            opt.zero_grad(set_to_none=False)
        return loss
    return model, opt, sched, train_step


def _maxdiff(a: Any, b: Any, skip: slice | None = None) -> float:
    d = np.abs(np.asarray(a.detach().numpy(), np.float64) -
               np.asarray(b.detach().numpy(), np.float64))
    if skip is not None:
        d[skip] = 0.0
    return float(np.max(d, initial=0.0))


def _assert_same(m1: nn.Module, o1: Any, m2: nn.Module, o2: Any, where: str,
                 noise: dict[str, np.ndarray] | None = None) -> None:
    """Parameters, gradients, optimizer state and lr equal to TOL; ``noise`` masks entries
    of parameters and state (never of gradients) that Adam made ill-conditioned."""
    noise = noise or {}
    for (n, p), q in zip(m1.named_parameters(), m2.parameters()):
        assert _maxdiff(p, q, noise.get(n)) <= TOL, f"{where}: parameter {n}"
        assert (p.grad is None) == (q.grad is None), f"{where}: grad of {n} None-ness"
        if p.grad is not None:
            assert _maxdiff(p.grad, q.grad) <= TOL, f"{where}: grad of {n}"
    for (n, _), p, q in zip(m1.named_parameters(), m1.parameters(), m2.parameters()):
        s1, s2 = o1.state.get(p, {}), o2.state.get(q, {})
        assert sorted(s1) == sorted(s2), f"{where}: state keys of {n}"
        for k in s1:
            skip = noise.get(n) if s1[k].dim() else None
            assert _maxdiff(s1[k], s2[k], skip) <= TOL, f"{where}: state {k} of {n}"
    for g1, g2 in zip(o1.param_groups, o2.param_groups):
        assert g1["lr"] == pytest.approx(g2["lr"], rel=1e-12, abs=0.0), f"{where}: lr"


ADAM_NEAR_ZERO = 1e-6  # sqrt(exp_avg_sq) below this: Adam's step is ill-conditioned


def _near_zero(m: nn.Module, opt: Any, seen: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The entries whose gradients have been near zero (Adam's ``exp_avg_sq`` tiny), ever:
    a difference made there stays in the parameter. Adam's first update, lr * g / (|g| +
    eps), moves by up to lr / (4 eps) per unit of g there (7.5e4 at lr 3e-3), so float
    noise of 1e-11 in g, which any two fusion orders give, becomes 1e-6."""
    for n, p in m.named_parameters():
        v = opt.state.get(p, {}).get("exp_avg_sq")
        if v is not None:
            small = np.sqrt(v.numpy()) < ADAM_NEAR_ZERO
            seen[n] = small if n not in seen else seen[n] | small
    return seen


def _compare(model_fn: Callable, opt_fn: Callable, data: Callable, steps: int, *,
             sched_fn: Callable | None = None, clip: float | None = None, zero: str = "none",
             loss_fn: Callable | None = None, adam: bool = False,
             between: Callable[[nn.Module, Any, int], None] | None = None,
             traces: int = 2) -> None:
    """``adam``: parameters and state are compared except where gradients were near zero
    (:func:`_near_zero`; the key bias of attention, whose gradient is zero in exact
    arithmetic as softmax is shift-invariant along a row, is one such place); gradients,
    where kept, are compared everywhere. ``between(model, opt, i)`` runs on both copies
    before step ``i`` (what a user changes between steps); ``traces``: at most this many."""
    loss_fn = loss_fn or (lambda m, x, y: nn.functional.cross_entropy(m(x), y))
    m1, o1, _, eager = _setup(model_fn, opt_fn, sched_fn, clip, zero, loss_fn)
    m2, o2, _, step = _setup(model_fn, opt_fn, sched_fn, clip, zero, loss_fn)
    compiled = acg.compile(step, fullgraph=True)
    acg.aot.reset()
    noise: dict[str, np.ndarray] = {}
    for i in range(steps):
        x, y = data(i)
        if between is not None:
            between(m1, o1, i)
            between(m2, o2, i)
        l1, l2 = eager(x, y), compiled(x, y)
        assert abs(float(l1) - float(l2)) <= 1e-5, f"step {i}: loss"
        if adam:
            _near_zero(m1, o1, noise)
        _assert_same(m1, o1, m2, o2, f"step {i}", noise if adam else None)
    # the first step (state created) and every later one: two traces, then cache hits
    assert counters["eager_runs"] == 0
    assert counters["traces"] <= traces and counters["cache_hits"] >= steps - traces, \
        dict(counters)


def _classes(shape: tuple, n: int = 3) -> Callable:
    rng = np.random.default_rng(0)
    batches = [(acg.tensor(rng.standard_normal((8, *shape)).astype(np.float32)),
                acg.tensor(rng.integers(0, n, 8))) for _ in range(4)]
    return lambda i: batches[i % 4]


def test_sgd_momentum_weight_decay_mlp() -> None:
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9,
                                           weight_decay=1e-3), _classes((6,)), 50)


@pytest.mark.parametrize("steps", LONG)
def test_adam_cnn(steps: int) -> None:
    _compare(_cnn, lambda m: acg.optim.Adam(m.parameters(), lr=1e-3), _classes((1, 8, 8)),
             steps)


def test_adamw_cosine_clip_mlp() -> None:
    _compare(_mlp, lambda m: acg.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
             _classes((6,)), 50,
             sched_fn=lambda o: acg.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20),
             clip=0.5)


def test_zero_grad_to_zeros_first() -> None:
    """zero_grad(set_to_none=False) at the top: grads are zeros tensors, then accumulated."""
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, nesterov=True,
                                           momentum=0.5), _classes((6,)), 6, zero="first")


def test_accumulation_without_zero_grad() -> None:
    """No zero_grad: each backward adds to the last call's .grad, as in eager."""
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.01), _classes((6,)), 6,
             zero="never")


def test_zeros_set_to_none_false() -> None:
    _compare(_mlp, lambda m: acg.optim.Adam(m.parameters(), lr=1e-2, amsgrad=True),
             _classes((6,)), 6, zero="zeros")


def test_freezing_a_parameter_between_steps_is_seen() -> None:
    """A parameter frozen after some steps (``requires_grad_(False)``) gets no gradient and
    no update from then on, and trains again once unfrozen: each change retraces."""
    def between(m: nn.Module, opt: Any, i: int) -> None:
        if i in (3, 6):
            m[0].weight.requires_grad_(i == 6)
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
             _classes((6,)), 9, between=between, traces=3)


def test_a_static_hyperparameter_changed_between_steps_is_seen() -> None:
    """Turning Nesterov momentum on, or maximize, after some steps changes the update rule:
    the next call retraces with it (they are Python branches of the rule, not inputs)."""
    def between(m: nn.Module, opt: Any, i: int) -> None:
        if i == 3:
            opt.param_groups[0]["nesterov"] = True
        if i == 5:
            opt.param_groups[0]["maximize"] = True
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
             _classes((6,)), 7, between=between, traces=4)


def test_state_edited_in_place_between_steps_is_read() -> None:
    """Parameters, optimizer state and ``.grad`` changed by the user between steps (the
    guard takes the last call's shapes only while every array is the one it wrote): the
    next step reads the new values, with no retrace."""
    def between(m: nn.Module, opt: Any, i: int) -> None:
        with acg.no_grad():
            if i == 3:
                m[0].weight.mul_(0.5)
                opt.state[m[0].weight]["momentum_buffer"].zero_()
            if i == 5:
                m[4].bias.grad = acg.ones_like(m[4].bias)
            if i == 6:
                m[2].weight.grad.add_(1.0)
    _compare(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9),
             _classes((6,)), 8, between=between, zero="never")


def test_a_metric_kept_in_a_container_and_updated_in_place() -> None:
    """``box["correct"] += ...`` inside the step: a tensor reached through a dict and
    written in place becomes an input and output of the program (one trace is spent
    finding it), ends every call as a real value equal to eager's, and a fresh tensor put
    in its place (a new epoch) is found again."""
    results = []
    for compiled in (False, True):
        acg.manual_seed(0)
        model = _mlp()
        opt = acg.optim.SGD(model.parameters(), lr=0.1)
        box = {"correct": acg.zeros(()), "seen": [acg.zeros(())]}

        def step(x, y):
            opt.zero_grad()
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            opt.step()
            box["correct"] += (out.argmax(1) == y).sum()
            box["seen"][0].add_(y.numel())
            return loss
        run = acg.compile(step, fullgraph=True) if compiled else step
        acg.aot.reset()
        data, totals = _classes((6,)), []
        for epoch in range(2):
            box["correct"] = acg.zeros(())
            for i in range(4):
                run(*data(i))
                assert not isinstance(box["correct"]._data, jax.core.Tracer)
            totals.append((float(box["correct"]), float(box["seen"][0])))
        results.append((totals, [p.detach().numpy() for p in model.parameters()]))
        if compiled:
            assert counters["eager_runs"] == 0, dict(counters)
    (t1, p1), (t2, p2) = results
    assert t1 == t2 and t2[1][1] == 64.0
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, atol=TOL)


def test_a_call_that_leaves_parameters_alone_is_quiet() -> None:
    """Gradient accumulation: calls that only add to ``.grad`` (no ``opt.step()``) donate
    parameter buffers they cannot reuse; jax's warning about it is not the user's concern."""
    model, opt, _, _ = _setup(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.1), None,
                              None, "never", lambda m, x, y: None)

    @acg.compile(fullgraph=True)
    def step(x, y, update):
        (nn.functional.cross_entropy(model(x), y) / 2).backward()
        if update:
            opt.step()
            opt.zero_grad()
    data = _classes((6,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        for i in range(4):
            step(*data(i), i % 2 == 1)
    assert counters["eager_runs"] == 0


def test_a_clone_taken_between_steps_outlives_the_donation() -> None:
    """The step donates the parameters', gradients' and optimizer state's arrays. A
    ``clone()``, ``detach()`` or ``state_dict()`` copy shares the immutable array until
    then: it keeps the value it had (PyTorch's clone), and loading it back restores the
    model; only the shared arrays are copied, once."""
    model, opt, _, step = _setup(_mlp, lambda m: acg.optim.SGD(m.parameters(), lr=0.1,
                                                               momentum=0.9),
                                 None, None, "never", lambda m, x, y:
                                 nn.functional.cross_entropy(m(x), y))
    step = acg.compile(step, fullgraph=True)
    data = _classes((6,))
    acg.aot.reset()
    step(*data(0))
    step(*data(1))
    best = {k: v.clone() for k, v in model.state_dict().items()}
    frozen = model[0].weight.detach()
    grad = model[0].weight.grad.clone()
    buf = opt.state[model[0].weight]["momentum_buffer"].clone()
    expect = {k: v.numpy().copy() for k, v in best.items()}
    expect_grad, expect_buf = grad.numpy().copy(), buf.numpy().copy()
    for i in range(2, 5):
        step(*data(i))
    # one copy per shared array: every parameter's (weight 0 has two other holders), the
    # gradient's and the momentum buffer's; none after that first call
    assert counters["donation_copies"] == len(best) + 2
    for k, v in best.items():
        np.testing.assert_array_equal(v.numpy(), expect[k], err_msg=k)
    np.testing.assert_array_equal(frozen.numpy(), expect["0.weight"])
    np.testing.assert_array_equal(grad.numpy(), expect_grad)
    np.testing.assert_array_equal(buf.numpy(), expect_buf)
    assert not np.array_equal(model[0].weight.detach().numpy(), expect["0.weight"])
    model.load_state_dict(best)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), expect["0.weight"])
    step(*data(5))  # the loaded arrays are best's too: copied, best keeps its values
    np.testing.assert_array_equal(best["0.weight"].numpy(), expect["0.weight"])


def _gpt_setup() -> tuple:
    from examples.gpt import GPT, GPTConfig
    cfg = GPTConfig(block_size=8, vocab_size=16, n_layer=1, n_head=2, n_embd=16)
    rng = np.random.default_rng(0)
    batches = [(acg.tensor(rng.integers(0, 16, (4, 8))), acg.tensor(rng.integers(0, 16, (4, 8))))
               for _ in range(3)]
    return (lambda: GPT(cfg)), (lambda i: batches[i % 3]), (lambda m, x, y: m(x, y)[1])


@pytest.mark.parametrize("steps", LONG)
def test_gpt_example_sgd_cosine_clip(steps: int) -> None:
    model, data, loss = _gpt_setup()
    _compare(model, lambda m: acg.optim.SGD(m.parameters(), lr=0.05, momentum=0.9,
                                            weight_decay=1e-4), data, steps,
             sched_fn=lambda o: acg.optim.lr_scheduler.CosineAnnealingLR(o, T_max=50,
                                                                       eta_min=5e-3),
             clip=1.0, loss_fn=loss)


def test_gpt_example_adamw_first_steps() -> None:
    """AdamW (the example's optimizer, two groups) matches to 1e-6 over its first three
    steps (state created, then two cache hits) wherever Adam's update is well-conditioned
    (:func:`_near_zero`). Further on, eager and one fused program part like any two float
    evaluation orders through Adam: 2e-7 at step 2 grows to 1e-6 by step ~20 here."""
    model, data, loss = _gpt_setup()
    _compare(model, lambda m: m.configure_optimizers(0.1, 3e-3, (0.9, 0.95)), data, 3,
             sched_fn=lambda o: acg.optim.lr_scheduler.CosineAnnealingLR(o, T_max=50),
             clip=1.0, loss_fn=loss, adam=True)


def test_lr_set_by_hand_is_read_every_call() -> None:
    """group["lr"] is a traced input: changing it never retraces nor bakes a stale value."""
    acg.manual_seed(0)
    w = nn.Parameter(acg.ones(3))
    opt = acg.optim.SGD([w], lr=0.1)

    @acg.compile(fullgraph=True)
    def step():
        (w * w).sum().backward()
        opt.step()
        opt.zero_grad()
    acg.aot.reset()
    expect = np.ones(3)
    for lr in (0.1, 0.2, 0.05, 0.3):
        opt.param_groups[0]["lr"] = lr
        step()
        expect = expect - lr * 2 * expect
        np.testing.assert_allclose(w.detach().numpy(), expect, rtol=1e-6)
    assert counters["traces"] == 1 and counters["eager_runs"] == 0


def test_scheduler_before_step_objects_as_arguments() -> None:
    """Model, optimizer and scheduler passed as arguments; the scheduler steps before
    opt.step(), so the step reads the lr it set, as in eager."""
    def step(model, opt, sched, x, y):
        sched.step()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad()
    runs = []
    for compiled in (False, True):
        acg.manual_seed(0)
        m = _mlp()
        opt = acg.optim.SGD(m.parameters(), lr=0.1)
        sched = acg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        fn = acg.compile(step, fullgraph=True) if compiled else step
        data = _classes((6,))
        acg.aot.reset()
        for i in range(5):
            fn(m, opt, sched, *data(i))
        runs.append((m, opt))
    (m1, o1), (m2, o2) = runs
    _assert_same(m1, o1, m2, o2, "after 5 steps")
    assert counters["eager_runs"] == 0 and counters["traces"] == 1


def test_pure_hook_traced_in() -> None:
    def run(compiled: bool):
        acg.manual_seed(0)
        m = _mlp()
        opt = acg.optim.SGD(m.parameters(), lr=0.1)
        for p in m.parameters():
            p.register_hook(acg.compiled_autograd.pure_hook(lambda g: g.clamp(-0.01, 0.01)))

        def step(x, y):
            nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
            opt.zero_grad()
        fn = acg.compile(step, fullgraph=True) if compiled else step
        data = _classes((6,))
        for i in range(4):
            fn(*data(i))
        return [p.detach().numpy() for p in m.parameters()]
    for a, b in zip(run(False), run(True)):
        np.testing.assert_allclose(a, b, atol=TOL)


def _hooked_step() -> tuple:
    acg.manual_seed(0)
    m = _mlp()
    opt = acg.optim.SGD(m.parameters(), lr=0.1)
    seen = []
    m[0].weight.register_hook(lambda g: seen.append(1))

    def step(x, y):
        nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        opt.zero_grad()
    return step, seen


def test_python_hook_splits_the_step_with_log(caplog: pytest.LogCaptureFixture) -> None:
    """A Python hook splits the step at the backward (tests/test_whole_step_split.py): the
    hook runs every call, logged once, nothing runs fully eagerly."""
    step, seen = _hooked_step()
    fn = acg.compile(step)
    acg.aot.reset()
    data = _classes((6,))
    with caplog.at_level(logging.WARNING, logger="autograd_compile"):
        for i in range(3):
            fn(*data(i))
    assert len(seen) == 3  # the hook ran every call, in Python
    msgs = [r.getMessage() for r in caplog.records if "at the backward" in r.getMessage()]
    assert len(msgs) == 1 and "pure_hook" in msgs[0]
    assert counters["split_runs"] == 3 and counters["eager_runs"] == 0


def test_python_hook_fullgraph_raises() -> None:
    step, _ = _hooked_step()
    with pytest.raises(Unsupported, match="pure_hook"):
        acg.compile(step, fullgraph=True)(*_classes((6,))(0))


def _falls_back(make_step: Callable, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Three steps of ``make_step(model, opt)`` under ``acg.compile`` and eagerly, from one
    seed: the parameters agree (the fallback is exact); the "eagerly" log lines."""
    def run(compiled: bool) -> list:
        acg.manual_seed(0)
        m = _mlp()
        step = make_step(m, acg.optim.SGD(m.parameters(), lr=0.1))
        fn = acg.compile(step) if compiled else step
        data = _classes((6,))
        for i in range(3):
            fn(*data(i))
        return [p.detach().numpy() for p in m.parameters()]
    acg.aot.reset()
    with caplog.at_level(logging.WARNING, logger="autograd_compile"):
        got = run(True)
    for a, b in zip(run(False), got):
        np.testing.assert_allclose(a, b, atol=TOL)
    return [r.getMessage() for r in caplog.records if "eagerly" in r.getMessage()]


def _item_step(m: nn.Module, opt: Any, kind: str) -> Callable:
    def step(x, y):
        opt.zero_grad()
        out = m(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        if kind == "float":
            return loss.item()
        return {"loss": loss.item(), "correct": (out.argmax(1) == y).sum().item(),
                "pair": (loss, loss.detach().item())}
    return step


@pytest.mark.parametrize("kind", ["float", "dict"])
def test_returning_item_stays_one_program(kind: str) -> None:
    """``return loss.item()`` (or numbers in a dict): one program per step, the numbers read
    after it, of eager's types and values; parameters as eager's."""
    got = []
    for compiled in (False, True):
        acg.manual_seed(0)
        m = _mlp()
        step = _item_step(m, acg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), kind)
        run = acg.compile(step, fullgraph=True) if compiled else step
        acg.aot.reset()
        data = _classes((6,))
        got.append(([run(*data(i)) for i in range(5)], [p.detach().numpy() for p in m.parameters()]))
        if compiled:
            assert counters["eager_runs"] == 0 and counters["traces"] == 2, dict(counters)
    (r1, p1), (r2, p2) = got
    for a, b in zip(r1, r2):
        if kind == "float":
            assert type(b) is float and abs(a - b) <= 1e-6
        else:
            assert type(b["loss"]) is float and type(b["correct"]) is int
            assert abs(a["loss"] - b["loss"]) <= 1e-6 and a["correct"] == b["correct"]
            assert isinstance(b["pair"][0], acg.Tensor) and b["pair"][1] == b["loss"]
    for a, b in zip(p1, p2):
        np.testing.assert_allclose(a, b, atol=TOL)


def test_item_kept_in_a_list_runs_eagerly(caplog: pytest.LogCaptureFixture) -> None:
    """``losses.append(loss.item())`` inside the step: no program output can stand for it,
    so the step runs eagerly (logged with the reason), the list holding eager's floats."""
    losses: list = []

    def make_step(m: nn.Module, opt: Any) -> Callable:
        def step(x, y):
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
        return step
    msgs = _falls_back(make_step, caplog)
    assert len(msgs) == 1 and "keeps the value of a tensor's .item()" in msgs[0], msgs
    assert len(losses) == 6 and all(type(v) is float for v in losses)
    assert losses[:3] == losses[3:]  # compiled (eager fallback) then eager, same seed


def test_data_dependent_python_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    """``.item()`` in a branch: the call runs eagerly (and stays exact), logged once with
    the exception text and the user's line (the branch, not the write before it to a
    tensor held in a dict, which keeps a real tensor with eager's value)."""
    boxes = []

    def make_step(m: nn.Module, opt: Any) -> Callable:
        box = {"n": acg.zeros(())}
        boxes.append(box)

        def step(x, y):
            box["n"] += 1
            loss = nn.functional.cross_entropy(m(x), y)
            if loss.item() > 0.0:
                loss.backward()
            opt.step()
            opt.zero_grad()
        return step
    msgs = _falls_back(make_step, caplog)
    assert len(msgs) == 1 and "loss.item()" in msgs[0] and "Error" in msgs[0], msgs
    compiled_box, eager_box = boxes
    assert type(compiled_box["n"]._data) is type(eager_box["n"]._data)
    assert float(compiled_box["n"]) == float(eager_box["n"]) == 3.0


def test_closure_and_container_tensors_are_inputs() -> None:
    """A tensor the step reads from its closure is an input (rebinding it is seen, no
    retrace); one reached through a container (``box["shift"]``) is found by its path and
    is an input too, from the second trace on: changed in place or replaced by another
    tensor, the next call reads it, with no retrace. One reached by no path (held only by
    an object the step does not walk) is a constant guarded by identity: changed in place,
    it retraces."""
    w = nn.Parameter(acg.ones(2))
    opt = acg.optim.SGD([w], lr=1.0)
    scale = acg.tensor([1.0, 2.0])
    box = {"shift": acg.tensor([0.0, 0.0])}
    hidden = [acg.tensor([0.0, 0.0])]

    def out_of_reach() -> acg.Tensor:
        return hidden[0]
    far = {"get": out_of_reach}  # a function in a dict: not walked (only named ones are)

    @acg.compile(fullgraph=True)
    def step():
        (w * scale + box["shift"] * w + far["get"]() * w).sum().backward()
        opt.step()
        opt.zero_grad()
    acg.aot.reset()
    step()  # one trace finds box["shift"] (and keeps hidden[0] a constant), one compiles
    np.testing.assert_allclose(w.detach().numpy(), [0.0, -1.0])
    assert counters["traces"] == 2 and counters["compiles"] == 1
    scale = acg.tensor([3.0, 3.0])
    step()
    np.testing.assert_allclose(w.detach().numpy(), [-3.0, -4.0])
    box["shift"].add_(1.0)  # in place: read at the next call
    step()
    np.testing.assert_allclose(w.detach().numpy(), [-7.0, -8.0])
    box["shift"] = acg.tensor([2.0, 0.0])  # another tensor there: read too
    step()
    np.testing.assert_allclose(w.detach().numpy(), [-12.0, -11.0])
    assert counters["traces"] == 2 and counters["compiles"] == 1
    hidden[0].add_(1.0)  # a constant: a new array, the guard sees it and retraces
    step()
    np.testing.assert_allclose(w.detach().numpy(), [-18.0, -15.0])
    assert counters["traces"] == 3


def test_dropout_draws_fresh_keys() -> None:
    acg.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 64), nn.Dropout(0.5))
    opt = acg.optim.SGD(m.parameters(), lr=0.0)

    @acg.compile(fullgraph=True)
    def step(x):
        out = m(x)
        out.sum().backward()
        opt.step()
        opt.zero_grad()
        return out
    x = acg.ones(2, 4)
    a, b = step(x).numpy(), step(x).numpy()
    assert not np.array_equal(a == 0, b == 0)


def test_grad_scaler_step_runs_eagerly_with_reason(caplog: pytest.LogCaptureFixture) -> None:
    """GradScaler.step reads found_inf with .item() (a Python branch): not traced yet, so
    the call runs eagerly, exactly, logged once naming the GradScaler and the line."""
    def make_step(m: nn.Module, opt: Any) -> Callable:
        scaler = acg.amp.GradScaler("cpu", init_scale=4.0)

        def step(x, y):
            scaler.scale(nn.functional.cross_entropy(m(x), y)).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        return step
    msgs = _falls_back(make_step, caplog)
    assert len(msgs) == 1 and "grad_scaler.py" not in msgs[0], msgs
    assert "a GradScaler skips or takes the optimizer step" in msgs[0], msgs
    assert "scaler.scale(nn.functional.cross_entropy(m(x), y)).backward()" in msgs[0], msgs
    assert counters["eager_runs"] == 3


def test_compiled_module_inside_compiled_step() -> None:
    """acg.compile(model) called inside acg.compile(train_step): its forward and backward
    programs are traced into the step program."""
    def run(compiled: bool):
        acg.manual_seed(0)
        m = _mlp()
        cm = acg.compile(m) if compiled else m
        opt = acg.optim.Adam(m.parameters(), lr=0.01)

        def step(x, y):
            nn.functional.cross_entropy(cm(x), y).backward()
            opt.step()
            opt.zero_grad()
        fn = acg.compile(step, fullgraph=True) if compiled else step
        data = _classes((6,))
        for i in range(5):
            fn(*data(i))
        return [p.detach().numpy() for p in m.parameters()]
    acg.aot.reset()
    got = run(True)
    assert counters["eager_runs"] == 0
    for a, b in zip(run(False), got):
        np.testing.assert_allclose(a, b, atol=TOL)


def test_docstring_examples_run() -> None:
    import doctest

    from autograd_compile.aot import wholestep
    from autograd_compile.nn.utils import clip_grad
    for module in (wholestep, clip_grad):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_clip_grad_norm_fused_matches_torch() -> None:
    """The fused clip_grad_norm_ (plain tensors: one program) against torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((5, 3), (3,), (2, 2, 2))]
    for norm_type, max_norm in ((2.0, 1.0), (1.0, 0.5), (float("inf"), 0.1), (2.0, 1e3)):
        ours = [nn.Parameter(acg.zeros(*g.shape)) for g in grads]
        theirs = [torch.nn.Parameter(torch.zeros(*g.shape)) for g in grads]
        for p, q, g in zip(ours, theirs, grads):
            p.grad, q.grad = acg.tensor(g), torch.tensor(g)
        held = ours[0].grad
        a = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
        b = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
        assert abs(float(a) - float(b)) <= 1e-5 * max(1.0, abs(float(b)))
        assert ours[0].grad is held  # in place, as mul_
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)


# -- distributed helper (dist3): a step whose trace failed is not traced again ------------
def test_a_failed_trace_is_not_repeated_each_call() -> None:
    """The fallback of ``test_data_dependent_python_falls_back``: the first call traces,
    fails and runs eagerly; later calls with the same guards run eagerly at once."""
    acg.manual_seed(0)
    m = _mlp()
    opt = acg.optim.SGD(m.parameters(), lr=0.1)

    @acg.compile
    def step(x, y):
        loss = nn.functional.cross_entropy(m(x), y)
        if loss.item() > 0.0:
            loss.backward()
        opt.step()
        opt.zero_grad()
    acg.aot.reset()
    data = _classes((6,))
    for i in range(3):
        step(*data(i))
    assert (counters["traces"], counters["eager_runs"]) == (1, 3), dict(counters)


class _LossOnModule(nn.Module):
    """llama2.c's pattern: the forward leaves its loss on the module."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _mlp()
        self.last_loss = None

    def forward(self, x: acg.Tensor, y: acg.Tensor) -> acg.Tensor:
        logits = self.net(x)
        self.last_loss = nn.functional.cross_entropy(logits, y)
        return logits


def test_loss_stored_on_the_module_is_a_program_output() -> None:
    """``self.last_loss = ...`` inside the step: one program per step, and after each call
    the module holds the real loss (not a tracer), as eager leaves it."""
    def step_of(model: nn.Module, opt: Any) -> Callable:
        def step(x, y):
            model(x, y)
            model.last_loss.backward()
            opt.step()
            opt.zero_grad()
            return model.last_loss
        return step
    acg.manual_seed(0)
    m1 = _LossOnModule()
    m2 = _LossOnModule()
    m2.load_state_dict(m1.state_dict())
    o1 = acg.optim.AdamW(m1.parameters(), lr=1e-2)
    o2 = acg.optim.AdamW(m2.parameters(), lr=1e-2)
    eager, compiled = step_of(m1, o1), acg.compile(step_of(m2, o2), fullgraph=True)
    acg.aot.reset()
    data = _classes((6,))
    for i in range(5):
        x, y = data(i)
        l1, l2 = eager(x, y), compiled(x, y)
        assert type(m2.last_loss._data) is type(m1.last_loss._data)  # a real array
        assert float(m2.last_loss) == float(l2)
        assert abs(float(l1) - float(l2)) <= 1e-5, f"step {i}: loss"
        _assert_same(m1, o1, m2, o2, f"step {i}")
    assert counters["eager_runs"] == 0 and counters["traces"] <= 2


def test_a_step_one_call_away_is_still_a_step() -> None:
    """``def outer(x): return train(x)``: the optimizer and backward reached through a user
    function the step calls make it a whole step (not a forward compile that would run the
    user's backward inside its trace)."""
    acg.manual_seed(0)
    m1, m2 = _mlp(), _mlp()
    m2.load_state_dict(m1.state_dict())
    o1 = acg.optim.SGD(m1.parameters(), lr=0.1, momentum=0.9)
    o2 = acg.optim.SGD(m2.parameters(), lr=0.1, momentum=0.9)

    def inner(x, y):
        loss = nn.functional.cross_entropy(m2(x), y)
        loss.backward()
        o2.step()
        o2.zero_grad()
        return loss

    def outer(x, y):
        return inner(x, y)
    compiled = acg.compile(outer, fullgraph=True)
    acg.aot.reset()
    data = _classes((6,))
    for i in range(4):
        x, y = data(i)
        loss = nn.functional.cross_entropy(m1(x), y)
        loss.backward()
        o1.step()
        o1.zero_grad()
        assert abs(float(loss) - float(compiled(x, y))) <= 1e-5
        _assert_same(m1, o1, m2, o2, f"step {i}")
    assert counters["eager_runs"] == 0 and counters["traces"] <= 2


def _bce_with_own_labels(m: nn.Module, x: acg.Tensor, y: acg.Tensor) -> acg.Tensor:
    """DCGAN's discriminator step: a label tensor made in the step, on the input's
    device, refilled in place; a mask made with ``device=x.device``."""
    label = acg.full((x.size(0),), 1.0, device=x.device)
    label.fill_(0.0)
    mask = acg.ones(3, device=x.device)
    return nn.functional.binary_cross_entropy_with_logits((m(x) * mask).sum(1), label)


def _diag_of_a_parameter(m: nn.Module, x: acg.Tensor, y: acg.Tensor) -> acg.Tensor:
    """A covariance built from a parameter's diagonal (diag_embed writes into zeros it
    makes) and read back with diagonal + log, the Gaussian-process log-det idiom."""
    w = m[0].weight[:3, :3]
    cov = acg.diag_embed(w.exp().diagonal()) + w @ w.T
    return nn.functional.cross_entropy(m(x), y) + cov.diagonal().log().sum() * 1e-2


@pytest.mark.parametrize("loss_fn", [_bce_with_own_labels, _diag_of_a_parameter])
def test_tensors_the_step_makes_and_writes_are_its_own(loss_fn: Callable) -> None:
    """Tensors made inside the step (filled in place, on ``x.device``) are made again at
    every call: one program, eager's parameters, gradients and state."""
    _compare(_mlp, lambda m: acg.optim.Adam(m.parameters(), lr=1e-2), _classes((6,)), 6,
             loss_fn=loss_fn, adam=True)


def test_a_backward_under_compiled_autograd_inside_the_step() -> None:
    """The step run inside ``compiled_autograd.enable``: its backward program (which has
    value checks: cholesky) is traced into the step, not called with traced values."""
    def setup() -> tuple:
        p = nn.Parameter(acg.ones(2))
        opt = acg.optim.SGD([p], lr=0.1)

        def step() -> acg.Tensor:
            opt.zero_grad()
            chol = acg.linalg.cholesky(p * acg.eye(2) + acg.eye(2))
            loss = acg.log(acg.diagonal(chol)).sum()  # the Gaussian-process log-det idiom
            loss.backward()
            opt.step()
            return loss
        return p, step

    (p1, eager), (p2, step) = setup(), setup()
    compiled = acg.compile(step, fullgraph=True)
    acg.aot.reset()
    with acg.compiled_autograd.enable("jax"):
        for _ in range(3):
            assert abs(float(eager()) - float(compiled())) <= 1e-6
            assert _maxdiff(p1, p2) <= TOL and _maxdiff(p1.grad, p2.grad) <= TOL
    assert counters["eager_runs"] == 0


def test_new_sequence_lengths_run_eagerly_until_they_repeat() -> None:
    """Batches padded to their longest sequence: a length seen for the first time runs the
    step eagerly (XLA would compile a program for it), a length that repeats gets its
    program; no cache-limit fallback, and every step equals eager's."""
    def model_fn() -> nn.Module:
        return nn.Sequential(nn.Embedding(30, 8), nn.Linear(8, 3))

    def loss_fn(m, ids, y):
        return nn.functional.cross_entropy(m(ids).mean(1), y)

    opt_fn = lambda m: acg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)  # noqa: E731
    m1, o1, _, eager = _setup(model_fn, opt_fn, None, 1.0, "none", loss_fn)
    m2, o2, _, step = _setup(model_fn, opt_fn, None, 1.0, "none", loss_fn)
    compiled = acg.compile(step)
    acg.aot.reset()
    rng = np.random.default_rng(0)
    lengths = [5, 5, 6, 7, 6, 8, 5, 6, 9, 10, 11, 12, 13]
    for i, n in enumerate(lengths):
        ids, y = acg.tensor(rng.integers(0, 30, (3, n))), acg.tensor(rng.integers(0, 3, 3))
        l1, l2 = eager(ids, y), compiled(ids, y)
        assert abs(float(l1) - float(l2)) <= 1e-5, f"step {i}: loss"
        _assert_same(m1, o1, m2, o2, f"step {i} (length {n})")
    # traced: the first call, the second (momentum state now exists), length 6 once it
    # repeats; the lengths seen once ran eagerly, and the cache limit was never reached
    assert (counters["traces"], counters["eager_sizes"], counters["cache_hits"],
            counters["eager_runs"]) == (3, 8, 2, 0), dict(counters)


def test_new_sizes_under_fullgraph_compile_at_once() -> None:
    """``fullgraph=True`` asks for programs only: a new length traces at once (no eager
    call), and the step still equals eager's."""
    def model_fn() -> nn.Module:
        return nn.Sequential(nn.Embedding(30, 8), nn.Linear(8, 3))

    def loss_fn(m, ids, y):
        return nn.functional.cross_entropy(m(ids).mean(1), y)

    opt_fn = lambda m: acg.optim.SGD(m.parameters(), lr=0.1)  # noqa: E731
    m1, o1, _, eager = _setup(model_fn, opt_fn, None, None, "none", loss_fn)
    m2, o2, _, step = _setup(model_fn, opt_fn, None, None, "none", loss_fn)
    compiled = acg.compile(step, fullgraph=True)
    acg.aot.reset()
    rng = np.random.default_rng(1)
    for i, n in enumerate([4, 4, 7, 9]):
        ids, y = acg.tensor(rng.integers(0, 30, (2, n))), acg.tensor(rng.integers(0, 3, 2))
        assert abs(float(eager(ids, y)) - float(compiled(ids, y))) <= 1e-5
        _assert_same(m1, o1, m2, o2, f"step {i} (length {n})")
    assert (counters["traces"], counters["eager_sizes"], counters["eager_runs"]) == (3, 0, 0), \
        dict(counters)


class _Rebinds(nn.Module):
    """An EMA statistic kept by rebinding a buffer and a parameter (a VQ-VAE codebook)
    in forward, not written in place."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("count", acg.zeros(4))
        self.ema = nn.Parameter(acg.ones(4, 4), requires_grad=False)

    def forward(self, x: Any) -> Any:
        self.count = self.count * 0.9 + x.detach().sum(0)
        self.ema = nn.Parameter(self.ema * 0.9 + 0.1 * x.detach().t() @ x.detach(),
                                requires_grad=False)
        return self.lin(x) @ self.ema


def _rebinding_run(compiled: bool, branch: bool = False) -> tuple:
    acg.manual_seed(0)
    m = _Rebinds()
    opt = acg.optim.SGD(m.lin.parameters(), lr=0.1)

    def step(x: Any) -> Any:
        loss = m(x).pow(2).mean()
        if branch and loss.item() > 1e9:  # data-dependent Python: the call runs eagerly
            loss = loss * 0
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    step = acg.compile(step) if compiled else step
    count, ema = m.count, m.ema
    losses = [float(step(acg.full((2, 4), 0.1 * (i + 1)))) for i in range(4)]
    kept = (m.count is count, m.ema is ema)
    return losses, m.count.numpy(), m.ema.detach().numpy(), m.lin.weight.detach().numpy(), kept


def test_a_step_rebinding_a_buffer_and_a_parameter_is_one_program():
    """``self.count = self.count * 0.9 + ...`` in forward: the new values are program
    outputs written into the module's buffer and parameter after each call (the objects
    kept, so the identity guards hold: one trace serves every call)."""
    want = _rebinding_run(False)
    counters.clear()
    got = _rebinding_run(True)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=TOL)
    assert got[4] == (True, True) and want[4] == (False, False)  # (eagerly: new objects)
    assert counters["eager_runs"] == 0 and counters["traces"] == 1  # (SGD: no lazy state)


def test_a_failed_trace_leaves_no_tracer_on_the_module():
    """A step whose trace fails after it rebound a buffer (a ``.item()`` branch here) runs
    eagerly with eager's values: the registries are put back before that."""
    want = _rebinding_run(False, branch=True)
    got = _rebinding_run(True, branch=True)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=TOL)


def test_a_float_argument_new_each_call_runs_eagerly_until_it_repeats():
    """A mixup ``lam`` drawn every step: a float is a program constant, so a value seen
    once runs as eager would (no trace, no compile: it used to retrace every call into the
    cache limit); a value that comes back gets its program. Values equal eager's."""
    def setup() -> tuple:
        acg.manual_seed(0)
        m = _mlp()
        opt = acg.optim.SGD(m.parameters(), lr=0.1)

        def step(x: Any, y: Any, lam: float) -> Any:
            out = m(x)
            loss = lam * nn.functional.cross_entropy(out, y) + \
                (1 - lam) * nn.functional.cross_entropy(out, y.flip(0))
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return m, step
    lams = [0.3, 0.7, 0.11, 0.42, 0.7, 0.7, 0.95]
    data = _classes((6,))
    (m1, eager), (m2, step) = setup(), setup()
    step = acg.compile(step)
    counters.clear()
    for i, lam in enumerate(lams):
        np.testing.assert_allclose(float(step(*data(i), lam)), float(eager(*data(i), lam)),
                                   rtol=1e-6)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=TOL)
    assert counters["traces"] == 2  # the first value, and 0.7 when it came back
    assert counters["eager_sizes"] == 4  # 0.7 (first time), 0.11, 0.42, 0.95


def test_a_compiled_module_with_a_new_float_each_call_runs_it_eagerly():
    class Tempered(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: Any, temp: float) -> Any:
            return (self.lin(x) / temp).softmax(-1)
    acg.manual_seed(0)
    m = Tempered()
    c = acg.compile(m)
    x = acg.randn(3, 4)
    counters.clear()
    for temp in (1.0, 1.1, 1.2, 1.1, 1.1):
        np.testing.assert_allclose(c(x, temp).detach().numpy(), m(x, temp).detach().numpy(),
                                   rtol=1e-6)
    assert counters["traces"] == 2 and counters["eager_floats"] == 2  # 1.0; 1.1 repeated


def test_tolist_in_a_step_runs_it_eagerly_naming_tolist(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    """``preds.tolist()`` (a metric) reads values into Python: the call runs eagerly, exact,
    logged once naming tolist() and the line (it logged JAX's tracer error text)."""
    def make_step(m: nn.Module, opt: Any) -> Callable:
        def step(x, y):
            out = m(x)
            nn.functional.cross_entropy(out, y).backward()
            opt.step()
            opt.zero_grad()
            return out.argmax(1).tolist()
        return step
    msgs = _falls_back(make_step, caplog)
    assert len(msgs) == 1 and "tolist() reads a tensor's values into Python" in msgs[0], msgs
    assert "return out.argmax(1).tolist()" in msgs[0], msgs
