"""``TransformerEncoder`` in inference with a padding mask: PyTorch runs nested tensors and
returns zeros at padded positions; we run the plain path and zero them, under the same
conditions (left-aligned mask, no attention mask, no gradient needed, eval mode)."""
import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")


def _pair(norm: bool):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tenc = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8) if norm else None)
    layer = acg.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = acg.nn.TransformerEncoder(layer, 2, norm=acg.nn.LayerNorm(8) if norm else None)
    enc.load_state_dict({k: acg.tensor(v.numpy()) for k, v in tenc.state_dict().items()})
    return tenc, enc


PAD_LEFT_ALIGNED = np.array([[False] * 5, [False] * 3 + [True] * 2, [False] + [True] * 4])
PAD_NOT_ALIGNED = np.array([[True] + [False] * 4, [False] * 3 + [True] * 2, [False] * 5])


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("pad", [PAD_LEFT_ALIGNED, PAD_NOT_ALIGNED], ids=["left", "not-left"])
@pytest.mark.parametrize("how", ["eval-no-grad", "eval-grad", "train"])
def test_encoder_output_matches_torch_at_every_position(norm, pad, how):
    tenc, enc = _pair(norm)
    x = np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32)
    for m in (tenc, enc):
        m.train(how == "train")
    with torch.set_grad_enabled(how != "eval-no-grad"):
        want = tenc(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).detach().numpy()
    with acg.set_grad_enabled(how != "eval-no-grad"):
        got = enc(acg.tensor(x), src_key_padding_mask=acg.tensor(pad))
    assert_close(got.detach(), want, rtol=1e-4, atol=1e-5)
    zeroed = how == "eval-no-grad" and pad is PAD_LEFT_ALIGNED  # (a fresh LayerNorm maps 0 to 0)
    assert (np.abs(np.asarray(got.detach())[pad]).sum() == 0) == zeroed


def test_an_attention_mask_keeps_the_plain_path():
    tenc, enc = _pair(False)
    tenc.eval(), enc.eval()
    x = np.random.default_rng(1).standard_normal((3, 5, 8)).astype(np.float32)
    causal = np.triu(np.ones((5, 5), bool), 1)
    with torch.no_grad():
        want = tenc(torch.tensor(x), mask=torch.tensor(causal),
                    src_key_padding_mask=torch.tensor(PAD_LEFT_ALIGNED)).numpy()
    with acg.no_grad():
        got = enc(acg.tensor(x), mask=acg.tensor(causal),
                  src_key_padding_mask=acg.tensor(PAD_LEFT_ALIGNED))
    assert_close(got, want, rtol=1e-4, atol=1e-5)
