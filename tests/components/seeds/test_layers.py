"""Stacked modules compute each seed's rows with that seed's weights, and give each seed's
state back in the single module's format; K = 1 is the single module, bit for bit."""

from __future__ import annotations

import pytest
import torch

from components.encoders.context import ContextEncoder
from components.first_edition.batch_gate import BatchGate
from components.rl.batched_mlp import BatchedMLP
from components.rl.networks import MLP, TanhGaussianPolicy
from components.seeds import per_seed_mean, seed_count, stack_modules, unstack_state

SEEDS = (3, 7, 11)


def singles(factory, seeds=SEEDS):
    out = []
    for s in seeds:
        torch.manual_seed(s)
        out.append(factory())
    return out


def fold(xs):
    return torch.cat(list(xs))


FACTORIES = {
    "mlp": (lambda: MLP(in_features=5, out_features=3, hidden=(8, 8)), (4, 6, 5)),
    "policy mean": (
        lambda: TanhGaussianPolicy(in_features=5, act_dim=2, hidden=(8,)).net,
        (4, 6, 5),
    ),
    "gate": (lambda: BatchGate(latent_dim=4, reduction=1), (4, 6, 4)),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_each_seed_computes_with_its_own_weights(name):
    factory, shape = FACTORIES[name]
    ones = singles(factory)
    batched = stack_modules(ones)
    xs = [torch.randn(*shape) for _ in SEEDS]
    y = batched(fold(xs))
    for k, single in enumerate(ones):
        rows = y[k * shape[0] : (k + 1) * shape[0]]
        torch.testing.assert_close(rows, single(xs[k]), rtol=1e-5, atol=1e-6)
    assert seed_count(batched) == len(SEEDS) and seed_count(ones[0]) == 1


def test_a_context_encoder_encodes_each_seeds_tasks_with_its_weights():
    ones = singles(lambda: ContextEncoder(sizes=(2, 2, 2, 1), latent_dim=3, gate=BatchGate))
    for single in ones:  # a gate that is not uniform: its last layer starts at zero
        torch.nn.init.normal_(single.gate.score[-1].weight)
    batched = stack_modules(ones)
    xs = [torch.randn(4, 8, 7) for _ in SEEDS]
    out = batched(fold(xs))
    for k, single in enumerate(ones):
        ref = single(xs[k])
        torch.testing.assert_close(out.mean[4 * k : 4 * (k + 1)], ref.mean, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out.weights[4 * k : 4 * (k + 1)], ref.weights)


def test_twin_batched_models_stack_per_seed():
    ones = singles(lambda: BatchedMLP(n_models=2, in_features=5, out_features=1, hidden=(8,)))
    batched = stack_modules(ones)
    xs = [torch.randn(2, 6, 5) for _ in SEEDS]
    y = batched(torch.cat(xs, dim=1))  # [M, K·R, in]
    for k, single in enumerate(ones):
        torch.testing.assert_close(y[:, 6 * k : 6 * (k + 1)], single(xs[k]), rtol=1e-5, atol=1e-6)


def test_state_round_trips_in_the_single_format():
    ones = singles(lambda: ContextEncoder(sizes=(2, 2, 2, 1), latent_dim=3, gate=BatchGate))
    state = stack_modules(ones).state_dict()
    for k, single in enumerate(ones):
        mine = unstack_state(state, k)
        assert mine.keys() == single.state_dict().keys()
        for key, value in single.state_dict().items():
            assert torch.equal(mine[key], value), key
        single.load_state_dict(mine)  # loads as a single module's own


def test_gradients_per_seed_equal_the_single_modules():
    ones = singles(lambda: MLP(in_features=5, out_features=1, hidden=(8, 8)))
    batched = stack_modules(ones)
    xs = [torch.randn(4, 6, 5) for _ in SEEDS]
    per_seed_mean(batched(fold(xs)) ** 2, len(SEEDS)).sum().backward()
    grads = {n: p.grad for n, p in batched.named_parameters()}
    for k, single in enumerate(ones):
        (single(xs[k]) ** 2).mean().backward()
        for n, p in single.named_parameters():
            torch.testing.assert_close(grads[n][k], p.grad, rtol=1e-5, atol=1e-7)


def test_one_seed_is_the_single_module_bit_for_bit():
    (single,) = singles(lambda: ContextEncoder(sizes=(2, 2, 2, 1), latent_dim=3), seeds=(5,))
    batched = stack_modules([single])
    x = torch.randn(4, 8, 7)
    assert torch.equal(batched(x).per_transition, single(x).per_transition)


def test_rows_that_do_not_split_among_the_seeds_are_refused():
    batched = stack_modules(singles(lambda: MLP(in_features=5, out_features=1, hidden=(4,))))
    with pytest.raises(ValueError, match="cannot be split among 3 seeds"):
        batched(torch.randn(4, 5))


def test_sequence_attention_computes_each_seeds_transitions_with_its_weights():
    from components.encoders.tokenizers import ScalarTokenizer
    from components.first_edition.sequence_attention import SequenceAttentionEncoder
    from components.seeds import SeedStreams, drawing_from

    for tokenizer in (None, ScalarTokenizer):
        extra = {} if tokenizer is None else {"tokenizer": tokenizer}

        def factory(extra=extra):
            return SequenceAttentionEncoder(sizes=(2, 2, 2, 1), latent_dim=3, d_model=8,
                                            heads=2, blocks=2, dropout=0.1, **extra)  # fmt: skip

        ones, generators = [], []
        for s in SEEDS:
            torch.manual_seed(s)
            ones.append(factory())
            generators.append(SeedStreams.capture())
        batched = stack_modules(ones)
        xs = [torch.randn(4, 6, 7) for _ in SEEDS]
        states = [g.get_state() for g in generators]  # each single run's, after its build
        with drawing_from(SeedStreams(generators)):
            y = batched(fold(xs))  # in training mode: dropout masks from each seed's stream
        for k, single in enumerate(ones):
            torch.set_rng_state(states[k])
            want = single(xs[k])
            torch.testing.assert_close(y[4 * k : 4 * (k + 1)], want, rtol=1e-5, atol=1e-6)
