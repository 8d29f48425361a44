"""``acg._foreach_*`` against PyTorch's (every one of its 91), and autograd through them in
every mode (their oracle there: the per-tensor ops)."""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

torch = pytest.importorskip("torch")
NAMES = sorted(n for n in dir(torch) if n.startswith("_foreach_"))
UNARY = set(acg._foreach._UNARY.split())
BINARY, TERNARY = set(acg._foreach._BINARY.split()), set(acg._foreach._TERNARY.split())


def _lists(lib):
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(0.2, 0.9, (2, 3)), rng.uniform(0.2, 0.9, (4,))]
    return [[lib.tensor(a.astype(np.float32)) for a in arrays] for _ in range(3)]


def _calls(base: str) -> list:
    """(args builder) for each argument form PyTorch takes for this op."""
    if base in UNARY or base in ("clone", "max", "zero", "norm", "powsum"):
        extra = {"norm": [(1,), (2,)], "powsum": [(2,)]}.get(base, [()])
        return [lambda a, b, c, lib, e=e: (a, *e) for e in extra]
    if base in BINARY:
        forms = [lambda a, b, c, lib: (a, b), lambda a, b, c, lib: (a, 0.5),
                 lambda a, b, c, lib: (a, [0.5, 1.5])]
        if base in ("add", "sub"):
            forms.append(lambda a, b, c, lib: (a, b))
        return forms
    if base in TERNARY:
        if base == "lerp":
            return [lambda a, b, c, lib: (a, b, 0.3), lambda a, b, c, lib: (a, b, c)]
        return [lambda a, b, c, lib: (a, b, c), lambda a, b, c, lib: (a, b, c, 0.5),
                lambda a, b, c, lib: (a, b, c, [0.5, 2.0])]
    if base == "copy":
        return [lambda a, b, c, lib: (a, b)]
    if base == "mm":
        return [lambda a, b, c, lib: ([a[0]], [b[0].t()])]
    raise AssertionError(base)


@pytest.mark.parametrize("name", NAMES)
def test_foreach_as_torch(name):
    base = name[len("_foreach_"):].rstrip("_")
    inplace = name.endswith("_")
    for form in _calls(base):
        results = []
        for lib in (acg, torch):
            a, b, c = _lists(lib)
            out = getattr(lib, name)(*form(a, b, c, lib))
            results.append([t.numpy() for t in (a if inplace else out)])
            if inplace:
                assert out is a  # (the list itself, as torch 2.13's)
            else:
                assert isinstance(out, tuple)
        for got, want in zip(*results, strict=True):
            assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_foreach_errors_as_torch():
    a = [acg.ones(2), acg.ones(3)]
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        acg._foreach_add(a, [1.0])
    with pytest.raises(RuntimeError, match="same number of tensors, got 2 and 1"):
        acg._foreach_add(a, [acg.ones(2)])


def test_foreach_gradients(mode):
    w = [acg.tensor([1.0, 2.0], requires_grad=True), acg.tensor([3.0], requires_grad=True)]
    out = acg._foreach_addcmul(acg._foreach_exp(w), w, w, value=0.5)
    loss = sum(t.sum() for t in acg._foreach_mul(out, [2.0, 3.0]))
    with mode():
        loss.backward()
    for t, k in zip(w, (2.0, 3.0)):
        x = t.detach().numpy()
        assert_close(t.grad, k * (np.exp(x) + x), rtol=1e-6)
