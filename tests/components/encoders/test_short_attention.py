"""The short-sequence transformer layer computes PyTorch's `TransformerEncoderLayer`, and its
dropout drops with the asked probability."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from components.encoders.short_attention import (
    _keep_mask,
    check_layer,
    encoder_layer,
    random_bits_dropout,
    relu_dropout,
)
from components.first_edition.sequence_attention import SequenceAttentionEncoder


def layers(dropout: float) -> nn.TransformerEncoder:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=dropout, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


@pytest.mark.parametrize(("dropout", "train"), [(0.1, False), (0.0, True)])
def test_the_layer_computes_pytorchs_outputs_and_gradients(dropout, train):
    reference = layers(dropout).train(train)
    x = torch.randn(64, 4, 32, requires_grad=True)
    expected = reference(x)
    got = x
    for layer in reference.layers:
        got = encoder_layer(layer, got)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    weights = torch.randn_like(expected)
    grads = torch.autograd.grad((expected * weights).sum(), [x, *reference.parameters()])
    mine = torch.autograd.grad((got * weights).sum(), [x, *reference.parameters()])
    for a, b in zip(mine, grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_the_encoder_gives_the_numbers_of_its_pytorch_blocks():
    """The FOCAL++ branch on fixed inputs: its tokens through its own blocks, as before."""
    torch.manual_seed(0)
    encoder = SequenceAttentionEncoder(sizes=(2, 2, 2, 1), latent_dim=5, d_model=32, heads=4).eval()
    context = torch.randn(3, 16, 7)
    x = encoder.tokenizer(context).flatten(0, 1)
    before = encoder.head(encoder.blocks(x).mean(-2)).view(3, 16, 5)
    torch.testing.assert_close(encoder(context), before, rtol=1e-5, atol=1e-6)


def test_recomputing_the_blocks_gives_the_same_numbers_and_gradients():
    """With dropout on: the recomputed blocks draw the same masks in the backward pass."""

    def trained(recompute: bool):
        torch.manual_seed(0)
        encoder = SequenceAttentionEncoder(
            sizes=(2, 2, 2, 1), latent_dim=5, d_model=32, heads=4, blocks=2, recompute=recompute
        )
        out = encoder(torch.randn(3, 16, 7))
        out.square().sum().backward()
        return out, [p.grad for p in encoder.parameters()]

    (plain, plain_grads), (again, again_grads) = trained(False), trained(True)
    assert torch.equal(plain, again)
    assert all(torch.equal(a, b) for a, b in zip(plain_grads, again_grads, strict=True))


def test_dropout_drops_p_of_the_elements_and_keeps_the_expectation():
    torch.manual_seed(0)
    x = torch.ones(400, 1000, requires_grad=True)
    y = random_bits_dropout(x, 0.1, True)
    kept = y != 0
    assert kept.float().mean().item() == pytest.approx(0.9, abs=0.003)
    assert y.mean().item() == pytest.approx(1.0, abs=0.005)
    assert torch.unique(y[kept]).tolist() == pytest.approx([65536 / (65536 - 6554)])
    (grad,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(grad, y.detach())  # the same mask, the same scale
    torch.manual_seed(0)
    assert torch.equal(random_bits_dropout(x, 0.1, True), y)  # a seeded run repeats itself
    assert random_bits_dropout(x, 0.1, False) is x and random_bits_dropout(x, 0.0, True) is x
    assert not random_bits_dropout(x, 1.0, True).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_mask_as_a_product_gives_where_s_values(dtype):
    """Kept elements are x · scale rounded once in x's dtype, dropped ones 0, as
    `torch.where(keep, x, 0) * scale` computed them; the gradient alike."""
    x = torch.randn(64, 4, 32).to(dtype).requires_grad_()
    torch.manual_seed(5)
    y = random_bits_dropout(x, 0.1, True)
    torch.manual_seed(5)
    keep = _keep_mask(x, round(0.1 * 65536))
    scale = 65536 / (65536 - round(0.1 * 65536))
    expected = torch.where(keep, x.detach(), 0.0).mul_(scale)
    assert y.dtype == dtype and torch.equal(y.detach(), expected)
    g = torch.randn_like(y)
    (grad,) = torch.autograd.grad(y, x, g)
    assert torch.equal(grad, torch.where(keep, g, 0.0).mul_(scale))


def test_relu_then_dropout_in_one_step_gives_the_same_numbers_and_gradients():
    h = torch.randn(300, 64, requires_grad=True)
    weights = torch.randn(300, 64)
    torch.manual_seed(3)
    fused = relu_dropout(h, 0.1, True)
    (fused_grad,) = torch.autograd.grad((fused * weights).sum(), h)
    torch.manual_seed(3)
    apart = random_bits_dropout(torch.relu(h), 0.1, True)
    (apart_grad,) = torch.autograd.grad((apart * weights).sum(), h)
    assert torch.equal(fused, apart) and torch.equal(fused_grad, apart_grad)
    assert 0.4 < (fused > 0).float().mean() < 0.5  # half positive, a tenth of those dropped


def test_layers_it_does_not_compute_are_refused():
    with pytest.raises(ValueError, match="norm_first=False"):
        check_layer(nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, batch_first=True))
    with pytest.raises(ValueError, match="activation='relu'"):
        check_layer(nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True))
