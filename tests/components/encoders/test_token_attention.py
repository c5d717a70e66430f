"""The joint-head attention over a transition's few tokens is scaled-dot-product attention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from components.encoders.token_attention import SHORT, head_mask, token_attention


def reference(q, k, v, heads):
    """PyTorch's attention, heads split from the last dimension in order."""
    split = [t.unflatten(-1, (heads, -1)).transpose(-3, -2) for t in (q, k, v)]
    return F.scaled_dot_product_attention(*split).transpose(-3, -2).flatten(-2)


def qkv(shape, seed=0, dtype=torch.float32, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(shape, generator=g, dtype=dtype) * scale).requires_grad_() for _ in range(3)
    ]


@pytest.mark.parametrize(
    ("lead", "length", "heads", "width"),
    [((3, 7), 4, 4, 16), ((5,), 1, 2, 8), ((2, 3), 3, 1, 6), ((4, 2), SHORT, 8, 32)],
)
def test_values_and_gradients_equal_scaled_dot_product_attention(lead, length, heads, width):
    ours_in = qkv((*lead, length, width), scale=2.0)
    theirs_in = [t.detach().clone().requires_grad_() for t in ours_in]
    ours = token_attention(*ours_in, heads=heads)
    theirs = reference(*theirs_in, heads)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    grad = torch.randn(ours.shape, generator=torch.Generator().manual_seed(9))
    ours.backward(grad)
    theirs.backward(grad)
    for a, b in zip(ours_in, theirs_in, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)


def test_the_backward_pass_is_the_forward_pass_derivative():
    """Written out by hand, so checked against finite differences in float64."""
    inputs = [t.detach().double().requires_grad_() for t in qkv((2, 3, 4, 8), seed=3)]
    assert torch.autograd.gradcheck(lambda q, k, v: token_attention(q, k, v, heads=2), inputs)


def test_views_of_one_projection_work_as_inputs():
    """The blocks pass q, k, v as column slices of one qkv projection (strided views)."""
    g = torch.Generator().manual_seed(4)
    packed = torch.randn(3, 5, 4, 3 * 16, generator=g, requires_grad=True)
    out = token_attention(*packed.chunk(3, -1), heads=4)
    expected = reference(*packed.detach().chunk(3, -1), 4)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert packed.grad.shape == packed.shape and torch.isfinite(packed.grad).all()


def test_longer_sequences_take_pytorchs_kernel_and_agree():
    q, k, v = qkv((2, SHORT + 3, 8))
    torch.testing.assert_close(token_attention(q, k, v, heads=2), reference(q, k, v, 2))


def test_the_head_mask_gives_each_feature_to_one_head_in_order():
    mask = head_mask(4, 12, torch.zeros(()))
    assert torch.equal(mask.sum(0), torch.ones(12))
    assert mask[0, :3].tolist() == [1, 1, 1] and mask[1, 3:6].tolist() == [1, 1, 1]
    assert mask[3, 9:].tolist() == [1, 1, 1] and mask[0, 3:].sum() == 0


def test_large_scores_stay_finite():
    """The softmax is PyTorch's (max-subtracted): scores in the hundreds do not overflow."""
    q, k, v = qkv((3, 4, 16), scale=40.0)
    out = token_attention(q, k, v, heads=4)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, reference(q, k, v, 4), rtol=1e-4, atol=1e-4)


def test_a_first_call_under_inference_mode_leaves_training_working():
    """The head mask is built once and kept: built under inference mode it must still be a
    tensor the training pass can save for its backward."""
    q, k, v = qkv((2, 4, 20), seed=5)  # a width no other test uses: the mask is built here
    with torch.inference_mode():
        token_attention(q.detach(), k.detach(), v.detach(), heads=5)
    token_attention(q, k, v, heads=5).sum().backward()
    assert torch.isfinite(q.grad).all()
