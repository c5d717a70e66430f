"""Labelled rows: a row under a label against the same row without one."""

from __future__ import annotations

from components.reports.intervals import improvement, verdict
from components.reports.readings import comparable, last_three
from components.reports.tables import RunGroups, Section, recipe_stem, spread, table_or_none
from registry import register

MEASURES = (("return (paper-comparable)", comparable), ("return, last 3 meta-tests", last_three))
COLUMNS = (
    "env",
    "scale",
    "row",
    "label",
    "measure",
    "labelled, mean ± std",
    "unlabelled, mean ± std",
    "seeds",
    "P(labelled higher) [95% CI]",
    "verdict",
)


@register("report_section", "labelled")
class Labelled:
    """A labelled row (a study's variant: another binding, another computation of the same
    recipe) against the same recipe, environment and scale without a label, where a report
    reads both, e.g. two records: the mean ± std over seeds of each, and P(a labelled run
    returns more than an unlabelled one) with its 95% stratified-bootstrap interval. The
    verdict says 'above' or 'below' only where the interval excludes 0.5, else 'same within
    noise': the test of a change meant to leave the results where they were."""

    order = 22
    title = "Labelled rows against the same row unlabelled: P(labelled higher) [95% CI]"

    def __call__(self, runs: RunGroups) -> Section | None:
        by_key = {
            (env, scale, recipe_stem(group[0]), group[0].get("label") or ""): group
            for (env, scale, _), group in runs.items()
        }
        rows = []
        for measure, value in MEASURES:
            for (env, scale, stem, label), group in sorted(by_key.items()):
                plain = by_key.get((env, scale, stem, ""))
                if not label or plain is None:
                    continue
                x, y = [value(r) for r in group], [value(r) for r in plain]
                if min(len(x), len(y)) < 2 or None in x + y:
                    continue
                p = improvement(x, y, reps=runs.reps)
                rows.append(
                    (env, scale, stem, label, measure, spread(x), spread(y),
                     f"{len(x)} v {len(y)}", p.format(), verdict(p, None))
                )  # fmt: skip
        return table_or_none(self.title, COLUMNS, rows)
