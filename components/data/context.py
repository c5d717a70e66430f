"""What a context encoder reads: the layout of one context transition (s, a, [s′,] r).

The same layout serves training and meta-testing, so both feed the encoder identical vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from components.transitions import Transitions


@dataclass(frozen=True)
class ContextLayout:
    """Concatenation order and sizes of a context transition.

    obs_dim, act_dim: sizes of s and a.
    next_obs: include s′ (DECISIONS §3: needed where dynamics differ; FOCAL++ uses it everywhere).
    sparse: the reward component is the sparse reward (families with a goal radius).
    """

    obs_dim: int
    act_dim: int
    next_obs: bool = True
    sparse: bool = False

    @property
    def sizes(self) -> tuple[int, ...]:
        """Component sizes in order, e.g. (obs, act, obs, 1)."""
        middle = (self.obs_dim,) if self.next_obs else ()
        return (self.obs_dim, self.act_dim, *middle, 1)

    @property
    def names(self) -> tuple[str, ...]:
        return ("s", "a", "s'", "r") if self.next_obs else ("s", "a", "r")

    def tensor(self, batch: Transitions) -> torch.Tensor:
        """Fields [..., ·] -> context [..., F] (the reward field is used as it comes: sample
        with `sparse=self.sparse`)."""
        parts = [batch.obs, batch.action]
        if self.next_obs:
            parts.append(batch.next_obs)
        parts.append(batch.reward.unsqueeze(-1))
        return torch.cat(parts, -1)
