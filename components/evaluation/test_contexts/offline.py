"""`offline`: the paper's meta-test context (DECISIONS §5). Each test row's context is drawn
from the test task's own offline data (the quality trained on, with replacement); z is inferred
from it once and the deterministic policy plays the scored episode. It is the only protocol
that reads the test tasks' offline data, and the meta-test's headline score."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from components.data.sampler import TensorSampler
from components.evaluation.episodes import Returns
from components.evaluation.test_contexts.scene import Scene
from registry import register


@register("test_context", "offline")
class Offline:
    """A context of the test task's offline transitions (FOCAL, FOCAL++, SPC's `offline`)."""

    reads_test_data = True

    def __call__(self, scene: Scene) -> Returns:
        return self.episodes(scene, [scene.context_transitions])[-1]

    def contexts(self, scene: Scene, size: int) -> torch.Tensor:
        """[R, size, F]: seed k's rows drawn by a generator seeded with seed k, as its
        meta-test alone would draw them."""
        contexts = []
        for seed in scene.seeds:
            generator = torch.Generator().manual_seed(seed)
            sampler = TensorSampler(
                scene.data, scene.test_tasks, device=scene.device, generator=generator
            )
            sample = sampler.sample(scene.positions, size, replace=True, sparse=scene.layout.sparse)
            contexts.append(scene.layout.tensor(sample))
        return torch.cat(contexts)

    def episodes(
        self, scene: Scene, sizes: Sequence[int], task_z: torch.Tensor | None = None
    ) -> list[Returns]:
        """The scored episode with a context of each size in `sizes` (each a prefix of the
        largest, as if the context grew by that much per episode). `task_z`: per test task, a
        task vector given instead of the encoder's (a reference row)."""
        context = self.contexts(scene, sizes[-1])  # [R, C, F]
        returns = []
        for size in sizes:
            if task_z is None:
                z = scene.infer(context[:, :size])
            else:
                z = task_z.to(scene.device)[scene.positions].repeat(len(scene.seeds), 1)
            returns.append(scene.play(z, record=False).returns)
        return returns
