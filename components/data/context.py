"""What a context encoder reads: the layout of one context transition (s, a, [s′,] r).

The same layout serves training and meta-testing, so both feed the encoder identical vectors.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import torch

from components.transitions import Transitions


@dataclass(frozen=True)
class ContextLayout:
    """Concatenation order and sizes of a context transition.

    obs_dim, act_dim: sizes of s and a.
    next_obs: include s′ (DECISIONS §3: needed where dynamics differ; FOCAL++ uses it everywhere).
    sparse: the reward component is the sparse reward (families with a goal radius).
    obs_mean, obs_std: where given ([F] each), s and s′ are standardised with them before any
        network sees them (`task_data.standardise_obs`): in the context, in the RL batch and
        when acting.
    """

    obs_dim: int
    act_dim: int
    next_obs: bool = True
    sparse: bool = False
    obs_mean: torch.Tensor | None = field(default=None, compare=False)
    obs_std: torch.Tensor | None = field(default=None, compare=False)

    def observation(self, obs: torch.Tensor) -> torch.Tensor:
        """Observations [..., F] as the networks see them (standardised where stats are set)."""
        if self.obs_mean is None:
            return obs
        return (obs - self.obs_mean.to(obs.device)) / self.obs_std.to(obs.device)

    def standardised(self, batch: Transitions) -> Transitions:
        """A batch whose s and s′ are as the networks see them."""
        if self.obs_mean is None:
            return batch
        return dataclasses.replace(
            batch, obs=self.observation(batch.obs), next_obs=self.observation(batch.next_obs)
        )

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
        parts = [self.observation(batch.obs), batch.action]
        if self.next_obs:
            parts.append(self.observation(batch.next_obs))
        parts.append(batch.reward.unsqueeze(-1))
        return torch.cat(parts, -1)
