"""The algorithm an experiment chooses, built: handed what its constructor names (the run's
context, the task data, the training loop), each from the run's bindings."""

from __future__ import annotations

from typing import Any

from registry import RunContext, get
from registry.experiment import Experiment
from registry.gin_errors import build
from registry.parsing import parameters_of

# What the experiment hands an algorithm that asks for it by its constructor's argument name:
# the registered member (kind, name) built from the run's bindings with `run=`.
HANDED = {"run": None, "data": ("task_data", "task_data"), "loop": ("loop", "loop")}


def build_algorithm(exp: Experiment, run: RunContext) -> Any:
    """The chosen algorithm, handed what its constructor names: `run` (the RunContext),
    `data` (the task data, `task_data.*`) and `loop` (the training loop, `loop.*`), built here
    in that order so an algorithm of one's own asks only for what it uses."""
    wanted = parameters_of(exp.algorithm)
    given: dict[str, Any] = {}
    for argument, member in HANDED.items():
        if argument in wanted:
            given[argument] = run if member is None else build(get(*member), run=run)
    return build(exp.algorithm, **given)
