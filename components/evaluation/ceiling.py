"""The best return a policy can score on given tasks, under each reward formula.

Reported beside every meta-test so a return reads as a fraction of what is possible: on
Sparse-Point-Robot the appendix formula's ceiling (12.62 on the shipped test split) lies below
the paper's FOCAL++ 12.96, which is how the paper's metric was found out (SPEC §1). The ceiling
is the return of the family's `oracle_action` (the point robots' nearest-reachable-point
controller); families without one have no ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from components.envs.family import EnvFamily


@dataclass(frozen=True)
class Returns:
    """Per-task returns of one episode under each formula, [N] each; `sparse` and `paper` are
    None on a dense family."""

    dense: np.ndarray
    sparse: np.ndarray | None
    paper: np.ndarray | None

    def means(self) -> dict[str, float]:
        """Mean over tasks per formula (only the formulas the family has)."""
        out = {"dense": float(self.dense.mean())}
        if self.sparse is not None:
            out["sparse"] = float(self.sparse.mean())
        if self.paper is not None:
            out["paper"] = float(self.paper.mean())
        return out


def rollout(family: EnvFamily, env, policy, seed: int | None = None) -> Returns:
    """One lockstep episode of a batched environment; `policy(obs [N, F]) -> actions [N, A]`.

    The sparse returns are computed from the dense rewards by the family's two formulas, so
    they cannot disagree with what the environment paid."""
    obs = env.reset(seed=seed)
    dense = np.zeros(len(obs))
    sparse = np.zeros(len(obs))
    paper = np.zeros(len(obs))
    sparse_family = family.goal_radius is not None
    for _ in range(env.horizon):
        step = env.step(policy(obs))
        dense += step.reward * step.alive
        if sparse_family:
            sparse += step.sparse_reward * step.alive
            paper += family.paper_reward(step.reward) * step.alive
        obs = step.obs
        if not step.alive.any():
            break
    if not sparse_family:
        return Returns(dense, None, None)
    return Returns(dense, sparse, paper)


def ceiling(family: EnvFamily, tasks: Sequence[int]) -> Returns | None:
    """The oracle's returns on the tasks (indices into `family.all_tasks()`), or None where
    the family has no oracle."""
    all_tasks = family.all_tasks()
    chosen = [all_tasks[i] for i in tasks]
    vectors = family.task_vectors(chosen)
    if family.oracle_action(np.zeros((len(chosen), family.obs_dim)), vectors) is None:
        return None
    env = family.make_batched(chosen)
    try:
        return rollout(family, env, lambda obs: family.oracle_action(obs, vectors))
    finally:
        env.close()
