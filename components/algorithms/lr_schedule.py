"""Learning-rate decay over a run (`loop.lr_decay`, `loop.lr_floor`): every optimiser's rate is
a function of the step alone, so a resumed run continues exactly."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from registry import RecipeError

# progress p in [0, 1] -> learning-rate factor before the floor
LR_DECAYS: dict[str | None, Callable[[float], float]] = {
    None: lambda p: 1.0,
    "linear": lambda p: 1.0 - p,
    "cosine": lambda p: 0.5 * (1.0 + math.cos(math.pi * p)),
}


class LearningRateDecay:
    """None (constant rates), or 'cosine' / 'linear': each optimiser group's rate falls from its
    set value to `floor` times it over the run."""

    def __init__(self, decay: str | None = None, floor: float = 0.0):
        if decay not in LR_DECAYS:
            raise RecipeError(
                f"loop.lr_decay = {decay!r}: expected None or one of "
                f"{sorted(k for k in LR_DECAYS if k)}"
            )
        self.decay, self.floor = decay, floor

    def apply(self, optimizers: Sequence[torch.optim.Optimizer], step: int, steps: int) -> None:
        """Every optimiser's rate for the step after `step` of `steps`; each group's set rate is
        kept as `base_lr` the first time (a resumed checkpoint brings its own)."""
        if self.decay is None:
            return
        factor = self.floor + (1.0 - self.floor) * LR_DECAYS[self.decay](step / steps)
        for opt in optimizers:
            for group in opt.param_groups:
                group.setdefault("base_lr", group["lr"])
                group["lr"] = group["base_lr"] * factor
