"""Reductions of a seed-batched step: one value per seed.

A single run's loss is a mean over its rows; K seeds' rows sit seed-major in the first
dimension, so the batched loss is the sum over seeds of each seed's mean: seed k's gradient is
the one its single run gets (a mean over all rows would scale it by 1/K).
"""

from __future__ import annotations

import torch


def per_seed(t: torch.Tensor, seeds: int) -> torch.Tensor:
    """[K·R, ...] -> [K, R·...]: each seed's values as one row (seed-major first dimension)."""
    if t.shape[0] % seeds:
        raise ValueError(
            f"a first dimension of {t.shape[0]} cannot be split among {seeds} seeds: "
            "seed-batched tensors hold every seed's rows, seed-major"
        )
    return t.reshape(seeds, -1)


def per_seed_mean(t: torch.Tensor, seeds: int) -> torch.Tensor:
    """The mean of each seed's rows, [K] ([] when seeds is 1 and the single run's `mean()`)."""
    if seeds == 1:
        return t.mean()
    return per_seed(t, seeds).mean(1)


def per_row(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A per-seed value [K] spread over `like`'s rows [K·R, ...] (broadcastable against it); a
    single run's scalar as it is."""
    if value.dim() == 0:
        return value
    rows = like.shape[0] // value.shape[0]
    return value.repeat_interleave(rows).view(-1, *([1] * (like.dim() - 1)))
