"""Figure 4c: the batch-attention AUC (analysis `attention_auc`)."""

from __future__ import annotations

import numpy as np

from components.reports.paper import ATTENTION_AUC
from components.reports.tables import RunGroups, Section, spread, table_or_none
from registry import register


@register("report_section", "attention_auc")
class Attention:
    """How well the batch-wise weights tell rewarded transitions from unrewarded ones: the AUC,
    mean ± std over the seeds whose encoder has a gate, and the fraction of rewarded
    transitions in the contexts scored."""

    order = 80
    title = f"Figure 4c: batch-attention AUC, rewarded vs unrewarded (paper: {ATTENTION_AUC})"

    def __call__(self, runs: RunGroups) -> Section | None:
        rows = []
        for (env, scale, recipe), group in runs.items():
            found = [
                r["analysis"]["attention_auc"] for r in group if "attention_auc" in r["analysis"]
            ]
            aucs = [
                a["attention_auc"] for a in found if a["attention_gated"] and a["attention_auc"]
            ]
            if aucs:
                rewarded = np.mean([a["rewarded_fraction"] for a in found])
                rows.append(
                    (env, scale, recipe, str(len(aucs)), spread(aucs, ".3f"), f"{rewarded:.2f}")
                )
        columns = ("env", "scale", "recipe", "seeds", "AUC", "rewarded fraction")
        return table_or_none(self.title, columns, rows)
