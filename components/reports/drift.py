"""Does a study still build what its record, and what its output folder, holds? Each row of the
study (recipe, variant, environment, scale) is composed as a run of it would be, without building
anything, and its bindings are compared with the configuration the runs of that row were built
from: the record's (configs.jsonl), and each run folder's own (its run.json). A row that drifted
would count runs of another build as done, or append them to the record under the same name; the
study's author re-labels the row (a variant of its own) or runs it into a new record or folder."""

from __future__ import annotations

from pathlib import Path

from components.outputs.run_record import read_run_record
from components.reports.builds import UNKNOWN
from components.reports.records import read_configs, read_records
from components.sweep.study import RunSpec, Study
from registry import FocalppError, compose
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
        differ = _differs(spec, study, configs[digests.pop()])
        if differ:
            problems.append(f"{what}: {'; '.join(differ)}")
    return problems


def drifted_runs(study: Study, folder: Path) -> list[str]:
    """One line per run of `study` already in the output `folder` (finished, or checkpointed
    and so to be resumed) that a run of its row would not build today: its configuration
    differs from the row's (named), or its run.json cannot say (no effective bindings). The
    sweep skips a finished run and resumes a checkpointed one from its own configuration, so
    without this a run of the same name but another configuration would count as done."""
    runs = Path(folder) / "runs"
    if not runs.is_dir():
        return []
    problems: list[str] = []
    rows: dict[tuple[str, str, str], list[tuple[RunSpec, dict]]] = {}
    for spec in study.runs():
        run_dir = runs / spec.name
        if not (run_dir / "run.json").is_file():
            continue  # never started, or died before its record: started afresh
        try:
            record = read_run_record(run_dir, doing="check")
        except FocalppError as e:
            problems.append(f"{spec.name}: {e}")
            continue
        rows.setdefault((spec.recipe, spec.variant, spec.env), []).append((spec, record))
    for members in rows.values():
        by_config: dict[str, list[tuple[RunSpec, dict]]] = {}  # composed once per configuration
        for spec, record in members:
            if not isinstance(record.get("effective_bindings"), dict):
                problems.append(f"{spec.name}: its run.json records no effective bindings")
            else:
                digest = record.get("config_digest", UNKNOWN)
                by_config.setdefault(digest, []).append((spec, record))
        for same in by_config.values():
            spec, record = same[0]
            if differ := _differs(spec, study, record["effective_bindings"]):
                names = ", ".join(s.name for s, _ in same)
                problems.append(f"{names}: built otherwise ({'; '.join(differ)})")
    return problems


def _differs(spec: RunSpec, study: Study, recorded: dict[str, str]) -> list[str]:
    """The bindings in which a run of `spec`, composed now, would differ from `recorded`."""
    compose(
        spec.recipe,
        env=spec.env,
        scale=study.scale,
        seed=spec.seed,
        bindings=list(spec.bindings),
        plugins=list(spec.plugins),
    )
    return recorded_config_check(recorded)
