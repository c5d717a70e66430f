"""The small networks an objective may own (a variational q, a decoder)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn


def mlp(in_features: int, hidden: Sequence[int], out_features: int) -> nn.Sequential:
    """x [..., in] -> [..., out] through ReLU hidden layers (leading dims kept)."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_features, width), nn.ReLU()]
        in_features = width
    return nn.Sequential(*layers, nn.Linear(in_features, out_features))
