"""`task_data.standardise_obs`: the learner's networks see observations standardised by the
training data's statistics, in the context, in the RL batch and when acting."""

from __future__ import annotations

import numpy as np
import torch

from tests.conftest import run_row


def test_networks_see_standardised_observations(tiny_data, tmp_path):
    _, learner = run_row(
        "focal.gin",
        "sparse_point_robot",
        tiny_data,
        tmp_path / "run",
        bindings=("task_data.standardise_obs = True",),
        train=False,
    )
    data = learner.data.dataset.quality(learner.data.quality)
    obs = np.concatenate(
        [data.transitions.obs[k, : data.length[k]] for k in learner.train.task_ids]
    )
    layout = learner.layout
    assert np.allclose(layout.obs_mean.numpy(), obs.mean(0), atol=1e-5)
    assert np.allclose(layout.obs_std.numpy(), obs.std(0), atol=1e-5)

    tasks = torch.arange(2)
    generator_state = learner.data.generator.get_state()
    batch = learner.sample_rl(tasks)
    learner.data.generator.set_state(generator_state)
    raw = learner.train.sample(tasks, learner.sizes.rl_batch)  # the same draw, as stored
    assert torch.allclose(batch.obs, (raw.obs - layout.obs_mean) / layout.obs_std)
    assert torch.allclose(batch.next_obs, (raw.next_obs - layout.obs_mean) / layout.obs_std)
    assert torch.equal(batch.action, raw.action) and torch.equal(batch.reward, raw.reward)
    context = layout.tensor(raw)
    assert torch.allclose(context[..., :2], batch.obs)  # s leads the context transition

    z = torch.zeros(2, learner.sizes.latent_dim)
    assert torch.equal(learner.act(raw.obs[:, 0], z), learner.agent.act(batch.obs[:, 0], z))


def test_without_it_nothing_changes(tiny_data, tmp_path):
    _, learner = run_row("focal.gin", "sparse_point_robot", tiny_data, tmp_path / "r", train=False)
    assert learner.layout.obs_mean is None
    obs = torch.randn(3, 2)
    assert learner.layout.observation(obs) is obs
