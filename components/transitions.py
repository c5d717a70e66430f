"""The one transition record that flows from builders to the store, samplers and losses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

FIELDS = ("obs", "action", "reward", "sparse_reward", "next_obs", "terminated", "truncated")


@dataclass(frozen=True)
class Transitions:
    """Named fields of a batch of transitions; leading dims are shared, e.g. [T, B, ...].

    obs/next_obs [..., F]; action [..., A]; reward, sparse_reward, terminated, truncated [...].
    Works with numpy arrays or torch tensors alike (terminated/truncated are float 0/1 in
    tensors used for training, bool in stored arrays).
    """

    obs: Any
    action: Any
    reward: Any
    sparse_reward: Any
    next_obs: Any
    terminated: Any
    truncated: Any

    def map(self, fn: Callable[[Any], Any]) -> Transitions:
        """Apply `fn` to every field."""
        return Transitions(**{f.name: fn(getattr(self, f.name)) for f in fields(self)})

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def with_reward(self, reward: Any) -> Transitions:
        return replace(self, reward=reward)
