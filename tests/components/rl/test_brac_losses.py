"""Each BRAC loss reaches the parameters it trains and no others, and each optimiser takes its
own learning rate."""

from __future__ import annotations

import pytest
import torch

from components.rl.brac import BRAC
from components.rl.steps import frozen
from tests.components.rl.test_brac import ACT, OBS, Z, batch

NETWORKS = ("q", "v", "v_target", "policy", "divergence", "log_alpha")


def agent(**kwargs) -> BRAC:
    torch.manual_seed(0)
    return BRAC(obs_dim=OBS, act_dim=ACT, latent_dim=Z, hidden=(8,), **kwargs)


def reached(a: BRAC, loss: torch.Tensor, z: torch.Tensor) -> set[str]:
    """Which networks (and z) get a gradient from `loss`."""
    a.zero_grad(set_to_none=True)
    z.grad = None
    loss.backward()
    names = {
        name
        for name in NETWORKS
        for p in ([getattr(a, name)] if name == "log_alpha" else getattr(a, name).parameters())
        if p.grad is not None
    }
    return names | ({"z"} if z.grad is not None else set())


def inputs(a: BRAC):
    b = batch()
    z = torch.randn(b.obs.shape[0], Z).requires_grad_()
    zb = z[:, None, :].expand(-1, b.obs.shape[1], -1)
    x_q = torch.cat([b.obs, zb], -1)
    return b, z, x_q, x_q.detach(), torch.cat([b.next_obs, zb], -1).detach()


def policy_terms(a: BRAC, x, b):
    sample = a.policy(x)
    with frozen(a.q):
        q_new = a.q_values(x, sample.action).min(0).values
    with frozen(a.divergence):
        divergence = a.divergence.estimate(x, b.action, sample.action)
    return sample, q_new, torch.tensor(0.5), divergence


def test_q_loss_trains_q_and_the_task_vector_only():
    a = agent()
    b, z, x_q, _, x_next = inputs(a)
    terms = a.q_loss(a.q_values, a.v_target, x_q, b, x_next)
    assert reached(a, terms["loss_q"], z) == {"q", "z"}


def test_value_loss_trains_v_only():
    a = agent(value_penalty=True)
    b, z, _, x, _ = inputs(a)
    sample, q_new, alpha, divergence = policy_terms(a, x, b)
    terms = a.value_loss(a.v, x, q_new, sample.log_prob, alpha, divergence)
    assert reached(a, terms["loss_v"], z) == {"v"}


def test_policy_loss_trains_the_policy_only_through_q_and_the_divergence():
    a = agent(alpha=1.0)
    b, z, _, x, _ = inputs(a)
    sample, q_new, alpha, divergence = policy_terms(a, x, b)
    terms = a.policy_loss(sample, q_new, alpha, divergence)
    assert reached(a, terms["loss_policy"], z) == {"policy"}


def test_alpha_loss_trains_log_alpha_only():
    a = agent(alpha=1.0, target_divergence=0.05)
    b, z, _, x, _ = inputs(a)
    *_, divergence = policy_terms(a, x, b)
    terms = a.alpha_loss(a.log_alpha, divergence)
    assert reached(a, terms["loss_alpha"], z) == {"log_alpha"}


def test_divergence_critic_loss_trains_the_critic_only():
    a = agent(alpha=1.0)
    b, z, _, x, _ = inputs(a)
    with torch.no_grad():
        policy_action = a.policy(x).action
    terms = a.divergence.loss(x, b.action, policy_action)
    assert reached(a, terms["loss_divergence_critic"], z) == {"divergence"}


@pytest.mark.parametrize("which", ["policy", "q", "v"])
def test_each_optimiser_takes_its_own_learning_rate(which):
    a = agent(lr=1e-3, **{f"{which}_lr": 5e-4})
    rates = {name: opt.param_groups[0]["lr"] for name, opt in a.optimizers().items()}
    assert rates[which] == 5e-4
    assert all(rates[n] == 1e-3 for n in ("policy", "q", "v") if n != which)
