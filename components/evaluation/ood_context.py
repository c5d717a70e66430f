"""Out-of-distribution behaviour context (the CORRO / UNICORN protocol, beyond the paper).

In-distribution meta-testing takes a test task's context from that task's own behaviour data.
Out of distribution, the context was collected in the test task by the behaviour policy of
ANOTHER task. Where tasks differ only in reward (the dynamics are shared), that is exactly
another task's behaviour transitions (s, a, s′) with the test task's reward: each test task
gets a seeded training task as donor, its transitions, and rewards recomputed with the test
task's reward function (sparsified with the family's goal radius). Families whose tasks differ
in dynamics need the donors' policies rolled out in the test task: that is the `other_policy`
cell of the `context_grid` analysis (datasets keep their behaviour policies); here the analysis
reports that it does not apply.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from components.data.store import QualityData
from components.envs.family import EnvFamily
from components.envs.sparse import sparsify
from registry import register


def donor_context(
    family: EnvFamily, data: QualityData, tasks: list[int], donors: list[int]
) -> QualityData:
    """`data` with each task in `tasks` given its donor's transitions, relabeled with its own
    reward; every other task's rows are unchanged."""
    rows, source = np.asarray(tasks), np.asarray(donors)
    t = data.transitions
    moved = t.map(lambda x: x.copy())
    for field in ("obs", "action", "next_obs", "terminated", "truncated"):
        getattr(moved, field)[rows] = getattr(t, field)[source]
    task_vecs = family.task_vectors([family.all_tasks()[i] for i in tasks])  # [K, P]
    reward = family.reward(
        moved.obs[rows], moved.action[rows], moved.next_obs[rows], task_vecs[:, None, :]
    ).astype(np.float32)
    moved.reward[rows] = reward
    moved.sparse_reward[rows] = sparsify(reward, family.goal_radius).astype(np.float32)
    length = data.length.copy()
    length[rows] = data.length[source]
    return QualityData(moved, length)


@register("analysis", "ood_context")
class OODContextAnalysis:
    """Test return with in- and out-of-distribution behaviour context.

    Args:
        seed: seed of the donor draw (a training task per test task).
    """

    section = "ood"  # the report section that tables it

    def __init__(self, *, seed: int = 0):
        self.seed = seed

    def __call__(self, trained, figures: Path) -> dict:
        family = trained.family
        if family.task_changes != "reward":
            return {
                "ood_applies": False,
                "reason": f"{type(family).__name__} tasks differ in {family.task_changes}; out-of-"
                "distribution context needs the donors' policies rolled out in the test task "
                "(the context_grid analysis, source other_policy)",
            }
        tasks = list(trained.data.test_tasks)
        train = trained.data.dataset.split_indices("train")
        rng = np.random.default_rng(self.seed)
        donors = rng.choice(train, size=len(tasks)).tolist()
        ood = donor_context(family, trained.data.test_data, tasks, donors)
        inside, outside = trained.evaluate(), trained.evaluate(data=ood)
        record = {
            "ood_applies": True,
            "in_distribution": inside.mean,
            "out_of_distribution": outside.mean,
            "out_of_distribution_std": outside.std,
            "donors": dict(zip(map(str, tasks), donors, strict=True)),
        }
        if inside.paper_returns is not None:
            record["in_distribution_paper"] = float(inside.paper_returns.mean())
            record["out_of_distribution_paper"] = float(outside.paper_returns.mean())
        return record
