"""The named input every task-representation objective receives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from components.transitions import Transitions


@dataclass(frozen=True)
class TaskEmbeddings:
    """Embeddings of one meta-batch of T context batches (B transitions each).

    query:      [T, B, Z] per-transition embeddings from the (trained) query encoder.
    query_mean: [T, Z]    their (attention-weighted) batch means: the task vectors z^q.
    task:       [T]       task ids; repeats are allowed (sampling with replacement).
    key:        [T, B, Z] per-transition embeddings of an independent context batch from the
                          key (EMA) encoder, or None when the recipe has no key encoder.
    key_mean:   [T, Z]    their batch means z^k, or None.
    context:    the query context batch the embeddings come from, as tensors [T, B, ·]
                (obs, action, reward as the encoder read it — the sparse one on sparse
                families —, next_obs), for objectives that model transitions; None where
                the caller has none.
    encode:     the query encoder's per-transition embedding of other transitions,
                Transitions [T, N, ·] -> [T, N, Z], gradients flowing into the encoder (for
                objectives that contrast against generated transitions); None where the
                caller has none.
    relabel:    transitions [T, N, ·] as the tasks at positions [T, N] (the meta-batch's
                `task` ids) would have produced them from the same (s, a): next state by
                the family's dynamics where it has a closed form, reward as the context
                reads it (sparse on sparse families); None where the caller has none.
    seeds:      K, for seeds trained together (components/seeds): then every field holds K
                meta-batches, seed-major in the first dimension (T = K · the meta-batch), and
                an objective compares rows of the same seed only (`in_seed`) and returns one
                value per seed.
    """

    query: torch.Tensor
    query_mean: torch.Tensor
    task: torch.Tensor
    key: torch.Tensor | None = None
    key_mean: torch.Tensor | None = None
    context: Transitions | None = None
    encode: Callable[[Transitions], torch.Tensor] | None = None
    relabel: Callable[[Transitions, torch.Tensor], Transitions] | None = None
    seeds: int = 1

    def same_task(self) -> torch.Tensor:
        """[T, T] bool: meta-batch rows i, j hold the same task (of the same seed)."""
        same = self.task[:, None] == self.task[None, :]
        return same if self.seeds == 1 else same & self.in_seed()

    def in_seed(self) -> torch.Tensor:
        """[T, T] bool: rows i, j belong to the same seed's meta-batch (all True for one)."""
        seed = torch.arange(len(self.task), device=self.task.device) // (
            len(self.task) // self.seeds
        )
        return seed[:, None] == seed[None, :]
