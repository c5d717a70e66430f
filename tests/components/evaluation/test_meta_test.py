"""The meta-test protocol on real point-robot environments with hand-made policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from components.data.context import ContextLayout
from components.data.store import QualityData
from components.encoders.context import ContextEncoder
from components.envs.point_robot import SparsePointRobot
from components.evaluation.meta_test import MetaTest
from components.transitions import Transitions


def fake_free_data(n_tasks: int, n: int = 50) -> QualityData:
    """Offline data of the right shapes (contents do not matter to these policies)."""
    rng = np.random.default_rng(0)
    t = Transitions(
        obs=rng.normal(size=(n_tasks, n, 2)).astype(np.float32),
        action=rng.uniform(-1, 1, size=(n_tasks, n, 2)).astype(np.float32),
        reward=rng.normal(size=(n_tasks, n)).astype(np.float32),
        sparse_reward=np.zeros((n_tasks, n), np.float32),
        next_obs=rng.normal(size=(n_tasks, n, 2)).astype(np.float32),
        terminated=np.zeros((n_tasks, n), bool),
        truncated=np.zeros((n_tasks, n), bool),
    )
    return QualityData(t, np.full(n_tasks, n))


@pytest.fixture
def setup():
    family = SparsePointRobot(seed=0)
    _, test = family.split_indices()
    layout = ContextLayout(obs_dim=2, act_dim=2, next_obs=True, sparse=True)
    encoder = ContextEncoder(sizes=layout.sizes, latent_dim=3)
    return family, test, layout, encoder, fake_free_data(len(family.all_tasks()))


def evaluate(setup, act, **kwargs):
    family, test, layout, encoder, data = setup
    meta_test = MetaTest(**kwargs)
    result = meta_test(
        family=family,
        data=data,
        tasks=test,
        layout=layout,
        encoder=encoder,
        act=act,
        device=torch.device("cpu"),
        seed=0,
    )
    meta_test.close()
    return result


def test_standing_still_scores_minus_horizon(setup):
    """The robot starts at the origin, one unit from every goal: dense −1 per step."""
    result = evaluate(setup, lambda obs, z: torch.zeros(len(obs), 2), runs=2)
    np.testing.assert_allclose(result.returns, -20.0)
    np.testing.assert_allclose(result.sparse_returns, 0.0)
    assert result.mean == 0.0 and len(result.tasks) == 20


def test_rows_are_tasks_in_order_and_runs_are_averaged(setup):
    """An oracle that knows each row's goal must score near the optimum on every task."""
    family, test, *_ = setup
    runs = 3
    goals = np.array(
        [family.goal_and_wind(family.task_vector(family.all_tasks()[i]))[0] for i in test]
    )

    def oracle_for(goals):
        row_goals = torch.as_tensor(np.repeat(goals, runs, axis=0), dtype=torch.float32)
        return lambda obs, z: ((row_goals - obs) / 0.1).clamp(-1, 1)

    result = evaluate(setup, oracle_for(goals), runs=runs)
    assert result.sparse_returns.min() > 11.0  # every task near the optimum
    assert result.describe().startswith("test sparse return")
    shifted = evaluate(setup, oracle_for(np.roll(goals, 10, axis=0)), runs=runs)
    assert shifted.sparse_returns.mean() < 2.0  # goals sent to the wrong rows miss


def test_encoder_sees_the_full_context_and_is_restored(setup):
    family, test, layout, encoder, data = setup
    seen = []

    class Spy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = encoder

        def forward(self, context):
            seen.append((tuple(context.shape), self.training))
            return self.inner(context)

    spy = Spy().train()
    result = evaluate(
        (family, test, layout, spy, data),
        lambda o, z: torch.zeros(len(o), 2),
        runs=2,
        context_transitions=60,
        curve=True,
    )
    assert [s for s, _ in seen] == [(40, 20, 7), (40, 40, 7), (40, 60, 7)]
    assert not any(training for _, training in seen) and spy.training
    assert result.context_sizes == [20, 40, 60] and len(result.curve) == 3


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="runs"):
        MetaTest(runs=0)
