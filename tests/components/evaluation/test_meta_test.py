"""The meta-test protocol on real point-robot environments with hand-made policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.distributions import Normal

from components.data.context import ContextLayout
from components.data.store import QualityData
from components.encoders.context import ContextEncoder
from components.envs.point_robot import SparsePointRobot
from components.evaluation.meta_test import MetaTest
from components.transitions import Transitions


def fake_free_data(n_tasks: int, n: int = 50) -> QualityData:
    """Offline data of the right shapes (contents do not matter to these policies)."""
    return free_data(n_tasks, 2, 2, n)


def free_data(n_tasks: int, obs_dim: int, act_dim: int, n: int = 50) -> QualityData:
    """Random transitions of the given sizes."""
    rng = np.random.default_rng(0)
    t = Transitions(
        obs=rng.normal(size=(n_tasks, n, obs_dim)).astype(np.float32),
        action=rng.uniform(-1, 1, size=(n_tasks, n, act_dim)).astype(np.float32),
        reward=rng.normal(size=(n_tasks, n)).astype(np.float32),
        sparse_reward=np.zeros((n_tasks, n), np.float32),
        next_obs=rng.normal(size=(n_tasks, n, obs_dim)).astype(np.float32),
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


class MeanEncoder(torch.nn.Module):
    """z: the tanh of a context's first three features averaged over its transitions (each
    row's z its own, whatever else is in the batch)."""

    def forward(self, context):
        return Normal(torch.tanh(context[..., :3].mean(-2)), torch.ones(()))


@pytest.mark.parametrize("family_name", ["sparse_cheetah_vel", "sparse_point_robot"])
def test_k_seeds_at_once_are_each_seeds_meta_test_alone(family_name):
    """`for_seeds` steps every seed's test tasks in one environment with one policy call per
    step; each seed's result is its meta-test alone, exactly: its own test contexts (drawn
    from its seed) and, on MuJoCo, its own episode starts (reset noise seeded as alone)."""
    from registry import get

    family = get("env", family_name)(seed=0)
    tasks = family.split_indices()[1][:3]
    layout = ContextLayout(obs_dim=family.obs_dim, act_dim=family.act_dim, next_obs=True)
    data = free_data(len(family.all_tasks()), family.obs_dim, family.act_dim)
    calls = []

    def act(obs, z):
        calls.append(len(obs))
        return torch.tanh(obs[:, : family.act_dim] * 0.3 + z.sum(-1, keepdim=True))

    meta_test = MetaTest(runs=2, context_transitions=2 * family.horizon, curve=True)
    inputs = dict(family=family, data=data, tasks=tasks, layout=layout, encoder=MeanEncoder(),
                  act=act, device=torch.device("cpu"))  # fmt: skip
    together = meta_test.for_seeds(seeds=[3, 8], **inputs)
    assert calls == [2 * 3 * 2] * 2 * family.horizon  # seeds × tasks × runs, every step
    alone = [meta_test(seed=seed, **inputs) for seed in (3, 8)]
    meta_test.close()
    assert together[0].returns.tolist() != together[1].returns.tolist()
    for mine, theirs in zip(together, alone, strict=True):
        assert mine.to_dict() == theirs.to_dict()
