"""An analysis and the report section that tables it, written outside the package: loaded with
`tools/analyze.py --plugin` and `tools/report.py --plugin`."""

from components.reports.tables import RunGroups, Section, table_or_none
from registry import register


@register("analysis", "step_count")
class StepCount:
    section = "step_count"

    def __call__(self, trained, figures):
        return {"steps_trained": trained.step}


@register("report_section", "step_count")
class StepCountSection:
    """Per row: the gradient steps each seed trained (analysis `step_count`)."""

    order = 200

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = [
            (
                env,
                recipe,
                ",".join(str(r["analysis"]["step_count"]["steps_trained"]) for r in group),
            )
            for (env, _, recipe), group in runs.items()
            if all("step_count" in r["analysis"] for r in group)
        ]
        return table_or_none("Steps trained per seed", ("env", "recipe", "steps"), rows)
