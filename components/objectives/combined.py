"""Several representation objectives on one meta-batch, their loss terms added.

The successors of FOCAL++ pair a term of their own with FOCAL's metric loss (CSRO: CLUB +
DML; UNICORN: reconstruction + DML); each part keeps its own weight argument, so a recipe reads
`objectives.parts = [@focal_dml, @club]` with `focal_dml.weight = 10.0`, `club.weight = 25.0`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import torch
from torch import nn

from components.objectives.club import CLUB
from components.objectives.dml import FocalDML
from components.objectives.embeddings import TaskEmbeddings
from registry import RecipeError, entry_of, register
from registry.constraints import PositiveInt
from registry.validation import named_sizes


@register("objective", "objectives")
class Objectives(nn.Module):
    """The sum of its parts' `loss_*` terms; every other term passes through.

    Args:
        obs_dim, act_dim, latent_dim, n_tasks: sizes (set by the algorithm), handed to each
            part that names them.
        parts: objective classes (gin: a list of `@objective`s, at least two).
    """

    contract_example: ClassVar = {"parts": (FocalDML, CLUB)}  # what the probe builds
    # components/seeds: it only gathers its parts' terms, so it batches seeds where its parts
    # do; each part is checked on its own (CSRO's CLUB declares no seed-batched form)
    seed_batching = True

    def __init__(
        self,
        *,
        obs_dim: PositiveInt,
        act_dim: PositiveInt,
        latent_dim: PositiveInt,
        n_tasks: PositiveInt,
        parts: Sequence[Callable[..., nn.Module]],
    ):
        super().__init__()
        if len(parts) < 2:
            raise RecipeError(
                f"objectives.parts needs at least two objectives, got {len(parts)}: with one, "
                "set focal.objective to it directly"
            )
        sizes = {
            "obs_dim": obs_dim,
            "act_dim": act_dim,
            "latent_dim": latent_dim,
            "n_tasks": n_tasks,
        }
        self.parts = nn.ModuleList(p(**named_sizes(p, **sizes)) for p in parts)
        self.needs_key = any(getattr(p, "needs_key", False) for p in self.parts)

    def forward(self, emb: TaskEmbeddings) -> dict[str, torch.Tensor]:
        terms: dict[str, torch.Tensor] = {}
        for part in self.parts:
            for name, value in part(emb).items():
                if name in terms:
                    entry = entry_of(type(part))
                    raise RecipeError(
                        f"objectives: two parts return a term named {name!r} (the second is "
                        f"{f'@{entry.name}' if entry else type(part).__name__}); a part may "
                        "appear once"
                    )
                terms[name] = value
        return terms
