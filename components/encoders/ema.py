"""The momentum (EMA) key encoder of MoCo (He et al. 2020; FOCAL++ §3.3, m = 0.9)."""

from __future__ import annotations

import copy

import torch
from torch import nn


class EMAEncoder(nn.Module):
    """A frozen copy of an encoder that follows it: θ_k ← m·θ_k + (1 − m)·θ_q.

    It never receives gradients (its parameters do not require them and its forward runs
    without autograd); call `update(query_encoder)` after each optimiser step.

    Args:
        source: the query encoder to copy.
        momentum: m.
    """

    def __init__(self, source: nn.Module, *, momentum: float = 0.9):
        super().__init__()
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"EMA momentum must be in [0, 1], got {momentum}")
        self.momentum = momentum
        self.copy = copy.deepcopy(source).requires_grad_(False)

    @torch.no_grad()
    def update(self, source: nn.Module) -> None:
        online = [p.detach() for p in source.parameters()]  # one call for all of them:
        torch._foreach_lerp_(list(self.copy.parameters()), online, 1.0 - self.momentum)
        for key, online in zip(self.copy.buffers(), source.buffers(), strict=True):
            key.copy_(online)

    @torch.no_grad()
    def forward(self, *args, **kwargs):
        return self.copy(*args, **kwargs)
