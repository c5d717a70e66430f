"""Each test-context protocol read against the no-context floor and the true-task ceiling of the
same learner, environment, scale and label (components/reports/floors.py, docs/TEST_CONTEXTS.md):
how much of the gap between them the protocol's context recovers, and whether a drop from
`offline` is inference lost."""

from __future__ import annotations

import numpy as np

from components.reports.floors import Bracket, brackets, is_reference, learner, setting
from components.reports.tables import RunGroups, Section, table_or_none
from registry import register

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
    learner, environment, scale and label (a study's variant: the learner's settings). A cell
    whose mean lies within or below the floor's 95% interval reads "at the floor": it shows no
    inference, so no drop to it is inference lost; the drop from `offline` (offline minus the
    protocol's return, mean over seeds) is given only where both cells lie above the floor's
    interval. The learner is the run's built agent (a run recorded before runs named it: the
    one its bindings choose, else BRAC, the trainer's default). Shown only where the report
    holds the floor and the ceiling."""

    order = 97
    title = "Test-context protocols against the no-context floor and the true-task ceiling"

    def __call__(self, runs: RunGroups) -> Section | None:
        found = brackets(runs)
        rows = []
        for (env, scale, recipe), row in runs.items():
            by_setting: dict = {}
            for run in row:  # a row run on two learners is read against each one's floor
                by_setting.setdefault(setting(run), []).append(run)
            for key, group in by_setting.items():
                if key in found and not is_reference(group):
                    rows += _rows(env, scale, recipe, group, found[key])
        return table_or_none(self.title, COLUMNS, rows)


def _rows(env: str, scale: str, recipe: str, group: list[dict], bracket: Bracket) -> list[tuple]:
    """One row per protocol of one row's runs on one learner, read against its bracket."""
    cells = protocol_returns(group)
    offline = float(np.mean(cells["offline"])) if "offline" in cells else None
    rows = []
    for name, values in cells.items():
        value = float(np.mean(values))
        drop = "-"
        if name != "offline" and offline is not None and bracket.drop_is_inference(offline, value):
            drop = f"{offline - value:.2f}"
        rows.append(
            (
                env, scale, learner(group[0]), recipe, name,
                bracket.share_text(value),
                f"{value:.2f}", bracket.floor.format(), f"{bracket.ceiling:.2f}",
                "above the floor" if bracket.above(value) else "at the floor: no inference",
                drop,
            )
        )  # fmt: skip
    return rows


def protocol_returns(group: list[dict]) -> dict[str, list[float]]:
    """protocol -> the headline return of each seed that it scored (`offline` included)."""
    found: dict[str, list[float]] = {}
    for run in group:
        for name, cell in (run["eval"].get("test_contexts") or {}).items():
            if "mean" in cell:
                found.setdefault(name, []).append(cell["mean"])
    return found
