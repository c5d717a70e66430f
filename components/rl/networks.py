"""Networks of the meta-policy learner: an MLP and a tanh-Gaussian policy.

Both act on the last dimension only, so inputs may carry any leading dims ([T, B, F] for a
meta-batch, [N, F] for N evaluation environments) and one call serves every task at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from components.seeds.streams import randn_like
from registry import register
from registry.constraints import Widths
from registry.validation import check_arguments


@register("network", "mlp")
class MLP(nn.Module):
    """x [..., in] -> [..., out] through ReLU hidden layers (FOCAL: 3 × 256).

    Args:
        in_features: input size.
        out_features: output size.
        hidden: hidden layer sizes.
        layer_norm: normalise each hidden layer's pre-activations, without affine parameters
            (components/rl/batched_mlp.py, `normalised`).
    """

    seed_batching = True  # components/seeds: acts on the last dimension

    def __init__(
        self,
        *,
        in_features: int,
        out_features: int,
        hidden: Widths = (256, 256, 256),
        layer_norm: bool = False,
    ):
        super().__init__()
        check_arguments("mlp", MLP.__init__, {"hidden": hidden})
        layers: list[nn.Module] = []
        size = in_features
        for width in hidden:
            relu = nn.ReLU(inplace=True)  # in place: saves a copy per layer
            if layer_norm:  # in the ReLU's place: the parameters keep their names
                relu = nn.Sequential(nn.LayerNorm(width, elementwise_affine=False), relu)
            layers += [nn.Linear(size, width), relu]
            size = width
        self.net = nn.Sequential(*layers, nn.Linear(size, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@dataclass(frozen=True)
class PolicySample:
    """A reparameterised draw: action = tanh(pre_tanh), all [..., A] except log_prob [...]."""

    action: torch.Tensor
    log_prob: torch.Tensor
    mean: torch.Tensor  # pre-tanh mean; tanh(mean) is the deterministic action
    log_std: torch.Tensor


@register("network", "tanh_gaussian_policy")
class TanhGaussianPolicy(nn.Module):
    """π(a | x) = tanh(N(μ(x), σ(x)²)) with actions in [−1, 1]^A.

    Args:
        in_features: input size (observation and task vector).
        act_dim: A.
        hidden: hidden layer sizes.
        log_std_min, log_std_max: clamp of log σ (FOCAL's reference: max 0; PEARL's: 2).
    """

    seed_batching = True  # components/seeds: its noise from each seed's stream

    def __init__(
        self,
        *,
        in_features: int,
        act_dim: int,
        hidden: Widths = (256, 256, 256),
        log_std_min: float = -20.0,
        log_std_max: float = 0.0,
    ):
        super().__init__()
        self.net = MLP(in_features=in_features, out_features=2 * act_dim, hidden=hidden)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def forward(self, x: torch.Tensor) -> PolicySample:
        mean, log_std = self.net(x).chunk(2, dim=-1)
        log_std = log_std.clamp(self.log_std_min, self.log_std_max)
        std = log_std.exp()
        noise = randn_like(mean)  # seed by seed in a seed-batched step
        pre_tanh = mean + std * noise
        gaussian = -0.5 * noise**2 - log_std - 0.5 * math.log(2 * math.pi)
        # log|d tanh(u)/du| = 2·(log 2 − u − softplus(−2u)), numerically stable
        squash = 2.0 * (math.log(2.0) - pre_tanh - F.softplus(-2.0 * pre_tanh))
        return PolicySample(torch.tanh(pre_tanh), (gaussian - squash).sum(-1), mean, log_std)

    @torch.no_grad()
    def deterministic(self, x: torch.Tensor) -> torch.Tensor:
        """tanh of the mean: the meta-test action (DECISIONS §5)."""
        mean, _ = self.net(x).chunk(2, dim=-1)
        return torch.tanh(mean)
