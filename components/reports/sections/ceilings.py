"""Ceilings: each test split's best possible return, under each formula."""

from __future__ import annotations

from components.reports.tables import RunGroups, Section, table_or_none
from registry import register


@register("report_section", "ceilings")
class Ceilings:
    """The mean test return of a task-knowing oracle on each test split (the runs' recorded
    `ceiling`), under the paper-comparable, the appendix sparse and the dense formula."""

    order = 40
    title = "Ceilings: the mean test return of a task-knowing oracle on the same test tasks"

    def __call__(self, runs: RunGroups) -> Section | None:
        found: dict[tuple[str, tuple], dict] = {}
        for (env, _, _), group in runs.items():
            for run in group:
                best = run["eval"].get("ceiling")
                if best:
                    tasks = tuple(sorted(run["eval"]["per_task_return"]))
                    found[(env, tasks)] = best
        rows = [
            (
                env,
                str(len(tasks)),
                *(f"{best[k]:.2f}" if k in best else "-" for k in ("paper", "sparse", "dense")),
            )
            for (env, tasks), best in sorted(found.items())
        ]
        columns = ("env", "test tasks", "paper-comparable", "sparse (appendix)", "dense")
        return table_or_none(self.title, columns, rows)
