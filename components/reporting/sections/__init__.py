"""Importing this package registers every section of a report (kind `report_section`).

A section is one file: a class registered as `report_section`, built as cls(), with an `order`
(its place in report.md; a plugin's goes where its number puts it) and a docstring that says
what its columns mean (docs/REPORTS.md gathers them), called with the report's runs
(`components.reporting.tables.RunGroups`) and returning a `Section` of tables and/or figures,
or None.
"""

import components.reporting.sections.attention
import components.reporting.sections.ceilings
import components.reporting.sections.context_grid
import components.reporting.sections.metaworld_gap
import components.reporting.sections.metaworld_scores
import components.reporting.sections.ood
import components.reporting.sections.orders
import components.reporting.sections.per_env_figures
import components.reporting.sections.representation
import components.reporting.sections.returns
import components.reporting.sections.shift
import components.reporting.sections.successor_context
import components.reporting.sections.task_vectors
import components.reporting.sections.test_contexts
import components.reporting.sections.variance
import components.reporting.sections.variance_sparsity  # noqa: F401
