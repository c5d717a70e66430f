"""BCQ: the perturbation bound, the best-of-N decision, the soft clipped double-Q target,
per-task networks against their single-task selves, and where z's gradient goes."""

from __future__ import annotations

import copy

import torch

from components.rl.bcq import BCQ
from tests.components.rl.test_brac import ACT, OBS, Z, batch


def agent(**kwargs) -> BCQ:
    torch.manual_seed(0)
    options = {"obs_dim": OBS, "act_dim": ACT, "latent_dim": Z, "hidden": (16,)}
    return BCQ(**{**options, "vae_hidden": (16,), **kwargs})


def test_perturbation_never_moves_an_action_more_than_phi():
    bcq = agent(max_perturbation=0.05)
    with torch.no_grad():  # a large actor output saturates the tanh
        for p in bcq.actor.parameters():
            p.mul_(100.0)
    x = torch.randn(3, 64, OBS + Z)
    action = torch.rand(3, 64, ACT) * 1.8 - 0.9  # inside [−1 + Φ, 1 − Φ]: no clipping
    with torch.no_grad():
        moved = bcq.perturb(x, action) - action
        edge = bcq.perturb(x, torch.ones(3, 64, ACT))
    assert float(moved.abs().max()) <= 0.05 + 1e-6
    assert float(moved.abs().max()) > 0.049  # and it does use the room
    assert float(edge.max()) <= 1.0


def test_act_takes_the_candidate_with_the_highest_first_q():
    bcq = agent(samples=7)
    x = torch.randn(2, 5, OBS + Z)
    torch.manual_seed(3)
    actions, q = bcq._candidates(x, None, target=False)
    torch.manual_seed(3)
    chosen = bcq.select(x)
    best = q[0].argmax(-1)
    expected = actions[torch.arange(2)[:, None], torch.arange(5)[None, :], best]
    torch.testing.assert_close(chosen, expected)
    obs, z = torch.randn(6, OBS), torch.randn(6, Z)
    assert bcq.act(obs, z).shape == (6, ACT)


def test_critic_target_is_the_soft_clipped_max_over_candidates():
    """Recompute the target by hand from the same random draws and compare the Q loss."""
    bcq = agent(soft_clip=0.75, samples=4, discount=0.9, reward_scale=2.0)
    data = batch(t=2, b=8)
    z = torch.randn(2, Z)
    zb = z[:, None, :].expand(-1, 8, -1)
    x_next = torch.cat([data.next_obs, zb], -1)
    x = torch.cat([data.obs, zb], -1)
    reference = copy.deepcopy(bcq)
    torch.manual_seed(5)
    loss_vae = reference.vae_loss(x, data.action)["loss_vae"]  # the update steps the VAE first
    reference.vae_opt.zero_grad()
    loss_vae.backward()
    reference.vae_opt.step()
    with torch.no_grad():
        _, q_next = reference._candidates(x_next, None, target=True)
        soft = 0.75 * q_next.min(0).values + 0.25 * q_next.max(0).values
        target = 2.0 * data.reward + 0.9 * soft.max(-1).values
        q = reference.q_values(x, data.action)
        expected = ((q - target) ** 2).mean(dim=(1, 2)).sum()
    torch.manual_seed(5)
    info = bcq.update(data, z)
    torch.testing.assert_close(info["loss_q"], expected)


def test_per_task_networks_are_independent_and_indexable():
    """K per-task networks: evaluating a subset by index equals evaluating all and slicing,
    and one task's update leaves another's weights alone only in that task's slice."""
    teachers = agent(latent_dim=0, models=3)
    obs, action = torch.randn(3, 5, OBS), torch.rand(3, 5, ACT) * 2 - 1
    every = teachers.q_values(obs, action)
    index = torch.tensor([2, 0])
    subset = teachers.q_values(obs[index], action[index], index)
    torch.testing.assert_close(subset, every[:, index])
    torch.testing.assert_close(
        teachers.perturb(obs[index], action[index], index), teachers.perturb(obs, action)[index]
    )
    data = batch(t=3, b=8)
    changed = data.obs.clone()
    changed[1] += 10.0  # task 1's data changes; tasks 0 and 2 must train exactly as before
    a, b = agent(latent_dim=0, models=3), agent(latent_dim=0, models=3)
    torch.manual_seed(1)
    a.update(data, torch.zeros(3, 0))
    torch.manual_seed(1)
    b.update(type(data)(**{**data.as_dict(), "obs": changed}), torch.zeros(3, 0))
    first_a, first_b = a.q.layers[0].weight, b.q.layers[0].weight  # [2K, in, out]
    for model in (0, 2, 3, 5):  # twin 1 and twin 2 of tasks 0 and 2
        torch.testing.assert_close(first_a[model], first_b[model])
    assert not torch.allclose(first_a[1], first_b[1])


def test_only_the_critic_loss_reaches_z():
    bcq = agent()
    data = batch(t=2, b=8)
    z = torch.randn(2, Z, requires_grad=True)
    bcq.update(data, z)
    assert z.grad is not None and float(z.grad.abs().sum()) > 0
    # the same step without the critic's gradient: VAE and actor leave z untouched
    z2 = torch.randn(2, Z, requires_grad=True)
    zb = z2[:, None, :].expand(-1, 8, -1)
    x = torch.cat([data.obs, zb], -1).detach()
    (bcq.vae_loss(x, data.action)["loss_vae"] + bcq.actor_loss(x)["loss_actor"]).backward()
    assert z2.grad is None
