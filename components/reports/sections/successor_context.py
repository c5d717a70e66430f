"""The successors' question: does the context from another task's policy cost less than FOCAL's?"""

from __future__ import annotations

from components.reports.readings import OOD_SOURCE, dense_return, grid_drops, shift_return
from components.reports.successors import UNICORN_TABLE2, unicorn_drop
from components.reports.tables import RunGroups, Section, recipe_stem, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "seeds",
    "own data",
    "another task's policy",
    "drop",
    "online",
    "drop, dense",
    "UNICORN Table 2 (in / out)",
    "its drop",
)


@register("report_section", "successor_context")
class SuccessorContext:
    """On the test tasks (the context grid's test split): the return with the task's own data,
    with another training task's expert behaviour policy rolled out in the task, the drop
    between them (mean ± std of each seed's), the run's own online collection, paper-comparable
    where the run scored it; UNICORN's Table 2 numbers (dense returns at its scale and on its
    data: set them beside the dense drop)."""

    order = 110
    title = (
        "In- and out-of-distribution context on the test tasks, beside UNICORN's Table 2 (dense)"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            grids = [
                r["analysis"]["context_grid"]["cells"]["test"]
                for r in group
                if "context_grid" in r["analysis"]
            ]
            if not grids or OOD_SOURCE not in grids[0]:
                continue

            def cell(source: str, grids=grids) -> str:
                found = [shift_return(g[source]) for g in grids if source in g]
                return spread(found) if len(found) == len(grids) else "-"

            theirs = UNICORN_TABLE2.get((env, recipe_stem(group[0])))
            paper = "-" if theirs is None else f"{theirs[0]:g} / {theirs[1]:g}"
            drop = unicorn_drop(env, recipe_stem(group[0]))
            dense = grid_drops(group, measure=dense_return)
            rows.append(
                (env, scale, recipe, str(len(grids)), cell("own"), cell(OOD_SOURCE),
                 spread(grid_drops(group)), cell("online"),
                 "-" if None in dense else spread(dense), paper,
                 "-" if drop is None else f"{drop:g}")
            )  # fmt: skip
        return table_or_none(self.title, COLUMNS, rows)
