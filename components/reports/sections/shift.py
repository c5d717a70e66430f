"""Table 3: the return under a shift of context quality (analysis `distribution_shift`)."""

from __future__ import annotations

from components.reports.paper import TABLE3
from components.reports.readings import quality_drops
from components.reports.tables import RunGroups, Section, recipe_stem, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "train quality",
    "test context",
    "seeds",
    "paper-comparable",
    "paper",
    "test return",
    "drop",
    "paper's drop",
)


@register("report_section", "shift")
class Shift:
    """Per train quality and test context: the paper-comparable return (on sparse point robots
    1 − d inside the goal radius) beside Table 3's number; the test return (the appendix sparse
    return, or a dense family's return); the drop, each seed's loss against a context of the
    quality it trained on (paper-comparable where there is one), beside the paper's drop."""

    order = 70
    title = "Table 3: return under distribution shift, and each seed's drop against its own quality"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            shifts = [
                r["analysis"]["distribution_shift"]
                for r in group
                if "distribution_shift" in r["analysis"]
            ]
            stem = recipe_stem(group[0])
            drops = quality_drops(group)
            for train in sorted({s["train_quality"] for s in shifts}):
                same = [s["shift"] for s in shifts if s["train_quality"] == train]
                for test in same[0]:
                    values = [s[test]["mean"] for s in same if test in s]
                    papers = [s[test].get("paper_mean") for s in same if test in s]
                    paper = TABLE3.get((env, stem, train, test))
                    own = TABLE3.get((env, stem, train, train))
                    drop = drops.get((train, test), [])
                    rows.append(
                        (
                            env,
                            scale,
                            recipe,
                            train,
                            test,
                            str(len(values)),
                            spread(papers) if None not in papers else "-",
                            f"{paper:.2f}" if paper is not None else "-",
                            spread(values),
                            spread(drop) if drop and test != train else "-",
                            f"{own - paper:.2f}"
                            if None not in (own, paper) and test != train
                            else "-",
                        )
                    )
        return table_or_none(self.title, COLUMNS, rows)
