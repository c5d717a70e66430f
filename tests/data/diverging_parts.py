"""Parts that turn non-finite once training has stepped their weights `after` times: a run that
diverges at a chosen step, the same on every CPU (no overflow of a huge learning rate, whose
outcome depends on the machine's kernels, is needed).

Each counts the optimiser steps taken on its first weight (a hook on every optimiser's step);
a contract probe, which moves weights by hand but never steps an optimiser on them, sees a
well-behaved part.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

from components.encoders.mlp import MLPEncoder
from components.objectives.dml import FocalDML
from registry import register


class _Diverging:
    """Mixin: `self.moves` counts the optimiser steps that included `self.watched`."""

    seed_batching = False  # one counter for the whole module: not a form of K seeds

    def _start_counting(self, after: int) -> None:
        self.after = after
        self.register_buffer("moves", torch.zeros((), dtype=torch.long))
        part = weakref.ref(self)

        def stepped(optimizer, args, kwargs) -> None:
            me = part()
            groups = optimizer.param_groups
            if me is not None and any(p is me.watched for g in groups for p in g["params"]):
                me.moves += 1

        register_optimizer_step_post_hook(stepped)

    def _diverged(self) -> bool:
        return int(self.moves) >= self.after


@register("objective", "diverging_dml")
class DivergingDML(_Diverging, FocalDML):
    """FOCAL's distance metric loss times a learned gain (so it has a weight to watch); NaN
    from the call after its `after`-th optimiser step.

    Args:
        after: optimiser steps before the loss is NaN (the loss of step `after + 1` is).
    """

    def __init__(self, *, after: int = 1, **dml):
        super().__init__(**dml)
        self.gain = nn.Parameter(torch.ones(()))
        self._start_counting(after)

    @property
    def watched(self) -> torch.Tensor:
        return self.gain

    def forward(self, emb):
        terms = super().forward(emb)
        loss = terms["loss_dml"] * self.gain
        if self._diverged():
            loss = loss * float("nan")
        return {**terms, "loss_dml": loss}


@register("transition_encoder", "diverging_mlp_encoder")
class DivergingMLPEncoder(_Diverging, MLPEncoder):
    """FOCAL's transition encoder whose embeddings are NaN from the call after its `after`-th
    optimiser step.

    Args:
        after: optimiser steps before the output is NaN.
    """

    def __init__(self, *, sizes, latent_dim: int, after: int = 1, hidden=(16,)):
        super().__init__(sizes=sizes, latent_dim=latent_dim, hidden=hidden)
        self._start_counting(after)

    @property
    def watched(self) -> torch.Tensor:
        return self.net[0].weight

    def forward(self, context):
        out = super().forward(context)
        return out * float("nan") if self._diverged() else out
