"""Meta-World: can the context matter on this task at this scale? The gap between the floor
and the ceiling of task inference, with its interval, in score and in success rate."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from components.reports import metaworld
from components.reports.intervals import difference
from components.reports.readings import normalised
from components.reports.sections.metaworld_scores import MEASURES
from components.reports.tables import RunGroups, Section, table_or_none
from registry import register

CANNOT = "no: the context cannot matter here at this scale"


def context_can_matter(floor: list[float], ceiling: list[float], reps: int) -> tuple[str, bool]:
    """The gap ceiling − floor as `mean [95% CI]`, and whether its interval excludes zero (a
    verdict on FOCAL++ against FOCAL on the task means something only then)."""
    gap = difference(ceiling, floor, reps=reps)
    return gap.format(".3f"), gap.low > 0 or gap.high < 0


@register("report_section", "metaworld_gap")
class MetaWorldGap:
    """Per task and measure: the floor (FOCAL's learner with z = 0) and the ceiling (with the
    true task), their difference with a 95% bootstrap interval (each row's seeds resampled on
    their own), and whether the interval excludes zero. Where it holds zero, knowing the task
    changes nothing the measure sees, so no order of two context encoders there says anything
    about their contexts."""

    order = 31
    title = (
        "Meta-World: the gap between the floor (z = 0) and the ceiling (the true task), "
        "mean [95% CI]: can the context matter?"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        found: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(dict)
        for (env, scale, recipe), group in runs.items():
            if recipe in metaworld.REFERENCES and normalised(group[0]) is not None:
                found[(env, scale)][recipe] = group
        rows = []
        for (env, scale), refs in sorted(found.items()):
            floor, ceiling = refs.get(metaworld.FLOOR), refs.get(metaworld.CEILING)
            if not floor or not ceiling or min(len(floor), len(ceiling)) < 2:
                continue
            for measure, read in MEASURES.items():
                low, high = [read(r) for r in floor], [read(r) for r in ceiling]
                if None in low or None in high:
                    continue
                gap, matters = context_can_matter(low, high, runs.reps)
                rows.append(
                    (env, scale, measure, f"{np.mean(low):.3f}", f"{np.mean(high):.3f}", gap,
                     "yes" if matters else CANNOT)
                )  # fmt: skip
        columns = ("env", "scale", "measure", "floor", "ceiling", "gap [95% CI]", "can matter")
        return table_or_none(self.title, columns, rows)
