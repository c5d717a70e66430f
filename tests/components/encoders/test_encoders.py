"""Context encoders: shapes, non-degenerate sequence attention, batch gate, gradients, EMA."""

from __future__ import annotations

import functools

import pytest
import torch

from components.encoders.context import ContextEncoder
from components.encoders.ema import EMAEncoder
from components.encoders.mlp import MLPEncoder
from components.encoders.tokenizers import ComponentTokenizer, ScalarTokenizer
from components.first_edition.batch_gate import BatchGate
from components.first_edition.parallel_encoder import ParallelEncoder
from components.first_edition.sequence_attention import SequenceAttentionEncoder
from registry import RecipeError

SIZES = (2, 2, 2, 1)  # point robot: s, a, s', r
SMALL = {"d_model": 16, "heads": 2, "blocks": 2, "dropout": 0.0}

TRANSITION_ENCODERS = {
    "mlp": functools.partial(MLPEncoder, hidden=(32, 32)),
    "seq_scalar": functools.partial(SequenceAttentionEncoder, tokenizer=ScalarTokenizer, **SMALL),
    "seq_component": functools.partial(
        SequenceAttentionEncoder, tokenizer=ComponentTokenizer, **SMALL
    ),
}


def context(t=3, b=5, seed=0):
    return torch.randn(t, b, sum(SIZES), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", sorted(TRANSITION_ENCODERS))
@pytest.mark.parametrize(("t", "b"), [(1, 1), (3, 5), (16, 64)])
def test_shapes(name, t, b):
    torch.manual_seed(0)
    enc = ContextEncoder(
        sizes=SIZES, latent_dim=4, transition=TRANSITION_ENCODERS[name], gate=BatchGate
    )
    out = enc(context(t, b))
    assert out.per_transition.shape == (t, b, 4) and out.weights.shape == (t, b)
    assert out.mean.shape == (t, 4) and torch.isfinite(out.mean).all()


@pytest.mark.parametrize("tokenizer", [ScalarTokenizer, ComponentTokenizer])
def test_tokenizers_make_several_tokens_per_transition(tokenizer):
    tokens = tokenizer(sizes=SIZES, d_model=8)(context())
    expected = sum(SIZES) if tokenizer is ScalarTokenizer else len(SIZES)
    assert tokens.shape == (3, 5, expected, 8)


@pytest.mark.parametrize("tokenizer", [ScalarTokenizer, ComponentTokenizer])
def test_sequence_attention_is_not_degenerate(tokenizer):
    """Changing only the reward changes the outputs at the other tokens: attention mixes them."""
    torch.manual_seed(0)
    enc = SequenceAttentionEncoder(sizes=SIZES, latent_dim=4, tokenizer=tokenizer, **SMALL).eval()
    x = context()
    y = x.clone()
    y[..., -1] += 1.0  # the reward
    a, b = enc.tokens(x), enc.tokens(y)
    others = slice(0, a.shape[2] - 1)  # every token but the reward's
    assert (a[:, :, others] - b[:, :, others]).abs().amax() > 1e-3


def test_batch_gate_weights_start_uniform_and_stay_normalised():
    torch.manual_seed(0)
    gate = BatchGate(latent_dim=4, reduction=2)
    e = torch.randn(3, 7, 4)
    torch.testing.assert_close(gate(e), torch.ones(3, 7))
    with torch.no_grad():
        gate.score[-1].weight.normal_()
    w = gate(e)
    assert (w >= 0).all() and not torch.allclose(w, torch.ones(3, 7))
    torch.testing.assert_close(w.mean(1), torch.ones(3))


def test_batch_gate_is_permutation_equivariant():
    torch.manual_seed(0)
    gate = BatchGate(latent_dim=4, reduction=2)
    with torch.no_grad():
        gate.score[-1].weight.normal_()
    e, perm = torch.randn(2, 6, 4), torch.randperm(6)
    torch.testing.assert_close(gate(e[:, perm]), gate(e)[:, perm])


def test_gated_mean_is_the_weighted_mean():
    torch.manual_seed(0)
    enc = ContextEncoder(
        sizes=SIZES, latent_dim=4, transition=TRANSITION_ENCODERS["mlp"], gate=BatchGate
    )
    with torch.no_grad():
        enc.gate.score[-1].weight.normal_()
    out = enc(context())
    expected = (out.per_transition * out.weights[..., None]).sum(1) / out.weights.sum(
        1, keepdim=True
    )
    torch.testing.assert_close(out.mean, expected)


def encoders_under_test():
    mlp_gated = functools.partial(
        ContextEncoder, transition=TRANSITION_ENCODERS["mlp"], gate=BatchGate
    )
    seq = functools.partial(ContextEncoder, transition=TRANSITION_ENCODERS["seq_component"])
    return {
        "focal": functools.partial(ContextEncoder, transition=TRANSITION_ENCODERS["mlp"]),
        "batchwise": mlp_gated,
        "seqwise": seq,
        "focalpp": functools.partial(ParallelEncoder, branches=[mlp_gated, seq]),
    }


@pytest.mark.parametrize("name", ["focal", "batchwise", "seqwise", "focalpp"])
def test_every_parameter_gets_gradient(name):
    torch.manual_seed(0)
    enc = encoders_under_test()[name](sizes=SIZES, latent_dim=4)
    out = enc(context(4, 6))
    loss = (
        out.mean.pow(2).sum()
        + out.per_transition.pow(3).mean()
        + (out.weights * torch.arange(6.0)).sum()
    )
    loss.backward()
    missing = [n for n, p in enc.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    if name in ("batchwise", "focalpp"):  # the gate's first layer has zero upstream at init
        missing = [
            n for n in missing if not n.startswith(("gate.score.0", "branches.0.gate.score.0"))
        ]
    assert missing == []


def enc_branches():
    tested = encoders_under_test()
    return [tested["batchwise"], tested["seqwise"]]


def test_parallel_adds_branches_and_reports_gate_weights():
    torch.manual_seed(0)
    enc = encoders_under_test()["focalpp"](sizes=SIZES, latent_dim=4)
    x = context()
    out, a, b = enc(x), enc.branches[0](x), enc.branches[1](x)
    torch.testing.assert_close(out.mean, a.mean + b.mean)
    torch.testing.assert_close(out.weights, a.weights)
    half = ParallelEncoder(sizes=SIZES, latent_dim=4, branches=enc_branches(), combine="mean")
    half.load_state_dict(enc.state_dict())
    torch.testing.assert_close(half(x).mean, (a.mean + b.mean) / 2)  # bounded as each branch
    with pytest.raises(RecipeError, match="'sum' or 'mean'"):
        ParallelEncoder(sizes=SIZES, latent_dim=4, branches=enc_branches(), combine="max")
    with pytest.raises(ValueError, match="at least two branches"):
        ParallelEncoder(sizes=SIZES, latent_dim=4, branches=[encoders_under_test()["focal"]])


def test_ema_key_encoder_follows_without_gradients():
    torch.manual_seed(0)
    query = ContextEncoder(sizes=SIZES, latent_dim=4, transition=TRANSITION_ENCODERS["mlp"])
    key = EMAEncoder(query, momentum=0.9)
    assert all(not p.requires_grad for p in key.parameters())
    before = [p.clone() for p in key.parameters()]
    with torch.no_grad():
        for p in query.parameters():
            p.add_(1.0)
    key.update(query)
    for old, new, q in zip(before, key.parameters(), query.parameters(), strict=True):
        torch.testing.assert_close(new, 0.9 * old + 0.1 * q)
    out = key(context())
    assert not out.mean.requires_grad
    with pytest.raises(ValueError, match="momentum must be in"):
        EMAEncoder(query, momentum=1.5)
