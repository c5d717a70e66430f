"""The paper's FOCAL++ encoder: residual attention blocks, a bounded z, an order-free gate."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from components.encoders.attention_blocks import AttentionBlock, AttentionBlockEncoder, BlockGate
from components.encoders.encoded import Encoded, diagnostics
from components.encoders.tokenizers import TransitionTokenizer
from components.seeds import stack_modules
from registry import RecipeError

SIZES = (2, 2, 2, 1)  # a point robot's (s, a, s′, r)
FORMS = {  # the three rows' blocks: FOCAL++ (both), batch-wise (gate only), sequence-wise
    "focalpp": {"self_attention": True, "gate": BlockGate},
    "batchwise": {"self_attention": False, "gate": BlockGate},
    "seqwise": {"self_attention": True, "gate": None},
}


def encoder(form: str, blocks: int = 2, **kwargs) -> AttentionBlockEncoder:
    """A small encoder of one row's form (no dropout unless asked: deterministic outputs)."""
    extra = {"tokenizer": TransitionTokenizer} if form == "batchwise" else {}
    kwargs.setdefault("dropout", 0.0)
    sizes = {"width": 16, "heads": 4, "blocks": blocks}
    return AttentionBlockEncoder(
        sizes=SIZES, latent_dim=5, **sizes, **FORMS[form], **extra, **kwargs
    )


def shaken(module: torch.nn.Module, seed: int = 0, scale: float = 1.0) -> torch.nn.Module:
    """Every parameter drawn at random: a trained-looking encoder, far from its identity start."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * scale)
    return module


def context(t: int = 3, b: int = 12, seed: int = 1, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(t, b, sum(SIZES), generator=torch.Generator().manual_seed(seed)) * scale


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("training", [False, True])
def test_a_block_is_the_identity_at_initialisation(form, training):
    torch.manual_seed(0)
    block = AttentionBlock(width=16, heads=4, feedforward=2, dropout=0.1, **FORMS[form])
    block.train(training)
    x = torch.randn(3, 12, 4, 16)
    out, multipliers = block(x)
    assert torch.equal(out, x)
    if FORMS[form]["gate"] is not None:
        assert torch.equal(multipliers, torch.ones(3, 12))  # the gate's multiplier starts at 1
    else:
        assert multipliers is None


@pytest.mark.parametrize("form", FORMS)
def test_at_initialisation_the_task_vector_is_the_plain_mean(form):
    torch.manual_seed(0)
    out = encoder(form)(context())
    assert torch.equal(out.weights, torch.ones(3, 12))
    torch.testing.assert_close(out.mean, out.per_transition.mean(1))


@settings(max_examples=25, deadline=None)
@given(
    form=st.sampled_from(sorted(FORMS)),
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([1e-3, 1.0, 30.0, 1e3]),
)
def test_z_stays_bounded_for_any_input_and_any_weights(form, seed, scale):
    enc = shaken(encoder(form), seed, scale=1.0 if scale < 30 else 3.0)
    out = enc(context(seed=seed, scale=scale))
    assert torch.isfinite(out.mean).all()
    # tanh of a large input rounds to ±1 in fp32, and the weighted mean to within a few ulps
    assert out.mean.abs().max() <= 1.0 + 1e-6
    assert out.per_transition.abs().max() <= 1.0


@pytest.mark.parametrize("form", ["focalpp", "batchwise"])
def test_permuting_transitions_permutes_the_multipliers_and_keeps_z(form):
    enc = shaken(encoder(form), seed=3, scale=0.5)
    x = context()
    order = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(4))
    out, moved = enc(x), enc(x[:, order])
    assert out.weights.std() > 1e-3  # the gate is not at its uniform start
    torch.testing.assert_close(moved.weights, out.weights[:, order])
    torch.testing.assert_close(moved.per_transition, out.per_transition[:, order])
    torch.testing.assert_close(moved.mean, out.mean, rtol=1e-5, atol=1e-6)


def test_the_task_vector_is_the_weighted_mean_of_the_last_gate():
    enc = shaken(encoder("focalpp"), seed=5, scale=0.5)
    out = enc(context())
    w = out.weights
    torch.testing.assert_close(w.mean(1), torch.ones(3))  # E[W] = 1 over the batch
    expected = (w[..., None] * out.per_transition).sum(1) / w.sum(1, keepdim=True)
    torch.testing.assert_close(out.mean, expected)


@pytest.mark.parametrize("form", FORMS)
def test_each_seed_of_a_stacked_encoder_is_its_single_encoder(form):
    singles = [shaken(encoder(form), seed=s, scale=0.5) for s in (0, 1, 2)]
    stacked = stack_modules(singles)
    xs = [context(seed=10 + s) for s in range(3)]
    out = stacked(torch.cat(xs))
    for k, (single, x) in enumerate(zip(singles, xs, strict=True)):
        mine, rows = single(x), slice(3 * k, 3 * (k + 1))
        torch.testing.assert_close(out.mean[rows], mine.mean, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out.weights[rows], mine.weights, rtol=1e-5, atol=1e-6)


def test_a_gradient_reaches_every_part_once_the_gate_has_moved():
    enc = shaken(encoder("focalpp"), seed=6, scale=0.3)
    out = enc(context())
    (out.mean.square().sum() + out.per_transition.pow(3).mean()).backward()
    dead = [n for n, p in enc.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert dead == []


def test_blocks_without_any_attention_are_refused_by_name():
    with pytest.raises(RecipeError, match="self_attention = False and gate = None"):
        AttentionBlockEncoder(sizes=SIZES, latent_dim=5, self_attention=False, gate=None)
    with pytest.raises(RecipeError, match=r"multiple of attention_blocks\.heads"):
        AttentionBlockEncoder(sizes=SIZES, latent_dim=5, width=30, heads=4)


def test_the_gate_bottleneck_follows_the_reduction_of_the_block_width():
    assert BlockGate(width=128, reduction=16).score[0].out_features == 8  # the paper's sizes
    assert BlockGate(width=32, reduction=16).score[0].out_features == 2


def test_diagnostics_measure_the_gates_effective_sample_size_and_zs_range():
    per_transition = torch.zeros(2, 4, 3)
    uniform = Encoded(per_transition, torch.ones(2, 4), torch.tensor([[0.1, -0.5, 0.2]] * 2))
    one_hot = torch.tensor([[4.0, 0.0, 0.0, 0.0], [2.0, 2.0, 0.0, 0.0]])
    peaked = Encoded(per_transition, one_hot, torch.tensor([[0.9, 0.0, 0.0], [0.0, 0.0, -0.7]]))
    d = diagnostics(uniform)
    assert float(d["gate_ess"]) == 4.0 and float(d["gate_max_weight"]) == 1.0
    assert float(d["z_min"]) == -0.5 and float(d["z_max"]) == pytest.approx(0.2)
    d = diagnostics(peaked)
    assert float(d["gate_ess"]) == 1.5  # tasks of 1 and 2 effective transitions
    assert float(d["gate_max_weight"]) == 4.0
    per_seed = diagnostics(peaked, seeds=2)  # one task per seed here
    assert per_seed["gate_ess"].tolist() == [1.0, 2.0]
    assert per_seed["z_max"].tolist() == pytest.approx([0.9, 0.0])


def test_the_trend_flags_the_seeds_whose_contrastive_loss_rose():
    """The output-sum FOCAL++'s ten Sparse-Point-Robot seeds (committed records): its seeds 2, 5
    and 9 ended far below the others with a contrastive loss that rose over the second half;
    the contrastive row's ten seeds, whose loss fell, are not flagged."""
    from pathlib import Path

    from components.evaluation.training_trend import trends
    from components.reports.records import read_logs

    record = Path(__file__).parents[3] / "results/ten_seeds/rows"  # its training logs, archived

    def rising(name: str) -> list[str]:
        return [t.term for t in trends(read_logs(record, name)) if t.rising]

    flagged = [
        s for s in range(10) if rising(f"focalpp-sparse_point_robot-s{s}") == ["loss_contrastive"]
    ]
    assert flagged == [2, 5, 9]
    for s in range(10):
        found = trends(read_logs(record, f"focalpp_contrastive-sparse_point_robot-s{s}"))
        assert [t.term for t in found if t.rising] == []
        assert "loss_contrastive" in [t.term for t in found]


def test_the_trend_reads_only_the_encoders_terms_and_needs_a_real_rise():
    from components.evaluation.training_trend import trends

    def records(values, **other):
        return [{"kind": "train", "loss_contrastive": v, **other} for v in values]

    flat = [10.0 + (0.3 if i % 2 else -0.3) for i in range(40)]  # noise about a level
    rising = [10.0 + 0.1 * i for i in range(40)]
    assert [t.rising for t in trends(records(flat))] == [False]
    assert [t.rising for t in trends(records(rising))] == [True]
    # the actor-critic's losses are not the encoder's: never judged
    assert {t.term for t in trends(records(flat, loss_q=1.0, loss_policy=2.0))} == {
        "loss_contrastive"
    }
    assert trends(records(rising[:10])) == []  # too few records in the second half to tell


def test_the_trend_knows_every_shipped_agents_loss_terms():
    """A term the trend takes for the encoder's must not be an agent's: every registered
    agent's update terms are in its list of terms it does not judge."""
    import components

    components.load_builtin()  # registers every agent
    from components.contracts.rl import A, F, transitions
    from components.evaluation.training_trend import AGENT_TERMS
    from registry import get, names

    agents = names("agent")
    assert {"brac", "bcq"} <= set(agents)
    for name in agents:
        torch.manual_seed(0)
        agent = get("agent", name)(obs_dim=F, act_dim=A, latent_dim=5)
        batch = transitions(3)
        terms = {k for k in agent.update(batch, torch.zeros(3, 5)) if k.startswith("loss_")}
        assert terms and terms <= set(AGENT_TERMS), (name, terms - set(AGENT_TERMS))
