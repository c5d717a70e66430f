"""The sizes of a context-based learner's step: the task vector Z, and what one step draws from
the task data: T tasks, each with an E-transition context and a B-transition RL batch (tensors
[T, E, ·] and [T, B, ·]).

One configurable for every such learner, so an environment column and a scale size FOCAL, its
successors, the baselines and MBML alike (`sizes.context_batch = 64`, `sizes.latent_dim = 20`),
and a new algorithm reads the same sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.data.tasks import TaskData
from registry import RecipeError, register
from registry.constraints import PositiveInt
from registry.validation import check_arguments


@register("sizes", "sizes")
@dataclass(frozen=True)
class Sizes:
    """The task vector's size, the meta-batch's sizes, and how its contexts are drawn.

    Args:
        latent_dim: Z, the size of a task vector.
        meta_batch: T, tasks per gradient step.
        context_batch: E, transitions per task in a context batch.
        context_replace: draw a context's transitions with replacement (the reference's way);
            False draws distinct transitions, so E must not exceed any training task's data.
        rl_batch: B, transitions per task in the RL batch.
    """

    latent_dim: PositiveInt = 5
    meta_batch: PositiveInt = 16
    context_batch: PositiveInt = 512
    context_replace: bool = True
    rl_batch: PositiveInt = 256

    def __post_init__(self):
        check_arguments("sizes", Sizes.__init__, vars(self))

    def check(self, data: TaskData) -> None:
        """Refuse sizes the data cannot give, naming the binding to change."""
        shortest = int(data.train.length.min())
        if not self.context_replace and self.context_batch > shortest:
            raise RecipeError(
                f"sizes.context_batch = {self.context_batch} distinct transitions per task, "
                f"but a training task of {data.describe()} has only {shortest}: lower it or "
                "set sizes.context_replace = True"
            )
