"""The relabeled dataset (FOCAL++ paper, appendix "Relabeled Dataset").

Merge the (s, a, s′) of all tasks into one pool, give every task the same pool, recompute each
task's reward with its own reward function and sparsify it with goal radius −0.5. Task identity
can then only come from rewards: the state-action distribution says nothing about the task.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from components.data.behaviour import Progress
from components.data.protocols import CheckpointRollouts, Collected
from components.data.store import DatasetError, QualityData
from components.envs.family import EnvFamily
from components.envs.sparse import sparsify
from components.transitions import Transitions
from registry import register
from registry.constraints import PositiveInt


@register("dataset", "relabeled")
class Relabeled:
    """A source protocol's data pooled across tasks and relabeled with each task's reward.

    Args:
        source: the protocol whose data is pooled (default: `checkpoints` as configured).
        pool_size: transitions drawn (without replacement) from the pool; every task gets them.
        goal_radius: sparse-reward radius of the relabeled data (paper: −0.5).
    """

    episodic = False  # a shuffled pool: its rows are transitions, not episodes in order

    def __init__(
        self, *, source: Any = None, pool_size: PositiveInt = 10_000, goal_radius: float = -0.5
    ):
        self.source = source if source is not None else CheckpointRollouts()
        self.pool_size, self.goal_radius = pool_size, goal_radius

    def settings(self) -> dict[str, Any]:
        return {
            "protocol": "Relabeled",
            "pool_size": self.pool_size,
            "goal_radius": self.goal_radius,
            "source": self.source.settings(),
        }

    def build(
        self,
        family: EnvFamily,
        *,
        seed: int,
        progress: Progress | None = None,
        tasks: Sequence[int] | None = None,
        resume: Path | None = None,
    ) -> Collected:
        if tasks is not None:
            raise DatasetError(
                "the relabeled protocol pools every task's data into one set, so it cannot be "
                "built in shards of tasks; build it whole"
            )
        if family.task_changes != "reward":
            raise DatasetError(
                f"{type(family).__name__}: tasks differ in dynamics, so one pool of (s, a, s') "
                "cannot serve every task; relabeling needs a family whose tasks differ in reward"
            )
        if family.goal_radius != self.goal_radius:  # the manifest records the family's radius
            raise DatasetError(
                f"relabeled.goal_radius = {self.goal_radius}, but {type(family).__name__} scores "
                f"with goal radius {family.goal_radius}: the stored sparse rewards and the "
                "meta-test would disagree. Use --env sparse_point_robot_relabeled (it binds "
                "both), or bind the family's goal_radius to the same value"
            )
        collected = self.source.build(family, seed=seed, progress=progress, resume=resume)
        rng = np.random.default_rng(seed)
        task_vecs = family.task_vectors(family.all_tasks())  # [K, P]
        qualities, sources = {}, {}
        for name, data in collected.qualities.items():
            qualities[name] = self.relabel(family, data, task_vecs, rng)
            sources[name] = [
                {"pooled_from": name, "pool_size": int(qualities[name].length[0])}
            ] * len(task_vecs)
        return Collected(qualities, sources, self.settings())

    def relabel(
        self, family: EnvFamily, data: QualityData, task_vecs: np.ndarray, rng: np.random.Generator
    ) -> QualityData:
        real = np.arange(data.transitions.obs.shape[1])[None, :] < data.length[:, None]  # [K, N]
        pool = data.transitions.map(lambda x: x[real])  # [M_total, ...], every task's real data
        size = min(self.pool_size, len(pool.obs))
        pick = rng.choice(len(pool.obs), size=size, replace=False)
        k = len(task_vecs)
        picked = pool.map(lambda x: x[pick])  # [M, ...], the one pool every task gets
        reward = family.reward(
            picked.obs, picked.action, picked.next_obs, task_vecs[:, None, :]
        ).astype(np.float32)  # [K, M]: each task's own reward of the same transitions
        shared = picked.map(lambda x: np.broadcast_to(x, (k, *x.shape)).copy())  # [K, M, ...]
        relabeled = Transitions(
            obs=shared.obs,
            action=shared.action,
            reward=reward,
            sparse_reward=sparsify(reward, self.goal_radius).astype(np.float32),
            next_obs=shared.next_obs,
            terminated=shared.terminated,
            truncated=shared.truncated,
        )
        return QualityData(relabeled, np.full(k, size, dtype=np.int64))
