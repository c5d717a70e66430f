"""Sparse rewards: the paper's formula, and the one its point-robot numbers were scored with.

Two formulas, both of the dense reward r and the goal radius g (g < 0 for distance rewards):
- `sparsify` — the appendix ("The way we sparsify the reward functions"): (r − g)/|g| where
  r > g, else 0. The context fed to the encoder is always sparsified this way.
- `inside_bonus` — PEARL's sparse point robot, which the FOCAL reference used whenever no MuJoCo
  path was configured: 1 + r (= 1 − d for r = −d) where r ≥ g, else 0. On 20-step
  Sparse-Point-Robot episodes the appendix formula's best mean test return is 12.62, below the
  paper's FOCAL++ 12.96; this formula's is 13.49 (DECISIONS §1), so the paper's point-robot numbers
  are compared with this one.
"""

from __future__ import annotations

from typing import TypeVar

A = TypeVar("A")  # a float, a numpy array or a torch tensor: only arithmetic is used

# The names a family may give its paper-comparable formula (`EnvFamily.paper_formula`).
PAPER_FORMULAS = ("appendix", "inside_bonus")


def sparsify(reward: A, goal_radius: float | None) -> A:
    """(r − g)/|g| where r > g, else 0; `goal_radius` None means the family is not sparse.

    Args:
        reward: dense rewards, any shape; numpy, torch or a Python float.
        goal_radius: g, the reward threshold of the goal's neighbourhood (non-zero), or None.

    Returns:
        Sparse rewards, same shape and type as `reward` (unchanged when `goal_radius` is None).
    """
    if goal_radius is None:
        return reward
    if goal_radius == 0:
        raise ValueError("goal_radius must be non-zero (the formula divides by |goal_radius|)")
    inside = reward > goal_radius
    return ((reward - goal_radius) / abs(goal_radius)) * inside + 0.0  # + 0.0: no -0.0


def inside_bonus(reward: A, goal_radius: float) -> A:
    """1 + r where r ≥ g, else 0 (PEARL's sparse point robot: 1 − d within the radius).

    Args:
        reward: dense rewards r = −distance, any shape; numpy, torch or a Python float.
        goal_radius: g < 0, minus the radius within which the robot is paid.
    """
    if not goal_radius < 0:
        raise ValueError(
            f"inside_bonus pays 1 − d within a distance |g| of the goal: goal_radius must be "
            f"negative, got {goal_radius}"
        )
    inside = reward >= goal_radius
    return (1.0 + reward) * inside + 0.0


def paper_sparsify(reward: A, goal_radius: float | None, formula: str) -> A:
    """The sparse reward by the named formula (`PAPER_FORMULAS`); None radius: unchanged."""
    if goal_radius is None:
        return reward
    if formula == "appendix":
        return sparsify(reward, goal_radius)
    if formula == "inside_bonus":
        return inside_bonus(reward, goal_radius)
    raise ValueError(f"unknown sparse formula {formula!r}: expected one of {PAPER_FORMULAS}")
