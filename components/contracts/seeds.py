"""The promise of a part that declares a seed-batched form (`seed_batching = True`,
components/seeds): K members stacked into one compute each seed's rows exactly as that seed's
own member does, with that seed's parameters and random draws, to fp32 tolerance.

Each probe of a kind calls `batches_like_singles` with how to build a member, how to draw one
seed's inputs and how to call it; two members built under seeds 0 and 1 are stacked, their
inputs folded seed-major, and the stacked member's outputs split per seed and compared with
each single member's on its own inputs and random stream. Each member's parameters are moved
off their initial values first (`core.perturbed`): layers that start at zero are zero in every
seed, and a stacking that mixed them up would go unseen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch

from components.contracts.core import Broken, perturb_
from components.seeds import SeedStreams, drawing_from, stack_modules, whole_batches_seeds

SEEDS = (0, 1)
FIX = (
    "treat the first dimension as independent rows (each seed's, seed-major), draw random "
    "numbers through components.seeds.streams and reduce losses per seed (docs/SWEEPS.md), or "
    "do not declare seed_batching"
)


def batches_like_singles(
    make: Callable[[], Any],
    inputs: Callable[[int], tuple],
    call: Callable[..., Any],
    *,
    fold: Callable[[list[tuple]], tuple] | None = None,
    what: str = "its outputs",
) -> None:
    """If the member built by `make` declares a seed-batched form: K = 2 members stacked give
    each seed its single member's outputs. `inputs(k)`: seed k's inputs; `fold`: K seeds'
    inputs as the stacked member's (default: tensors concatenated along dim 0); `call(member,
    *inputs)`: its outputs (tensors, Encoded-like dataclasses or mappings of tensors)."""
    probe = make()
    if not whole_batches_seeds(probe):
        return
    saved = torch.get_rng_state()
    try:
        singles, streams, states = [], [], []
        for seed in SEEDS:
            torch.manual_seed(seed)
            singles.append(make())
            perturb_(singles[-1], 100 + seed)  # zero-initialised layers differ between seeds too
            streams.append(SeedStreams.capture())
            states.append(streams[-1].get_state())
        try:
            stacked = stack_modules(singles)
        except (ValueError, RuntimeError, TypeError) as e:
            raise Broken("be stackable as K seeds' members", f"stacking failed: {e}", FIX) from e
        each = [inputs(k) for k in range(len(SEEDS))]
        folded = fold(each) if fold else tuple(torch.cat(xs) for xs in zip(*each, strict=True))
        try:
            with drawing_from(SeedStreams(streams)):
                out = call(stacked, *folded)
        except (ValueError, RuntimeError, TypeError, IndexError) as e:
            raise Broken(
                "compute K seeds' rows when stacked (seed_batching = True)",
                f"the stacked member failed: {e}",
                FIX,
            ) from e
        for k, single in enumerate(singles):
            torch.set_rng_state(states[k])
            want = call(single, *each[k])
            _same(out, want, k, len(SEEDS), what)
    finally:
        torch.set_rng_state(saved)


def _same(got: Any, want: Any, k: int, seeds: int, what: str) -> None:
    for name, g, w in _pairs(got, want):
        if not isinstance(w, torch.Tensor):
            continue
        if g.dim() == 0:
            mine = g  # one value for every seed (a fixed setting)
        elif g.dim() == w.dim() + 1:
            mine = g[k]  # a per-seed value ([K] or [K, ...])
        else:
            rows = g.shape[0] // seeds
            mine = g[k * rows : (k + 1) * rows]
        if mine.shape != w.shape or not torch.allclose(
            mine.detach().float(), w.detach().float(), rtol=1e-4, atol=1e-5
        ):
            diff = (
                f"{float((mine.detach().float() - w.detach().float()).abs().max()):.3g}"
                if mine.shape == w.shape
                else f"shape {list(mine.shape)} against {list(w.shape)}"
            )
            raise Broken(
                "compute each seed's rows as that seed's own member (seed_batching = True)",
                f"seed {SEEDS[k]}'s {what}{f' ({name})' if name else ''} differ from its single "
                f"member's: {diff}",
                FIX,
            )


def _pairs(got: Any, want: Any):
    if isinstance(want, torch.Tensor):
        yield "", got, want
    elif dataclasses.is_dataclass(want):
        for f in dataclasses.fields(want):
            inner = _pairs(getattr(got, f.name), getattr(want, f.name))
            yield from ((f"{f.name}{n and '.' + n}", g, w) for n, g, w in inner)
    elif isinstance(want, Mapping):
        for key, w in want.items():
            yield from ((f"{key}{n and '.' + n}", g, ww) for n, g, ww in _pairs(got[key], w))
