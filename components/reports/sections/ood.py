"""In- against out-of-distribution behaviour context (analysis `ood_context`)."""

from __future__ import annotations

from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "seeds",
    "in-distribution (paper-comparable)",
    "in-distribution",
    "out-of-distribution (paper-comparable)",
    "out-of-distribution",
)


@register("report_section", "ood")
class OutOfDistribution:
    """The test return with a context from the task's own behaviour data against one from a
    behaviour policy outside the training distribution (the CORRO/UNICORN protocol), mean ± std
    over seeds, paper-comparable and as the run scores it."""

    order = 90
    title = "Out-of-distribution behaviour context (CORRO/UNICORN protocol; not in the paper)"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            found = [r["analysis"]["ood_context"] for r in group if "ood_context" in r["analysis"]]
            found = [f for f in found if f.get("ood_applies")]
            if found:
                cells = []
                for key in ("in_distribution", "out_of_distribution"):
                    for suffix in ("_paper", ""):
                        values = [f.get(key + suffix) for f in found]
                        cells.append(spread(values) if None not in values else "-")
                rows.append((env, scale, recipe, str(len(found)), *cells))
        return table_or_none(self.title, COLUMNS, rows)
