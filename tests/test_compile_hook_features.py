"""Forward hooks that keep features (style transfer, perceptual losses, feature
extraction) on a module run by ``acg.compile``: what a hook stores, through its closure, a
bound method's object or a partial's argument, is the real tensor after each call, as
eagerly, and the loss built from it backpropagates in every mode."""
import functools

import numpy as np

import autograd_compile as acg
from conftest import assert_close


class SaveFeatures:
    def __init__(self, module):
        self.features = None
        module.register_forward_hook(self.hook)

    def hook(self, module, inputs, output):
        self.features = output


def _store(store, name, module, inputs, output):
    store[name] = output


def _net_and_hooks():
    acg.manual_seed(0)
    net = acg.nn.Sequential(acg.nn.Linear(4, 6), acg.nn.Tanh(), acg.nn.Linear(6, 3))
    feats = {}
    net[0].register_forward_hook(lambda m, i, o: feats.__setitem__("lin", o))
    saved = SaveFeatures(net[1])
    by_partial = {}
    net[2].register_forward_hook(functools.partial(_store, by_partial, "head"))
    return net, feats, saved, by_partial


def _run(compiled: bool, mode):
    net, feats, saved, by_partial = _net_and_hooks()
    f = acg.compile(net) if compiled else net
    results = []
    for c in range(3):
        net.zero_grad()
        x = acg.arange(8.0).reshape(2, 4) * (c + 1) / 10
        out = f(x)
        for t in (feats["lin"], saved.features, by_partial["head"]):
            assert type(t) is acg.Tensor  # never the trace's fake
        loss = out.sum() + feats["lin"].square().sum() + (saved.features ** 3).sum() \
            + by_partial["head"].abs().sum()
        with mode():
            loss.backward()
        results.append((loss.item(), feats["lin"].detach().numpy().copy(),
                        [p.grad.numpy().copy() for p in net.parameters()]))
    return results


def test_features_kept_by_hooks_are_real_and_train(mode):
    want = _run(False, lambda: __import__("contextlib").nullcontext())
    got = _run(True, mode)
    for (gl, gf, gg), (wl, wf, wg) in zip(got, want):
        assert abs(gl - wl) < 1e-4 * max(1.0, abs(wl))
        assert_close(gf, wf, rtol=1e-5, atol=1e-6)
        for a, b in zip(gg, wg):
            assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_no_grad_feature_extraction():
    net, feats, saved, _ = _net_and_hooks()
    f = acg.compile(net)
    with acg.no_grad():
        for c in range(2):
            x = acg.ones(2, 4) * (c + 1)
            f(x)
            assert_close(feats["lin"].numpy(), net[0](x).numpy(), rtol=1e-6)
            assert_close(saved.features.numpy(), np.tanh(net[0](x).numpy()), rtol=1e-5)
