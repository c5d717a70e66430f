"""IQL's losses as its paper and implementations write them, and the backbone as a choice that
leaves the encoder alone."""

from __future__ import annotations

import dataclasses

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from components.rl.iql import IQL, WEIGHT_MAX, AdvantageWeightedLoss, QLoss, expectile_loss
from components.transitions import Transitions
from tests.conftest import run_row

errors = st.lists(st.floats(-10, 10, allow_nan=False), min_size=1, max_size=32)


@settings(max_examples=50, deadline=None)
@given(errors)
def test_the_expectile_loss_at_one_half_is_half_the_squared_error(values):
    u = torch.tensor(values, dtype=torch.float64)
    assert torch.allclose(expectile_loss(u, 0.5), 0.5 * u**2)


@settings(max_examples=50, deadline=None)
@given(errors, st.floats(0.01, 0.99))
def test_the_expectile_weighs_errors_above_v_by_tau_and_below_by_one_minus_tau(values, tau):
    u = torch.tensor(values, dtype=torch.float64)
    loss = expectile_loss(u, tau)
    above, below = u >= 0, u < 0
    assert torch.allclose(loss[above], tau * u[above] ** 2)
    assert torch.allclose(loss[below], (1 - tau) * u[below] ** 2)


def test_the_advantage_weight_is_clipped_at_100():
    loss = AdvantageWeightedLoss(temperature=3.0)
    log_prob = torch.full((2, 4), -1.0)
    terms = loss(log_prob, torch.tensor([[10.0] * 4, [0.0] * 4]))  # exp(30) and exp(0)
    assert torch.allclose(terms["advantage_weight"], torch.tensor((WEIGHT_MAX + 1.0) / 2))
    assert torch.allclose(terms["loss_policy"], torch.tensor((WEIGHT_MAX + 1.0) / 2))


def first_encoder_update(agent: str, data, where, *bindings: str) -> dict[str, torch.Tensor]:
    _, algorithm = run_row(
        "focal.gin",
        "sparse_point_robot",
        data,
        where,
        bindings=(f"focal.agent = @{agent}", *bindings),
        train=False,
    )
    algorithm.train_step()
    return {k: v.clone() for k, v in algorithm.encoder.state_dict().items()}


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_backbone_leaves_a_decoupled_encoder_s_first_update_unchanged(tiny_data, tmp_path):
    """FOCAL detaches z: the encoder learns from its objective alone, so its first step is the
    same on BRAC and on IQL (the agents' own draws come after it). Coupled (the critic's
    gradient let into the encoder) it is not, which shows the comparison can tell."""
    brac = first_encoder_update("brac", tiny_data, tmp_path / "brac")
    iql = first_encoder_update("iql", tiny_data, tmp_path / "iql")
    assert same(brac, iql)
    coupled = ("focal.detach_z = False",)
    brac = first_encoder_update("brac", tiny_data, tmp_path / "brac_coupled", *coupled)
    iql = first_encoder_update("iql", tiny_data, tmp_path / "iql_coupled", *coupled)
    assert not same(brac, iql)


def _batch(t: int = 3, b: int = 5, terminated=None) -> Transitions:
    g = torch.Generator().manual_seed(0)
    zeros = torch.zeros(t, b)
    return Transitions(
        obs=torch.randn(t, b, 2, generator=g),
        action=torch.rand(t, b, 2, generator=g) * 2 - 1,
        reward=torch.randn(t, b, generator=g),
        sparse_reward=zeros,
        next_obs=torch.randn(t, b, 2, generator=g),
        terminated=zeros if terminated is None else terminated,
        truncated=zeros,
    )


def test_the_q_target_is_scaled_reward_plus_discounted_value_unless_terminated():
    """target = scale·r + γ(1 − d)·V(x′): computed by hand from V's values, with a terminated
    transition taking no bootstrap; a wrong γ, scale or done mask changes the loss."""
    torch.manual_seed(0)
    terminated = torch.zeros(3, 5)
    terminated[1, 2] = terminated[0, 4] = 1.0
    batch = _batch(terminated=terminated)
    q = torch.randn(2, 3, 5)
    v_next = torch.randn(3, 5)
    loss = QLoss(discount=0.9, reward_scale=2.0)(q, v_next, batch)["loss_q"]
    target = 2.0 * batch.reward + 0.9 * (1 - terminated) * v_next
    assert torch.allclose(loss, ((q - target) ** 2).mean(dim=(1, 2)).sum())
    assert terminated[1, 2] == 1 and target[1, 2] == 2.0 * batch.reward[1, 2]  # no bootstrap
    for other in (QLoss(discount=0.99, reward_scale=2.0), QLoss(discount=0.9, reward_scale=1.0)):
        assert not torch.allclose(other(q, v_next, batch)["loss_q"], loss)
    ignored = dataclasses.replace(batch, terminated=torch.zeros(3, 5))  # the mask matters
    assert not torch.allclose(
        QLoss(discount=0.9, reward_scale=2.0)(q, v_next, ignored)["loss_q"], loss
    )


def test_the_agent_s_q_target_bootstraps_its_new_v_at_the_next_state_through_truncation():
    """What a built agent regresses Q toward, checked from its own update: its reward scale and
    discount, V(x′) at the next observation under the V of this update (V steps first), no
    bootstrap where the episode terminated, and a bootstrap where it was only cut by the time
    limit (truncated: the task goes on)."""
    torch.manual_seed(0)
    agent = IQL(obs_dim=2, act_dim=2, latent_dim=3, hidden=(8, 8), discount=0.8, reward_scale=3.0)
    terminated, truncated = torch.zeros(3, 5), torch.zeros(3, 5)
    terminated[0, 1] = terminated[2, 3] = 1.0
    truncated[1, 4] = truncated[2, 0] = 1.0
    batch = dataclasses.replace(_batch(terminated=terminated), truncated=truncated)
    z = torch.randn(3, 3)
    seen: dict[str, torch.Tensor] = {}
    real = agent.q_loss.forward

    def recorded(q, v_next, b):
        terms = real(q, v_next, b)
        seen.update(q=q.detach().clone(), loss=terms["loss_q"].detach().clone())
        return terms

    agent.q_loss.forward = recorded
    agent.update(batch, z)
    zb = z[:, None, :].expand(-1, 5, -1)
    with torch.no_grad():  # V does not step after Q's loss: this is the V the target read
        v_next = agent.v(torch.cat([batch.next_obs, zb], -1)).squeeze(-1)
    target = 3.0 * batch.reward + 0.8 * (1.0 - terminated) * v_next
    assert torch.allclose(seen["loss"], ((seen["q"] - target) ** 2).mean(dim=(1, 2)).sum())
    with torch.no_grad():
        v_here = agent.v(torch.cat([batch.obs, zb], -1)).squeeze(-1)
    wrong = {  # each a target a faulty update would have used instead
        "V at x, not x′": 3.0 * batch.reward + 0.8 * (1.0 - terminated) * v_here,
        "truncation masked too": 3.0 * batch.reward
        + 0.8 * (1.0 - terminated) * (1.0 - truncated) * v_next,
        "the default discount": 3.0 * batch.reward + 0.99 * (1.0 - terminated) * v_next,
    }
    for why, other in wrong.items():
        loss = ((seen["q"] - other) ** 2).mean(dim=(1, 2)).sum()
        assert not torch.allclose(seen["loss"], loss), why


def test_an_update_goes_value_then_policy_then_q_then_the_target():
    """The official order: V steps first; the policy's advantage reads the new V; Q's target
    reads the new V(x′); the target Q moves last, by the Polyak rate τ toward the new Q."""
    torch.manual_seed(0)
    agent = IQL(obs_dim=2, act_dim=2, latent_dim=3, hidden=(8, 8), tau=0.05)
    batch, z = _batch(), torch.randn(3, 3)
    order: list[str] = []
    for name, opt in agent.optimizers().items():
        real = opt.step

        def stepped(*args, _name=name, _real=real, **kwargs):
            order.append(_name)
            return _real(*args, **kwargs)

        opt.step = stepped
    seen_v: dict[str, torch.Tensor] = {}
    real_v = agent.v.forward

    def v_forward(x, *args, **kwargs):
        out = real_v(x, *args, **kwargs)
        seen_v.setdefault(order[-1] if order else "before", out.detach().clone())
        return out

    agent.v.forward = v_forward
    q_before = [p.detach().clone() for p in agent.q.parameters()]
    target_before = [p.detach().clone() for p in agent.q_target.parameters()]
    agent.update(batch, z)
    assert order == ["v", "policy", "q"]
    # V read before its step (its loss), after it (the advantage), after the policy's (V(x′))
    assert list(seen_v) == ["before", "v", "policy"]
    assert not torch.equal(seen_v["before"], seen_v["v"])  # the advantage read the new V
    for target, old_target, online in zip(
        agent.q_target.parameters(), target_before, agent.q.parameters(), strict=True
    ):
        expected = old_target + 0.05 * (online.detach() - old_target)  # toward the *new* Q
        assert torch.allclose(target, expected, atol=1e-7)
    moved = [
        not torch.equal(a, b.detach()) for a, b in zip(q_before, agent.q.parameters(), strict=True)
    ]
    assert any(moved)  # Q stepped, so the target's move is not toward the old Q
