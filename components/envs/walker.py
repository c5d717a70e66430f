"""Walker-2D-Params: every task rescales the walker's masses, inertias, frictions and dampings.

DECISIONS §1: multipliers 1.5^U(−3, 3) per element of body mass, body inertia and geom friction,
1.3^U(−3, 3) per element of dof damping, drawn from a seeded generator (the reference read them
from files); observation = qpos[1:] (8) + clip(qvel, −10, 10) (9) = 17; reward forward velocity
+ 1 − 1e-3‖a‖²; terminates unless 0.8 < height < 2 and |angle| < 1. dt is the reference's 0.016
(gymnasium's timestep 0.002 × frame skip 8; the reference had 0.004 × 4). Deviation: the
observation has no x position, so the pure reward takes the forward velocity from the next
observation's (clipped) qvel[0] instead of the displacement over the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from gymnasium.envs.mujoco.walker2d_v5 import Walker2dEnv

from components.envs.family import A, EnvFamily, Task, TaskParameters, check_vector
from components.envs.task_env import MujocoTaskEnvMixin, register_gym
from registry import register

N_BODY, N_GEOM, N_DOF = 8, 8, 9  # sizes of gymnasium's walker2d_v5.xml
# task field -> (model attribute, shape of the multipliers, base of the log-uniform multiplier)
PARAMETERS: dict[str, tuple[str, tuple[int, ...], float]] = {
    "body_mass": ("body_mass", (N_BODY,), 1.5),
    "body_inertia": ("body_inertia", (N_BODY, 3), 1.5),
    "geom_friction": ("geom_friction", (N_GEOM, 3), 1.5),
    "dof_damping": ("dof_damping", (N_DOF,), 1.3),
}
LOG_SCALE_LIMIT = 3.0
X_VELOCITY, HEIGHT, ANGLE = 8, 0, 1  # clipped qvel[0], qpos[1], qpos[2] in the observation


@register("env", "walker_params")
class WalkerParams(EnvFamily):
    """Walker-2D-Params: dynamics differ per task (masses, inertias, frictions, dampings)."""

    gym_id = "focalpp/WalkerParams-v0"
    obs_dim: ClassVar[int] = 17
    act_dim: ClassVar[int] = 6
    horizon: ClassVar[int] = 200
    n_train, n_test = 40, 10
    task_keys = tuple(PARAMETERS)
    default_goal_radius = None  # the paper's table: dense
    task_changes = "dynamics"
    frame_skip: ClassVar[int] = 8

    def sample_tasks(self, rng: np.random.Generator) -> list[Task]:
        tasks = []
        for _ in range(self.n_train + self.n_test):
            task = {}
            for key, (_, shape, base) in PARAMETERS.items():
                exponent = rng.uniform(-LOG_SCALE_LIMIT, LOG_SCALE_LIMIT, size=shape)
                task[key] = (base**exponent).tolist()
            tasks.append(task)
        return tasks

    def task_vector(self, task: Task) -> np.ndarray:
        parts = [check_vector(task, key, int(np.prod(s))) for key, (_, s, _) in PARAMETERS.items()]
        if any((p <= 0).any() for p in parts):
            raise ValueError(f"malformed task: multipliers must be positive, got {task!r}")
        return np.concatenate(parts)

    def task_parameters(self, tasks: Sequence[Task]) -> TaskParameters:
        """Each multiplier's exponent, log_base(multiplier) in [−3, 3]: the numbers drawn."""
        bases = np.concatenate([np.full(int(np.prod(s)), b) for _, s, b in PARAMETERS.values()])
        names = tuple(
            f"{key}[{i}]" for key, (_, s, _) in PARAMETERS.items() for i in range(int(np.prod(s)))
        )
        values = np.log(self.task_vectors(tasks)) / np.log(bases)
        return TaskParameters(values, names, "log-multiplier exponent")

    def reward(self, obs: A, action: A, next_obs: A, task: A) -> A:
        return next_obs[..., X_VELOCITY] + 1.0 - 1e-3 * (action**2).sum(-1)

    def terminated(self, next_obs: np.ndarray) -> np.ndarray:
        height, angle = next_obs[..., HEIGHT], next_obs[..., ANGLE]
        healthy = (height > 0.8) & (height < 2.0) & (np.abs(angle) < 1.0)
        return ~(healthy & np.isfinite(next_obs).all(-1))


class WalkerParamsEnv(MujocoTaskEnvMixin, Walker2dEnv):
    """gymnasium's Walker2d-v5 at dt 0.016 whose model parameters are set by the task."""

    family_cls = WalkerParams
    metadata: ClassVar[dict[str, Any]] = {
        **Walker2dEnv.metadata,
        "render_fps": int(np.round(1.0 / (0.002 * WalkerParams.frame_skip))),
    }

    def __init__(
        self,
        *,
        task: Task | int | None = None,
        task_seed: int = 0,
        goal_radius: float | Literal["default"] | None = "default",
        **kwargs: Any,
    ):
        Walker2dEnv.__init__(self, frame_skip=WalkerParams.frame_skip, **kwargs)
        sizes = (self.model.nbody, self.model.ngeom, self.model.nv)
        if sizes != (N_BODY, N_GEOM, N_DOF):
            raise ValueError(f"walker model has (nbody, ngeom, nv) = {sizes}; expected 8, 8, 9")
        self._defaults = {
            attr: getattr(self.model, attr).copy() for attr, _, _ in PARAMETERS.values()
        }
        self._init_mujoco_task(task, task_seed, goal_radius)

    def _apply_task(self) -> None:
        for key, (attr, shape, _) in PARAMETERS.items():
            multiplier = np.asarray(self.task[key], dtype=np.float64).reshape(shape)
            getattr(self.model, attr)[:] = self._defaults[attr] * multiplier


register_gym(WalkerParams, WalkerParamsEnv)
