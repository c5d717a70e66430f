"""Many tasks of one family stepped together, for evaluation and data collection.

Every batched environment returns the same named record per step, shaped [N] or [N, F] for N
tasks. Point robots have a native numpy implementation (`point_robot.PointRobotBatch`); MuJoCo
families use gymnasium's vector environments (`VectorBatchedEnv`).

Two ways to treat episode ends:
- lockstep (default, for evaluation): the caller resets the batch after the horizon. A task
  whose episode terminates early is frozen until that reset: its later steps repeat the final
  observation with zero reward and `alive` False, so masks and sums need no special cases.
- `autoreset=True` (for data collection): a task whose episode ends starts a new one at once,
  so every step is a real transition of every task. `BatchStep.obs` is the transition's next
  observation; `current` is what to act on next (a new episode's first observation there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

Task = dict[str, Any]  # one task's parameters, as a family lists them


class Family(Protocol):
    """What a batched env reads of its family (an `EnvFamily`; family.py makes batched envs,
    so this file names only what it needs, never the class)."""

    gym_id: str
    horizon: int
    has_success: bool

    def gym_kwargs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class BatchStep:
    """One step of N environments: obs [N, F], the others [N].

    `alive` marks real transitions (the task's episode had not ended before this step);
    `terminated` / `truncated` say whether the episode has ended, by termination or time limit;
    `success`: the environment's success flag, on families that have one (Meta-World), else None.
    """

    obs: np.ndarray
    reward: np.ndarray
    sparse_reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    alive: np.ndarray
    success: np.ndarray | None = None


class VectorBatchedEnv:
    """One gymnasium environment per task in a gymnasium vector env (sync or subprocesses).

    Args:
        family: the family whose tasks these are.
        tasks: one task per environment.
        asynchronous: step environments in subprocesses (worth it for MuJoCo on several cores).
        autoreset: restart an ended episode at once (collection) instead of freezing it until
            the batch is reset (evaluation); see the module docstring.
    """

    def __init__(
        self,
        family: Family,
        tasks: Sequence[Task],
        *,
        asynchronous: bool = False,
        autoreset: bool = False,
    ):
        self.family, self.tasks, self.autoreset = family, list(tasks), autoreset
        kwargs = family.gym_kwargs()
        fns = [_EnvFn(family.gym_id, task, kwargs) for task in self.tasks]
        vector_cls = AsyncVectorEnv if asynchronous else SyncVectorEnv
        # SAME_STEP: an ended sub-env restarts at once (gymnasium will not step an ended one);
        # we report it frozen at its final observation until the batch is reset.
        self.env = vector_cls(fns, autoreset_mode=AutoresetMode.SAME_STEP)
        self.num_tasks = len(self.tasks)
        self.horizon = family.horizon
        self.has_success = family.has_success
        self._ended = np.zeros(self.num_tasks, dtype=bool)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Reset all; returns obs [N, F]."""
        obs, _ = self.env.reset(seed=seed)
        self._ended = np.zeros(self.num_tasks, dtype=bool)
        self._final = np.array(obs, copy=True)
        self._final_flags = (self._ended.copy(), self._ended.copy())
        self.current = np.array(obs, copy=True)
        return obs

    def step(self, actions: np.ndarray) -> BatchStep:
        """Step all with actions [N, A]."""
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(actions))
        self.current = np.array(obs, copy=True)
        obs, reward = np.array(obs, copy=True), np.array(reward, dtype=np.float64)
        sparse = np.array(info.get("sparse_reward", np.zeros(self.num_tasks)), dtype=np.float64)
        success = None
        if self.has_success:  # absent where every sub-env restarted at this step
            success = np.array(info.get("success", np.zeros(self.num_tasks)), dtype=bool)
        for i in np.flatnonzero(terminated | truncated):  # restarted: take the final step's data
            obs[i] = info["final_obs"][i]
            sparse[i] = info["final_info"]["sparse_reward"][i]
            if success is not None:
                success[i] = info["final_info"]["success"][i]
        if self.autoreset:
            alive = np.ones_like(terminated)
            return BatchStep(obs, reward, sparse, terminated, truncated, alive, success)
        alive = ~self._ended
        obs[~alive] = self._final[~alive]
        reward[~alive] = sparse[~alive] = 0.0
        if success is not None:
            success[~alive] = False
        terminated = np.where(alive, terminated, self._final_flags[0])
        truncated = np.where(alive, truncated, self._final_flags[1])
        newly = alive & (terminated | truncated)
        self._final[newly] = obs[newly]
        self._final_flags[0][newly], self._final_flags[1][newly] = (
            terminated[newly],
            truncated[newly],
        )
        self._ended |= newly
        self.current = obs
        return BatchStep(obs, reward, sparse, terminated, truncated, alive, success)

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
