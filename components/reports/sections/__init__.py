"""Importing this package registers every section of a report (kind `report_section`).

A section is one file: a class registered as `report_section`, built as cls(), with an `order`
(its place in report.md; a plugin's goes where its number puts it) and a docstring that says
what its columns mean (docs/REPORTS.md gathers them), called with the report's runs
(`components.reports.tables.RunGroups`) and returning a `Section` of tables and/or figures,
or None.
"""

import components.reports.sections.attention
import components.reports.sections.ceilings
import components.reports.sections.context_grid
import components.reports.sections.labelled
import components.reports.sections.metaworld_gap
import components.reports.sections.metaworld_scores
import components.reports.sections.ood
import components.reports.sections.orders
import components.reports.sections.per_env_figures
import components.reports.sections.provenance
import components.reports.sections.representation
import components.reports.sections.returns
import components.reports.sections.shift
import components.reports.sections.successor_context
import components.reports.sections.task_vectors
import components.reports.sections.test_context_gaps
import components.reports.sections.test_context_orders
import components.reports.sections.test_contexts
import components.reports.sections.variance
import components.reports.sections.variance_sparsity  # noqa: F401
