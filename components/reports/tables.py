"""What a report section is given and gives back, and the cells every table shares.

A section (kind `report_section`, `components/reports/sections/`) is called with the runs of a
report grouped by (env, scale, recipe), a labelled run's recipe reading `stem (label)`, and
returns a `Section`: tables and/or figures, or None where its runs hold nothing it reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from components.reports.intervals import REPS, iqm

Groups = dict[tuple[str, str, str], list[dict]]  # (env, scale, recipe) -> runs, sorted


@dataclass
class Table:
    title: str  # ≤ 120 characters: what a column means is the section's page in docs/REPORTS.md
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]
    summary: str = ""  # a line under the table, made from its rows (the headline's count)

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |"]
        lines.append("|" + "---|" * len(self.columns))
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.summary:
            lines += ["", self.summary]
        return "\n".join(lines) + "\n"


@dataclass
class Section:
    tables: list[Table] = field(default_factory=list)
    figures: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class RunGroups:
    """A report's runs as every section reads them."""

    groups: Groups
    reps: int = REPS  # bootstrap replications of every interval
    out: Path | None = None  # where figures go; None: the report draws none

    def items(self):
        return self.groups.items()


def table_or_none(title: str, columns: tuple[str, ...], rows: list) -> Section | None:
    """A section of one table, or None where it has no rows."""
    return Section([Table(title, columns, rows)]) if rows else None


def recipe_stem(run: dict) -> str:
    """The run's recipe file name without its folder and `.gin`: the key of the paper's tables."""
    return Path(run["recipe"]).stem


def spread(values: Sequence[float], digits: str = ".2f") -> str:
    values = np.asarray(values, dtype=float)
    return f"{values.mean():{digits}} ± {values.std():{digits}}"


def seeds(group: list[dict]) -> str:
    return ",".join(str(s) for s in sorted(r["seed"] for r in group))


def fraction(values: Sequence[float], best: float | None) -> str:
    """Mean as a percentage of the ceiling (returns ≥ 0 only; dense returns are negative)."""
    if best is None or best <= 0 or not values:
        return "-"
    return f"{100 * np.mean(values) / best:.0f}%"


def interval(values: Sequence[float | None], reps: int) -> str:
    """IQM over seeds [95% stratified-bootstrap interval]; '-' below two seeds."""
    if len(values) < 2 or None in values:
        return "-"
    return iqm(values, reps=reps).format()
