"""Sparse-Ant-Fwd-Back: the ant runs along direction angle 0 or π.

DECISIONS §1: dt 0.05; observation = qpos[2:] (13) + qvel (14) = 27, no contact forces; reward
v·(cos g, sin g) − 0.5‖a‖² + 1 with contact cost 0; terminates if the state is not finite or
the torso's height leaves [0.2, 1.0]. Deviation: the observation has no x, y position, so the
pure reward takes v from the next observation's root velocity (qvel[0:2], world frame) instead
of the reference's torso displacement over the step.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium.envs.mujoco.ant_v5 import AntEnv

from components.envs.family import A, EnvFamily, Task, check_vector
from components.envs.task_env import MujocoTaskEnvMixin, register_gym
from registry import register

VELOCITY_XY = slice(13, 15)  # qvel[0:2] in the observation
HEIGHT = 0  # qpos[2], the torso's z


@register("env", "sparse_ant_fwd_back")
class SparseAntFwdBack(EnvFamily):
    """Sparse-Ant-Fwd-Back: run along angle 0 or π; test tasks = train tasks."""

    gym_id = "focalpp/SparseAntFwdBack-v0"
    obs_dim: ClassVar[int] = 27
    act_dim: ClassVar[int] = 8
    horizon: ClassVar[int] = 200
    n_train, n_test = 2, 2
    test_is_train = True
    task_keys = ("angle",)
    default_goal_radius = 3.0
    healthy_z: ClassVar[tuple[float, float]] = (0.2, 1.0)

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        return [{"angle": 0.0}, {"angle": math.pi}]

    def task_vector(self, task: Task) -> np.ndarray:
        (angle,) = check_vector(task, "angle", 1)
        return np.array([math.cos(angle), math.sin(angle)])

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        progress = (next_obs[..., VELOCITY_XY] * task[..., :2]).sum(-1)
        return progress - 0.5 * (action**2).sum(-1) + 1.0

    def terminated(self, next_obs: np.ndarray) -> np.ndarray:
        z = next_obs[..., HEIGHT]
        low, high = self.healthy_z
        return ~np.isfinite(next_obs).all(-1) | (z < low) | (z > high)


class SparseAntFwdBackEnv(MujocoTaskEnvMixin, AntEnv):
    """gymnasium's Ant-v5 without contact forces in the observation, with a direction task."""

    family_cls = SparseAntFwdBack

    def __init__(
        self,
        *,
        task: Task | int | None = None,
        task_seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        **kwargs: Any,
    ):
        AntEnv.__init__(self, include_cfrc_ext_in_observation=False, **kwargs)
        self._init_mujoco_task(task, task_seed, goal_radius)


register_gym(SparseAntFwdBack, SparseAntFwdBackEnv)
