"""acg.compile on models written the way real programs are (ours, in those styles): a
Llama with rotary buffers, RMSNorm, SDPA, a loss stored on the module and generate(); a
Transformer LM caching its mask on the module across train/eval; a makemore-style model
writing a scalar by index; a DCGAN checking ``input.is_cuda or input.is_xpu``. The oracle
is the same module run eagerly (same parameters), in every backward mode."""
from __future__ import annotations

import math

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as F
from autograd_compile.aot import counters
from autograd_compile.fake import FakeTensor
from tests.conftest import assert_close

nn = acg.nn
_RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    acg.aot.reset()
    acg.compiled_autograd.reset()


def _tokens(b: int, t: int, vocab: int) -> acg.Tensor:
    return acg.tensor(_RNG.integers(0, vocab, (b, t)))


def _grads_of(model: nn.Module) -> list[np.ndarray]:
    out = [np.asarray(p.grad) for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    return out


# -- a Llama (llama2.c style) --------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(acg.ones(dim))

    def forward(self, x):
        return x * acg.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(xq, xk, cos, sin):
    """Rotate pairs of features by position-dependent angles (real arithmetic)."""
    def rot(x):
        x = x.reshape(*x.shape[:-1], -1, 2)
        xr, xi = x[..., 0], x[..., 1]
        c, s = cos.view(1, cos.shape[0], 1, cos.shape[1]), sin.view(1, sin.shape[0], 1, -1)
        return acg.stack([xr * c - xi * s, xr * s + xi * c], dim=-1).flatten(3)
    return rot(xq), rot(xk)


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.head_dim)
        k = self.wk(x).view(b, t, self.n_heads, self.head_dim)
        v = self.wv(x).view(b, t, self.n_heads, self.head_dim)
        q, k = rotary(q, k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).contiguous().view(b, t, -1))


class Llama(nn.Module):
    def __init__(self, vocab: int = 11, dim: int = 16, n_heads: int = 2, n_layers: int = 1,
                 max_seq: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            block = nn.Module()
            block.attention_norm, block.attention = RMSNorm(dim), Attention(dim, n_heads)
            block.ffn_norm = RMSNorm(dim)
            block.w1, block.w2 = nn.Linear(dim, 32, bias=False), nn.Linear(32, dim, bias=False)
            block.w3 = nn.Linear(dim, 32, bias=False)
            self.layers.append(block)
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        self.tok.weight = self.output.weight  # tied
        hd = dim // n_heads
        freqs = 1.0 / (10000.0 ** (acg.arange(0, hd, 2)[: hd // 2].float() / hd))
        angles = acg.outer(acg.arange(max_seq).float(), freqs)
        self.register_buffer("freqs_cos", acg.cos(angles), persistent=False)
        self.register_buffer("freqs_sin", acg.sin(angles), persistent=False)
        self.last_loss = None

    def forward(self, tokens, targets=None):
        t = tokens.shape[1]
        h = self.tok(tokens)
        cos, sin = self.freqs_cos[:t], self.freqs_sin[:t]
        for blk in self.layers:
            h = h + blk.attention(blk.attention_norm(h), cos, sin)
            x = blk.ffn_norm(h)
            h = h + blk.w2(F.silu(blk.w1(x)) * blk.w3(x))
        h = self.norm(h)
        if targets is not None:
            logits = self.output(h)
            self.last_loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                             ignore_index=-1)
        else:
            logits = self.output(h[:, [-1], :])
            self.last_loss = None
        return logits

    @acg.no_grad()
    def generate(self, idx, max_new_tokens: int, forward=None):
        forward = forward or self
        for _ in range(max_new_tokens):
            logits = forward(idx[:, -16:])
            nxt = acg.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            idx = acg.cat((idx, nxt), dim=1)
        return idx


def test_llama_loss_stored_on_the_module_is_real_and_trains(mode):
    model = Llama()
    x, y = _tokens(2, 8, 11), _tokens(2, 8, 11)
    want_logits = model(x, y)
    want_loss = model.last_loss
    with mode():
        want_loss.backward()
    want = _grads_of(model)
    cmodel = acg.compile(model, fullgraph=True)
    for _ in range(2):  # the trace, then a cache hit: both leave the real loss
        logits = cmodel(x, y)
        assert type(model.last_loss) is acg.Tensor and not isinstance(model.last_loss, FakeTensor)
        assert_close(logits, want_logits, rtol=1e-5, atol=1e-5)
        assert_close(model.last_loss, want_loss, rtol=1e-5, atol=1e-6)
        with mode():
            model.last_loss.backward()
        for g, w in zip(_grads_of(model), want):
            assert_close(g, w, rtol=1e-4, atol=1e-6)
    assert counters["traces"] == 1 and counters["eager_runs"] == 0


def test_llama_generate_retraces_once_for_a_growing_sequence():
    model = Llama().eval()
    idx = _tokens(1, 1, 11)
    want = model.generate(idx, 6)
    assert model.last_loss is None
    cmodel = acg.compile(model, fullgraph=True)
    got = model.generate(idx, 6, forward=cmodel)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # length 1 (specialised), then one symbolic trace serves every later length
    assert counters["traces"] == 2 and counters["eager_runs"] == 0
    assert model.last_loss is None


# -- a word-language Transformer caching its mask ------------------------------------------

class TransformerLM(nn.Module):
    def __init__(self, vocab: int = 13, dim: int = 16, n_heads: int = 2) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.encoder = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.0)
        self.decoder = nn.Linear(dim, vocab)
        self.src_mask = None

    @staticmethod
    def square_subsequent_mask(sz: int):
        return acg.triu(acg.full((sz, sz), float("-inf")), diagonal=1)

    def forward(self, src, has_mask: bool = True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != src.size(1):
                self.src_mask = self.square_subsequent_mask(src.size(1))
        else:
            self.src_mask = None
        x = self.encoder(src) * math.sqrt(self.encoder.embedding_dim)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), attn_mask=self.src_mask)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, t, d)))
        return F.log_softmax(self.decoder(x), dim=-1)


def test_transformer_mask_cached_on_the_module_across_train_and_eval(mode):
    model = TransformerLM()
    cmodel = acg.compile(model, fullgraph=True)
    x, y = _tokens(3, 6, 13), _tokens(3, 6, 13)
    for phase in ("train", "eval", "train"):
        model.train(phase == "train")
        model.src_mask = None
        want_out = model(x)
        want_mask = np.asarray(model.src_mask)
        if phase == "train":
            with mode():
                F.nll_loss(want_out.view(-1, 13), y.view(-1)).backward()
            want = _grads_of(model)
        for _ in range(2):  # a mask left by the previous call is read, not rebuilt
            out = cmodel(x)
            assert type(model.src_mask) is acg.Tensor
            assert_close(model.src_mask, want_mask)
            assert_close(out, want_out, rtol=1e-5, atol=1e-5)
            if phase == "train":
                with mode():
                    F.nll_loss(out.view(-1, 13), y.view(-1)).backward()
                for g, w in zip(_grads_of(model), want):
                    # float32 through attention and layer norms, summed in another order by
                    # the program: entries near zero differ by ~1e-6 (grads here are ~1e-1)
                    assert_close(g, w, rtol=1e-4, atol=1e-5)
    cmodel(x, has_mask=False)
    assert model.src_mask is None and counters["eager_runs"] == 0


# -- makemore-style: a scalar written by index ---------------------------------------------

class MakemoreMLP(nn.Module):
    def __init__(self, vocab: int = 9, block: int = 3, n_embd: int = 8) -> None:
        super().__init__()
        self.block, self.vocab_size = block, vocab
        self.wte = nn.Embedding(vocab + 1, n_embd)  # +1: the <BLANK> token
        self.mlp = nn.Sequential(nn.Linear(block * n_embd, 32), nn.Tanh(), nn.Linear(32, vocab))

    def forward(self, idx, targets=None):
        embs = []
        for _ in range(self.block):
            embs.append(self.wte(idx))
            idx = acg.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size  # the special <BLANK> token
        logits = self.mlp(acg.cat(embs, -1))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        return logits, loss


def test_makemore_scalar_written_by_index(mode):
    model = MakemoreMLP()
    x, y = _tokens(4, 5, 9), _tokens(4, 5, 9)
    want_logits, want_loss = model(x, y)
    with mode():
        want_loss.backward()
    want = _grads_of(model)
    logits, loss = acg.compile(model, fullgraph=True)(x, y)
    assert_close(logits, want_logits, rtol=1e-5, atol=1e-6)
    with mode():
        loss.backward()
    for g, w in zip(_grads_of(model), want):
        assert_close(g, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("value", [9.0, 3])
def test_scalar_written_by_index_in_a_compiled_function(value):
    @acg.compile(fullgraph=True)
    def f(x):
        y = x * 2
        y[:, 0] = value
        y[1] = y[1] + 1  # a write whose value reads the tensor written
        return y
    x = acg.tensor(_RNG.standard_normal((3, 4)).astype(np.float32))
    want = np.asarray(x) * 2
    want[:, 0] = value
    want[1] += 1
    assert_close(f(x), want)


# -- DCGAN-style: device checks in forward ---------------------------------------------------

class Generator(nn.Module):
    def __init__(self, nz: int = 6, ngf: int = 4) -> None:
        super().__init__()
        self.ngf = ngf
        self.fc = nn.Linear(nz, ngf * 4 * 4)
        self.bn = nn.BatchNorm2d(ngf)
        self.conv = nn.Conv2d(ngf, 1, 3, padding=1)

    def main(self, z):
        x = F.relu(self.bn(self.fc(z).view(-1, self.ngf, 4, 4)))
        x = x[:, :, :, None, :, None].expand(-1, -1, -1, 2, -1, 2).reshape(-1, self.ngf, 8, 8)
        return acg.tanh(self.conv(x))

    def forward(self, input):
        if input.is_cuda or input.is_xpu:  # DCGAN's data_parallel branch: never taken on CPU
            raise AssertionError("not on this machine")
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ndf: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, ndf, 4, stride=2, padding=1)
        self.fc = nn.Linear(ndf * 4 * 4, 1)

    def forward(self, input):
        if input.is_cuda or input.is_xpu or input.is_mps:
            raise AssertionError("not on this machine")
        x = self.conv(input)
        x = acg.where(x > 0, x, 0.2 * x)  # leaky relu
        return acg.sigmoid(self.fc(x.flatten(1))).view(-1)


def test_dcgan_device_checks_trace_in_one_graph(mode):
    g, d = Generator(), Discriminator()
    z = acg.tensor(_RNG.standard_normal((5, 6)).astype(np.float32))
    label = acg.full((5,), 1.0)
    cg, cd = acg.compile(g, fullgraph=True), acg.compile(d, fullgraph=True)
    results = []
    for gen, disc in ((g, d), (cg, cd)):
        out = disc(gen(z))
        with mode():
            F.binary_cross_entropy(out, label).backward()
        results.append((np.asarray(out), _grads_of(g) + _grads_of(d)))
    assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(results[1][1], results[0][1]):
        assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert counters["eager_runs"] == 0


def test_device_attributes_match_pytorch():
    torch = pytest.importorskip("torch")
    names = [n for n in dir(torch.ones(1)) if n.startswith("is_") and
             not callable(getattr(torch.ones(1), n)) and n not in ("is_leaf",)]
    ours, theirs = acg.ones(1), torch.ones(1)
    for n in names:
        assert getattr(ours, n) == getattr(theirs, n), n
    fake = FakeTensor((2,), "float32")
    assert fake.is_cpu and not fake.is_xpu and fake.device == ours.device


# -- escapes through globals and closures; fallback messages -------------------------------

LAST = None


def test_tensors_stored_in_globals_and_closures_are_real():
    box = None

    def f(x):
        global LAST
        nonlocal box
        LAST = x.exp()
        box = (x + 1, x.sum())
        return x * 2
    cf = acg.compile(f)
    x = acg.tensor([0.0, 1.0])
    cf(x)
    assert type(LAST) is acg.Tensor and type(box[0]) is acg.Tensor
    assert_close(LAST, np.exp([0.0, 1.0]), rtol=1e-6)
    assert_close(box[1], 1.0)
    cf(x + 1)  # a cache hit writes the new values
    assert_close(box[0], [2.0, 3.0])
    assert_close(LAST, np.exp([1.0, 2.0]), rtol=1e-6)


SCALE = acg.tensor([1.0, 2.0])
STATS = {"calls": acg.zeros(()), "shift": [acg.tensor([0.5, 0.5])]}


def _reads_outer_tensors(extra: acg.Tensor):
    def f(x):
        STATS["calls"] += 1  # in place on a tensor held by a global dict
        return x * SCALE + STATS["shift"][0] + extra
    return f


@pytest.mark.parametrize("compiled", [False, True])
def test_tensors_read_from_globals_and_containers_are_current(compiled):
    """Tensors a compiled function reads besides its arguments (a global, a closure
    variable, a dict entry, a list item) are read where they are at each call: another
    tensor put there, or one changed in place, gives eager's result, with no retrace; a
    tensor written in place through a dict ends as a real tensor with eager's value."""
    global SCALE
    SCALE = acg.tensor([1.0, 2.0])
    STATS["calls"], STATS["shift"][0] = acg.zeros(()), acg.tensor([0.5, 0.5])
    fn = _reads_outer_tensors(acg.tensor([0.0, 1.0]))
    f = acg.compile(fn) if compiled else fn
    acg.aot.reset()
    x = acg.ones(2)
    got = [f(x).tolist()]
    SCALE = acg.tensor([3.0, 3.0])  # a global rebound
    got.append(f(x).tolist())
    STATS["shift"][0] = acg.tensor([10.0, 20.0])  # a list item rebound
    got.append(f(x).tolist())
    STATS["shift"][0].add_(1.0)  # changed in place
    got.append(f(x).tolist())
    assert got == [[1.5, 3.5], [3.5, 4.5], [13.0, 24.0], [14.0, 25.0]]
    assert type(STATS["calls"]) is acg.Tensor and float(STATS["calls"]) == 4.0
    if compiled:
        assert counters["traces"] == 1 and counters["eager_runs"] == 0, dict(counters)
        SCALE = acg.tensor([2.0])  # another shape there: a retrace, as guards say
        assert f(x).tolist() == [13.0, 24.0] and counters["traces"] == 2


def test_a_module_attribute_tensor_rebound_is_read():
    """A plain tensor attribute of a compiled module (not a buffer), replaced between calls:
    the next call reads the new one, as eager does."""
    class Scaled(acg.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = acg.nn.Linear(2, 2)
            self.gain = acg.tensor([1.0, 1.0])

        def forward(self, x):
            return self.lin(x) * self.gain
    acg.manual_seed(0)
    m = Scaled()
    cm = acg.compile(m)
    x = acg.ones(1, 2)
    assert_close(cm(x), m(x))
    m.gain = acg.tensor([2.0, -1.0])
    assert_close(cm(x), m(x))


def test_a_traced_tensor_appended_to_a_list_runs_eagerly(caplog):
    """``history.append(x.sum())`` adds one tensor per call eagerly: no single place a
    program could write, so the function runs eagerly (logged), the list as eager's."""
    history: list = []

    def f(x):
        history.append(x.sum())
        return x * 2
    cf = acg.compile(f)
    with caplog.at_level("WARNING", logger="autograd_compile"):
        cf(acg.ones(2))
        cf(acg.ones(2))
    assert len(history) == 2 and all(type(h) is acg.Tensor for h in history)
    assert [float(h) for h in history] == [2.0, 2.0]
    assert "adds a traced tensor to the list" in caplog.text


def test_fallback_message_names_the_exception(caplog):
    class D:
        __slots__ = ()

    def f(x):
        raise AttributeError(name="missing", obj=D())  # no text of its own, as C lookups raise
    with caplog.at_level("WARNING", logger="autograd_compile"), \
            pytest.raises(AttributeError):  # then the eager run raises it
        acg.compile(f)(acg.ones(2))
    assert "'D' object has no attribute 'missing'" in caplog.text


def test_escape_docstring_example_runs() -> None:
    import doctest

    from autograd_compile.aot import escape
    result = doctest.testmod(escape)
    assert result.failed == 0 and result.attempted > 0


def test_mnist_style_test_program_model_in_one_graph(mode):
    """The ported test program's Net (tests/programs/mnist_style.py) under fullgraph=True."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent / "programs" / "mnist_style.py"
    spec = importlib.util.spec_from_file_location("_mnist_style", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    model = program.Net().eval()  # dropout off: the same values
    cmodel = acg.compile(model, fullgraph=True)
    x = acg.tensor(_RNG.standard_normal((3, 1, 28, 28)).astype(np.float32))
    y = _tokens(1, 3, 10).view(-1)
    results = []
    for fwd in (model, cmodel):
        out = fwd(x)
        with mode():
            F.nll_loss(out, y).backward()
        results.append((np.asarray(out), _grads_of(model)))
    assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-5)
    for a, b in zip(results[1][1], results[0][1]):
        assert_close(a, b, rtol=1e-4, atol=1e-6)
    assert counters["eager_runs"] == 0


class BasicBlock(nn.Module):
    """A torchvision-style residual block: BatchNorm then ReLU(inplace=True), and the
    shortcut added in place after a BatchNorm."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: acg.Tensor) -> acg.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(self.pool(self.relu(out))).flatten(1).sum(1)


@pytest.mark.parametrize("training", [True, False])
def test_resnet_block_with_inplace_relu_after_batchnorm_compiles(mode, training):
    """In-place writes to BatchNorm's and MaxPool's outputs: one program, eager's values,
    gradients and running statistics."""
    acg.manual_seed(0)
    model, twin = BasicBlock(4).train(training), BasicBlock(4).train(training)
    twin.load_state_dict(model.state_dict())
    x0 = _RNG.standard_normal((2, 4, 6, 6)).astype(np.float32)
    cmodel = acg.compile(model, fullgraph=True)
    for _ in range(2):
        x, xt = acg.tensor(x0, requires_grad=True), acg.tensor(x0, requires_grad=True)
        got, want = cmodel(x), twin(xt)
        assert_close(got, want, rtol=1e-5, atol=1e-5)
        with mode():
            got.sum().backward()
            want.sum().backward()
        assert_close(x.grad, xt.grad, rtol=1e-4, atol=1e-5)
    for a, b in zip(_grads_of(model), _grads_of(twin)):
        assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert_close(model.bn1.running_mean, twin.bn1.running_mean, rtol=1e-5, atol=1e-6)
    assert counters["traces"] == 1 and counters["eager_runs"] == 0
