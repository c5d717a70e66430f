"""The context encoder of FOCAL and of any per-transition encoder: each transition encoded on
its own, an optional batch gate, and the (weighted) mean over the context batch as z.

FOCAL = `context_encoder` with `mlp_encoder`; the paper's FOCAL++ stacks residual attention
blocks instead (attention_blocks.py). The first edition's gates, sequence attention and
parallel sum are opt-in: components/first_edition/.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from components.encoders.encoded import Encoded, weighted_mean
from components.encoders.mlp import MLPEncoder
from registry import register


@register("context_encoder", "context_encoder")
class ContextEncoder(nn.Module):
    """Context [T, B, F] -> Encoded: per-transition embeddings, batch weights, task vector.

    Args:
        sizes: component sizes of a transition (set by the algorithm).
        latent_dim: Z (set by the algorithm).
        transition: per-transition encoder class (gin: `@mlp_encoder`).
        gate: batch attention class (kind `attention`; the first edition's `@batch_gate`), or
            None for the plain mean.

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
