"""MuJoCo families: observation layouts, velocities, and Walker's per-task dynamics."""

from __future__ import annotations

import numpy as np
import pytest

from components.envs.batched import VectorBatchedEnv
from registry import get


def test_half_cheetah_observation_has_absolute_x(make_env):
    env = make_env("focalpp/SparseCheetahVel-v0", task={"velocity": 1.0})
    env.reset(seed=0)
    sim = env.unwrapped
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, *_ = env.step(rng.uniform(-1, 1, 6))
    np.testing.assert_allclose(obs[:8], sim.data.qpos[1:])
    np.testing.assert_allclose(obs[8:17], sim.data.qvel)
    assert obs[17] == pytest.approx(sim.data.qpos[0])  # torso x = rootx slide: absolute position
    assert abs(obs[17]) > 1e-3


def test_half_cheetah_velocity_is_displacement_over_dt(make_env):
    env = make_env("focalpp/SparseCheetahVel-v0", task={"velocity": 2.0})
    env.reset(seed=0)
    sim = env.unwrapped
    assert sim.dt == pytest.approx(0.05)
    action = np.full(6, 0.5)
    x_before = sim.data.qpos[0]
    _, reward, *_ = env.step(action)
    velocity = (sim.data.qpos[0] - x_before) / 0.05
    assert reward == pytest.approx(-abs(velocity - 2.0) - 0.05 * np.sum(action**2), abs=1e-9)


def test_ant_observation_has_no_contact_forces(make_env):
    env = make_env("focalpp/SparseAntFwdBack-v0", task={"angle": np.pi})
    obs, _ = env.reset(seed=0)
    sim = env.unwrapped
    assert obs.shape == (27,)
    np.testing.assert_allclose(obs, np.concatenate([sim.data.qpos[2:], sim.data.qvel]))
    assert sim.dt == pytest.approx(0.05)


def test_ant_terminates_outside_healthy_height():
    family = get("env", "sparse_ant_fwd_back")()
    obs = np.zeros((4, 27))
    obs[:, 0] = [0.5, 0.1, 1.5, 0.5]
    obs[3, 5] = np.nan
    np.testing.assert_array_equal(family.terminated(obs), [False, True, True, True])


def test_walker_tasks_change_the_dynamics(make_env):
    family = get("env", "walker_params")(seed=0)
    env = make_env(family.gym_id, task=0)
    sim = env.unwrapped
    assert sim.dt == pytest.approx(0.016)
    env.reset(seed=0)
    qpos, qvel = sim.data.qpos.copy(), sim.data.qvel.copy()
    action = np.full(6, 0.7)
    next_states = []
    for task in (0, 1):
        env.reset(seed=0, options={"task": task})
        sim.set_state(qpos, qvel)
        sim._last_obs = sim._get_obs()
        for _ in range(5):
            obs, *_ = env.step(action)
        next_states.append(obs)
    assert np.abs(next_states[0] - next_states[1]).max() > 1e-2
    task1 = family.resolve_task(1)
    np.testing.assert_allclose(
        sim.model.body_mass, sim._defaults["body_mass"] * np.array(task1["body_mass"])
    )


def test_walker_rejects_non_positive_multipliers():
    family = get("env", "walker_params")()
    task = dict(family.all_tasks()[0])
    task["dof_damping"] = [-1.0] * 9
    with pytest.raises(ValueError, match="multipliers must be positive"):
        family.resolve_task(task)


def test_vector_batched_env_matches_single_envs(make_env):
    family = get("env", "sparse_cheetah_vel")(seed=0)
    tasks = list(family.split().test[:3])
    batch = family.make_batched(tasks)
    assert isinstance(batch, VectorBatchedEnv)
    obs = batch.reset(seed=10)
    singles = [make_env(family.gym_id, task=t) for t in tasks]
    for i, env in enumerate(singles):
        single_obs, _ = env.reset(seed=10 + i)
        np.testing.assert_allclose(obs[i], single_obs)
    actions = np.random.default_rng(0).uniform(-1, 1, (3, 6))
    step = batch.step(actions)
    for i, env in enumerate(singles):
        o, r, _, _, info = env.step(actions[i])
        np.testing.assert_allclose(step.obs[i], o)
        assert step.reward[i] == pytest.approx(r)
        assert step.sparse_reward[i] == pytest.approx(info["sparse_reward"])
    batch.close()


def test_vector_batched_env_freezes_ended_episodes(make_env):
    family = get("env", "walker_params")(seed=0)
    tasks = list(family.split().test[:2])
    batch = family.make_batched(tasks)
    batch.reset(seed=3)
    singles = [make_env(family.gym_id, task=t) for t in tasks]
    for i, env in enumerate(singles):
        env.reset(seed=3 + i)
    rng = np.random.default_rng(0)
    ended_at, finals = [None, None], [None, None]
    for t in range(family.horizon):
        actions = rng.uniform(-1, 1, (2, 6))
        step = batch.step(actions)
        for i, env in enumerate(singles):
            if ended_at[i] is None:
                assert step.alive[i]
                o, r, terminated, truncated, _ = env.step(actions[i])
                np.testing.assert_allclose(step.obs[i], o)
                assert step.reward[i] == pytest.approx(r)
                if terminated or truncated:
                    ended_at[i], finals[i] = t, o
            else:  # frozen at the final observation until the batch resets
                assert not step.alive[i] and step.reward[i] == 0.0 and step.sparse_reward[i] == 0.0
                assert step.terminated[i] or step.truncated[i]
                np.testing.assert_allclose(step.obs[i], finals[i])
    assert any(t is not None and t < family.horizon - 1 for t in ended_at)  # random walkers fall
    batch.close()


def test_mujoco_deprecation_notices_of_the_shipped_models_are_not_repeated(capfd):
    """gymnasium's half_cheetah.xml makes MuJoCo print a `settotalmass` deprecation notice at
    every compile; that one is dropped, any other MuJoCo warning still reaches stderr."""
    from components.envs.task_env import _mujoco_warning

    family = get("env", "sparse_cheetah_vel")(seed=0)
    family.make_batched(family.all_tasks()[:3]).close()
    _mujoco_warning("Nan, Inf or huge value in QACC at DOF 0")
    err = capfd.readouterr().err
    assert "settotalmass" not in err
    assert "WARNING: Nan, Inf or huge value in QACC at DOF 0" in err
