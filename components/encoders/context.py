"""Context encoders: a per-transition encoder with an optional batch gate, and the parallel sum.

FOCAL = `context_encoder` with `mlp_encoder`; batch-wise = the same with `batch_gate`; seq-wise
= `context_encoder` with `sequence_attention`; FOCAL++ as first built = `parallel_encoder` of
a gated MLP branch and a sequence-attention branch, added at the output (the labelled variant
recipes/focalpp_output_sum.gin); the paper's FOCAL++ stacks residual attention blocks instead
(attention_blocks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import torch
from torch import nn

from components.encoders.encoded import Encoded, weighted_mean
from components.encoders.mlp import MLPEncoder
from registry import RecipeError, register


@register("context_encoder", "context_encoder")
class ContextEncoder(nn.Module):
    """Context [T, B, F] -> Encoded: per-transition embeddings, batch weights, task vector.

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        transition: per-transition encoder class (gin: `@mlp_encoder`, `@sequence_attention`).
        gate: batch attention class (gin: `@batch_gate`), or None for the plain mean.

    Example (contexts (s, a, s′, r) of a point robot: 2 + 2 + 2 + 1 features):
        >>> import torch
        >>> encoder = ContextEncoder(sizes=(2, 2, 2, 1), latent_dim=5)
        >>> encoded = encoder(torch.randn(3, 16, 7))  # [T, B, F]
        >>> tuple(encoded.per_transition.shape), tuple(encoded.mean.shape)
        ((3, 16, 5), (3, 5))
        >>> float(encoded.weights.mean())  # no gate: every transition weighs 1
        1.0
    """

    seed_batching = True  # components/seeds: each task's rows on their own

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        transition: Callable[..., nn.Module] = MLPEncoder,
        gate: Callable[..., nn.Module] | None = None,
    ):
        super().__init__()
        self.transition = transition(sizes=sizes, latent_dim=latent_dim)
        self.gate = gate(latent_dim=latent_dim) if gate is not None else None

    def forward(self, context: torch.Tensor) -> Encoded:
        e = self.transition(context)  # [T, B, Z]
        w = self.gate(e) if self.gate is not None else torch.ones(e.shape[:2], device=e.device)
        return Encoded(e, w, weighted_mean(e, w))


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
