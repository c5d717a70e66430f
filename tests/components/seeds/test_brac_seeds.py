"""BRAC trained as K seeds at once: each seed's losses, diagnostics and weights after a few
updates are its single run's (fp32 tolerance), with its own random draws and its own α."""

from __future__ import annotations

import torch

from components.rl.brac import BRAC
from components.seeds import SeedStreams, drawing_from, stack_modules, unstack_state
from components.transitions import Transitions

SEEDS = (0, 5, 8)
T, B = 3, 16


def agent() -> BRAC:
    return BRAC(obs_dim=3, act_dim=2, latent_dim=2, hidden=(16, 16), alpha=5.0,
                target_divergence=0.05, alpha_max=8.0, bc_weight=2.0,
                value_penalty=True)  # fmt: skip


def batch(seed: int) -> tuple[Transitions, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + seed)
    r = lambda *s: torch.rand(*s, generator=g) * 2 - 1  # noqa: E731
    zeros = torch.zeros(T, B)
    data = Transitions(obs=r(T, B, 3), action=r(T, B, 2), reward=r(T, B), sparse_reward=zeros,
                       next_obs=r(T, B, 3), terminated=zeros, truncated=zeros)  # fmt: skip
    return data, r(T, 2)


def single_run(seed: int, steps: int):
    torch.manual_seed(seed)
    a = agent()
    data, z = batch(seed)
    history = [a.update(data, z) for _ in range(steps)]
    return a, history


def batched_run(steps: int):
    singles, generators = [], []
    for s in SEEDS:
        torch.manual_seed(s)
        singles.append(agent())
        generators.append(SeedStreams.capture())
    a = stack_modules(singles)
    batches = [batch(s) for s in SEEDS]
    data = Transitions(**{f: torch.cat([getattr(b, f) for b, _ in batches])
                          for f in Transitions.__dataclass_fields__})  # fmt: skip
    z = torch.cat([z for _, z in batches])
    with drawing_from(SeedStreams(generators)):
        history = [a.update(data, z) for _ in range(steps)]
    return a, history


def test_each_seed_trains_as_its_single_run():
    steps = 4
    batched, history = batched_run(steps)
    state = batched.state_dict()
    for k, s in enumerate(SEEDS):
        single, single_history = single_run(s, steps)
        for step, (mine, theirs) in enumerate(zip(history, single_history, strict=True)):
            assert mine.keys() == theirs.keys()
            for name, value in theirs.items():
                where = f"step {step}, {name}"
                got = mine[name][k] if mine[name].dim() else mine[name]
                torch.testing.assert_close(got, value, rtol=1e-4, atol=1e-5, msg=where)
        for name, value in single.state_dict().items():
            torch.testing.assert_close(unstack_state(state, k)[name], value, rtol=1e-4, atol=1e-5)


def test_one_seed_is_the_single_run_bit_for_bit():
    single, single_history = single_run(0, 3)
    torch.manual_seed(0)
    one = agent()
    streams = SeedStreams([SeedStreams.capture()])
    batched = stack_modules([one])
    data, z = batch(0)
    with drawing_from(streams):
        history = [batched.update(data, z) for _ in range(3)]
    for mine, theirs in zip(history, single_history, strict=True):
        # a per-seed value is [1] where the single run's is a scalar (α)
        assert all(torch.equal(mine[k].reshape(-1), theirs[k].reshape(-1)) for k in theirs)
    for name, value in single.state_dict().items():
        assert torch.equal(batched.state_dict()[name][0], value), name
