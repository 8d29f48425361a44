"""The utility modules PyTorch programs import by name: ``nn.DataParallel``,
``nn.attention.sdpa_kernel``, ``nn.utils.stateless``, ``utils.hooks``, ``utils._pytree``,
``hub`` and ``utils.model_zoo``."""
import collections
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.utils import _pytree as pytree
from conftest import assert_close


# -- DataParallel --------------------------------------------------------------------------------
def _pair():
    acg.manual_seed(0)
    net = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.ReLU(), acg.nn.Linear(8, 2))
    ref = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.ReLU(), acg.nn.Linear(8, 2))
    ref.load_state_dict(net.state_dict())
    return net, ref


def test_data_parallel_matches_the_module(mode):
    net, ref = _pair()
    dp = acg.nn.DataParallel(net)
    x = acg.randn(6, 4)
    with mode():
        out = dp(x)
        out.pow(2).sum().backward()
        ref(x).pow(2).sum().backward()
    assert_close(out, ref(x))
    for p, q in zip(net.parameters(), ref.parameters()):
        assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
    assert dp.module is net and dp.device_ids == [] and dp.dim == 0


def test_data_parallel_state_dict_has_module_prefix_like_torch():
    torch = pytest.importorskip("torch")
    net, _ = _pair()
    tnet = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    assert list(acg.nn.DataParallel(net).state_dict()) == \
        list(torch.nn.DataParallel(tnet).state_dict())
    # a DataParallel checkpoint loads back into a DataParallel
    dp = acg.nn.DataParallel(_pair()[1])
    dp.load_state_dict(acg.nn.DataParallel(net).state_dict())
    assert_close(dp.module[0].weight, net[0].weight)


def test_data_parallel_rejects_a_non_module():
    with pytest.raises(TypeError, match="expected an nn.Module"):
        acg.nn.DataParallel(lambda x: x)


def test_data_parallel_over_two_devices_is_one_spmd_program(tmp_path):
    script = tmp_path / "dp.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import numpy as np, autograd_compile as acg
        acg.manual_seed(0)
        net, ref = acg.nn.Linear(4, 3), acg.nn.Linear(4, 3)
        ref.load_state_dict(net.state_dict())
        dp = acg.nn.DataParallel(net)
        x = acg.randn(6, 4)
        out = dp(x)
        out.pow(2).sum().backward()
        ref(x).pow(2).sum().backward()
        assert dp._parallel is not None and len(out._data.sharding.device_set) == 2
        np.testing.assert_allclose(np.asarray(out), np.asarray(ref(x)), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(net.weight.grad), np.asarray(ref.weight.grad),
                                   rtol=1e-5, atol=1e-6)
        print("ok")
    """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("ok")


# -- attention kernel switches --------------------------------------------------------------------
def test_sdpa_kernel_sets_and_restores_the_switches():
    from autograd_compile.nn.attention import SDPBackend, sdpa_kernel
    cuda = acg.backends.cuda
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.EFFICIENT_ATTENTION]):
        assert (cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled(),
                cuda.flash_sdp_enabled(), cuda.cudnn_sdp_enabled()) == (True, True, False, False)
        q = acg.randn(1, 2, 3, 4)
        out = acg.nn.functional.scaled_dot_product_attention(q, q, q)
    assert cuda.flash_sdp_enabled() and cuda.cudnn_sdp_enabled()
    weights = acg.softmax(q @ q.transpose(-1, -2) / 2.0, dim=-1)
    assert_close(out, weights @ q, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="SDPBackend"):
        with sdpa_kernel(["math"]):
            pass
    with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert not cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled()


def test_sdp_backend_values_match_torch():
    torch = pytest.importorskip("torch")
    from autograd_compile.nn.attention import SDPBackend
    from torch.nn.attention import SDPBackend as TorchBackend
    assert {b.name: int(b) for b in SDPBackend} == \
        {b.name: int(getattr(TorchBackend, b.name)) for b in SDPBackend}


# -- stateless, hooks ----------------------------------------------------------------------------
def test_stateless_functional_call_gives_gradients_to_the_new_tensors(mode):
    lin = acg.nn.Linear(3, 1)
    w = acg.randn(1, 3, requires_grad=True)
    x = acg.randn(5, 3)
    with mode():
        out = acg.nn.utils.stateless.functional_call(lin, {"weight": w, "bias": acg.zeros(1)},
                                                     (x,))
        out.sum().backward()
    assert_close(out, x @ w.detach().T)
    assert_close(w.grad, x.sum(0, keepdim=True))
    assert lin.weight.grad is None


def test_removable_handle_with_extra_dict():
    from autograd_compile.utils.hooks import RemovableHandle, unserializable_hook
    a, b = {}, {}
    h = RemovableHandle(a, extra_dict=b)
    a[h.id], b[h.id] = "hook", True
    h.remove()
    assert a == {} and b == {}
    f = unserializable_hook(lambda g: g)
    assert f.__torch_unserializable__


# -- _pytree ------------------------------------------------------------------------------------
Point = collections.namedtuple("Point", "x y")
TREES = [
    {"b": 1, "a": (2, [3, None])},
    [1, Point(2, (3, 4)), collections.OrderedDict(z=5, a=6)],
    collections.deque([1, [2]], maxlen=4),
    (acg.Size([2, 3]), "leaf", 7.5),
    collections.defaultdict(list, {"k": [1, 2]}),
]


@pytest.mark.parametrize("tree", TREES)
def test_pytree_round_trips(tree):
    leaves, spec = pytree.tree_flatten(tree)
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    assert spec.num_leaves == len(leaves) == len(pytree.tree_leaves(tree))
    doubled = pytree.tree_map_only(int, lambda v: v * 2, tree)
    assert pytree.tree_leaves(doubled) == [v * 2 if type(v) is int else v for v in leaves]


@pytest.mark.parametrize("tree", TREES)
def test_pytree_matches_torch(tree):
    torch = pytest.importorskip("torch")
    import torch.utils._pytree as tp
    ttree = tp.tree_map_only(acg.Size, lambda s: torch.Size(s), tree, is_leaf=lambda v: type(v) is acg.Size)
    ours, spec = pytree.tree_flatten(tree)
    theirs, tspec = tp.tree_flatten(ttree)
    assert ours == theirs
    assert (spec.num_nodes, spec.num_leaves) == (tspec.num_nodes, tspec.num_leaves)
    paths = [pytree.keystr(p) for p, _ in pytree.tree_leaves_with_path(tree)]
    assert paths == [tp.keystr(p) for p, _ in tp.tree_leaves_with_path(ttree)]


def test_pytree_map_of_several_trees_and_errors():
    assert pytree.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 1"):
        pytree.tree_map(lambda a, b: a, [1, 2], [1])
    with pytest.raises(ValueError, match="has length 1"):
        pytree.tree_unflatten([1], pytree.tree_structure([1, 2]))
    assert pytree.tree_all(lambda v: v > 0, [1, {"a": 2}])
    assert not pytree.tree_any_only(str, lambda v: v == "x", [1, "y"])


def test_pytree_registered_node_and_tensors():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    try:
        t = acg.ones(2, requires_grad=True)
        got = pytree.tree_map(lambda v: v * 3, Pair(t, [t]))
        assert_close(got.a, [3.0, 3.0]) and assert_close(got.b[0], [3.0, 3.0])
        (got.a.sum() + got.b[0].sum()).backward()
        assert_close(t.grad, [6.0, 6.0])
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, _: None)
    finally:
        del pytree.SUPPORTED_NODES[Pair]


# -- hub, model_zoo ----------------------------------------------------------------------------
def test_load_state_dict_from_url_downloads_once_and_checks_the_hash(tmp_path):
    import hashlib
    src = tmp_path / "src"
    src.mkdir()
    acg.save({"w": acg.arange(3.0)}, src / "weights.pt")
    digest = hashlib.sha256((src / "weights.pt").read_bytes()).hexdigest()
    named = src / f"weights-{digest[:8]}.pt"
    os.replace(src / "weights.pt", named)
    cache = tmp_path / "cache"
    got = acg.hub.load_state_dict_from_url(named.as_uri(), model_dir=str(cache),
                                           progress=False, check_hash=True)
    assert_close(got["w"], [0.0, 1.0, 2.0])
    os.remove(named)  # the second call reads the cached copy
    again = acg.utils.model_zoo.load_url(named.as_uri(), model_dir=str(cache), progress=False)
    assert_close(again["w"], [0.0, 1.0, 2.0])
    bad = src / "weights-00000000.pt"
    acg.save({"w": acg.zeros(1)}, bad)
    with pytest.raises(RuntimeError, match="invalid hash value"):
        acg.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(tmp_path / "c2"),
                                         progress=False, check_hash=True)
    assert not (tmp_path / "c2" / bad.name).exists()  # a failed download leaves nothing


def test_load_state_dict_from_url_reads_a_torch_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Linear(2, 3).state_dict(), tmp_path / "lin.pth")
    sd = acg.hub.load_state_dict_from_url((tmp_path / "lin.pth").as_uri(),
                                          model_dir=str(tmp_path / "cache"), progress=False)
    lin = acg.nn.Linear(2, 3)
    lin.load_state_dict(sd)
    assert lin.weight.shape == (3, 2)


def test_hub_load_from_a_local_hubconf(tmp_path):
    (tmp_path / "mylib.py").write_text("WIDTH = 5\n")
    (tmp_path / "hubconf.py").write_text(textwrap.dedent('''
        import autograd_compile as torch
        from mylib import WIDTH

        def tiny(out=2):
            """A tiny linear model."""
            return torch.nn.Linear(WIDTH, out)

        def _private():
            pass
    '''))
    model = acg.hub.load(str(tmp_path), "tiny", out=4, source="local")
    assert model.weight.shape == (4, 5)
    assert acg.hub.list(str(tmp_path), source="local") == ["tiny"]
    assert acg.hub.help(str(tmp_path), "tiny", source="local") == "A tiny linear model."
    with pytest.raises(RuntimeError, match="Cannot find callable missing"):
        acg.hub.load(str(tmp_path), "missing", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        acg.hub.load(str(tmp_path), "tiny", source="gitlab")


def test_hub_dir_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setattr(acg.hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert acg.hub.get_dir() == os.path.join(str(tmp_path), "hub")
    acg.hub.set_dir(tmp_path / "elsewhere")
    assert acg.hub.get_dir() == str(tmp_path / "elsewhere")
