"""The paper's sparse reward (appendix, "The way we sparsify the reward functions")."""

from __future__ import annotations

from typing import TypeVar

A = TypeVar("A")  # a float, a numpy array or a torch tensor: only arithmetic is used


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
