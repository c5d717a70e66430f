"""Representation trend: the seeds whose encoder's own loss rose while they trained."""

from __future__ import annotations

from components.reports.tables import RunGroups, Section, table_or_none
from registry import register


@register("report_section", "representation")
class Representation:
    """Per row (analysis `representation_trend`): how many seeds were analysed, which seeds
    have a representation loss (a `loss_*` term the encoder learns from) that rose over the
    second half of training — the last third of that half above its first third by more than
    the analysis' margin and two standard errors — and which terms rose."""

    order = 105
    title = "Representation trend: seeds whose encoder's loss rose over the second half of training"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            found = [
                (r["seed"], r["analysis"]["representation_trend"])
                for r in group
                if "representation_trend" in r["analysis"]
            ]
            if not found:
                continue
            rising = sorted((seed, trend["rising"]) for seed, trend in found if trend["rising"])
            terms = sorted({term for _, rose in rising for term in rose})
            rows.append(
                (env, scale, recipe, str(len(found)),
                 ",".join(str(seed) for seed, _ in rising) or "none",
                 ", ".join(terms) or "-")
            )  # fmt: skip
        columns = ("env", "scale", "recipe", "seeds", "rising in seeds", "terms")
        return table_or_none(self.title, columns, rows)
