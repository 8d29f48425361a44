"""Dispatch modes and tensor subclasses (__acg_dispatch__), nesting, no_dispatch."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.tensor import _make


class LoggingMode(acg.DispatchMode):
    def __init__(self, tag: str = "", log: list | None = None) -> None:
        self.tag, self.log = tag, log if log is not None else []

    def __acg_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(f"{self.tag}{func.name.split('.')[0]}")
        return func(*args, **(kwargs or {}))


def train_step(model, x, y):
    loss = acg.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


def test_logging_mode_sees_every_op_of_a_training_step():
    acg.manual_seed(0)
    model = acg.nn.Linear(3, 2)
    x, y = acg.randn(4, 3), acg.randn(4, 2)
    with LoggingMode() as mode:
        train_step(model, x, y)
    names = [n.split(".")[0] for n in mode.log]
    assert names[0] in ("linear", "matmul", "t", "transpose")  # forward starts with the layer
    assert "mse_loss" in names  # the loss op, then its backward ops follow
    i = names.index("mse_loss")
    assert len(names) > i + 2  # backward formulas ran through dispatch too
    assert model.weight.grad is not None and model.bias.grad is not None
    # without the mode the same step gives the same gradients
    wg = model.weight.grad.numpy()
    model.weight.grad = None
    model.bias.grad = None
    train_step(model, x, y)
    np.testing.assert_allclose(model.weight.grad.numpy(), wg, rtol=1e-6)


def test_nested_modes_inner_first_and_popped_inside_handler():
    log: list[str] = []
    x = acg.ones(2)
    with LoggingMode("outer:", log), LoggingMode("inner:", log):
        y = x * 2
    assert log == ["inner:mul", "outer:mul"]
    assert y.tolist() == [2.0, 2.0]


def test_mode_handler_calls_do_not_recurse_and_can_rewrite():
    class Double(acg.DispatchMode):
        calls = 0

        def __acg_dispatch__(self, func, types, args=(), kwargs=None):
            Double.calls += 1
            out = func(*args, **(kwargs or {}))
            return out * 2 if func.name.startswith("add") else out  # `*` here is not seen
    a, b = acg.ones(2), acg.ones(2)
    with Double():
        c = a + b
    assert c.tolist() == [4.0, 4.0] and Double.calls == 1


def test_modes_must_exit_in_order():
    m1, m2 = LoggingMode(), LoggingMode()
    m1.__enter__()
    m2.__enter__()
    with pytest.raises(RuntimeError, match="reverse order"):
        m1.__exit__(None, None, None)
    m2.__exit__(None, None, None)
    m1.__exit__(None, None, None)


def test_no_dispatch_skips_modes():
    log: list[str] = []
    with LoggingMode("", log):
        with acg.no_dispatch():
            acg.ones(2) * 3
    assert log == []


class LoggingTensor(acg.Tensor):
    """A wrapper subclass: holds a plain tensor, logs and forwards every op."""

    log: list[str] = []

    def __init__(self, elem: acg.Tensor) -> None:
        super().__init__(elem._data)
        self.elem = elem

    @classmethod
    def __acg_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.log.append(func.name)
        unwrap = lambda v: v.elem if isinstance(v, LoggingTensor) else v
        out = func(*[unwrap(a) for a in args],
                   **{k: unwrap(v) for k, v in (kwargs or {}).items()})
        return LoggingTensor(out) if isinstance(out, acg.Tensor) else out


def test_logging_tensor_subclass_handles_its_ops():
    LoggingTensor.log = []
    t = LoggingTensor(acg.tensor([1.0, 2.0]))
    out = (t * 3 + 1).sum()
    assert isinstance(out, LoggingTensor)
    assert [n.split(".")[0] for n in LoggingTensor.log] == ["mul", "add", "sum"]
    assert out.elem.item() == 11.0


def test_enable_python_mode_routes_factories_too():
    LoggingTensor.log = []
    with acg.enable_python_mode(LoggingTensor):
        z = acg.zeros(3)
    assert "zeros" in LoggingTensor.log and isinstance(z, LoggingTensor)


def test_subclass_returning_not_implemented_raises_type_error():
    class Refuses(acg.Tensor):
        @classmethod
        def __acg_dispatch__(cls, func, types, args=(), kwargs=None):
            return NotImplemented
    r = Refuses(acg.ones(2)._data)
    with pytest.raises(TypeError, match="no __acg_dispatch__ handled"):
        r * 2


def test_mode_sees_backward_ops_with_autograd_recording():
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    log: list[str] = []
    with LoggingMode("", log):
        y = x.sin().sum()
        y.backward()
    names = [n.split(".")[0] for n in log]
    assert names[:2] == ["sin", "sum"]
    assert "cos" in names[2:]  # sin's derivative, dispatched during backward
    np.testing.assert_allclose(x.grad.numpy(), np.cos([1.0, 2.0]), rtol=1e-6)
    assert isinstance(_make(x._data), acg.Tensor)
