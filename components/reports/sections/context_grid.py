"""The context grid: the meta-test under each context source (analysis `context_grid`)."""

from __future__ import annotations

from components.reports.readings import shift_return
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register


@register("report_section", "context_grid")
class ContextGrid:
    """Per split and context source — the task's own data (own), each other quality, another
    training task's expert behaviour policy rolled out in the task (other_policy), the run's
    own online collection (online) — the return (paper-comparable where the run scored it),
    mean ± std over seeds, and its change against own."""

    order = 100
    title = (
        "Context grid: the meta-test return per split and context source, and its change "
        "against own"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            grids = [
                r["analysis"]["context_grid"] for r in group if "context_grid" in r["analysis"]
            ]
            if not grids:
                continue
            for split in ("train", "test"):
                own = [shift_return(g["cells"][split]["own"]) for g in grids]
                for source in grids[0]["cells"][split]:
                    values = [shift_return(g["cells"][split][source]) for g in grids]
                    change = [v - o for v, o in zip(values, own, strict=True)]
                    rows.append(
                        (env, scale, recipe, split, source, str(len(values)), spread(values),
                         spread(change) if source != "own" else "-")
                    )  # fmt: skip
        columns = ("env", "scale", "recipe", "split", "context", "seeds", "return", "against own")
        return table_or_none(self.title, columns, rows)
