"""Seeds trained together: K runs of one recipe, differing only in their seed, as one model.

The convention every seed-batched part follows: the K seeds are folded into the first
dimension, seed-major. A meta-batch that a single run holds as [T, B, F] is [K·T, B, F] here
(rows 0..T−1 seed 0's, T..2T−1 seed 1's, ...), so a part that treats its first dimension as
independent rows (a task's transitions, an evaluation environment) needs no change beyond its
weights: every linear layer and layer norm holds K sets of weights and applies seed k's to
seed k's rows (`layers.py`). What does change:

- weights: `stack_modules` builds the batched module from K single modules (so each seed starts
  from the very weights its single run starts from) and `unstack_state` gives seed k's state
  back in the single run's format (so checkpoints and analyses do not know the difference);
- random draws: a part draws through `streams.randn_like` / `streams.rand`, which, while
  `drawing_from(streams)` is active, take seed k's rows from seed k's own generator
  (`streams.py`) — the numbers seed k's single run draws;
- reductions: a loss is a mean per seed, summed over seeds (`per_seed_mean`): seed k's gradient
  is its single run's, and every logged term is one value per seed.
"""

from components.seeds.check import batches_seeds, check_seed_batching, whole_batches_seeds
from components.seeds.layers import (
    SeedLayerNorm,
    SeedLinear,
    add_per_seed,
    mul_per_seed,
    seed_count,
    seed_layer,
    seed_linear,
    stack_modules,
    stack_states,
    unstack_state,
    unview,
)
from components.seeds.reduce import per_row, per_seed, per_seed_mean
from components.seeds.streams import SeedStreams, drawing_from, rand, randn_like

__all__ = [
    "SeedLayerNorm",
    "SeedLinear",
    "SeedStreams",
    "add_per_seed",
    "batches_seeds",
    "check_seed_batching",
    "drawing_from",
    "mul_per_seed",
    "per_row",
    "per_seed",
    "per_seed_mean",
    "rand",
    "randn_like",
    "seed_count",
    "seed_layer",
    "seed_linear",
    "stack_modules",
    "stack_states",
    "unstack_state",
    "unview",
    "whole_batches_seeds",
]
