"""Provenance: what each row's runs ran on, and what some of them did not record."""

from __future__ import annotations

from components.reports.builds import (
    UNKNOWN,
    dataset_of,
    numerics_of,
    precision_of,
    provenance_gaps,
)
from components.reports.tables import RunGroups, Section, table_or_none
from registry import register


@register("report_section", "provenance")
class Provenance:
    """Per row (env, scale, recipe): its runs' numerics (portable: the same bits on every CPU;
    free), precision, dataset build (content digest, first 12 characters), CPU and commit (a
    run from an uncommitted tree says `dirty`), and what some of them did not record
    (`unrecorded`: configuration digest, the commit of a clean tree, CPU, torch version,
    precision; `-` for nothing). A row whose runs differ in a column lists each value."""

    order = 130
    title = "Provenance: what each row ran on, and what some of its runs did not record"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in sorted(runs.items()):
            rows.append(
                (
                    env,
                    scale,
                    recipe,
                    str(len(group)),
                    _each(numerics_of(r) for r in group),
                    _each(precision_of(r) for r in group),
                    _each(d[:12] if d != UNKNOWN else d for d in map(dataset_of, group)),
                    _each(r.get("cpu") or UNKNOWN for r in group),
                    _each(_commit(r) for r in group),
                    provenance_gaps(group),
                )
            )
        columns = (
            "env", "scale", "recipe", "runs", "numerics", "precision", "dataset", "CPU",
            "commit", "unrecorded",
        )  # fmt: skip
        return table_or_none(self.title, columns, rows)


def _commit(run: dict) -> str:
    commit = run.get("commit") or UNKNOWN
    if commit == UNKNOWN:
        return UNKNOWN
    return commit[:7] + ("" if run.get("clean") is True else " (dirty)")


def _each(values) -> str:
    return ", ".join(sorted(set(values)))
