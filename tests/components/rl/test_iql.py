"""IQL's losses as its paper and implementations write them, and the backbone as a choice that
leaves the encoder alone."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from components.rl.iql import WEIGHT_MAX, AdvantageWeightedLoss, expectile_loss
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
