"""The best return a policy can score on given tasks, under each reward formula.

Reported beside every meta-test so a return reads as a fraction of what is possible: on
Sparse-Point-Robot the appendix formula's ceiling (12.62 on the shipped test split) lies below
the paper's FOCAL++ 12.96, which is how the paper's metric was found out (DECISIONS §1). The ceiling
is the return of the family's `oracle_action` (the point robots' nearest-reachable-point
controller); families without one have no ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from components.envs.family import EnvFamily
from components.evaluation.episodes import Returns, rollout


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
