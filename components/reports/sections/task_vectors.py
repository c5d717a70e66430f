"""Task vectors: what z holds (analysis `task_vectors`)."""

from __future__ import annotations

from components.reports.readings import finite_ratio
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register

COLUMNS = (
    "env",
    "scale",
    "recipe",
    "seeds",
    "read-out error (test)",
    "nearest training task",
    "identified",
    "within/between variance",
    "holding distance",
    "holding angle °",
)


@register("report_section", "task_vectors")
class TaskVectors:
    """Mean ± std over seeds: the error of a ridge read-out of the task parameters from z
    (fitted on training tasks, measured on test tasks), the error of taking the nearest
    training task, the fraction of test tasks identified, the scale-free within/between
    variance ratio, and how far the meta-tested robot ends from its goal (last steps of the
    episode: distance and angle)."""

    order = 50
    title = (
        "Task vectors: read-out of the task from z, identification, variance ratio, goal holding"
    )

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            found = [
                r["analysis"]["task_vectors"] for r in group if "task_vectors" in r["analysis"]
            ]
            if not found:
                continue
            unit = found[0]["unit"]

            def cell(key: str, digits: str = ".2f", found=found) -> str:
                return spread([f[key] for f in found], digits)

            ratios = [finite_ratio(f) for f in found]
            holding = [f.get("holding_error") for f in found]
            hold = {
                k: spread([h[k] for h in holding], digits)
                if None not in holding and k in holding[0]
                else "-"
                for k, digits in (("distance", ".3f"), ("angle", ".2f"))
            }
            rows.append(
                (
                    env,
                    scale,
                    recipe,
                    str(len(found)),
                    f"{cell('decoding_error', '.3g')} {unit}".strip(),
                    f"{cell('nearest_train_task_error', '.3g')} {unit}".strip(),
                    cell("identification_accuracy"),
                    spread(ratios, ".1e") if None not in ratios else "-",
                    hold["distance"],
                    hold["angle"],
                )
            )
        return table_or_none(self.title, COLUMNS, rows)
