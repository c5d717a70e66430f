"""What every focalpp gymnasium environment shares: a task, checked actions, the sparse reward."""

from __future__ import annotations

import copy
import sys
from typing import Any, ClassVar, Literal

import gymnasium
import mujoco
import numpy as np
from gymnasium import spaces

from components.envs.family import EnvFamily, Task
from components.envs.sparse import sparsify

QUIET = ("compiler attribute 'settotalmass' is deprecated",)


def _mujoco_warning(text: str) -> None:
    """MuJoCo's warnings as it prints them, less the deprecation notice of `settotalmass`:
    gymnasium's half_cheetah.xml uses that attribute (it still works), and MuJoCo says so at
    every compile — hundreds of identical lines for one batched family."""
    if not text.startswith(QUIET):
        sys.stderr.write(f"WARNING: {text}\n")


mujoco.set_mju_user_warning(_mujoco_warning)


class TaskEnvMixin:
    """Mixed into a gymnasium.Env: holds the family, the current task and its vector.

    The task is chosen at construction (`task=` a dict or an index into the family's task list)
    or at `reset(options={"task": ...})`. Actions must have the action space's shape and be
    finite (else ValueError); they are clipped to the action bounds, and the clipped action is
    what the dynamics and the reward see. `info` carries `task`, `dense_reward` and
    `sparse_reward` (equal to the dense reward for families without a goal radius).
    """

    family_cls: ClassVar[type[EnvFamily]]
    family: EnvFamily
    task: Task
    task_vec: np.ndarray

    def _init_family(
        self,
        task: Task | int | None,
        task_seed: int,
        goal_radius: float | Literal["default"] | None,
    ) -> None:
        # Built with every argument explicit, so no gin binding can change a gymnasium env.
        self.family = self.family_cls(seed=task_seed, goal_radius=goal_radius)
        self.set_task(task)

    def set_task(self, task: Task | int | None) -> None:
        self.task = self.family.resolve_task(task)
        self.task_vec = self.family.task_vector(self.task)
        self._apply_task()

    def _apply_task(self) -> None:
        """Hook for families whose task changes the simulator (Walker-2D-Params)."""

    def _reset_task(self, options: dict[str, Any] | None) -> None:
        if options and "task" in options:
            self.set_task(options["task"])

    def task_info(self) -> Task:
        """A fresh copy of the task for `info` (callers may keep and modify what they get)."""
        return copy.deepcopy(self.task)

    def _check_action(self, action: Any) -> np.ndarray:
        space = self.action_space
        a = np.asarray(action, dtype=np.float64)
        if a.shape != space.shape:
            raise ValueError(
                f"action has shape {a.shape}; {type(self).__name__} expects {space.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"action {a.tolist()} is not finite (NaN or inf)")
        return np.clip(a, space.low, space.high)

    def _transition(
        self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray
    ) -> tuple[float, bool, dict[str, Any]]:
        """Reward, termination and info of one step, from the family's pure functions."""
        reward = float(self.family.reward(obs, action, next_obs, self.task_vec))
        terminated = bool(self.family.terminated(next_obs))
        info = {
            "task": self.task_info(),
            "dense_reward": reward,
            "sparse_reward": float(sparsify(reward, self.family.goal_radius)),
        }
        return reward, terminated, info


class MujocoTaskEnvMixin(TaskEnvMixin):
    """reset/step for families built on gymnasium's v5 MuJoCo environments.

    Mixed in before the gymnasium class (`class E(MujocoTaskEnvMixin, HalfCheetahEnv)`): the
    gymnasium class simulates, the family's pure functions give reward and termination.
    Episodes are never truncated here; the registered time limit truncates at the horizon.
    """

    def _init_mujoco_task(
        self,
        task: Task | int | None,
        task_seed: int,
        goal_radius: float | Literal["default"] | None,
    ) -> None:
        obs_dim = self.family_cls.obs_dim
        self.observation_space = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float64)
        self._init_family(task, task_seed, goal_radius)
        self._last_obs = self._get_obs()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._reset_task(options)
        obs, _ = super().reset(seed=seed)
        self._last_obs = obs
        return obs, {"task": self.task_info()}

    def step(self, action: Any):
        a = self._check_action(action)
        obs = self._last_obs
        self.do_simulation(a, self.frame_skip)
        next_obs = self._get_obs()
        reward, terminated, info = self._transition(obs, a, next_obs)
        self._last_obs = next_obs
        if self.render_mode == "human":
            self.render()
        return next_obs, reward, terminated, False, info


def register_gym(family_cls: type[EnvFamily], env_cls: type) -> None:
    """Register `env_cls` with gymnasium under the family's id, time-limited at its horizon."""
    if family_cls.gym_id in gymnasium.registry:
        return
    gymnasium.register(
        id=family_cls.gym_id,
        entry_point=f"{env_cls.__module__}:{env_cls.__name__}",
        max_episode_steps=family_cls.horizon,
    )


def current_body_positions(model: mujoco.MjModel, data: mujoco.MjData) -> None:
    """Recompute body positions for the current qpos (mj_step leaves them a substep behind)."""
    mujoco.mj_kinematics(model, data)
