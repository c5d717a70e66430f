"""Each seed draws the numbers its single run draws: from a generator in the state of that
run's global generator, its own rows of every draw."""

from __future__ import annotations

import pytest
import torch

from components.seeds import SeedStreams, drawing_from, rand, randn_like


def global_draws(seed: int, rows: int):
    torch.manual_seed(seed)
    torch.randn(10)  # what building the run's networks consumed
    return torch.randn(rows, 3), torch.rand(rows, 1)


def test_each_seed_draws_its_single_runs_numbers():
    seeds, rows = (0, 4, 9), 5
    generators = []
    for s in seeds:
        torch.manual_seed(s)
        torch.randn(10)
        generators.append(SeedStreams.capture())
    with drawing_from(SeedStreams(generators)):
        normal = randn_like(torch.empty(len(seeds) * rows, 3))
        uniform = rand(len(seeds) * rows, 1)
    for k, s in enumerate(seeds):
        want_normal, want_uniform = global_draws(s, rows)
        assert torch.equal(normal[k * rows : (k + 1) * rows], want_normal)
        assert torch.equal(uniform[k * rows : (k + 1) * rows], want_uniform)


def test_outside_a_batched_step_the_draws_are_torchs_own():
    torch.manual_seed(3)
    want = torch.randn_like(torch.empty(4, 2))
    torch.manual_seed(3)
    assert torch.equal(randn_like(torch.empty(4, 2)), want)


def test_a_draw_that_does_not_split_among_the_seeds_is_refused():
    streams = SeedStreams([torch.Generator().manual_seed(s) for s in range(3)])
    with drawing_from(streams), pytest.raises(ValueError, match="among 3 seeds"):
        rand(4, 1)


def test_state_round_trips():
    streams = SeedStreams([torch.Generator().manual_seed(s) for s in range(2)])
    saved = streams.state()
    with drawing_from(streams):
        first = rand(2, 3)
    streams.set_state(saved)
    with drawing_from(streams):
        assert torch.equal(rand(2, 3), first)
