"""BRAC pieces: the dual KL estimate, the gradient penalty by autograd, α adaptation, and what
each update may and may not change."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from components.rl.brac import BRAC
from components.rl.divergence import DualKLCritic
from components.transitions import Transitions

OBS, ACT, Z = 3, 2, 4


def batch(t=4, b=16, seed=0) -> Transitions:
    g = torch.Generator().manual_seed(seed)
    return Transitions(
        obs=torch.randn(t, b, OBS, generator=g),
        action=torch.rand(t, b, ACT, generator=g) * 2 - 1,
        reward=torch.randn(t, b, generator=g),
        sparse_reward=torch.zeros(t, b),
        next_obs=torch.randn(t, b, OBS, generator=g),
        terminated=torch.zeros(t, b),
        truncated=torch.zeros(t, b),
    )


def linear_critic(weight: torch.Tensor, **kwargs) -> DualKLCritic:
    """A critic c(x, a) = w·a (no hidden layer), so ∇_a c = w everywhere."""
    critic = DualKLCritic(in_features=OBS, act_dim=ACT, hidden=(), **kwargs)
    layer: nn.Linear = critic.net.net[0]
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight[0, OBS:] = weight
        layer.bias.zero_()
    return critic


def test_dual_estimate_is_the_fenchel_bound():
    critic = DualKLCritic(in_features=OBS, act_dim=ACT, hidden=(8,))
    x, a_data, a_pi = torch.randn(5, OBS), torch.rand(5, ACT), torch.rand(5, ACT)
    expected = critic(x, a_pi) - torch.exp(critic(x, a_data) - 1)
    torch.testing.assert_close(critic.estimate(x, a_data, a_pi), expected)


def test_dual_estimate_lower_bounds_a_known_kl():
    """For two Gaussians the best critic c = 1 + log(p/q) attains KL(p‖q); any other is lower."""
    torch.manual_seed(0)
    p, q = torch.distributions.Normal(0.5, 1.0), torch.distributions.Normal(0.0, 1.0)
    a_p, a_q = p.sample((50_000, 1)), q.sample((50_000, 1))

    def bound(c):
        return (c(a_p).mean() - torch.exp(c(a_q) - 1).mean()).item()

    kl = torch.distributions.kl_divergence(p, q).item()  # 0.125

    def best(a):
        return 1 + p.log_prob(a) - q.log_prob(a)

    assert bound(best) == pytest.approx(kl, abs=0.02)
    assert bound(lambda a: 0.5 * best(a)) < kl


@pytest.mark.parametrize("norm", [0.5, 3.0])
def test_action_gradient_penalty_matches_the_closed_form(norm):
    w = torch.tensor([norm, 0.0])
    critic = linear_critic(w)
    x, a_data, a_pi = torch.randn(8, OBS), torch.rand(8, ACT), torch.rand(8, ACT)
    expected = max(norm - 1.0, 0.0) ** 2  # slope ‖∇_a c‖ = ‖w‖ at every interpolated action
    assert critic.penalty_term(x, a_data, a_pi).item() == pytest.approx(expected, abs=1e-4)


def test_penalty_gradient_reaches_the_critic_weights():
    critic = linear_critic(torch.tensor([3.0, 0.0]))
    x, a_data, a_pi = torch.randn(8, OBS), torch.rand(8, ACT), torch.rand(8, ACT)
    critic.penalty_term(x, a_data, a_pi).backward()
    grad = critic.net.net[0].weight.grad[0, OBS:]
    # d/dw (‖w‖ − 1)² = 2(‖w‖ − 1) w/‖w‖ = (4, 0)
    torch.testing.assert_close(grad, torch.tensor([4.0, 0.0]), atol=1e-4, rtol=1e-4)


def test_reference_value_penalty_uses_the_critic_value():
    critic = linear_critic(torch.tensor([0.0, 0.0]), penalty="value")
    with torch.no_grad():
        critic.net.net[0].bias.fill_(3.0)  # c ≡ 3: |c| − 1 = 2
    x, a = torch.randn(4, OBS), torch.rand(4, ACT)
    assert critic.penalty_term(x, a, a).item() == pytest.approx(4.0)


def test_unknown_penalty_is_rejected():
    with pytest.raises(ValueError, match="penalty"):
        DualKLCritic(in_features=OBS, act_dim=ACT, penalty="gradient")


def make_brac(**kwargs) -> BRAC:
    torch.manual_seed(0)
    return BRAC(obs_dim=OBS, act_dim=ACT, latent_dim=Z, hidden=(16, 16), **kwargs)


def params(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def changed(before, module) -> bool:
    return any(not torch.equal(a, b) for a, b in zip(before, module.parameters(), strict=True))


def test_update_trains_every_network_and_follows_the_target_rule():
    agent = make_brac(alpha=1.0, target_divergence=0.05)
    before = {n: params(getattr(agent, n)) for n in ("policy", "q", "v", "divergence")}
    v_target_before = params(agent.v_target)
    info = agent.update(batch(), torch.randn(4, Z))
    for name, old in before.items():
        assert changed(old, getattr(agent, name)), name
    for target, old, online in zip(
        agent.v_target.parameters(), v_target_before, agent.v.parameters(), strict=True
    ):
        torch.testing.assert_close(target, old + agent.tau * (online - old))
    assert {"loss_q", "loss_v", "loss_policy", "loss_divergence_critic", "loss_alpha"} <= set(info)


def test_without_regularisation_the_divergence_critic_is_idle():
    agent = make_brac(alpha=0.0, target_divergence=None)
    before = params(agent.divergence)
    info = agent.update(batch(), torch.randn(4, Z))
    assert not changed(before, agent.divergence)
    assert "loss_divergence_critic" not in info and float(info["alpha"]) == 0.0


def test_equal_work_trains_the_idle_critic_without_touching_the_policy_loss():
    """The reference's wasted work, for benchmarks: the critic trains 3× with α = 0, and the
    actor-critic's losses are those of the plain update."""
    plain, busy = make_brac(), make_brac(always_train_divergence=True, divergence_steps=3)
    before = params(busy.divergence)
    torch.manual_seed(1)
    expected = plain.update(batch(), torch.zeros(4, Z))
    torch.manual_seed(1)
    got = busy.update(batch(), torch.zeros(4, Z))
    assert changed(before, busy.divergence) and "loss_divergence_critic" in got
    # the Q loss draws nothing; V and policy losses differ only by the critic's policy draws
    torch.testing.assert_close(got["loss_q"], expected["loss_q"])
    assert float(got["alpha"]) == 0.0


@pytest.mark.parametrize(("target", "direction"), [(-1.0, 1), (1.0, -1)])
def test_alpha_moves_toward_the_target_divergence(target, direction):
    agent = make_brac(alpha=1.0, target_divergence=target)
    for p in agent.divergence.parameters():
        p.data.zero_()
    agent.divergence.net.net[-1].bias.data.fill_(1.0)  # c ≡ 1: estimate 1 − e^0 = 0
    agent.divergence_opt = torch.optim.SGD(agent.divergence.parameters(), lr=0.0)  # frozen
    before = agent.log_alpha.item()
    info = agent.update(batch(), torch.randn(4, Z))
    assert float(info["policy_divergence"]) == pytest.approx(0.0, abs=1e-6)
    # divergence 0 above the target: α grows; below it: α shrinks
    assert (agent.log_alpha.item() - before) * direction > 0


def test_z_gradient_flows_into_the_q_loss_only_when_asked():
    agent = make_brac()
    z = torch.randn(4, Z, requires_grad=True)
    agent.update(batch(), z)
    assert z.grad is not None and z.grad.abs().sum() > 0


def test_policy_step_leaves_q_weights_to_the_q_loss():
    """Q's weights change only by its own loss: the policy's gradient stops at Q's input."""
    agent = make_brac()
    twin = copy.deepcopy(agent)
    b, z = batch(), torch.randn(4, Z)
    agent.update(b, z)
    # the same Q step alone, from the same start
    x = torch.cat([b.obs, z[:, None].expand(-1, b.obs.shape[1], -1)], -1)
    x_next = torch.cat([b.next_obs, z[:, None].expand(-1, b.obs.shape[1], -1)], -1)
    with torch.no_grad():
        target = twin.reward_scale * b.reward + twin.discount * twin.v_target(x_next).squeeze(-1)
    loss = ((twin.q_values(x, b.action) - target) ** 2).mean(dim=(1, 2)).sum()
    twin.q_opt.zero_grad()
    loss.backward()
    twin.q_opt.step()
    for a, b_ in zip(agent.q.parameters(), twin.q.parameters(), strict=True):
        torch.testing.assert_close(a, b_)
