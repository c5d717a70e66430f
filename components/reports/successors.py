"""The successors' claims a report checks (CORRO, CSRO, UNICORN; docs/METHODS.md), and
UNICORN's Table 2 beside our numbers.

Each successor says that its task vector survives a context collected by another behaviour
policy better than FOCAL's: its meta-test return falls less when the context comes from another
task's behaviour policy (the context grid's `other_policy` cell) than from the task's own data
(`own`). The claim only makes sense where such a context still holds the task: tasks that
differ in dynamics (every transition shows them) or in a dense reward every policy's data
shows. On Sparse-Point-Robot another goal's expert never enters the test goal's radius, so its
context holds no reward at all; no method can read the task from it, and no side is claimed.
"""

from __future__ import annotations

SUCCESSORS = ("corro", "corro_model", "csro", "unicorn", "unicorn_sup")
CONTEXT_CARRIES_TASK = frozenset({"point_robot_wind", "sparse_cheetah_vel", "walker_params"})

# UNICORN (Li et al., NeurIPS 2024), Table 2: 20 test tasks, 6 seeds, return with an
# in-distribution / out-of-distribution context, in dense return (its HalfCheetah-Vel has no
# sparse reward): set beside our dense drop (the context grid's `dense_mean`), other data.
UNICORN_TABLE2 = {
    ("walker_params", "unicorn"): (419.0, 407.0),
    ("walker_params", "focal"): (308.0, 286.0),
    ("walker_params", "csro"): (310.0, 279.0),
    ("sparse_cheetah_vel", "unicorn"): (-22.0, -94.0),
    ("sparse_cheetah_vel", "focal"): (-22.0, -97.0),
}


def unicorn_drop(env: str, recipe: str) -> float | None:
    """UNICORN's Table 2 drop (in- minus out-of-distribution return), or None."""
    pair = UNICORN_TABLE2.get((env, recipe))
    return None if pair is None else pair[0] - pair[1]


def claimed_ood_order(env: str, row: str) -> tuple[bool | None, str]:
    """Whether `row` (a successor) is claimed to lose less than FOCAL when the context comes
    from another task's behaviour policy on `env` (None: no claim), and what is said; UNICORN's
    own drops where its Table 2 has both rows."""
    if row not in SUCCESSORS or env not in CONTEXT_CARRIES_TASK:
        return None, "-"
    ours, focal = unicorn_drop(env, row), unicorn_drop(env, "focal")
    if ours is None or focal is None:
        return True, "smaller (the successors' claim)"
    sign = "<" if ours < focal else (">" if ours > focal else "=")
    return True, f"smaller (UNICORN Table 2: {ours:g} {sign} {focal:g})"


NOTHING_TO_LOSE = "no claim here (nothing to lose: below FOCAL's out-of-distribution return)"


def nothing_to_lose(own: list[float], focal_other: list[float]) -> bool:
    """Whether a row's smaller drop says nothing: its mean return with the task's own data
    lies below FOCAL's with another task's behaviour policy. A row that never learned to
    read the task from its context loses nothing when the context changes; that is no
    robustness."""
    return sum(own) / len(own) < sum(focal_other) / len(focal_other)
