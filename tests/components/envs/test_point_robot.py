"""Point-robot dynamics and rewards on hand-computed steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.envs.point_robot import PointRobotBatch
from registry import get


def test_hand_computed_steps(make_env):
    env = make_env("focalpp/SparsePointRobot-v0", task={"goal": [0.0, 1.0]})
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(obs, [0.0, 0.0])
    obs, reward, *_ = env.step(np.array([1.0, 0.5]))
    np.testing.assert_allclose(obs, [0.1, 0.05])
    assert reward == pytest.approx(-math.hypot(0.1, 0.95))
    obs, reward, _, _, info = env.step(np.array([3.0, -7.0]))  # clipped to (1, −1)
    np.testing.assert_allclose(obs, [0.2, -0.05])
    assert info["sparse_reward"] == 0.0  # far from the goal: outside radius 0.2
    env.reset()
    for _ in range(9):
        obs, reward, *_ = env.step(np.array([0.0, 1.0]))
    np.testing.assert_allclose(obs, [0.0, 0.9])
    _, _, _, _, info = env.step(np.array([0.0, 0.5]))  # at (0, 0.95): 0.05 from the goal
    assert info["sparse_reward"] == pytest.approx((-0.05 + 0.2) / 0.2)


def test_wind_drifts_every_step(make_env):
    env = make_env("focalpp/PointRobotWind-v0", task={"wind": [0.03, -0.02]})
    env.reset(seed=0)
    obs, reward, *_ = env.step(np.array([1.0, 0.0]))
    np.testing.assert_allclose(obs, [0.13, -0.02])
    assert reward == pytest.approx(-math.hypot(0.87, 0.02))
    obs, *_ = env.step(np.zeros(2))
    np.testing.assert_allclose(obs, [0.16, -0.04])


@pytest.mark.parametrize(
    ("gym_id", "horizon"), [("focalpp/SparsePointRobot-v0", 20), ("focalpp/PointRobotWind-v0", 25)]
)
def test_horizon_truncates(make_env, gym_id, horizon):
    env = make_env(gym_id)
    env.reset(seed=0)
    for t in range(1, horizon + 1):
        _, _, terminated, truncated, _ = env.step(np.zeros(2))
        assert not terminated
        assert truncated == (t == horizon)


@pytest.mark.parametrize("name", ["sparse_point_robot", "point_robot_wind"])
def test_batched_matches_single_environments(name, make_env):
    family = get("env", name)(seed=0)
    tasks = list(family.split().test[:5])
    batch = family.make_batched(tasks)
    assert isinstance(batch, PointRobotBatch)
    singles = [make_env(family.gym_id, task=t) for t in tasks]
    batch.reset()
    for env in singles:
        env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(family.horizon):
        actions = rng.uniform(-1.2, 1.2, size=(len(tasks), 2))
        step = batch.step(actions)
        for i, env in enumerate(singles):
            obs, reward, terminated, truncated, info = env.step(actions[i])
            np.testing.assert_allclose(step.obs[i], obs, atol=1e-12)
            assert step.reward[i] == pytest.approx(reward, abs=1e-12)
            assert step.sparse_reward[i] == pytest.approx(info["sparse_reward"], abs=1e-12)
            assert (step.terminated[i], step.truncated[i]) == (terminated, truncated)


def test_batched_rejects_bad_actions():
    family = get("env", "sparse_point_robot")()
    batch = family.make_batched(family.split().test[:3])
    batch.reset()
    with pytest.raises(ValueError, match=r"expected \(3, 2\)"):
        batch.step(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        batch.step(np.full((3, 2), np.nan))
