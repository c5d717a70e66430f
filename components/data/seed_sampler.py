"""K seeds' meta-batches from one tensor-resident dataset, for training seeds as one batched model.

Each seed keeps its own generator and draws exactly the numbers a single run with that seed
draws (the same calls, in the same order, on its own generator); the K draws are then gathered
in one indexing op, every field [K, T, B, ·]. So seed k of a batched run sees the data seed k's
single run sees, and K = 1 is the single run's draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from components.data.sampler import TensorSampler
from components.transitions import Transitions


class SeedSampler:
    """Draws for K seeds from one `TensorSampler`'s data, seed k with `generators[k]`.

    Args:
        sampler: the data (its tensors are shared, not copied; its own generator is not used).
        generators: one per seed, seeded as each single run seeds its sampler's.
    """

    def __init__(self, sampler: TensorSampler, generators: Sequence[torch.Generator]):
        if not generators:
            raise ValueError("a seed sampler needs at least one generator (one per seed)")
        self.sampler, self.generators = sampler, list(generators)

    @property
    def seeds(self) -> int:
        """K."""
        return len(self.generators)

    def sample_tasks(self, count: int, *, replace: bool = False) -> torch.Tensor:
        """`count` positions into the task pool per seed, [K, T] (`TensorSampler.sample_tasks`
        with each seed's generator)."""
        return torch.stack([self.sampler.draw_tasks(count, replace, g) for g in self.generators])

    def sample(
        self, tasks: torch.Tensor, batch_size: int, *, replace: bool = True, sparse: bool = False
    ) -> Transitions:
        """B transitions for each seed's task positions `tasks` [K, T]: every field
        [K, T, B, ...] (`TensorSampler.sample`, seed by seed, gathered at once)."""
        t = tasks.shape[1]

        def uniform(n: int) -> torch.Tensor:  # [K, T, n]: each seed's draw from its generator
            return torch.stack([torch.rand(t, n, generator=g) for g in self.generators])

        return self.sampler.gather(
            tasks, batch_size, replace=replace, sparse=sparse, uniform=uniform
        )
