"""One lockstep episode of a batched environment, scored by every reward formula of its family.

Shared by the meta-test (the agent's episodes), the ceilings (an oracle's) and the task-vector
analysis (which also watches the states). Sparse returns are computed from the dense rewards by
the family's formulas (components.envs.sparse), so they cannot disagree with what was paid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from components.envs.batched import BatchStep
from components.envs.family import EnvFamily
from registry import FocalppError


class NonFiniteActions(FocalppError):
    """The policy acted with a NaN or an infinity (the environment would refuse the step)."""


Policy = Callable[[np.ndarray], np.ndarray]  # observations [N, F] -> actions [N, A]


@dataclass(frozen=True)
class Returns:
    """Per-task returns of one episode under each formula, [N] each; `sparse` and `paper` are
    None on a dense family. `success`: whether the episode succeeded at some step, on families
    with a success flag (Meta-World), else None."""

    dense: np.ndarray
    sparse: np.ndarray | None
    paper: np.ndarray | None
    success: np.ndarray | None = None

    def means(self) -> dict[str, float]:
        """Mean over tasks per formula (only the formulas the family has)."""
        out = {"dense": float(self.dense.mean())}
        if self.sparse is not None:
            out["sparse"] = float(self.sparse.mean())
        if self.paper is not None:
            out["paper"] = float(self.paper.mean())
        if self.success is not None:
            out["success"] = float(self.success.mean())
        return out


def rollout(
    family: EnvFamily,
    env,
    policy: Policy,
    seed: int | Sequence[int] | None = None,
    observe: Callable[[int, BatchStep], None] | None = None,
) -> Returns:
    """One lockstep episode of `env` under `policy`; `observe(t, step)`, if given, sees each
    step (t = 0 first) as it happens. `seed`: row i resets with seed + i, or with seed[i]."""
    obs = env.reset(seed=seed)
    dense = np.zeros(len(obs))
    sparse = np.zeros(len(obs))
    paper = np.zeros(len(obs))
    succeeded = np.zeros(len(obs), dtype=bool)
    sparse_family = family.goal_radius is not None
    for t in range(env.horizon):
        step = env.step(policy(obs))
        if observe is not None:
            observe(t, step)
        dense += step.reward * step.alive
        if step.success is not None:
            succeeded |= step.success & step.alive
        if sparse_family:
            sparse += step.sparse_reward * step.alive
            paper += family.paper_reward(step.reward) * step.alive
        obs = step.obs
        if not step.alive.any():
            break
    success = succeeded if family.has_success else None
    if not sparse_family:
        return Returns(dense, None, None, success)
    return Returns(dense, sparse, paper, success)


def agent_policy(act, z: torch.Tensor, device: torch.device) -> Policy:
    """The agent's `act(obs, z)` as a numpy policy of a batched environment, z fixed per row."""

    def policy(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            action = act(torch.as_tensor(obs, dtype=torch.float32, device=device), z).cpu()
        return checked_actions(action, z).numpy()

    return policy


def checked_actions(action: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """`action` [N, A], refused with where it went wrong if any value is not finite."""
    if not torch.isfinite(action).all():
        rows = (~torch.isfinite(action)).any(-1).nonzero().flatten().tolist()
        made_by = "the task vectors z" if not torch.isfinite(z).all() else "the policy"
        raise NonFiniteActions(
            f"the policy's actions are not finite for {len(rows)} of {len(action)} "
            f"episodes (rows {rows[:5]}{' …' if len(rows) > 5 else ''}); the first "
            f"non-finite value is in {made_by}"
        )
    return action
