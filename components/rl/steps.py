"""One optimiser step on a loss module's named terms, and freezing a network for one loss.

Every actor-critic update here reads as a list of these: each loss module returns its `loss_*`
terms and diagnostics, `step` minimises the `loss_*` ones with the optimiser that owns the
parameters they should train, and `frozen` keeps another network's weights out of a loss whose
gradient must flow through it (the policy's through Q to its actions).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

from components.profiling import part


def step(optimizer: torch.optim.Optimizer, terms: dict[str, torch.Tensor]) -> dict:
    """Minimise the `loss_*` terms with `optimizer`; return every term detached. In a
    seed-batched step a term is one value per seed; their sum trains each seed on its own."""
    with part("optimiser steps"):
        optimizer.zero_grad(set_to_none=True)
    sum(v for k, v in terms.items() if k.startswith("loss_")).sum().backward()
    with part("optimiser steps"):
        optimizer.step()
    return {k: v.detach() for k, v in terms.items()}


@contextmanager
def frozen(module: nn.Module):
    """No gradient to `module`'s weights inside (gradients still flow through it to inputs)."""
    module.requires_grad_(False)
    try:
        yield
    finally:
        module.requires_grad_(True)
