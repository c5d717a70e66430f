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
from components.data.store import DatasetError
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
        n, device = self.sampler.n_tasks, self.sampler.device
        if not replace and count > n:
            raise DatasetError(
                f"cannot draw {count} distinct tasks from {n}; lower the meta-batch size or "
                "sample tasks with replacement"
            )
        if replace:
            draws = [torch.randint(0, n, (count,), generator=g) for g in self.generators]
        else:
            draws = [torch.randperm(n, generator=g)[:count] for g in self.generators]
        return torch.stack(draws).to(device)

    def sample(
        self, tasks: torch.Tensor, batch_size: int, *, replace: bool = True, sparse: bool = False
    ) -> Transitions:
        """B transitions for each seed's task positions `tasks` [K, T]: every field
        [K, T, B, ...] (`TensorSampler.sample`, seed by seed, gathered at once)."""
        s = self.sampler
        length = s.length[tasks]  # [K, T]
        t = tasks.shape[1]
        if replace:
            u = torch.stack([torch.rand(t, batch_size, generator=g) for g in self.generators])
            idx = (u.to(s.device) * length[..., None]).long()  # [K, T, B]
        else:
            if batch_size > int(length.min()):
                raise DatasetError(
                    f"cannot draw {batch_size} distinct transitions from a task with "
                    f"{int(length.min())}; lower the batch size or sample with replacement"
                )
            n_max = s.data.obs.shape[1]
            keys = torch.stack([torch.rand(t, n_max, generator=g) for g in self.generators])
            keys = keys.to(s.device)
            keys[torch.arange(n_max, device=s.device) >= length[..., None]] = 2.0
            idx = keys.argsort(dim=-1)[..., :batch_size]  # padding sorts last
        batch = s.packing.unpack(s.packed[tasks[..., None], idx], contiguous=True)
        return batch.with_reward(batch.sparse_reward) if sparse else batch
