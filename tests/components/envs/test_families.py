"""Every family: gymnasium's checker, sizes, task distributions, determinism, pure rewards."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from components.envs import TaskSplit
from registry import get, names
from tests.components.envs.conftest import FAMILIES


def rollout(env, n: int, seed: int = 0, action_seed: int = 1):
    """n random steps (resetting at episode ends): stacked obs, clipped action, next obs, reward."""
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    space = env.action_space
    rows = []
    for _ in range(n):
        action = rng.uniform(space.low * 1.5, space.high * 1.5)  # some beyond the bounds
        next_obs, reward, terminated, truncated, info = env.step(action)
        clipped = np.clip(action, space.low, space.high)
        rows.append((obs, clipped, next_obs, reward, info["sparse_reward"], terminated))
        obs = next_obs
        if terminated or truncated:
            obs, _ = env.reset()
    return [np.array(col) for col in zip(*rows, strict=True)]


def test_all_six_families_are_registered():
    assert set(FAMILIES) <= set(names("env"))


def test_check_env(family_name, make_env):
    env = make_env(FAMILIES[family_name][0])
    # No display here: skip the render check (rendering is gymnasium's own code).
    check_env(env.unwrapped, skip_render_check=True)


def test_sizes_and_horizon(family_name, family, make_env):
    gym_id, obs_dim, act_dim, horizon, n_train, n_test = FAMILIES[family_name]
    env = make_env(gym_id)
    assert env.observation_space.shape == (obs_dim,) == (family.obs_dim,)
    assert env.action_space.shape == (act_dim,) == (family.act_dim,)
    assert env.spec.max_episode_steps == horizon == family.horizon
    split = family.split()
    assert (len(split.train), len(split.test)) == (n_train, n_test)


def test_task_split_is_seeded_and_serialisable(family_name):
    family_cls = get("env", family_name)
    a, b = family_cls(seed=3).split(), family_cls(seed=3).split()
    assert a == b
    assert TaskSplit.from_json(a.to_json()) == a
    json.dumps(a.train)  # plain JSON types
    if family_name in (
        "sparse_point_robot",
        "point_robot_wind",
        "sparse_cheetah_vel",
        "walker_params",
    ):
        assert family_cls(seed=4).split() != a
        assert not set(map(json.dumps, a.train)) & set(map(json.dumps, a.test))


def test_seeded_determinism(family_name, make_env):
    gym_id = FAMILIES[family_name][0]
    first = rollout(make_env(gym_id, task=1), 40, seed=7)
    second = rollout(make_env(gym_id, task=1), 40, seed=7)
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x, y)


def test_step_reward_equals_pure_reward(family_name, family, make_env):
    env = make_env(FAMILIES[family_name][0], task=1)
    obs, action, next_obs, reward, sparse, _ = rollout(env, 250)
    task = family.task_vectors([family.resolve_task(1)])  # [1, P], broadcast over the batch
    pure = family.reward(obs, action, next_obs, task)
    np.testing.assert_allclose(pure, reward, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        family.sparse_reward(obs, action, next_obs, task), sparse, atol=1e-12
    )
    as_torch = family.reward(*(torch.from_numpy(x) for x in (obs, action, next_obs, task)))
    np.testing.assert_allclose(as_torch.numpy(), reward, rtol=1e-12, atol=1e-12)


def test_terminated_matches_pure_function(family_name, family, make_env):
    env = make_env(FAMILIES[family_name][0])
    *_, next_obs, _, _, terminated = rollout(env, 300)
    np.testing.assert_array_equal(family.terminated(next_obs), terminated)


def test_task_from_reset_options(family_name, family, make_env):
    env = make_env(FAMILIES[family_name][0], task=0)
    task = family.split().test[-1]
    _, info = env.reset(seed=0, options={"task": task})
    assert info["task"] == task
    _, _, _, _, info = env.step(env.action_space.sample())
    assert info["task"] == task


def test_bad_tasks_and_actions(family_name, family, make_env):
    gym_id = FAMILIES[family_name][0]
    n = len(family.all_tasks())
    with pytest.raises(ValueError, match=rf"unknown task index {n}.*0 <= index < {n}"):
        make_env(gym_id, task=n)
    with pytest.raises(ValueError, match="malformed task"):
        make_env(gym_id, task={"nonsense": 1.0})
    key = family.task_keys[0]
    with pytest.raises(ValueError, match=f"malformed task field '{key}'"):
        make_env(gym_id, task={**family.all_tasks()[0], key: [1.0] * 999})
    env = make_env(gym_id)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action has shape"):
        env.step(np.zeros(env.action_space.shape[0] + 1))
    with pytest.raises(ValueError, match="not finite"):
        env.step(np.full(env.action_space.shape, np.nan))
    with pytest.raises(ValueError, match="goal_radius must be non-zero"):
        type(family)(goal_radius=0.0)


def test_nan_task_parameters_are_rejected(family):
    task = dict(family.all_tasks()[0])
    key = family.task_keys[0]
    task[key] = (np.asarray(task[key], dtype=float) * np.nan).tolist()
    with pytest.raises(ValueError, match="malformed task"):
        family.resolve_task(task)


def test_goal_radius_is_bindable_and_in_info(make_env):
    env = make_env("focalpp/SparsePointRobot-v0", task={"goal": [0.05, 0.0]}, goal_radius=-0.5)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.zeros(2))
    assert reward == pytest.approx(-0.05)
    assert info["sparse_reward"] == pytest.approx((-0.05 + 0.5) / 0.5)
    assert info["dense_reward"] == reward


def test_family_defaults_follow_the_paper_table():
    radius = {name: get("env", name)().goal_radius for name in FAMILIES}
    assert radius == {
        "sparse_point_robot": -0.2,
        "point_robot_wind": None,
        "sparse_cheetah_vel": -0.1,
        "sparse_cheetah_fwd_back": 6.0,
        "sparse_ant_fwd_back": 3.0,
        "walker_params": None,
    }
    goals = np.array([t["goal"] for t in get("env", "sparse_point_robot")().all_tasks()])
    np.testing.assert_allclose(np.linalg.norm(goals, axis=1), 1.0)
    angles = np.sort(np.arctan2(goals[:, 1], goals[:, 0]))
    np.testing.assert_allclose(angles, np.arange(100) * math.pi / 99, atol=1e-12)
    winds = np.array([t["wind"] for t in get("env", "point_robot_wind")().all_tasks()])
    assert np.abs(winds).max() <= 0.05 and winds.std() > 0.02
