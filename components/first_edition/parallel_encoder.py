"""The first edition's FOCAL++: several context encoders side by side, their outputs added
(recipes/first_edition/focalpp_output_sum.gin: a B·softmax-gated MLP branch and a
sequence-attention branch). The paper's FOCAL++ is components/encoders/attention_blocks.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import torch
from torch import nn

from components.encoders.context import ContextEncoder
from components.encoders.encoded import Encoded
from registry import RecipeError, register


@register("context_encoder", "parallel_encoder")
class ParallelEncoder(nn.Module):
    """Several context encoders side by side; embeddings and task vectors are added.

    The reported weights are the first gated branch's (for the attention analyses).

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        branches: context-encoder factories (gin: a list of scoped `@context_encoder`s).
        combine: "sum" adds the branches' outputs (z ∈ (−N, N)^Z for N bounded branches);
            "mean" averages them, which keeps z as bounded as each branch's.
    """

    contract_example: ClassVar = {"branches": (ContextEncoder, ContextEncoder)}  # probe builds

    seed_batching = True  # components/seeds: its branches'

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        branches: Sequence[Callable[..., nn.Module]],
        combine: str = "sum",
    ):
        super().__init__()
        if len(branches) < 2:
            raise ValueError(f"parallel_encoder needs at least two branches, got {len(branches)}")
        if combine not in ("sum", "mean"):
            raise RecipeError(f"parallel_encoder.combine must be 'sum' or 'mean', got {combine!r}")
        self.scale = 1.0 if combine == "sum" else 1.0 / len(branches)
        self.branches = nn.ModuleList(b(sizes=sizes, latent_dim=latent_dim) for b in branches)

    def forward(self, context: torch.Tensor) -> Encoded:
        parts = [branch(context) for branch in self.branches]
        gated = [p for b, p in zip(self.branches, parts, strict=True) if getattr(b, "gate", None)]
        weights = gated[0].weights if gated else parts[0].weights
        losses: dict[str, torch.Tensor] = {}
        for part in parts:
            for name, value in part.losses.items():
                losses[name] = losses[name] + value if name in losses else value
        return Encoded(
            per_transition=torch.stack([p.per_transition for p in parts]).sum(0) * self.scale,
            weights=weights,
            mean=torch.stack([p.mean for p in parts]).sum(0) * self.scale,
            losses=losses,
        )
