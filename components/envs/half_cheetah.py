"""Half-cheetah families: Sparse-Cheetah-Vel (target velocities) and Sparse-Cheetah-Fwd-Back.

DECISIONS §1: dt 0.05; observation = qpos[1:] (8), qvel (9), torso position (3, with the absolute x)
= 20; forward velocity = change of the torso's x over one step / dt, as the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium.envs.mujoco.half_cheetah_v5 import HalfCheetahEnv

from components.envs.family import A, EnvFamily, Task, TaskParameters, check_vector
from components.envs.task_env import MujocoTaskEnvMixin, current_body_positions, register_gym
from registry import register

TORSO_X = 17  # index of the torso's absolute x in the observation
CTRL_COST = 0.05


class CheetahFamily(EnvFamily):
    obs_dim: ClassVar[int] = 20
    act_dim: ClassVar[int] = 6
    horizon: ClassVar[int] = 200
    dt: ClassVar[float] = 0.05

    @classmethod
    def forward_velocity(cls, obs: A, next_obs: A) -> A:
        return (next_obs[..., TORSO_X] - obs[..., TORSO_X]) / cls.dt

    @staticmethod
    def control_cost(action: A) -> A:
        return CTRL_COST * (action**2).sum(-1)


@register("env", "sparse_cheetah_vel")
class SparseCheetahVel(CheetahFamily):
    """Sparse-Cheetah-Vel: run at a target velocity from U(0, 3); 80 train / 20 test tasks."""

    gym_id = "focalpp/SparseCheetahVel-v0"
    n_train, n_test = 80, 20
    task_keys = ("velocity",)
    default_goal_radius = -0.1

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        return [{"velocity": float(v)} for v in rng.uniform(0.0, 3.0, self.n_train + self.n_test)]

    def task_vector(self, task: Task) -> np.ndarray:
        return check_vector(task, "velocity", 1)

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        return TaskParameters(self.task_vectors(tasks), ("target velocity",), "m/s")

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        speed_error = abs(self.forward_velocity(obs, next_obs) - task[..., 0])
        return -speed_error - self.control_cost(action)


@register("env", "sparse_cheetah_fwd_back")
class SparseCheetahFwdBack(CheetahFamily):
    """Sparse-Cheetah-Fwd-Back: run forward (+1) or backward (−1); test tasks = train tasks."""

    gym_id = "focalpp/SparseCheetahFwdBack-v0"
    n_train, n_test = 2, 2
    test_is_train = True
    task_keys = ("direction",)
    default_goal_radius = 6.0

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        return [{"direction": 1.0}, {"direction": -1.0}]

    def task_vector(self, task: Task) -> np.ndarray:
        return check_vector(task, "direction", 1)

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        return task[..., 0] * self.forward_velocity(obs, next_obs) - self.control_cost(action)


class CheetahEnv(MujocoTaskEnvMixin, HalfCheetahEnv):
    """gymnasium's HalfCheetah-v5 with the reference's 20-d observation and a task."""

    def __init__(
        self,
        *,
        task: Task | int | None = None,
        task_seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        **kwargs: Any,
    ):
        HalfCheetahEnv.__init__(self, **kwargs)
        self._init_mujoco_task(task, task_seed, goal_radius)

    def _get_obs(self) -> np.ndarray:
        current_body_positions(self.model, self.data)
        torso = self.data.body("torso").xpos
        return np.concatenate([self.data.qpos[1:], self.data.qvel, torso]).astype(np.float64)


class SparseCheetahVelEnv(CheetahEnv):
    family_cls = SparseCheetahVel


class SparseCheetahFwdBackEnv(CheetahEnv):
    family_cls = SparseCheetahFwdBack


register_gym(SparseCheetahVel, SparseCheetahVelEnv)
register_gym(SparseCheetahFwdBack, SparseCheetahFwdBackEnv)
