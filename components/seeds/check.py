"""Which parts can be trained with several seeds in one process, asked at build time.

A part declares it with the class attribute `seed_batching = True`: its forward treats the
first dimension as independent rows (or reads the seeds' blocks itself), its random draws go
through `components.seeds.streams` and its reductions are per seed. A part that does not
declare it stops a seed-batched run before anything is trained, by name.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import nn

from registry import RecipeError, entry_of


def batches_seeds(module: nn.Module) -> bool:
    """Whether a module's class declares a seed-batched form."""
    return bool(getattr(type(module), "seed_batching", False))


def whole_batches_seeds(module: nn.Module) -> bool:
    """Whether a module and every registered part inside it declare a seed-batched form (a
    composite, such as a context encoder, is one only if its parts are)."""
    return batches_seeds(module) and all(
        batches_seeds(m) for m in module.modules() if entry_of(type(m)) is not None
    )


def check_seed_batching(parts: Mapping[str, nn.Module | None]) -> None:
    """Every registered module of one seed's built `parts` (by role; None where absent)
    declares a seed-batched form; else a RecipeError naming the first that does not."""
    for role, part in parts.items():
        if part is None:
            continue
        for module in part.modules():
            entry = entry_of(type(module))
            if entry is None or batches_seeds(module):
                continue
            raise RecipeError(
                f"@{entry.name} (in the {role}), a {entry.kind}, cannot be trained with several "
                "seeds in one process: it declares no seed-batched form (seed_batching = True; "
                "docs/SWEEPS.md). Run these seeds as single runs, one process each"
            )
