"""Meta-batches from tensor-resident datasets: T tasks × B transitions in one indexing op.

The dataset lives on the device as contiguous float32 tensors [n_tasks, N, dim] (ragged tasks
padded, with a length per task). Sampling draws indices for all T tasks at once; nothing loops
over tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from components.data.store import DatasetError, QualityData
from components.transitions import Packing, Transitions
from registry import register


@register("sampler", "tensor_sampler")
class TensorSampler:
    """Samples named fields [T, B, dim] for tasks drawn from a pool of dataset task indices.

    Args:
        data: one quality of a dataset (numpy arrays from the store).
        tasks: the dataset task indices this sampler draws from (e.g. the train split).
        device: where the tensors live.
        generator: torch random generator (seeded by the caller for reproducibility).
    """

    def __init__(
        self,
        data: QualityData,
        tasks: Sequence[int],
        *,
        device: str | torch.device = "cpu",
        generator: torch.Generator | None = None,
    ):
        if len(tasks) == 0:
            raise DatasetError("a sampler needs at least one task")
        index = torch.as_tensor(list(tasks), dtype=torch.long)
        self.packing = Packing.of(data.transitions, scalar_ndim=2)
        self.packed = self.packing.pack(data.transitions, index).to(device)  # [n_tasks, N, W]
        self.data = self.packing.unpack(self.packed, contiguous=False)
        self.length = torch.as_tensor(data.length, dtype=torch.long)[index].to(device)
        if (self.length == 0).any():
            empty = index[(self.length == 0).cpu()].tolist()
            raise DatasetError(f"dataset tasks {empty} have no transitions")
        self.task_ids = index
        self.device = torch.device(device)
        self.generator = generator

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    def sample_tasks(self, count: int, *, replace: bool = False) -> torch.Tensor:
        """`count` positions into this sampler's task pool, [T]."""
        return self.draw_tasks(count, replace, self.generator)

    def draw_tasks(
        self, count: int, replace: bool, generator: torch.Generator | None
    ) -> torch.Tensor:
        """`count` positions into the task pool drawn with `generator`, [T] (a sampler of
        several seeds calls it once per seed's generator)."""
        if not replace and count > self.n_tasks:
            raise DatasetError(
                f"cannot draw {count} distinct tasks from {self.n_tasks}; lower the meta-batch "
                "size or sample tasks with replacement"
            )
        if replace:
            return torch.randint(0, self.n_tasks, (count,), generator=generator).to(self.device)
        return torch.randperm(self.n_tasks, generator=generator)[:count].to(self.device)

    def sample(
        self, tasks: torch.Tensor, batch_size: int, *, replace: bool = True, sparse: bool = False
    ) -> Transitions:
        """B transitions for each task position in `tasks` [T]: every field [T, B, ...].

        Args:
            tasks: positions into the task pool (from `sample_tasks`).
            batch_size: B.
            replace: draw transitions with replacement (else distinct within each task).
            sparse: put the sparse reward in the `reward` field (context batches of sparse
                families); `sparse_reward` is returned either way.
        """

        def uniform(n: int) -> torch.Tensor:  # [T, n] from this sampler's generator
            return torch.rand(len(tasks), n, generator=self.generator)

        return self.gather(tasks, batch_size, replace=replace, sparse=sparse, uniform=uniform)

    def gather(
        self,
        tasks: torch.Tensor,
        batch_size: int,
        *,
        replace: bool,
        sparse: bool,
        uniform: Callable[[int], torch.Tensor],
    ) -> Transitions:
        """`sample` for task positions `tasks` of any leading shape [..., T], with the uniform
        draws [..., T, n] that `uniform(n)` returns (one generator, or one per seed); every
        field [..., T, B, ...], gathered in one indexing op."""
        length = self.length[tasks]  # [..., T]
        if replace:
            u = uniform(batch_size).to(self.device)
            idx = (u * length[..., None]).long()  # [..., T, B], uniform over each task's data
        else:
            if batch_size > int(length.min()):
                raise DatasetError(
                    f"cannot draw {batch_size} distinct transitions from a task with "
                    f"{int(length.min())}; lower the batch size or sample with replacement"
                )
            n_max = self.data.obs.shape[1]
            keys = uniform(n_max).to(self.device)
            keys[torch.arange(n_max, device=self.device) >= length[..., None]] = 2.0
            idx = keys.argsort(dim=-1)[..., :batch_size]  # padding sorts last
        batch = self.packing.unpack(self.packed[tasks[..., None], idx], contiguous=True)
        return batch.with_reward(batch.sparse_reward) if sparse else batch
