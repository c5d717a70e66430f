"""MLPs with one independent set of weights per model, evaluated for all models at once.

K models (e.g. one behaviour policy per task) share a layout; their weights are stacked as
[K, in, out] and one `torch.baddbmm` evaluates all of them, so training K small networks costs
about as much as training one K-times-wider network, with no Python loop over models.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn

from components.seeds.layers import seed_layer, unview
from registry import register
from registry.constraints import Widths
from registry.validation import check_arguments


class BatchedLinear(nn.Module):
    """K independent linear layers: x [K, B, in] -> [K, B, out]."""

    def __init__(self, n_models: int, in_features: int, out_features: int):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)  # torch.nn.Linear's default initialisation range
        self.weight = nn.Parameter(
            torch.empty(n_models, in_features, out_features).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(n_models, 1, out_features).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor, models: torch.Tensor | None = None) -> torch.Tensor:
        """`models` [M]: evaluate only those models (x [M, B, in]), e.g. one task's each."""
        if models is None:
            return torch.baddbmm(self.bias, x, self.weight)
        return torch.baddbmm(self.bias[models], x, self.weight[models])


class SeedBatchedLinear(nn.Module):
    """K seeds' `BatchedLinear`s of M models each (weight [K, M, in, out], bias [K, M, 1, out]):
    x [M, K·R, in] -> [M, K·R, out], model m of seed k on seed k's rows of x[m]."""

    def __init__(self, seeds: int, n_models: int, in_features: int, out_features: int):
        super().__init__()
        self.seeds, self.n_models, self.out_features = seeds, n_models, out_features
        self.weight = nn.Parameter(torch.empty(seeds, n_models, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(seeds, n_models, 1, out_features))

    def forward(self, x: torch.Tensor, models: torch.Tensor | None = None) -> torch.Tensor:
        if models is not None:
            raise NotImplementedError(
                "a seed-batched BatchedLinear evaluates all its models: `models` is not supported"
            )
        k, m = self.seeds, self.n_models
        if k == 1:
            return torch.baddbmm(self.bias[0], x, self.weight[0])
        # x [M, K·R, in] is [M·K, R, in] as it lies; the weights (small) are put model-major
        rows = x.reshape(m * k, -1, x.shape[-1])
        weight = self.weight.transpose(0, 1).reshape(m * k, *self.weight.shape[2:])
        bias = self.bias.transpose(0, 1).reshape(m * k, 1, -1)
        return unview(torch.baddbmm(bias, rows, weight), (m, -1, self.out_features))


seed_layer(
    BatchedLinear, SeedBatchedLinear, lambda single, k: SeedBatchedLinear(k, *single.weight.shape)
)


@register("network", "batched_mlp")
class BatchedMLP(nn.Module):
    """K independent ReLU MLPs: x [K, B, in] -> [K, B, out].

    Args:
        n_models: K, the number of independent networks.
        in_features: input size.
        out_features: output size.
        hidden: hidden layer sizes.
        layer_norm: normalise each hidden layer's pre-activations (`normalised`).
    """

    seed_batching = True  # components/seeds: stacked as K seeds × its models

    def __init__(
        self,
        *,
        n_models: int,
        in_features: int,
        out_features: int,
        hidden: Widths = (64, 64),
        layer_norm: bool = False,
    ):
        super().__init__()
        check_arguments("batched_mlp", BatchedMLP.__init__, {"hidden": hidden})
        sizes = [in_features, *hidden, out_features]
        self.layers = nn.ModuleList(
            BatchedLinear(n_models, a, b) for a, b in itertools.pairwise(sizes)
        )
        self.layer_norm = layer_norm

    def forward(self, x: torch.Tensor, models: torch.Tensor | None = None) -> torch.Tensor:
        """x [K, B, in] -> [K, B, out]; with `models` [M], x [M, B, in] through those models."""
        for layer in self.layers[:-1]:
            x = layer(x, models)
            # in place: baddbmm's backward does not need its output
            x = normalised(x).relu_() if self.layer_norm else x.relu_()
        return self.layers[-1](x, models)


def normalised(x: torch.Tensor) -> torch.Tensor:
    """LayerNorm of the last dimension without its affine γ, β (the critics' LayerNorm option,
    as the IQL meta-RL code base's LayerNorm variants). Parameter-free, it is per row whatever
    the batching, so seed-batched and per-task models need nothing of their own; γ > 0 would be
    absorbed by the next layer (ReLU is positively homogeneous), β is not — a unit's threshold
    stays at zero."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def twin_q(net: BatchedMLP, x: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """Twin Q [2, ...] of `net` (a BatchedMLP of two models) for x [..., F] and action [..., A]:
    both models read the same (x, a), one matmul per layer for the pair."""
    xa = torch.cat([x, action], -1)
    flat = xa.reshape(1, -1, xa.shape[-1]).expand(2, -1, -1)
    return net(flat).reshape(2, *xa.shape[:-1])
