"""Table 1: each row's final test return beside the paper's number."""

from __future__ import annotations

import numpy as np

from components.reports.paper import TABLE1, TABLE1_DENSE
from components.reports.readings import ceiling_of, comparable, last_meta_tests, normalised
from components.reports.tables import (
    RunGroups,
    Section,
    fraction,
    interval,
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
    "paper-comparable",
    "IQM [95% CI]",
    "paper",
    "last 3 meta-tests",
    "of ceiling",
    "sparse (appendix)",
    "of ceiling",
    "std over tasks",
    "dense return",
    "train s",
)


@register("report_section", "returns")
class Returns:
    """Per (env, scale, recipe): the paper-comparable final return (on the point robots the
    sparse return as the paper scored it, 1 − d inside the goal radius; the dense return where
    the paper gives dense returns), mean ± std over seeds and the IQM with its 95%
    stratified-bootstrap interval; the paper's number (its scale; a labelled row is set beside
    its recipe's); the mean of each run's last three meta-tests; the fraction of the split's
    ceiling; the appendix sparse return ((r − g)/|g| above g) and its fraction; the mean std over
    test tasks; the dense return; the training time. Meta-World runs are left to the `metaworld`
    section: the paper's Table 1 has no Meta-World column, and their return is not
    paper-comparable (they are read in normalised score)."""

    order = 10
    title = "Table 1: final test return, mean ± std over seeds and IQM [95% CI], beside the paper's"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            if normalised(group[0]) is not None:  # Meta-World: the `metaworld` section
                continue
            task_stds = [r["eval"].get("test_return_std") for r in group]
            secs = [r["eval"]["train_seconds"] for r in group if "train_seconds" in r["eval"]]
            dense = [r["eval"].get("dense_return_mean") for r in group]
            sparse = [r["eval"].get("sparse_return_mean") for r in group]
            ours = [comparable(r) for r in group]
            last = [last_meta_tests(r) for r in group]
            paper = TABLE1.get((env, recipe_stem(group[0])))
            paper_cell = "-" if paper is None else f"{paper[0]:.2f} ± {paper[1]:.2f}"
            if paper and env in TABLE1_DENSE:
                paper_cell += " (dense)"
            formula = "dense" if env in TABLE1_DENSE or sparse[0] is None else "paper"
            rows.append(
                (
                    env,
                    scale,
                    recipe,
                    seeds(group),
                    spread(ours) if None not in ours else "-",
                    interval(ours, runs.reps),
                    paper_cell,
                    spread(last) if None not in last else "-",
                    fraction(ours, ceiling_of(group, formula)) if None not in ours else "-",
                    spread(sparse) if None not in sparse else "-",
                    fraction(sparse, ceiling_of(group, "sparse")) if None not in sparse else "-",
                    f"{np.mean(task_stds):.2f}" if None not in task_stds else "-",
                    spread(dense) if None not in dense else "-",
                    f"{np.mean(secs):.0f}" if secs else "-",
                )
            )
        return table_or_none(self.title, COLUMNS, rows)
