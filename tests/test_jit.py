"""acg.jit: scripted and traced objects run their Python code: eager results and gradients, with
PyTorch's objects, errors and file round trips (torch.jit as the oracle where installed)."""
from __future__ import annotations

import copy
import doctest
import importlib
import io
import typing
import warnings

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.jit as jit
from autograd_compile import nn
from autograd_compile.testing import assert_close
from conftest import outcome


def _np(t):
    return np.asarray(t.detach().numpy())


def _copy_params(src, dst, torch):
    """Give the torch module ``dst`` the parameter and buffer values of ours, ``src``."""
    with torch.no_grad():
        for name, value in src.state_dict().items():
            dst.state_dict()[name].copy_(torch.from_numpy(_np(value).copy()))


# -- module-level functions (jit.save stores a function by its import path) -----------------------
@jit.script
def swish(x):
    return x.mul(acg.sigmoid(x))


@jit.script
def mish(x):
    return x.mul(acg.nn.functional.softplus(x).tanh())


def hard_sigmoid(x):
    return acg.nn.functional.relu6(x + 3.0) / 6.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.act(self.bn(self.fc(x))))

    def act(self, y):
        return swish(y)


class Branchy(nn.Module):
    """Takes one path when traced, another in Python (as a traced graph records one)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        if jit.is_tracing():
            return self.fc(x) * 2
        return self.fc(x)


def _torch_net(torch):
    class Net(torch.nn.Module):  # noqa: F811  (the same name: reprs name the class)
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 4)
            self.bn = torch.nn.BatchNorm1d(4)
            self.out = torch.nn.Linear(4, 2)

        def forward(self, x):
            y = self.bn(self.fc(x))
            return self.out(y * torch.sigmoid(y))
    return Net()


# -- script ---------------------------------------------------------------------------------------
def _torch_swish(torch):
    def swish(x):
        return x * torch.sigmoid(x)
    return swish


def _torch_mish(torch):
    def mish(x):
        return x * torch.nn.functional.softplus(x).tanh()
    return mish


@pytest.mark.parametrize("fn,torch_fn", [(swish, _torch_swish), (mish, _torch_mish)])
def test_scripted_functions_match_torch_values_and_grads(fn, torch_fn, mode):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    x = acg.tensor(values, requires_grad=True)
    with mode():
        fn(x).pow(2).sum().backward()
    tx = torch.tensor(values, requires_grad=True)
    scripted = torch.jit.script(torch_fn(torch))
    scripted(tx).pow(2).sum().backward()
    assert isinstance(fn, jit.ScriptFunction)
    np.testing.assert_allclose(_np(fn(x)), scripted(tx).detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_scripted_function_keeps_the_function():
    assert swish.name == "swish" and swish.__name__ == "swish" and swish.__wrapped__ is not None
    assert swish.qualified_name == "__torch__.swish"
    assert swish.code.startswith("def swish(x):") and "acg.sigmoid" in swish.code
    assert jit.script(swish) is swish
    x = acg.randn(3)
    assert acg.equal(swish(x), x * acg.sigmoid(x))


def test_scripted_module_is_a_script_module_sharing_parameters():
    torch = pytest.importorskip("torch")
    m = Net()
    s = jit.script(m)
    ts = torch.jit.script(_torch_net(torch))
    assert isinstance(s, jit.ScriptModule) and isinstance(s, jit.RecursiveScriptModule)
    assert isinstance(s, Net) and type(s).__name__ == "RecursiveScriptModule"
    assert repr(s) == repr(ts)
    assert s.original_name == ts.original_name == "Net" and s.fc.original_name == "Linear"
    assert list(s.state_dict()) == list(m.state_dict()) == list(ts.state_dict())
    assert all(a is b for a, b in zip(s.parameters(), m.parameters()))
    assert s.bn.running_mean is m.bn.running_mean
    # train/eval of the scripted copy leave the original alone, as PyTorch's
    s.eval()
    assert not s.training and not s.bn.training and m.training and m.bn.training
    assert s.act is not None and s.fc is not m.fc and s.fc.weight is m.fc.weight


def test_scripted_module_outputs_and_grads_equal_eager(mode):
    m = Net()
    s = jit.script(m)
    x = acg.randn(6, 3)
    with mode():
        s(x).square().sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    with mode():
        m(x).square().sum().backward()
    for g, p in zip(grads, m.parameters()):
        assert_close(g, p.grad)
    s.eval(), m.eval()
    assert acg.equal(s(x), m(x))


def test_scripted_module_matches_torch_scripted_module(mode):
    torch = pytest.importorskip("torch")
    m, tm = Net(), _torch_net(torch)
    _copy_params(m, tm, torch)
    s, ts = jit.script(m), torch.jit.script(tm)
    values = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    x, tx = acg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with mode():
        s(x).sum().backward()
    ts(tx).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), (tname, tp) in zip(s.named_parameters(), ts.named_parameters()):
        assert name == tname
        np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(s.bn.running_mean), ts.bn.running_mean.numpy(), rtol=1e-6,
                               atol=1e-7)


def test_hooks_and_shared_submodules():
    calls = []
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)  # one module reached twice
    seq.register_forward_hook(lambda mod, args, out: calls.append("orig"))
    s = jit.script(seq)
    assert s[0] is s[2] and s[0].weight is lin.weight
    s(acg.ones(1, 2))
    assert calls == ["orig"]  # hooks registered before scripting are kept
    s.register_forward_hook(lambda mod, args, out: calls.append("script"))
    seq(acg.ones(1, 2))
    assert calls == ["orig", "orig"]  # one added to the copy stays on the copy


def test_attribute_final_annotate_and_legacy_script_module():
    torch = pytest.importorskip("torch")

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = jit.Attribute(0.25, float)

        def forward(self, x):
            return x * self.scale

    class TorchPlain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.jit.Attribute(0.25, float)

        def forward(self, x):
            return x * self.scale

    # scripting unwraps an Attribute on a plain module, as PyTorch's does
    assert jit.script(Plain()).scale == torch.jit.script(TorchPlain()).scale == 0.25

    class Legacy(jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.scale = jit.Attribute(0.5, float)
            self.names = jit.Attribute([], typing.List[str])

        @jit.script_method
        def forward(self, x):
            return x * self.scale

    m = Legacy()
    assert m.scale == 0.5 and m.names == [] and jit.script(m) is m
    assert acg.equal(m(acg.ones(2)), acg.full((2,), 0.5))
    assert jit.Final is typing.Final is torch.jit.Final
    assert jit.Attribute._fields == torch.jit.Attribute._fields
    assert jit.annotate(typing.List[int], []) == [] and jit.annotate(int, 3) == 3
    for value, kind in [([1, 2], typing.List[int]), ([1, "a"], typing.List[int]),
                        ({"a": 1.0}, typing.Dict[str, float]), ({"a": 1}, typing.Dict[str, str]),
                        ((1, "a"), typing.Tuple[int, str]), (None, typing.Optional[int]),
                        (3, typing.Optional[int]), ("x", typing.Union[int, str]), (1.0, int)]:
        assert jit.isinstance(value, kind) == torch.jit.isinstance(value, kind), (value, kind)


def test_decorators_keep_functions_callable():
    torch = pytest.importorskip("torch")

    class M(nn.Module):
        @jit.ignore
        def helper(self, x):
            return x + 1

        @jit.unused
        def debug(self, x):
            return x - 1

        @jit.export
        def extra(self, x):
            return x * 3

        @property
        @jit.unused
        def size_hint(self):
            return 7

        def forward(self, x):
            if not jit.is_scripting():
                x = self.debug(x)  # the Python branch runs here, as in PyTorch's eager mode
            return self.helper(x)

    s = jit.script(M())
    x = acg.ones(2)
    assert acg.equal(s(x), x) and acg.equal(s.extra(x), x * 3) and s.size_hint == 7
    assert jit.ignore(drop=True)(lambda v: v * 2)(2) == 4
    for ours, theirs in [(M.helper, torch.jit.ignore(lambda: 0)),
                         (M.debug, torch.jit.unused(lambda: 0)),
                         (M.extra, torch.jit.export(lambda: 0))]:
        assert ours._torchscript_modifier == theirs._torchscript_modifier
    assert outcome(jit.ignore, "x") == outcome(torch.jit.ignore, "x")
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert torch.jit.is_scripting() is False
    assert jit.script_if_tracing(hard_sigmoid) is hard_sigmoid
    assert jit._overload_method(hard_sigmoid) is hard_sigmoid


# -- trace ----------------------------------------------------------------------------------------
def test_traced_branch_is_the_one_torch_records():
    torch = pytest.importorskip("torch")

    def fn(x):
        return x * 2 if jit.is_tracing() else x

    def tfn(x):
        return x * 2 if torch.jit.is_tracing() else x

    traced = jit.trace(fn, acg.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ttraced = torch.jit.trace(tfn, torch.ones(2))
    assert isinstance(traced, jit.ScriptFunction)
    assert traced(acg.ones(2)).tolist() == ttraced(torch.ones(2)).tolist() == [2.0, 2.0]
    assert not jit.is_tracing()
    m = Branchy()
    t = jit.trace(m, acg.ones(1, 3))
    assert acg.equal(t(acg.ones(1, 3)), m(acg.ones(1, 3)) * 2)


def test_traced_module_matches_eager_and_torch(mode):
    torch = pytest.importorskip("torch")
    m, tm = Net(), _torch_net(torch)
    _copy_params(m, tm, torch)
    values = np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32)
    t = jit.trace(m, acg.tensor(values))
    with warnings.catch_warnings():  # tracing runs forward once (PyTorch's check runs it again)
        warnings.simplefilter("ignore")
        tt = torch.jit.trace(tm, torch.tensor(values), check_trace=False)
    assert int(t.bn.num_batches_tracked) == int(tt.bn.num_batches_tracked) == 1
    assert type(t).__name__ == type(tt).__name__ == "TopLevelTracedModule"
    assert type(t.fc).__name__ == type(tt.fc).__name__ == "TracedModule"
    assert repr(t) == repr(tt)
    assert list(t.state_dict()) == list(tt.state_dict())
    x, tx = acg.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    with mode():
        t(x).square().sum().backward()
    tt(tx).square().sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, tp in zip(t.parameters(), tt.parameters()):
        np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=1e-5, atol=1e-5)
    t.eval(), tt.eval()  # traced in training mode: batch statistics still, as PyTorch's
    assert not t.training and not t.bn.training and not tt.bn.training
    np.testing.assert_allclose(_np(t(x)), tt(tx).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not t.bn.training  # the flags are the trace's only during the call


def test_traced_modes_are_those_of_trace_time(tmp_path):
    torch = pytest.importorskip("torch")
    drop = jit.trace(nn.Sequential(nn.Linear(2, 2), nn.Dropout(p=1.0)), acg.ones(1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tdrop = torch.jit.trace(torch.nn.Sequential(torch.nn.Linear(2, 2),
                                                    torch.nn.Dropout(p=1.0)),
                                torch.ones(1, 2), check_trace=False)
    drop.eval(), tdrop.eval()
    assert drop(acg.ones(1, 2)).tolist() == tdrop(torch.ones(1, 2)).tolist() == [[0.0, 0.0]]
    jit.save(drop, tmp_path / "d.pt")
    assert jit.load(tmp_path / "d.pt")(acg.ones(1, 2)).tolist() == [[0.0, 0.0]]
    m = nn.Dropout(p=1.0).eval()
    assert jit.trace(m, acg.ones(2))(acg.ones(2)).tolist() == [1.0, 1.0]
    assert jit.script(nn.Dropout(p=1.0)).eval()(acg.ones(2)).tolist() == [1.0, 1.0]


def test_trace_bound_forward_and_kwargs():
    m = nn.Linear(3, 2)
    t = jit.trace(m.forward, acg.ones(1, 3))
    assert isinstance(t, jit.TopLevelTracedModule) and t.weight is m.weight
    f = jit.trace(lambda a, b: a + b, example_kwarg_inputs={"a": acg.ones(2), "b": acg.ones(2)})
    assert f(a=acg.ones(2), b=acg.ones(2)).tolist() == [2.0, 2.0]
    d = jit.trace(lambda d: d["a"] * 2, ({"a": acg.ones(2)},))
    assert d({"a": acg.ones(2)}).tolist() == [2.0, 2.0]
    s = jit.trace_module(Net(), {"forward": acg.ones(2, 3), "act": acg.ones(2, 4)})
    assert isinstance(s, jit.ScriptModule)


def _input_cases(x, torch_or_acg):
    return [(x, 1.5), (x, "s"), (x, None), (x, [1, 2]), (x, (x, 2))]


def test_trace_errors_match_torch():
    torch = pytest.importorskip("torch")
    x, tx = acg.ones(2), torch.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for ours, theirs in zip(_input_cases(x, acg), _input_cases(tx, torch)):
            a = outcome(jit.trace, lambda p, q: p, ours)
            assert a is not None and a == outcome(torch.jit.trace, lambda p, q: p, theirs)
        for out in [lambda v: None, lambda v: (v, 3), lambda v: 3, lambda v: {"a": v}]:
            a = outcome(jit.trace, out, (x,))
            assert a is not None and a == outcome(torch.jit.trace, out, (tx,))
        # strict=False allows mutable containers; a list output warns under strict
        assert jit.trace(lambda v: {"a": v}, (x,), strict=False)(x)["a"] is not None
        with pytest.warns(jit.TracerWarning, match="Encountering a list"):
            jit.trace(lambda v: [v], (x,))
    s = jit.script(nn.Linear(2, 2))
    with pytest.warns(UserWarning, match="already a ScriptModule"):
        assert jit.trace(s, acg.ones(1, 2)) is s
    with pytest.raises(TypeError, match="example_inputs"):
        jit.trace(lambda v: v)


def test_trace_compiled_matches_eager(mode):
    m = Net()
    x = acg.randn(8, 3)
    t = jit.trace(m, x, compile=True)
    assert "_jit_compiled" in t.__dict__
    with mode():
        t(x).square().sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    with mode():
        m(x).square().sum().backward()
    for g, p in zip(grads, m.parameters()):
        assert_close(g, p.grad, rtol=1e-4, atol=1e-5)
    t.eval()  # traced in training mode: it stays so (as PyTorch), compiled too
    assert_close(t(x), m(x), rtol=1e-5, atol=1e-6)
    m.eval()
    e = jit.trace(m, x, compile=True)
    assert_close(e(x), m(x), rtol=1e-5, atol=1e-6)
    f = jit.trace(hard_sigmoid, acg.randn(5), compile=True)
    v = acg.randn(7)
    assert_close(f(v), hard_sigmoid(v))
    c = copy.deepcopy(t)
    assert c.__dict__["_jit_compiled"] is not t.__dict__["_jit_compiled"]
    assert_close(c(x), t(x))


def test_compiling_scripted_and_traced_modules():
    m = Net().eval()
    x = acg.randn(4, 3)
    for wrapped in (jit.script(m), jit.trace(m, x)):
        c = acg.compile(wrapped)
        assert_close(c(x), m(x), rtol=1e-5, atol=1e-6)
        twin = copy.deepcopy(wrapped)
        assert type(twin) is type(wrapped) and twin.fc.weight is not m.fc.weight
        assert_close(twin(x), m(x))
        assert "acg.linear" in str(twin.graph)


def test_compiled_trace_keeps_the_traced_branch():
    m = Branchy()
    x = acg.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # check_trace compares traced with traced: no warning
        t = jit.trace(m, x, compile=True)
    assert_close(t(x), m.fc(x) * 2)
    k = jit.trace(m, example_kwarg_inputs={"x": x}, compile=True)
    assert_close(k(x=x), m.fc(x) * 2)


def test_check_trace_warns_when_compiled_outputs_differ():
    with pytest.warns(jit.TracerWarning, match="Output nr 1. of the traced function does not "
                                               "match"):
        jit.trace(lambda v: v * acg.rand(1), acg.ones(3), compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jit.trace(lambda v: v * 2, acg.ones(3), compile=True,
                  check_inputs=[(acg.ones(3),), (acg.randn(4),)])


_EVAL_CODE = """\
# _tensor_constant0: 0.weight
# _tensor_constant1: 0.bias
# _tensor_constant2: 1.weight
# _tensor_constant3: 1.bias
# _tensor_constant4: 1.running_mean
# _tensor_constant5: 1.running_var
def forward(self, arg0):
    _tensor_constant0 = self._tensor_constant0
    _tensor_constant1 = self._tensor_constant1
    linear = ops.acg.linear(arg0, _tensor_constant0, _tensor_constant1);  \
arg0 = _tensor_constant0 = _tensor_constant1 = None
    _tensor_constant2 = self._tensor_constant2
    _tensor_constant3 = self._tensor_constant3
    _tensor_constant4 = self._tensor_constant4
    _tensor_constant5 = self._tensor_constant5
    batch_norm = ops.acg.batch_norm(linear, _tensor_constant2, _tensor_constant3, \
_tensor_constant4, _tensor_constant5, False, 0.1, 1e-05);  linear = _tensor_constant2 = \
_tensor_constant3 = _tensor_constant4 = _tensor_constant5 = None
    getitem = operator.getitem(batch_norm, 0);  batch_norm = None
    relu = ops.acg.relu(getitem);  getitem = None
    return relu
"""


def test_graph_and_code():
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())
    before = m[1].running_mean.clone()
    t = jit.trace(m, acg.randn(2, 3))
    after_trace = m[1].running_mean.clone()
    assert "placeholder" in str(t.graph) and "acg.batch_norm" in str(t.graph)
    assert "True, 0.1, 1e-05" in t.code  # traced in training mode: batch statistics
    # the graph is traced on a copy: the module's statistics moved once, by the trace only
    assert acg.equal(m[1].running_mean, after_trace) and not acg.equal(before, after_trace)
    assert int(m[1].num_batches_tracked) == 1
    assert jit.trace(m.eval(), acg.randn(2, 3)).code == _EVAL_CODE
    f = jit.trace(hard_sigmoid, acg.randn(2))
    assert f.code.startswith("def forward(self, arg0):") and "div" in f.code
    with pytest.raises(RuntimeError, match="call it once first"):
        jit.script(lambda v: v + 1).graph
    s = jit.script(m)
    assert jit.script(nn.Linear(1, 1)).code == (
        "def forward(self, input: Tensor) -> Tensor:\n"
        "    return F.linear(input, self.weight, self.bias)\n")  # the Python that runs
    s(acg.randn(4, 3))
    assert "acg.linear" in str(s.graph) and s.inlined_graph is not None
    assert swish.code == "def swish(x):\n    return x.mul(acg.sigmoid(x))\n"


# -- save / load ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", ["script", "trace", "trace-compiled", "frozen"])
def test_save_load_round_trip(make, tmp_path):
    m = Net()
    m(acg.randn(4, 3))  # moves the running statistics off their initial values
    x = acg.randn(5, 3)
    obj = {"script": lambda: jit.script(m), "trace": lambda: jit.trace(m, x),
           "trace-compiled": lambda: jit.trace(m, x, compile=True),
           "frozen": lambda: jit.freeze(jit.script(m).eval())}[make]()
    path = tmp_path / "model.pt"
    jit.save(obj, path, _extra_files={"config.json": '{"a": 1}'})
    extra = {"config.json": "", "missing": "kept"}
    back = jit.load(str(path), map_location="cpu", _extra_files=extra)
    assert extra == {"config.json": b'{"a": 1}', "missing": "kept"}
    assert type(back).__name__ == type(obj).__name__ and isinstance(back, jit.ScriptModule)
    assert list(back.state_dict()) == list(obj.state_dict())
    for k, v in obj.state_dict().items():
        assert acg.equal(back.state_dict()[k], v)
    assert back.training == obj.training
    assert_close(back(x), obj(x))
    buf = io.BytesIO()
    obj.save(buf)
    buf.seek(0)
    assert_close(jit.load(buf)(x), obj(x))


def test_save_load_functions():
    buf = io.BytesIO()
    jit.save(swish, buf)
    buf.seek(0)
    back = jit.load(buf)
    x = acg.randn(3)
    assert isinstance(back, jit.ScriptFunction) and acg.equal(back(x), swish(x))
    traced = jit.trace(hard_sigmoid, x)
    buf = io.BytesIO()
    traced.save(buf)
    buf.seek(0)
    assert acg.equal(jit.load(buf)(x), traced(x))
    with pytest.raises(RuntimeError, match="import path"):
        jit.save(jit.script(lambda v: v), io.BytesIO())
    with pytest.raises(TypeError, match="ScriptModule or ScriptFunction"):
        jit.save(nn.Linear(2, 2), io.BytesIO())


def test_load_errors(tmp_path):
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.jit.trace(torch.nn.Linear(2, 2), torch.ones(1, 2))
    torch.jit.save(ts, str(tmp_path / "ts.pt"))
    with pytest.raises(RuntimeError, match="TorchScript archive.*state_dict") as info:
        jit.load(str(tmp_path / "ts.pt"))
    assert "load_state_dict" in str(info.value)
    torch.save(ts.state_dict(), str(tmp_path / "sd.pt"))
    with pytest.raises(RuntimeError, match="acg.load"):
        jit.load(str(tmp_path / "sd.pt"))
    missing = str(tmp_path / "nope.pt")
    assert outcome(jit.load, missing) == outcome(torch.jit.load, missing)
    assert outcome(jit.load, str(tmp_path)) == outcome(torch.jit.load, str(tmp_path))
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    with pytest.raises(RuntimeError, match="not a file written by jit.save"):
        jit.load(str(tmp_path / "junk.pt"))


# -- freeze, fork, settings -----------------------------------------------------------------------
def test_freeze_and_optimize_for_inference_match_torch():
    torch = pytest.importorskip("torch")
    m, tm = Net(), _torch_net(torch)
    assert outcome(jit.freeze, m) == outcome(torch.jit.freeze, tm)
    assert outcome(jit.freeze, jit.script(m)) == outcome(torch.jit.freeze, torch.jit.script(tm))
    assert outcome(jit.optimize_for_inference, m) == \
        outcome(torch.jit.optimize_for_inference, tm)
    s = jit.script(m).eval()
    f = jit.freeze(s)
    tf = torch.jit.freeze(torch.jit.script(tm).eval())
    assert list(f.parameters()) == list(tf.parameters()) == []
    assert list(f.state_dict()) == list(tf.state_dict()) == []
    x = acg.randn(4, 3, requires_grad=True)
    assert acg.equal(f(x), s(x))
    f(x).sum().backward()
    gx = x.grad.clone()
    x.grad = None
    s(x).sum().backward()
    assert_close(gx, x.grad)
    with acg.no_grad():
        m.fc.weight.add_(1.0)  # a frozen copy holds constants: later changes do not reach it
    assert not acg.equal(f(x), s(x))
    assert list(jit.freeze(s, preserved_attrs=["out"]).state_dict()) == ["out.weight", "out.bias"]
    o = jit.optimize_for_inference(jit.script(Net()))
    assert not o.training and list(o.parameters()) == []


def test_fork_wait_and_future():
    torch = pytest.importorskip("torch")
    fut = jit.fork(lambda a, b: a + b, acg.ones(2), b=acg.ones(2))
    assert fut.done() and jit.wait(fut).tolist() == [2.0, 2.0]
    assert fut.then(lambda f: f.value() * 2).wait().tolist() == [4.0, 4.0]

    def boom():
        raise ValueError("x")
    assert outcome(jit.fork, boom) == outcome(torch.jit.fork, boom)
    f = jit.Future()
    seen = []
    f.add_done_callback(lambda g: seen.append(g.value()))
    f.set_result(5)
    assert seen == [5] and f.wait() == 5
    with pytest.raises(RuntimeError):
        f.set_result(6)
    g = jit.Future()
    g.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        g.wait()


def test_fusion_settings_match_torch():
    torch = pytest.importorskip("torch")
    old, told = jit.set_fusion_strategy([("DYNAMIC", 3)]), torch.jit.set_fusion_strategy(
        [("DYNAMIC", 3)])
    try:
        assert old == told
        assert jit.set_fusion_strategy([("STATIC", 1)]) == [("DYNAMIC", 3)]
        assert outcome(jit.set_fusion_strategy, [("FOO", 1)]) == \
            outcome(torch.jit.set_fusion_strategy, [("FOO", 1)])
    finally:
        jit.set_fusion_strategy(old), torch.jit.set_fusion_strategy(told)
    assert jit.onednn_fusion_enabled() == torch.jit.onednn_fusion_enabled() == False  # noqa: E712
    jit.enable_onednn_fusion(True)
    assert jit.onednn_fusion_enabled()
    jit.enable_onednn_fusion(False)
    with jit.fuser("fuser1"), jit.optimized_execution(False), jit.strict_fusion():
        pass
    assert outcome(lambda: jit.fuser("bad").__enter__()) == \
        outcome(lambda: torch.jit.fuser("bad").__enter__())


def test_public_names_cover_torch_jit():
    torch = pytest.importorskip("torch")
    missing = [n for n in torch.jit.__all__ if not hasattr(jit, n)]
    assert missing == ["export_opnames"] or missing == []
    for name in ["is_scripting", "is_tracing", "TracerWarning", "TracingCheckError",
                 "ScriptWarning", "RecursiveScriptModule", "TopLevelTracedModule"]:
        assert hasattr(jit, name)


@pytest.mark.parametrize("name", ["autograd_compile.jit", "autograd_compile.jit._annotations",
                                  "autograd_compile.jit._future", "autograd_compile.jit._state",
                                  "autograd_compile.jit._script", "autograd_compile.jit._trace",
                                  "autograd_compile.jit._freeze",
                                  "autograd_compile.jit._serialization"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
