"""nn.Module parity: registration, naming, conversion, state dicts and their errors,
repr, and module hooks (forward hooks; full backward hooks in every execution mode)."""
from __future__ import annotations

from collections import OrderedDict

import jax
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import assert_close


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.register_buffer("steps", acg.zeros(()))
        self.register_buffer("cache", acg.ones(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(acg.ones(1))
        self.block = Block()
        self.head = nn.Linear(4, 2, bias=False)

    def forward(self, x):
        return self.head(self.block(x)) * self.scale


# -- registration --------------------------------------------------------------------------
def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(acg.tensor([1.0, 2.0]))
    assert isinstance(p, acg.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.tolist() == [1.0, 2.0]
    assert not nn.Parameter(acg.zeros(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert type(p * 2) is acg.Tensor  # ops on a parameter give plain tensors


def test_assignment_routes_to_registries():
    m = nn.Module()
    m.w = nn.Parameter(acg.zeros(2))
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", acg.zeros(3))
    m.plain = 5
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"]
    assert list(m._buffers) == ["buf"] and "plain" in m.__dict__
    m.buf = acg.ones(3)  # re-assigning a buffer keeps it a buffer
    assert m._buffers["buf"].tolist() == [1.0, 1.0, 1.0]
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    with pytest.raises(TypeError, match="cannot assign 'Linear' as parameter 'w'"):
        m.w = nn.Linear(1, 1)  # a parameter slot takes only Parameters or None
    m.sub = nn.Parameter(acg.zeros(1))  # but a Parameter replaces a child module
    assert "sub" not in m._modules and "sub" in m._parameters
    m.w = nn.Parameter(acg.ones(1))
    assert list(m._parameters) == ["w", "sub"]  # re-assignment keeps the position


@pytest.mark.parametrize("call, exc, text", [
    (lambda m: setattr(m, "fc", acg.zeros(2)), TypeError,
     "cannot assign 'Tensor' as child module 'fc' (torch.nn.Module or None expected)"),
    (lambda m: setattr(m, "w", acg.zeros(2)), TypeError,
     "cannot assign 'Tensor' as parameter 'w' (torch.nn.Parameter or None expected)"),
    (lambda m: setattr(m, "b", 3), TypeError,
     "cannot assign 'int' as buffer 'b' (torch.Tensor or None expected)"),
    (lambda m: m.register_buffer("x.y", acg.zeros(1)), KeyError, 'buffer name can\'t contain "."'),
    (lambda m: m.register_buffer("", acg.zeros(1)), KeyError, "buffer name can't be empty"),
    (lambda m: m.register_buffer(1, acg.zeros(1)), TypeError, "buffer name should be a string"),
    (lambda m: m.register_buffer("q", 1.0), TypeError, "cannot assign 'float' object to buffer"),
    (lambda m: m.register_buffer("fc", acg.zeros(1)), KeyError, "attribute 'fc' already exists"),
    (lambda m: m.register_parameter("p", acg.zeros(1)), TypeError,
     "cannot assign 'Tensor' object to parameter 'p' (torch.nn.Parameter or None required)"),
    (lambda m: m.register_parameter("a.b", None), KeyError, "parameter name can't contain"),
    (lambda m: m.add_module("m", 3), TypeError, "int is not a Module subclass"),
    (lambda m: m.add_module("a.b", nn.ReLU()), KeyError, "module name can't contain"),
    (lambda m: m.add_module("w", nn.ReLU()), KeyError, "attribute 'w' already exists"),
])
def test_registration_errors(call, exc, text):
    m = nn.Module()
    m.fc = nn.Linear(1, 1)
    m.w = nn.Parameter(acg.zeros(1))
    m.register_buffer("b", acg.zeros(1))
    with pytest.raises(exc, match=None) as info:
        call(m)
    assert text in info.value.args[0]


def test_non_leaf_parameter_and_early_assignment_errors():
    m = nn.Module()
    x = acg.ones(2, requires_grad=True)
    p = nn.Parameter(acg.zeros(2))
    object.__setattr__(p, "grad_fn", (x * 2).grad_fn)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'p'"):
        m.register_parameter("p", p)

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(acg.zeros(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_getattr_delattr_dir():
    net = Net()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope
    assert {"scale", "block", "head", "forward"} <= set(dir(net))
    del net.scale
    assert "scale" not in net._parameters and not hasattr(net, "scale")
    del net.block.steps
    assert "steps" not in net.block._buffers


# -- naming ------------------------------------------------------------------------------
def test_named_members_use_dotted_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale", "block.fc.weight", "block.fc.bias", "block.norm.weight", "block.norm.bias",
        "head.weight"]
    assert [n for n, _ in net.named_parameters(prefix="model", recurse=False)] == ["model.scale"]
    assert [n for n, _ in net.named_buffers()] == ["block.steps", "block.cache"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "block.norm", "head"]
    assert [n for n, _ in net.named_children()] == ["block", "head"]
    assert list(net.children()) == [net.block, net.head]
    assert len(list(net.modules())) == 5 and len(list(net.buffers(recurse=False))) == 0


def test_shared_parameters_and_modules_appear_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    tied = nn.Module()
    tied.a, tied.b = nn.Linear(3, 3), nn.Linear(3, 3)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight", "a.bias", "b.bias"]
    assert list(tied.state_dict()) == ["a.weight", "a.bias", "b.weight", "b.bias"]


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("block.fc") is net.block.fc and net.get_submodule("") is net
    assert net.get_parameter("block.fc.bias") is net.block.fc.bias
    assert net.get_buffer("block.steps") is net.block._buffers["steps"]
    with pytest.raises(AttributeError, match="Block has no attribute `nope`"):
        net.get_submodule("block.nope")
    with pytest.raises(AttributeError, match="`training` is not an nn.Module"):
        net.get_submodule("block.training")
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        net.get_parameter("block.steps")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("head.weight")


# -- bulk changes ----------------------------------------------------------------------------
def test_apply_train_eval_requires_grad():
    net = Net()
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "LayerNorm", "Block", "Linear", "Net"]  # children first
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad():
    net = Net()
    net(acg.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_dtype_keeps_parameter_objects():
    net = Net()
    net.block.register_buffer("count", acg.tensor(3))  # an int buffer keeps its dtype
    net(acg.randn(2, 3)).sum().backward()
    params = list(net.parameters())
    before = [p.detach().numpy() for p in params]
    assert net.to(acg.float64) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.dtype == np.float64 and p.grad.dtype == np.float64 for p in params)
    assert net.block.steps.dtype == np.float64 and net.block.count.dtype == np.int64
    for p, b in zip(params, before):
        assert_close(p.detach().numpy(), b)
    assert net.float().head.weight.dtype == np.float32
    assert net.half().head.weight.dtype == np.float16
    assert net.to(acg.zeros(1, dtype=acg.float64)).head.weight.dtype == np.float64
    assert net.to("cpu").cpu() is net and net.double() is net
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        net.to(acg.int32)


# -- state dicts -----------------------------------------------------------------------------
def test_state_dict_keys_values_and_prefix():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "block.steps", "block.fc.weight", "block.fc.bias",
                        "block.norm.weight", "block.norm.bias", "head.weight"]
    assert all(not t.requires_grad and type(t) is acg.Tensor for t in sd.values())
    assert_close(sd["block.fc.weight"].detach().numpy(), net.block.fc.weight.detach().numpy())
    assert sd["head.weight"] is not net.head.weight
    assert net.state_dict(keep_vars=True)["head.weight"] is net.head.weight
    assert list(net.block.state_dict(prefix="x."))[0] == "x.steps"


def test_load_state_dict_round_trip():
    src, dst = Net(), Net()
    with acg.no_grad():
        src.block.steps.fill_(7.0)
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert_close(b.detach().numpy(), a.detach().numpy())
    assert dst.block.steps.item() == 7.0
    assert isinstance(dst.head.weight, nn.Parameter) and dst.head.weight.requires_grad


def _corrupt(sd: dict) -> dict:
    sd = OrderedDict(sd)
    del sd["block.fc.bias"]
    sd["block.extra"] = acg.zeros(1)
    sd["ghost.weight"] = acg.zeros(1)
    sd["head.weight"] = acg.zeros(3, 4)
    return sd


def test_load_state_dict_errors_name_every_key():
    net = Net()
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(_corrupt(Net().state_dict()))
    assert str(info.value) == (
        "Error(s) in loading state_dict for Net:\n\t"
        'Missing key(s) in state_dict: "block.fc.bias". \n\t'
        'Unexpected key(s) in state_dict: "ghost.weight", "block.extra". \n\t'
        "size mismatch for head.weight: copying a param with shape torch.Size([3, 4]) from "
        "checkpoint, the shape in current model is torch.Size([2, 4]).")


def test_failed_load_changes_nothing():
    net, other = Net(), Net()
    before = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    bad = OrderedDict(other.state_dict())
    bad["head.weight"] = acg.zeros(5, 5)  # one bad entry among good ones
    with pytest.raises(RuntimeError, match="size mismatch for head.weight"):
        net.load_state_dict(bad)
    for k, v in net.state_dict().items():
        assert_close(v.detach().numpy(), before[k])


def test_non_strict_load_reports_keys_and_copies_the_rest():
    net, src = Net(), Net()
    sd = OrderedDict(src.state_dict())
    del sd["block.fc.bias"]
    sd["block.extra"] = acg.zeros(1)
    result = net.load_state_dict(sd, strict=False)
    assert result == (["block.fc.bias"], ["block.extra"])
    assert_close(net.head.weight.detach().numpy(), src.head.weight.detach().numpy())
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([("a", 1)])
    bad = OrderedDict(src.state_dict())
    bad["scale"] = [1.0]
    with pytest.raises(RuntimeError, match='While copying the parameter named "scale"'):
        net.load_state_dict(bad)


def test_load_state_dict_assign_and_non_persistent_buffers():
    net, src = Net(), Net()
    assert "block.cache" not in net.state_dict()
    net.load_state_dict(src.state_dict(), assign=True)
    assert isinstance(net.head.weight, nn.Parameter) and net.head.weight.requires_grad
    assert_close(net.head.weight.detach().numpy(), src.head.weight.detach().numpy())


# -- repr --------------------------------------------------------------------------------
def test_repr_is_pytorchs_module_tree():
    assert repr(Net()) == (
        "Net(\n"
        "  (block): Block(\n"
        "    (fc): Linear(in_features=3, out_features=4, bias=True)\n"
        "    (norm): LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)\n"
        "  )\n"
        "  (head): Linear(in_features=4, out_features=2, bias=False)\n"
        ")")

    class Custom(nn.Module):
        def extra_repr(self):
            return "a=1\nb=2"
    assert repr(Custom()) == "Custom(\n  a=1\n  b=2\n)"
    assert repr(nn.ReLU()) == "ReLU()"


# -- forward hooks -------------------------------------------------------------------------
def test_forward_hooks_replace_args_and_outputs_in_order():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre") or (args[0] * 0,))
    h2 = lin.register_forward_pre_hook(lambda m, args: calls.append("first"), prepend=True)
    lin.register_forward_hook(lambda m, args, out: calls.append("post") or out + 1)
    lin.register_forward_hook(lambda m, args, kwargs, out: calls.append(("kw", kwargs)),
                              with_kwargs=True)
    out = lin(acg.ones(1, 2))
    assert calls == ["first", "pre", "post", ("kw", {})]
    assert_close(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1)
    h1.remove(), h2.remove()
    calls.clear()
    assert_close(lin(acg.ones(1, 2)).detach().numpy(), lin(acg.ones(1, 2)).detach().numpy())
    assert calls.count("first") == 0 and calls.count("post") == 2


def test_forward_pre_hook_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}),
                                with_kwargs=True)
    assert m(acg.ones(2)).tolist() == [3.0, 3.0]
    m.register_forward_pre_hook(lambda mod, args, kwargs: "bad", with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(acg.ones(2))


# -- backward hooks, every mode ------------------------------------------------------------
def _reference_grads(w: np.ndarray, b: np.ndarray, x: np.ndarray, gy: np.ndarray):
    """d/dx and d/dy of sum(gy * tanh(x @ w.T + b)) by jax.vjp (the module's math)."""
    def f(x):
        return jax.numpy.tanh(x @ w.T + b)
    y, vjp = jax.vjp(f, x)
    return vjp(gy)[0], gy


def test_full_backward_hook_values_order_count(mode):
    acg.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh()).double()
    x = acg.randn(5, 3, dtype=acg.float64, requires_grad=True)
    gy = np.random.default_rng(0).standard_normal((5, 4))
    events = []
    net.register_full_backward_pre_hook(lambda m, go: events.append(("pre", go[0].detach().numpy())))
    net.register_full_backward_hook(
        lambda m, gi, go: events.append(("full", gi[0].detach().numpy(), go[0].detach().numpy())))
    net[0].register_full_backward_hook(lambda m, gi, go: events.append(("inner", gi[0].detach().numpy())))
    for _ in range(2):
        events.clear()
        x.grad = None
        with mode():
            net(x).backward(acg.tensor(gy))
        assert [e[0] for e in events] == ["pre", "inner", "full"]
        gx, _ = _reference_grads(net[0].weight.detach().numpy(), net[0].bias.detach().numpy(), x.detach().numpy(), gy)
        assert_close(events[0][1], gy)
        assert_close(events[1][1], gx, rtol=1e-10)
        assert_close(events[2][1], gx, rtol=1e-10)
        assert_close(events[2][2], gy)
        assert_close(x.grad.numpy(), gx, rtol=1e-10)


def test_backward_hooks_replace_gradients(mode):
    lin = nn.Linear(2, 2).double()
    x = acg.randn(3, 2, dtype=acg.float64, requires_grad=True)
    with mode():
        lin(x).sum().backward()
    plain_x, plain_w = x.grad.numpy(), lin.weight.grad.numpy()
    x.grad = None
    lin.zero_grad()
    pre = lin.register_full_backward_pre_hook(lambda m, go: (go[0] * 2,))
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    with mode():
        lin(x).sum().backward()
    assert_close(x.grad.numpy(), plain_x * 20, rtol=1e-12)  # pre-hook doubles, hook x10
    assert_close(lin.weight.grad.numpy(), plain_w * 2, rtol=1e-12)
    pre.remove()
    x.grad = None
    with mode():
        lin(x).sum().backward()
    assert_close(x.grad.numpy(), plain_x * 10, rtol=1e-12)


def test_backward_hook_when_inputs_need_no_grad(mode):
    lin = nn.Linear(2, 3)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    with mode():
        lin(acg.ones(4, 2)).sum().backward()
    assert seen == [((None,), (4, 3))]
    assert lin.weight.grad is not None


def test_backward_hook_multiple_inputs_and_outputs(mode):
    class Pair(nn.Module):
        def forward(self, a, k, b):
            return a * b, a + b * k

    m = Pair()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    a = acg.tensor([1.0, 2.0], requires_grad=True)
    b = acg.tensor([3.0, 4.0], requires_grad=True)
    with mode():
        p, s = m(a, 2.0, b)
        (p.sum() + 3 * s.sum()).backward()
    (gi, go), = seen
    assert gi[1] is None and len(gi) == 3 and len(go) == 2
    assert_close(gi[0].detach().numpy(), [3 + 3, 4 + 3])
    assert_close(gi[2].detach().numpy(), [1 + 6, 2 + 6])
    assert_close(go[1].detach().numpy(), [3.0, 3.0])
    assert_close(a.grad.numpy(), [6.0, 7.0])


def test_backward_hook_wrong_count_raises_and_leaves_grads(mode):
    lin = nn.Linear(2, 2)
    x = acg.ones(1, 2, requires_grad=True)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        with mode():
            lin(x).sum().backward()
    assert x.grad is None and lin.weight.grad is None


def test_compiled_backward_hooks_reuse_one_capture():
    lin = nn.Linear(3, 3)
    seen = []
    lin.register_full_backward_hook(lambda m, gi, go: seen.append(gi[0].shape))
    acg.compiled_autograd.reset()
    with acg.compiled_autograd.enable("jax"):
        for batch in (2, 2, 2):
            lin.zero_grad()  # .grad defined or not is part of the cache key
            lin(acg.randn(batch, 3, requires_grad=True)).sum().backward()
    assert seen == [(2, 3)] * 3
    assert acg.compiled_autograd.counters["captures"] == 1


def test_deepcopy_gives_independent_parameters_and_keeps_ties():
    import copy
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    net[1].weight = net[0].weight
    clone = copy.deepcopy(net)
    assert isinstance(clone[0].weight, nn.Parameter) and clone[0].weight is not net[0].weight
    assert clone[1].weight is clone[0].weight  # the tie survives the copy
    assert_close(clone[0].weight.detach().numpy(), net[0].weight.detach().numpy())
    with acg.no_grad():
        clone[0].weight.fill_(0.0)
    assert net[0].weight.detach().numpy().any()


def test_state_dict_round_trips_through_a_checkpoint(tmp_path):
    src = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    src(acg.randn(4, 2))  # move the running statistics off their initial values
    acg.save(src.state_dict(), tmp_path / "ck.pt")
    dst = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert repr(dst.load_state_dict(acg.load(tmp_path / "ck.pt"))) == \
        "<All keys matched successfully>"
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_to_device_keeps_parameter_objects():
    net = Net()
    params = list(net.parameters())
    cpu = acg.device("cpu")
    assert net.to(cpu) is net and net.to("cpu", acg.float64) is net
    assert [id(p) for p in net.parameters()] == [id(p) for p in params]
    assert all(p.device == cpu and p.dtype == np.float64 for p in params)
    assert net.cpu().block.steps.dtype == np.float64
