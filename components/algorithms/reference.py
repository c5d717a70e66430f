"""Task vectors that no encoder inferred: the floor and the ceiling of task inference.

Two reference rows bracket what a context encoder can add, trained with the same offline
learner and data as the method they bracket (`focal.task_vectors`):
- `none`: z = 0 for every task. The policy cannot tell the tasks apart except by what it
  observes; its score is what the data's observations alone allow (the floor).
- `oracle`: z = the task's true parameters (`EnvFamily.task_parameters`: on Meta-World the
  hidden goal, or the visible object's start where nothing is hidden), standardised over the
  training tasks and padded with zeros to Z. The policy is told the task exactly (the ceiling).
A method's place between them, (score − floor) / (ceiling − floor), is the fraction of the gap
its task vectors close: it says whether a difference between two methods comes from task
inference or from the RL side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from components.envs.family import EnvFamily
from registry import RecipeError

KINDS = ("context", "none", "oracle")


class ReferenceVectors:
    """The reference rows' task vectors for the training tasks (by sampler position) and for
    the test tasks (in their order).

    Args:
        kind: 'none' or 'oracle' (module docstring).
        family: the tasks' family.
        train_tasks, test_tasks: dataset task indices of the two splits.
        latent_dim: Z; an oracle needs at least as many as the task has parameters.
        device: where the vectors live.
    """

    def __init__(
        self,
        kind: str,
        family: EnvFamily,
        train_tasks: Sequence[int],
        test_tasks: Sequence[int],
        latent_dim: int,
        device: torch.device,
    ):
        if kind not in KINDS[1:]:
            raise RecipeError(f"focal.task_vectors = {kind!r}: expected one of {list(KINDS)}")
        every = family.all_tasks()
        train = family.task_parameters([every[i] for i in train_tasks]).values
        test = family.task_parameters([every[i] for i in test_tasks]).values
        if kind == "none":
            train, test = np.zeros((len(train), 0)), np.zeros((len(test), 0))
        elif train.shape[1] > latent_dim:
            raise RecipeError(
                f"focal.task_vectors = 'oracle': {type(family).__name__}'s tasks have "
                f"{train.shape[1]} parameters, more than sizes.latent_dim = {latent_dim}"
            )
        else:
            mean, std = train.mean(0), train.std(0)
            std = np.where(std > 0, std, 1.0)  # a parameter every task shares reads 0
            train, test = (train - mean) / std, (test - mean) / std

        def padded(values: np.ndarray) -> torch.Tensor:
            z = np.zeros((len(values), latent_dim), dtype=np.float32)
            z[:, : values.shape[1]] = values
            return torch.as_tensor(z, device=device)

        self.kind, self.train, self.test = kind, padded(train), padded(test)
