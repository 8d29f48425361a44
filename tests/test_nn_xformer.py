"""Transformer modules against PyTorch: state_dict keys equal torch's, torch's weights loaded,
forward values and gradients (inputs and every parameter) in the three execution modes and
under acg.compile, with norm_first, batch_first, activations, masks and key-padding masks."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn as nn
from conftest import ExecMode, assert_close

torch = pytest.importorskip("torch")
from _torch_compare import compare_with_torch, load_torch_state, to_acg  # noqa: E402

# PyTorch's encoder warns that batch_first=False forgoes its nested-tensor path; ours too
NESTED_WARNING = "ignore:enable_nested_tensor is True:UserWarning"
E, H, FF = 8, 2, 16  # d_model, heads, feed-forward width: small, one compile each


def _x(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pair(make, **kwargs):
    """(ours, torch's) built with the same arguments, torch's weights loaded into ours."""
    torch.manual_seed(0)
    theirs = make(torch.nn)(**kwargs)
    ours = make(nn)(**kwargs)
    load_torch_state(ours, theirs)
    return ours, theirs


def _kpm(batch: int, length: int) -> np.ndarray:
    """A bool key-padding mask: sample b has its last b positions padded."""
    mask = np.zeros((batch, length), dtype=bool)
    for b in range(batch):
        if b:
            mask[b, -b:] = True
    return mask


def _float_mask(mask: np.ndarray) -> np.ndarray:
    """A bool mask (True = masked) as PyTorch's additive float mask."""
    return np.where(mask, -np.inf, 0.0).astype(np.float32)


def _masks(**arrays) -> tuple[dict, dict]:
    """The same masks as our tensors and as torch's."""
    return ({k: acg.tensor(v) for k, v in arrays.items()},
            {k: torch.tensor(v) for k, v in arrays.items()})


@pytest.mark.parametrize("norm_first,batch_first,activation",
                         [(False, False, "relu"), (True, True, "gelu")])
def test_encoder_layer_matches_torch(mode, norm_first, batch_first, activation):
    ours, theirs = _pair(lambda m: lambda **k: m.TransformerEncoderLayer(**k), d_model=E,
                         nhead=H, dim_feedforward=FF, dropout=0.0, activation=activation,
                         norm_first=norm_first, batch_first=batch_first)
    S, N = 5, 2
    causal = np.triu(np.ones((S, S), dtype=bool), 1)
    kw, tkw = _masks(src_mask=causal, src_key_padding_mask=_kpm(N, S))
    x = _x(N, S, E) if batch_first else _x(S, N, E)
    compare_with_torch(ours, theirs, [x], mode, kw, tkw)


def test_encoder_layer_callable_activation_and_keys(mode):
    ours, theirs = _pair(lambda m: lambda **k: m.TransformerEncoderLayer(**k), d_model=E,
                         nhead=H, dim_feedforward=FF, dropout=0.0)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.activation, theirs.activation = acg.tanh, torch.tanh
    assert ours.activation_relu_or_gelu == theirs.activation_relu_or_gelu == 1
    compare_with_torch(ours, theirs, [_x(5, 2, E)], mode)
    gelu = nn.TransformerEncoderLayer(E, H, FF, activation=nn.GELU())
    assert gelu.activation_relu_or_gelu == 2
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(E, H, FF, activation="tanh")


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(mode, norm_first):
    ours, theirs = _pair(lambda m: lambda **k: m.TransformerDecoderLayer(**k), d_model=E,
                         nhead=H, dim_feedforward=FF, dropout=0.0, norm_first=norm_first,
                         batch_first=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    N, T, S = 2, 4, 5
    kw, tkw = _masks(tgt_mask=np.triu(np.ones((T, T), dtype=bool), 1),
                     memory_key_padding_mask=_kpm(N, S))
    compare_with_torch(ours, theirs, [_x(N, T, E), _x(N, S, E, seed=1)], mode, kw, tkw)


def test_encoder_stack_with_norm_matches_torch(mode):
    def make(m):
        return lambda: m.TransformerEncoder(
            m.TransformerEncoderLayer(E, H, FF, dropout=0.0), num_layers=2,
            norm=m.LayerNorm(E), enable_nested_tensor=False)
    ours, theirs = _pair(make)
    assert [k for k in ours.state_dict() if k.startswith("layers.1.")] != []
    S, N = 5, 2
    kw, tkw = _masks(mask=nn.Transformer.generate_square_subsequent_mask(S).detach().numpy(),
                     src_key_padding_mask=_float_mask(_kpm(N, S)))
    compare_with_torch(ours, theirs, [_x(S, N, E)], mode, kw, tkw)


def test_decoder_stack_matches_torch(mode):
    def make(m):
        return lambda: m.TransformerDecoder(m.TransformerDecoderLayer(E, H, FF, dropout=0.0),
                                            num_layers=2, norm=m.LayerNorm(E))
    ours, theirs = _pair(make)
    kw, tkw = _masks(tgt_mask=np.triu(np.full((4, 4), -np.inf, dtype=np.float32), 1))
    compare_with_torch(ours, theirs, [_x(4, 2, E), _x(5, 2, E, seed=1)], mode, kw, tkw)


@pytest.mark.filterwarnings(NESTED_WARNING)
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(mode, batch_first):
    ours, theirs = _pair(lambda m: lambda **k: m.Transformer(**k), d_model=E, nhead=H,
                         num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF,
                         dropout=0.0, batch_first=batch_first)
    N, S, T = 2, 5, 4
    shape = (lambda L: (N, L, E)) if batch_first else (lambda L: (L, N, E))
    kw, tkw = _masks(tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(T).detach().numpy(),
                     src_key_padding_mask=_kpm(N, S), memory_key_padding_mask=_kpm(N, S),
                     tgt_key_padding_mask=_float_mask(_kpm(N, T)))
    compare_with_torch(ours, theirs, [_x(*shape(S)), _x(*shape(T), seed=1)], mode, kw, tkw,
                       rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_transformer_under_compile():
    _under_compile(ExecMode("eager"))


@pytest.mark.slow
@pytest.mark.filterwarnings(NESTED_WARNING)
def test_transformer_under_compile_in_every_mode(mode):
    _under_compile(mode)


def _under_compile(mode) -> None:
    ours, theirs = _pair(lambda m: lambda **k: m.Transformer(**k), d_model=E, nhead=H,
                         num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=FF,
                         dropout=0.0)
    kw, tkw = _masks(tgt_mask=np.triu(np.full((4, 4), -np.inf, dtype=np.float32), 1))
    compare_with_torch(ours, theirs, [_x(5, 2, E), _x(4, 2, E, seed=1)], mode, kw, tkw,
                       rtol=1e-4, atol=1e-5, run=acg.compile(ours))


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_transformer_state_dict_keys_and_init():
    torch.manual_seed(0)
    theirs = torch.nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2,
                                  num_decoder_layers=2, dim_feedforward=FF)
    ours = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=2, num_decoder_layers=2,
                          dim_feedforward=FF)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k in tsd:
        assert tuple(sd[k].shape) == tuple(tsd[k].shape), k
    # every matrix Xavier-uniform: bound sqrt(6 / (fan_in + fan_out)), biases as constructed
    for name, p in ours.named_parameters():
        if p.dim() > 1:
            bound = np.sqrt(6.0 / sum(p.shape))
            assert np.abs(p.detach().numpy()).max() <= bound, name
            assert np.abs(p.detach().numpy()).max() > 0.5 * bound, name
    assert_close(sd["encoder.layers.0.self_attn.in_proj_bias"].detach().numpy(), np.zeros(3 * E))
    assert ours.d_model == E and ours.nhead == H and ours.batch_first is False
    assert ours.encoder.enable_nested_tensor is True


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_generate_square_subsequent_mask_and_errors():
    assert_close(nn.Transformer.generate_square_subsequent_mask(4).detach().numpy(),
                 torch.nn.Transformer.generate_square_subsequent_mask(4).detach().numpy())
    m = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=FF)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(acg.zeros(3, 2, E), acg.zeros(3, 4, E))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal "
                       "to d_model"):
        m(acg.zeros(3, 2, E + 1), acg.zeros(3, 2, E + 1))


@pytest.mark.filterwarnings(NESTED_WARNING)
def test_unbatched_inputs_match_torch():
    ours, theirs = _pair(lambda m: lambda **k: m.Transformer(**k), d_model=E, nhead=H,
                         num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=FF)
    ours.eval(), theirs.eval()
    src, tgt = _x(5, E), _x(4, E, seed=1)
    with torch.no_grad():
        want = theirs(torch.tensor(src), torch.tensor(tgt)).detach().numpy()
    assert_close(ours(acg.tensor(src), acg.tensor(tgt)).detach().numpy(), want, rtol=1e-4,
                 atol=1e-5)


def test_dropout_in_train_only():
    acg.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, FF, dropout=0.5)
    x = acg.tensor(_x(5, 2, E))
    a, b = layer(x).detach().numpy(), layer(x).detach().numpy()
    assert not np.allclose(a, b)  # fresh dropout masks each call
    layer.eval()
    c, d = layer(x).detach().numpy(), layer(x).detach().numpy()
    assert_close(c, d)
    theirs = torch.nn.TransformerEncoderLayer(E, H, FF, dropout=0.5)
    load_torch_state(layer, theirs)
    with torch.no_grad():
        assert_close(layer(x).detach().numpy(), theirs.eval()(torch.tensor(_x(5, 2, E))).detach()
                     .numpy(), rtol=1e-4, atol=1e-5)


def test_key_padding_mask_type_mismatch_warns_as_torch():
    layer = nn.TransformerEncoderLayer(E, H, FF, dropout=0.0)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and "
                      "src_mask is deprecated"):
        layer(acg.zeros(5, 2, E), src_mask=causal,
              src_key_padding_mask=acg.tensor(_kpm(2, 5)))


def test_transformer_trains():
    _train(contextlib.nullcontext)


@pytest.mark.slow  # each mode's gradients are checked against torch above; this trains too
def test_transformer_trains_in_every_mode(mode):
    _train(mode)


def _train(mode) -> None:
    acg.manual_seed(0)
    model = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
                           dim_feedforward=FF, dropout=0.0, batch_first=True)
    head = nn.Linear(E, 1)
    opt = acg.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-2)
    src, tgt = acg.tensor(_x(2, 5, E)), acg.tensor(_x(2, 4, E, seed=1))  # shapes shared with
    y = acg.tensor(_x(2, 4, 1, seed=2))  # the tests above: their compiled kernels are reused
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    losses = []
    for _ in range(4):
        opt.zero_grad()
        loss = ((head(model(src, tgt, tgt_mask=mask)) - y) ** 2).mean()
        with mode():
            loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("kwargs", [{"batch_first": False}, {"batch_first": True},
                                    {"batch_first": True, "norm_first": True},
                                    {"batch_first": True, "activation": acg.tanh}])
def test_nested_tensor_flag_and_warning_as_torch(kwargs):
    import warnings
    tkwargs = dict(kwargs, activation=torch.tanh) if "activation" in kwargs else kwargs

    def build(m, kw):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            enc = m.TransformerEncoder(m.TransformerEncoderLayer(E, H, FF, **kw), 1)
        return enc, [str(w.message) for w in caught]
    ours, our_warnings = build(nn, kwargs)
    theirs, their_warnings = build(torch.nn, tkwargs)
    assert our_warnings == their_warnings
    assert ours.use_nested_tensor == theirs.use_nested_tensor
    assert nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 1,
                                 enable_nested_tensor=False).use_nested_tensor is False
