"""Tensors take Python attributes, as PyTorch's do: programs tag parameters
(``p._no_weight_decay = True``, Megatron's ``p.sequence_parallel``, muP's ``p.infshape``)
and read the tags when they build optimizer groups or in hooks. PyTorch's rules for
copies: pickles and checkpoints keep the attributes, ``copy.deepcopy`` keeps a tensor's
but not a Parameter's, results of ops (``clone``, ``detach``, arithmetic) start bare."""
import copy
import io
import pickle

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close


def test_attributes_set_read_and_listed_in_dict():
    p = acg.nn.Parameter(acg.ones(2))
    p._no_weight_decay = True
    t = acg.zeros(3)
    t.tag = {"kind": "mask"}
    assert p._no_weight_decay is True and p.__dict__ == {"_no_weight_decay": True}
    assert t.tag == {"kind": "mask"} and vars(t) == {"tag": {"kind": "mask"}}
    assert acg.zeros(1).__dict__ == {}
    del t.tag
    with pytest.raises(AttributeError):
        t.tag


def test_op_results_start_without_attributes():
    t = acg.ones(2)
    t.tag = 1
    for out in (t.clone(), t.detach(), t * 1, t[0:1], t.view(2), t.data):
        assert not hasattr(out, "tag"), out


def test_copies_follow_pytorch():
    t = acg.ones(2)
    t.tag = [1, 2]
    c = copy.deepcopy(t)
    assert c.tag == [1, 2] and c.tag is not t.tag  # deep
    p = acg.nn.Parameter(acg.ones(2))
    p.tag = 3
    assert not hasattr(copy.deepcopy(p), "tag")  # torch's Parameter.__deepcopy__ drops it
    assert pickle.loads(pickle.dumps(p)).tag == 3 and pickle.loads(pickle.dumps(t)).tag == [1, 2]


@pytest.mark.parametrize("weights_only", [True, False])
def test_checkpoint_round_trip_keeps_attributes(weights_only):
    p = acg.nn.Parameter(acg.arange(3.0))
    p.tag = 3
    t = acg.ones(2)
    t.scale = 0.5
    buf = io.BytesIO()
    acg.save({"p": p, "t": t}, buf)
    buf.seek(0)
    back = acg.load(buf, weights_only=weights_only)
    assert isinstance(back["p"], acg.nn.Parameter) and back["p"].tag == 3
    assert back["t"].scale == 0.5 and back["p"].tolist() == [0.0, 1.0, 2.0]


def test_checkpoint_with_attributes_reads_in_torch_and_back():
    torch = pytest.importorskip("torch")
    p = acg.nn.Parameter(acg.arange(3.0))
    p.tag = 3
    t = acg.ones(2)
    t.scale = 0.5
    buf = io.BytesIO()
    acg.save({"p": p, "t": t}, buf)
    buf.seek(0)
    theirs = torch.load(buf, weights_only=True)
    assert isinstance(theirs["p"], torch.nn.Parameter) and theirs["p"].tag == 3
    assert theirs["t"].scale == 0.5
    tp = torch.nn.Parameter(torch.ones(2))
    tp.foo = "bar"
    buf = io.BytesIO()
    torch.save(tp, buf)
    buf.seek(0)
    assert acg.load(buf).foo == "bar"


def test_a_file_cannot_set_our_own_fields():
    from autograd_compile.serialization.torch_format import _set_state
    with pytest.raises(Exception, match="_grad"):
        _set_state(acg.ones(1), {"_grad": acg.ones(1)})


def _groups(model):
    decay = [p for p in model.parameters() if not getattr(p, "_no_weight_decay", False)]
    rest = [p for p in model.parameters() if getattr(p, "_no_weight_decay", False)]
    return [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]


def test_tags_drive_optimizer_groups_and_hooks(mode):
    """timm-style groups from tags, and a hook scaling each gradient by the parameter's
    ``lr_scale`` tag, read while the backward runs: the same in every mode."""
    def train(mode_ctx):
        acg.manual_seed(0)
        model = acg.nn.Sequential(acg.nn.Linear(4, 8), acg.nn.LayerNorm(8), acg.nn.Linear(8, 2))
        for name, p in model.named_parameters():
            p._no_weight_decay = p.ndim == 1
            p.lr_scale = 0.5 if name.startswith("0.") else 1.0
            p.register_hook(lambda g, p=p: g * p.lr_scale)
        opt = acg.optim.AdamW(_groups(model), lr=0.1)
        x = acg.randn(5, 4)
        for _ in range(3):
            opt.zero_grad()
            with mode_ctx():
                model(x).square().mean().backward()
            opt.step()
        return [p.detach().numpy().copy() for p in model.parameters()], opt
    got, opt = train(mode)
    want, _ = train(lambda: __import__("contextlib").nullcontext())
    assert [len(g["params"]) for g in opt.param_groups] == [2, 4]
    for g, w in zip(got, want):
        assert_close(g, w)


def test_tagged_parameter_under_compile_matches_eager():
    """A tag read in a compiled forward is a constant of the trace (a later change to a
    tensor's tag is not guarded: see tests/test_compile_attributes.py for modules')."""
    class Scaled(acg.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = acg.nn.Parameter(acg.ones(3))
            self.w.gain = 2.0

        def forward(self, x):
            return x * self.w * self.w.gain

    m = Scaled()
    x = acg.arange(3.0)
    assert_close(acg.compile(m)(x).detach().numpy(), m(x).detach().numpy())
    assert_close(m(x).detach().numpy(), np.arange(3.0) * 2.0)
