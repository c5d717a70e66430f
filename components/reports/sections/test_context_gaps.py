"""Each test-context protocol read against the no-context floor and the true-task ceiling of the
same learner, environment and scale (docs/TEST_CONTEXTS.md): how much of the gap between them
the protocol's context recovers, and whether a drop from `offline` is inference lost."""

from __future__ import annotations

import re

import numpy as np

from components.reports.intervals import mean
from components.reports.tables import RunGroups, Section, recipe_stem, table_or_none
from registry import register

FLOOR, CEILING = "reference_no_context", "reference_oracle"
COLUMNS = (
    "env",
    "scale",
    "learner",
    "recipe",
    "protocol",
    "recovered share",
    "return",
    "floor [95% CI]",
    "ceiling",
    "reads as",
    "drop from offline",
)


@register("report_section", "test_context_gaps")
class ProtocolGaps:
    """Per environment, learner and row, each test-context protocol's headline return (the
    final meta-test's, mean over seeds) as the share of the floor-to-ceiling gap it recovers:
    (return − floor) / (ceiling − floor), where the floor is `reference_no_context` (z = 0: no
    context at all) and the ceiling `reference_oracle` (the true task told), both on the same
    learner, environment and scale. A cell whose mean lies within or below the floor's 95%
    interval reads "at the floor": it shows no inference, so no drop to it is inference lost;
    the drop from `offline` (offline minus the protocol's return, mean over seeds) is given only
    where both cells lie above the floor's interval. The learner is the run's built agent (a run
    recorded before runs named it: the one its bindings choose, else BRAC, the trainer's
    default). Shown only where the report holds the floor and the ceiling."""

    order = 97
    title = "Test-context protocols against the no-context floor and the true-task ceiling"

    def __call__(self, runs: RunGroups) -> Section | None:
        by_learner: dict[tuple[str, str, str, str], list[dict]] = {}
        for (env, scale, _), group in runs.items():
            for run in group:
                key = (env, scale, learner(run), recipe_stem(run))
                by_learner.setdefault(key, []).append(run)
        rows = []
        for (env, scale, agent, stem), group in sorted(by_learner.items()):
            floor = by_learner.get((env, scale, agent, FLOOR))
            ceiling = by_learner.get((env, scale, agent, CEILING))
            if stem in (FLOOR, CEILING) or not floor or not ceiling:
                continue
            low = mean([offline(r) for r in floor], reps=runs.reps)
            top = float(np.mean([offline(r) for r in ceiling]))
            cells = protocol_returns(group)
            above = {name: float(np.mean(v)) > low.high for name, v in cells.items()}
            for name, values in cells.items():
                value = float(np.mean(values))
                share = (value - low.point) / (top - low.point) if top != low.point else None
                drop = "-"
                if name != "offline" and above.get("offline") and above[name]:
                    drop = f"{np.mean(cells['offline']) - value:.2f}"
                rows.append(
                    (
                        env, scale, agent, stem, name,
                        "-" if share is None else f"{share:.2f}",
                        f"{value:.2f}", low.format(), f"{top:.2f}",
                        "above the floor" if above[name] else "at the floor: no inference",
                        drop,
                    )
                )  # fmt: skip
        return table_or_none(self.title, COLUMNS, rows)


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


def offline(run: dict) -> float:
    """The run's headline return with its own offline context."""
    cells = run["eval"].get("test_contexts") or {}
    if "mean" in cells.get("offline", {}):
        return cells["offline"]["mean"]
    return run["eval"]["test_return_mean"]


def protocol_returns(group: list[dict]) -> dict[str, list[float]]:
    """protocol -> the headline return of each seed that it scored (`offline` included)."""
    found: dict[str, list[float]] = {}
    for run in group:
        for name, cell in (run["eval"].get("test_contexts") or {}).items():
            if "mean" in cell:
                found.setdefault(name, []).append(cell["mean"])
    return found
