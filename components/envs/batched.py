"""Many tasks of one family stepped together, for evaluation and data collection.

Every batched environment returns the same named record per step, shaped [N] or [N, F] for N
tasks. Point robots have a native numpy implementation (`point_robot.PointRobotBatch`); MuJoCo
families use gymnasium's vector environments (`VectorBatchedEnv`). Neither resets by itself:
the caller resets after an episode (its horizon, or a termination it masks out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

if TYPE_CHECKING:
    from components.envs.family import EnvFamily, Task


@dataclass(frozen=True)
class BatchStep:
    """One step of N environments: obs [N, F], the others [N]."""

    obs: np.ndarray
    reward: np.ndarray
    sparse_reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray


class VectorBatchedEnv:
    """One gymnasium environment per task in a gymnasium vector env (sync or subprocesses).

    Args:
        family: the family whose tasks these are.
        tasks: one task per environment.
        asynchronous: step environments in subprocesses (worth it for MuJoCo on several cores).
    """

    def __init__(self, family: EnvFamily, tasks: Sequence[Task], *, asynchronous: bool = False):
        self.family, self.tasks = family, list(tasks)
        kwargs = family.gym_kwargs()
        fns = [_EnvFn(family.gym_id, task, kwargs) for task in self.tasks]
        vector_cls = AsyncVectorEnv if asynchronous else SyncVectorEnv
        self.env = vector_cls(fns, autoreset_mode=AutoresetMode.DISABLED)
        self.num_tasks = len(self.tasks)
        self.horizon = family.horizon

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Reset all; returns obs [N, F]."""
        obs, _ = self.env.reset(seed=seed)
        return obs

    def step(self, actions: np.ndarray) -> BatchStep:
        """Step all with actions [N, A]."""
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(actions))
        return BatchStep(obs, reward, info["sparse_reward"], terminated, truncated)

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class _EnvFn:
    """A picklable environment factory (subprocess vector envs pickle their factories)."""

    gym_id: str
    task: Any
    kwargs: dict[str, Any]

    def __call__(self) -> gymnasium.Env:
        return gymnasium.make(self.gym_id, task=self.task, **self.kwargs)
