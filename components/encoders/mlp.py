"""FOCAL's transition encoder: an MLP applied to each transition on its own (DECISIONS §3)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from registry import register
from registry.constraints import Widths
from registry.validation import check_arguments


@register("transition_encoder", "mlp_encoder")
class MLPEncoder(nn.Module):
    """Each transition [T, B, F] -> embedding [T, B, Z] by a ReLU MLP with a tanh output.

    Args:
        sizes: component sizes of a transition, e.g. (obs, act, obs, 1); F = their sum (set by
            the algorithm).
        latent_dim: Z.
        hidden: hidden layer sizes (FOCAL: 3 × 200).
        squash: tanh on the output (FOCAL); False leaves it unbounded (PEARL's Gaussian
            factors).
    """

    seed_batching = True  # components/seeds: each transition on its own

    def __init__(
        self,
        *,
        sizes: Sequence[int],
        latent_dim: int,
        hidden: Widths = (200, 200, 200),
        squash: bool = True,
    ):
        super().__init__()
        check_arguments("mlp_encoder", MLPEncoder.__init__, {"hidden": hidden})
        input_dim = sum(sizes)
        layers: list[nn.Module] = []
        for size in hidden:
            layers += [nn.Linear(input_dim, size), nn.ReLU(inplace=True)]
            input_dim = size
        layers.append(nn.Linear(input_dim, latent_dim))
        self.net = nn.Sequential(*layers, *([nn.Tanh()] if squash else []))

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        return self.net(context)
