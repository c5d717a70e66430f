"""What each run of a loop writes, and the per-seed halves of a seed-batched checkpoint.

A loop trains one run, or K seeds as one model (components/seeds); either way each run has its
own record: its directory, the configuration fingerprint its checkpoints carry, its metrics log
and whether it still trains. A seed-batched learner's state is stacked (every tensor [K, ...]);
seed k's checkpoint is that state at index k, in the single run's format (`unstack_parts`), so a
seed's directory is a run directory like any other: reports, analyses and `--resume` read it
as they read a single run's. Resuming the K seeds together stacks their K checkpoints again
(`stack_parts`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from components.outputs.metrics import MetricsLog
from components.seeds import stack_states, unstack_state
from registry import FocalppError


@dataclass
class RunRecord:
    """One run of the loop: `index` is its seed's position among K seeds trained together
    (None for a single run, whose values are not per seed)."""

    index: int | None
    seed: int
    run_dir: Path
    fingerprint: str | None = None
    log: MetricsLog | None = None
    resume_log: tuple[int, int] | None = None
    stopped: str | None = None  # why this seed stopped training early (a non-finite value)

    def value(self, v: Any) -> Any:
        """This run's entry of a per-seed value ([K] tensor or a list), else v itself."""
        if self.index is None:
            return v
        if isinstance(v, torch.Tensor):
            return v[self.index] if v.dim() else v
        return v[self.index]


def _is_optimizer_state(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"state", "param_groups"}


def unstack_parts(state: Mapping[str, Any], k: int) -> dict[str, Any]:
    """Seed k's networks and optimisers (single-run format) from a seed-batched `parts_state`:
    module states at index k; optimiser states at index k but for the step counts, which all
    seeds share."""
    return _each_part(
        [state],
        lambda states: unstack_state(states[0], k),
        lambda tensors: tensors[0][k].clone(),
    )


def stack_parts(states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """K seeds' `parts_state`s (single-run format) stacked into a seed-batched one."""
    return _each_part(states, stack_states, torch.stack)


def _each_part(states, module, tensors) -> dict[str, Any]:
    """Walk K `parts_state`s alike (one to split, K to stack): `module(states)` for a module's
    state dicts, `tensors(values)` for each optimiser tensor but the shared step counts."""
    out: dict[str, Any] = {}
    for key, value in states[0].items():
        values = [s[key] for s in states]
        if _is_optimizer_state(value):
            out[key] = {
                "state": {
                    i: {
                        n: t if n == "step" else tensors([v["state"][i][n] for v in values])
                        for n, t in entry.items()
                    }
                    for i, entry in value["state"].items()
                },
                "param_groups": value["param_groups"],
            }
        elif (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, Mapping) for v in value.values())
        ):
            out[key] = _each_part(values, module, tensors)  # a group of optimisers, by name
        elif isinstance(value, Mapping):
            out[key] = module(values)
        else:
            out[key] = value
    return out


_SEED_LINE = re.compile(r"^experiment\.seed = \d+$", re.MULTILINE)


def with_seed(config: str, seed: int) -> str:
    """A gin configuration with `experiment.seed` set to `seed`: what a single run of this
    seed is configured with (its config.gin, its checkpoints' fingerprint)."""
    if len(_SEED_LINE.findall(config)) != 1:
        raise FocalppError(
            "the configuration binds experiment.seed other than once; cannot write each seed's "
            "configuration of a seed-batched run"
        )
    return _SEED_LINE.sub(f"experiment.seed = {seed}", config)


def run_records(run: Any, batched: bool) -> list[RunRecord]:
    """The runs a loop trains: the one of `run` (a RunContext), or one per seed for seeds
    trained together (`run.seeds`, `run.seed_dirs`)."""
    if not batched:
        return [RunRecord(None, run.seed, Path(run.run_dir))]
    if len(run.seed_dirs) != len(run.seeds):
        raise FocalppError(
            f"{len(run.seeds)} seeds trained together need as many run directories, got "
            f"{len(run.seed_dirs)}"
        )
    return [
        RunRecord(k, seed, Path(d))
        for k, (seed, d) in enumerate(zip(run.seeds, run.seed_dirs, strict=True))
    ]


def seed_rng_state(rng: dict[str, Any], learner: Any, k: int) -> dict[str, Any]:
    """Seed k's random states in a single run's layout: its stream as torch's generator (the
    device's), its own generators (its sampler's) by name; Python's and NumPy's are shared."""
    stream = learner.seed_batch.streams.generators[k]
    own = {"generators": {n: g.get_state() for n, g in learner.seed_generators(k).items()}}
    if stream.device.type == "cpu":
        return {**rng, "torch": stream.get_state(), **own}
    return {**rng, "cuda": [stream.get_state()], **own}


def restore_seed_rng_state(rng: dict[str, Any], learner: Any, k: int) -> None:
    """Seed k's stream and generators from its checkpoint's random states."""
    stream = learner.seed_batch.streams.generators[k]
    stream.set_state(rng["torch"] if stream.device.type == "cpu" else rng["cuda"][0])
    for name, g in learner.seed_generators(k).items():
        g.set_state(rng["generators"][name])
