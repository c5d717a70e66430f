"""What one run is: the algorithm a recipe chose, the environment column, the scale and the seed.

Recipes bind `experiment.algorithm = @<algorithm>`; `tools/run.py` fills env, scale and seed from
its flags (defaults come from the recipe), so the operative config records all four.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gin

from registry.constraints import check_seed
from registry.core import entries, entry_of
from registry.errors import RecipeError

# what torch.device takes for the devices focalpp runs on (cpu:N is torch's alias of cpu)
DEVICE = re.compile(r"auto|cpu(:\d+)?|cuda(:\d+)?")


@dataclass(frozen=True)
class Experiment:
    algorithm: Any
    algorithm_name: str
    env: str
    scale: str
    seed: int
    device: str
    analyses: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunContext:
    """What a run is told about itself: the task data and the loop are built with it (`run=`),
    and an algorithm that names a `run` argument is handed it too."""

    env: str
    scale: str
    seed: int
    run_dir: Path
    device: str = "cpu"  # "auto", "cpu", "cuda" or "cuda:N"; algorithms resolve it
    resume: bool = False  # continue from run_dir's checkpoint instead of starting afresh
    # train these seeds together as one seed-batched model (components/seeds); () trains `seed`
    seeds: tuple[int, ...] = ()
    seed_dirs: tuple[Path, ...] = ()  # each seed's run directory (the first is run_dir)


@gin.configurable("experiment")
def experiment(
    *,
    algorithm: Any = None,
    env: str | None = None,
    scale: str = "cpu",
    seed: int = 0,
    device: str = "auto",
    analyses: tuple[str, ...] | list[str] = (),
) -> Experiment:
    """Validate and return the recipe's top-level choices. `analyses`: registered analyses
    (`tools/analyze.py`) that `tools/run.py` runs on the run once it has finished."""
    known = ", ".join(e.name for e in entries("algorithm")) or "none registered"
    if algorithm is None:
        raise RecipeError(
            "the recipe chooses no algorithm: add `experiment.algorithm = @<name>` "
            f"(registered algorithms: {known})"
        )
    entry = entry_of(algorithm)
    if entry is None or entry.kind != "algorithm":
        what = f"{entry.kind} {entry.name!r}" if entry else repr(algorithm)
        raise RecipeError(
            f"experiment.algorithm must be a registered algorithm, got {what}; "
            f"registered algorithms: {known}"
        )
    if not env:
        raise RecipeError("the recipe names no environment: bind `experiment.env` or pass --env")
    check_seed(seed, "experiment.seed")
    if not isinstance(device, str) or not DEVICE.fullmatch(device):
        raise RecipeError(
            f"experiment.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}"
        )
    if isinstance(analyses, str) or not all(isinstance(a, str) for a in analyses):
        raise RecipeError(f"experiment.analyses must be a list of analysis names, got {analyses!r}")
    return Experiment(algorithm, entry.name, env, scale, seed, device, tuple(analyses))
