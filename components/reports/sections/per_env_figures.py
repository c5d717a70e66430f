"""The figures of a report, per environment and scale: final returns, orders, learning curves."""

from __future__ import annotations

from components.reports.tables import RunGroups, Section
from registry import register


@register("report_section", "figures")
class Figures:
    """Per (env, scale), in the metric the verdicts read (Meta-World's normalised score, the
    dense return where the paper reports dense returns, else the paper-comparable return):
    `iqm-*.png` (each row's IQM with its interval, the split's ceiling, or Meta-World's floor and
    ceiling rows, and the paper's number), `orders-*.png` (P(X beats Y) for the paper's orders on
    a fixed [0, 1] axis, 0.5 marked) and `curves-*.png` (learning curves as small multiples,
    marks where a run made three meta-tests or fewer). Every title names the metric and the
    seeds; one colour is one method in every figure; see components/reports/report_figures.py."""

    order = 115

    def __call__(self, runs: RunGroups) -> Section | None:
        if runs.out is None:
            return None
        # matplotlib and rliable's plots (1 s) load only when a report draws
        from components.reports.report_figures import report_figures

        drawn = report_figures(runs.groups, runs.out, runs.reps)
        return Section(figures=drawn) if drawn else None
