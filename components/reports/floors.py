"""The no-context floor and the true-task ceiling that a test-context cell is read against
(docs/TEST_CONTEXTS.md): the reference rows `reference_no_context` (z = 0) and
`reference_oracle` (the true task told) of the same environment, scale, learner and label.

A protocol's return means task inference only beside them: its share of the gap,
(return − floor) / (ceiling − floor), says how much of what a told task adds its context
recovers, and a return within or below the floor's 95% interval shows no inference at all, so a
drop to it is not inference lost. Every test-context section reads its cells through this one
module, and a row and its floor and ceiling must be one build but for their recipes
(`components/reports/builds.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from components.reports.builds import check_sides
from components.reports.intervals import Estimate, mean
from components.reports.tables import RunGroups, recipe_stem

FLOOR, CEILING = "reference_no_context", "reference_oracle"
REFERENCES = (FLOOR, CEILING)
# (env, scale, learner, label): where a row's floor and ceiling are found
Setting = tuple[str, str, str, str]


@dataclass(frozen=True)
class Bracket:
    """A row's floor (its mean and 95% interval over seeds) and ceiling (mean over seeds)."""

    floor: Estimate
    ceiling: float
    runs: tuple[dict, ...] = field(default=(), compare=False, repr=False)  # both rows' runs

    def share(self, value: float) -> float | None:
        """The share of the floor-to-ceiling gap `value` recovers (None: no gap to recover)."""
        gap = self.ceiling - self.floor.point
        return (value - self.floor.point) / gap if gap else None

    def above(self, value: float) -> bool:
        """Whether `value` lies above the floor's interval: some inference shown."""
        return value > self.floor.high

    def drop_is_inference(self, offline: float, value: float) -> bool:
        """Whether a drop from `offline` to `value` (mean returns) is inference lost: both lie
        above the floor's interval (a drop to the floor had no inference there to lose)."""
        return self.above(offline) and self.above(value)

    def share_text(self, value: float) -> str:
        share = self.share(value)
        return "-" if share is None else f"{share:.2f}"


def learner(run: dict) -> str:
    """The agent a run built; for a run recorded before runs named it, the one its bindings
    choose, else BRAC (the FOCAL trainer's default)."""
    built = (run.get("parts") or {}).get("agent")
    if built:
        return built[0]
    for binding in run.get("bindings") or ():
        chosen = re.fullmatch(r"\s*focal\.agent\s*=\s*@(\w+)\s*", binding)
        if chosen:
            return chosen.group(1)
    return "brac"


def setting(run: dict) -> Setting:
    return (run["env"], run["scale"], learner(run), run.get("label") or "")


def offline(run: dict, key: str = "mean") -> float | None:
    """The run's final reading with its own offline context (a reference row has no other), in
    `key`: `mean`, its headline return, or `success_rate` on Meta-World (None where not scored)."""
    cells = run["eval"].get("test_contexts") or {}
    if key in cells.get("offline", {}):
        return cells["offline"][key]
    return run["eval"].get("test_return_mean" if key == "mean" else key)


def brackets(runs: RunGroups, key: str = "mean") -> dict[Setting, Bracket]:
    """Each setting the report holds both reference rows of, with its floor and ceiling (the
    two of one build) in `key` (`mean`: the headline return; `success_rate`), where every
    reference run was scored in it."""
    found: dict[tuple[Setting, str], list[dict]] = {}
    for group in runs.groups.values():
        for run in group:
            if recipe_stem(run) in REFERENCES:
                found.setdefault((setting(run), recipe_stem(run)), []).append(run)
    settings = {
        setting_
        for setting_ in {s for s, _ in found}
        if all(
            (setting_, stem) in found
            and None not in [offline(run, key) for run in found[setting_, stem]]
            for stem in REFERENCES
        )
    }
    for setting_ in settings:
        check_sides(
            {FLOOR: found[setting_, FLOOR], CEILING: found[setting_, CEILING]},
            f"{_named(setting_)}: the floor against the ceiling",
        )
    return {
        setting_: Bracket(
            floor=mean([offline(run, key) for run in found[setting_, FLOOR]], reps=runs.reps),
            ceiling=float(np.mean([offline(run, key) for run in found[setting_, CEILING]])),
            runs=(*found[setting_, FLOOR], *found[setting_, CEILING]),
        )
        for setting_ in sorted(settings)
    }


def bracket_of(found: dict[Setting, Bracket], group: list[dict]) -> Bracket | None:
    """The floor and ceiling of a row's runs (None: the report holds none for its setting, or
    its runs are of several); the row and its references must be one build."""
    settings = {setting(run) for run in group}
    if len(settings) != 1:
        return None
    key = settings.pop()
    bracket = found.get(key)
    if bracket is not None and not is_reference(group):
        stem = recipe_stem(group[0])
        check_sides(
            {stem: group, "floor and ceiling": list(bracket.runs)},
            f"{_named(key)}: {stem} against its floor and ceiling",
        )
    return bracket


def _named(key: Setting) -> str:
    env, scale, agent, label = key
    return f"{env} ({scale}, {agent}{f', {label}' if label else ''})"


def is_reference(group: list[dict]) -> bool:
    return any(recipe_stem(run) in REFERENCES for run in group)
