"""Point robots in the plane: Sparse-Point-Robot (goals differ) and Point-Robot-Wind (winds differ).

DECISIONS §1: the state starts at (0, 0); actions in [−1, 1]² move the robot by 0.1·a per step
(plus the task's wind); no walls, no clipping of the state; reward −‖s′ − goal‖.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import gymnasium
import numpy as np
from gymnasium import spaces

from components.envs.batched import BatchStep
from components.envs.family import A, EnvFamily, Task, TaskParameters, check_vector
from components.envs.sparse import sparsify
from components.envs.task_env import TaskEnvMixin, register_gym
from registry import register

STEP_SCALE = 0.1  # actions in [−1, 1] move at most 0.1 per axis and step


class PointRobotFamily(EnvFamily):
    """Shared by both point robots: 2-D state and action, a goal, and an optional wind."""

    obs_dim: ClassVar[int] = 2
    act_dim: ClassVar[int] = 2

    @abstractmethod
    def goal_and_wind(self, task: A) -> tuple[A, A]:
        """Goal [..., 2] and wind [..., 2] from task vectors [..., P]."""

    def dynamics(self, obs: A, action: A, task: A) -> A:
        """s′ = s + 0.1·a + wind, batched; `action` already clipped to [−1, 1]."""
        _, wind = self.goal_and_wind(task)
        return obs + STEP_SCALE * action + wind

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        goal, _ = self.goal_and_wind(task)
        return -(((next_obs - goal) ** 2).sum(-1) ** 0.5)

    def holding_error(self, obs: np.ndarray, task: np.ndarray) -> dict[str, np.ndarray]:
        goal, _ = self.goal_and_wind(task)
        return {"distance": np.linalg.norm(obs - goal, axis=-1)}

    def oracle_action(self, obs: np.ndarray, task: np.ndarray) -> np.ndarray:
        """The action that knows the task: the step that lands nearest the goal, [N, 2].

        Per axis the robot moves at most 0.1, so after k steps it can be anywhere in a box of
        half-width 0.1·k around its start (shifted by k winds); stepping to the point of the
        next box nearest the goal keeps it at the nearest reachable point after every step.
        Every point-robot reward decreases with the distance, so no policy scores more.
        """
        goal, wind = self.goal_and_wind(task)
        return np.clip((goal - obs - wind) / STEP_SCALE, -1.0, 1.0)

    def make_batched(self, tasks: Sequence[Task], *, autoreset: bool = False) -> PointRobotBatch:
        return PointRobotBatch(self, tasks, autoreset=autoreset)


@register("env", "sparse_point_robot")
class SparsePointRobot(PointRobotFamily):
    """Sparse-Point-Robot: 100 goals on the upper unit half circle, 80 train / 20 test."""

    gym_id = "focalpp/SparsePointRobot-v0"
    horizon = 20
    n_train, n_test = 80, 20
    task_keys = ("goal",)
    default_goal_radius = -0.2
    paper_formula = "inside_bonus"  # the reference's non-MuJoCo point robot (DECISIONS §1)

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        n = self.n_train + self.n_test
        angles = np.linspace(0.0, math.pi, n)  # goal k at angle k·π/99, y ≥ 0 exactly
        order = rng.permutation(n)  # the seeded split (the reference's was unseeded)
        return [{"goal": [math.cos(angles[k]), math.sin(angles[k])]} for k in order]

    def task_vector(self, task: Task) -> np.ndarray:
        return check_vector(task, "goal", 2)

    def goal_and_wind(self, task: A) -> tuple[A, A]:
        return task[..., :2], task[..., :2] * 0

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        """The goal's angle on the half circle, in degrees (goals are 1.8° apart)."""
        goals = self.task_vectors(tasks)
        angles = np.degrees(np.arctan2(goals[:, 1:2], goals[:, :1]))
        return TaskParameters(angles, ("goal angle",), "°")

    def holding_error(self, obs: np.ndarray, task: np.ndarray) -> dict[str, np.ndarray]:
        """Distance to the goal, and the angle between the robot's and the goal's direction
        (degrees): a robot on the right circle but at the wrong angle holds a wrong goal."""
        goal, _ = self.goal_and_wind(task)
        angle = np.degrees(
            np.abs(np.arctan2(obs[:, 1], obs[:, 0]) - np.arctan2(goal[:, 1], goal[:, 0]))
        )
        return {**super().holding_error(obs, task), "angle": np.minimum(angle, 360.0 - angle)}


@register("env", "point_robot_wind")
class PointRobotWind(PointRobotFamily):
    """Point-Robot-Wind: goal (1, 0); each task drifts by a wind drawn from U(−0.05, 0.05)²."""

    gym_id = "focalpp/PointRobotWind-v0"
    horizon = 25
    n_train, n_test = 40, 10
    task_keys = ("wind",)
    default_goal_radius = None  # the paper's table: N/A (dense)
    task_changes = "dynamics"
    max_wind = 0.05

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        winds = rng.uniform(-self.max_wind, self.max_wind, size=(self.n_train + self.n_test, 2))
        return [{"wind": w.tolist()} for w in winds]

    def task_vector(self, task: Task) -> np.ndarray:
        return check_vector(task, "wind", 2)

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        return TaskParameters(self.task_vectors(tasks), ("wind x", "wind y"), "per step")

    def goal_and_wind(self, task: A) -> tuple[A, A]:
        goal = task[..., :2] * 0
        goal[..., 0] = 1.0
        return goal, task[..., :2]


class PointRobotEnv(TaskEnvMixin, gymnasium.Env):
    """One point-robot task as a gymnasium environment (obs = position, float64)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        *,
        task: Task | int | None = None,
        task_seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        render_mode: str | None = None,
    ):
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.render_mode = render_mode
        self._init_family(task, task_seed, goal_radius)
        self.state = np.zeros(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._reset_task(options)
        self.state = np.zeros(2)
        return self.state.copy(), {"task": self.task_info()}

    def step(self, action: Any):
        a = self._check_action(action)
        obs = self.state
        self.state = self.family.dynamics(obs, a, self.task_vec)
        reward, terminated, info = self._transition(obs, a, self.state)
        return self.state.copy(), reward, terminated, False, info


class SparsePointRobotEnv(PointRobotEnv):
    family_cls = SparsePointRobot


class PointRobotWindEnv(PointRobotEnv):
    family_cls = PointRobotWind


class PointRobotBatch:
    """N point-robot tasks stepped as one numpy array operation (no loop over tasks).

    Point robots never terminate and share one horizon, so episodes stay in lockstep; with
    `autoreset` all restart together after the horizon (see components.envs.batched).
    """

    def __init__(self, family: PointRobotFamily, tasks: Sequence[Task], *, autoreset: bool = False):
        self.family, self.tasks = family, [family.resolve_task(t) for t in tasks]
        self.autoreset = autoreset
        self.task_vecs = family.task_vectors(self.tasks)  # [N, P]
        self.num_tasks, self.horizon = len(self.tasks), family.horizon
        self.state = np.zeros((self.num_tasks, 2))
        self.t = 0

    def reset(self, seed: int | None = None) -> np.ndarray:
        self.state = np.zeros((self.num_tasks, 2))
        self.t = 0
        return self.state.copy()

    @property
    def current(self) -> np.ndarray:
        """Observations [N, 2] to act on next."""
        return self.state.copy()

    def step(self, actions: np.ndarray) -> BatchStep:
        a = np.asarray(actions, dtype=np.float64)
        if a.shape != (self.num_tasks, 2):
            raise ValueError(f"actions have shape {a.shape}; expected ({self.num_tasks}, 2)")
        if not np.all(np.isfinite(a)):
            raise ValueError("actions contain NaN or inf")
        a = np.clip(a, -1.0, 1.0)
        obs, self.state = self.state, self.family.dynamics(self.state, a, self.task_vecs)
        self.t += 1
        reward = self.family.reward(obs, a, self.state, self.task_vecs)
        step = BatchStep(
            obs=self.state.copy(),
            reward=reward,
            sparse_reward=sparsify(reward, self.family.goal_radius),
            terminated=np.zeros(self.num_tasks, dtype=bool),
            truncated=np.full(self.num_tasks, self.t >= self.horizon),
            alive=np.full(self.num_tasks, self.t <= self.horizon),
        )
        if self.autoreset and self.t >= self.horizon:
            self.reset()
        return step

    def close(self) -> None:
        """Nothing to release (kept for the batched-environment interface)."""


register_gym(SparsePointRobot, SparsePointRobotEnv)
register_gym(PointRobotWind, PointRobotWindEnv)
