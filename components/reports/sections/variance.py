"""Table 2: the embedding variance (analysis `embedding_variance`)."""

from __future__ import annotations

from components.reports.paper import TABLE2
from components.reports.readings import finite_ratio
from components.reports.tables import (
    RunGroups,
    Section,
    recipe_stem,
    seeds,
    spread,
    table_or_none,
)
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "seeds",
    "embedding variance",
    "paper",
    "within/between task variance (scale-free)",
)


@register("report_section", "variance")
class Variance:
    """The embedding variance over context batches, mean ± std over seeds, beside Table 2's;
    and the scale-free within/between task variance ratio at the task_vectors context size."""

    order = 60
    title = "Table 2: embedding variance over context batches"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            values = [
                r["analysis"]["embedding_variance"]["embedding_variance"]
                for r in group
                if "embedding_variance" in r["analysis"]
            ]
            if not values:
                continue
            paper = TABLE2.get((env, recipe_stem(group[0])))
            found = [r["analysis"].get("task_vectors") for r in group]
            found = [f for f in found if f]
            ratios = [finite_ratio(f) for f in found]
            sizes = sorted({f["context_size"] for f in found})
            rows.append(
                (
                    env,
                    scale,
                    recipe,
                    seeds(group),
                    spread(values, ".2e"),
                    f"{paper:.2e}" if paper else "-",
                    spread(ratios, ".1e") + f" (context {sizes[0]})"
                    if len(sizes) == 1 and None not in ratios
                    else "-",
                )
            )
        return table_or_none(self.title, COLUMNS, rows)
