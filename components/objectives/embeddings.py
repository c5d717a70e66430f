"""The named input every task-representation objective receives."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TaskEmbeddings:
    """Embeddings of one meta-batch of T context batches (B transitions each).

    query:      [T, B, Z] per-transition embeddings from the (trained) query encoder.
    query_mean: [T, Z]    their (attention-weighted) batch means: the task vectors z^q.
    task:       [T]       task ids; repeats are allowed (sampling with replacement).
    key:        [T, B, Z] per-transition embeddings of an independent context batch from the
                          key (EMA) encoder, or None when the recipe has no key encoder.
    key_mean:   [T, Z]    their batch means z^k, or None.
    """

    query: torch.Tensor
    query_mean: torch.Tensor
    task: torch.Tensor
    key: torch.Tensor | None = None
    key_mean: torch.Tensor | None = None

    def same_task(self) -> torch.Tensor:
        """[T, T] bool: meta-batch rows i, j hold the same task."""
        return self.task[:, None] == self.task[None, :]
