"""Does a study still build what its record holds? Each row of the study (recipe, variant,
environment, scale) is composed as a run of it would be, without building anything, and its
bindings are compared with the configuration the record's runs of that row were built from
(configs.jsonl). A row that drifted would append runs of another build to the record under the
same name; the study's author re-labels the row (a variant of its own) or re-runs it into a
new record."""

from __future__ import annotations

from pathlib import Path

from components.reports.builds import UNKNOWN
from components.reports.records import read_configs, read_records
from components.sweep.study import Study
from registry import compose
from registry.provenance import recorded_config_check


def drifted_rows(study: Study, record: Path) -> list[str]:
    """One line per row of `study` that would not be built as the record's runs of that row
    were: its bindings differ (named), or the record cannot say (no configuration digest).
    Rows the record does not hold yet are left out (nothing to drift from), and so is a record
    not yet written (a study whose first run is still to come)."""
    if not (record / "runs.jsonl").exists():
        return []
    runs, configs = read_records(record), read_configs(record)
    problems, seen = [], set()
    for spec in study.runs():
        row = (spec.recipe, spec.variant, spec.env, study.scale)
        if row in seen:
            continue  # the seeds of a row share one configuration
        seen.add(row)
        digests = {
            r["config_digest"]
            for r in runs
            if (r["recipe"], r["label"], r["env"], r["scale"]) == row
        }
        if not digests:
            continue
        what = f"{spec.recipe} on {spec.env}" + (f" ({spec.variant})" if spec.variant else "")
        if UNKNOWN in digests or len(digests) > 1:
            problems.append(
                f"{what}: the record's runs carry {'no' if UNKNOWN in digests else 'several'} "
                "configuration digest(s), so the row cannot be checked"
            )
            continue
        compose(
            spec.recipe,
            env=spec.env,
            scale=study.scale,
            seed=spec.seed,
            bindings=list(spec.bindings),
            plugins=list(spec.plugins),
        )
        differ = recorded_config_check(configs[digests.pop()])
        if differ:
            problems.append(f"{what}: {'; '.join(differ)}")
    return problems
