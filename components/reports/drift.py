"""Does a study still build what its record, and what its output folder, holds? Each row of the
study (recipe, variant, environment, scale) is composed as a run of it would be, without building
anything, and its bindings are compared with the configuration the runs of that row were built
from: the record's (configs.jsonl), and each run folder's own (its run.json). A row that drifted
would count runs of another build as done, or append them to the record under the same name; the
study's author re-labels the row (a variant of its own) or runs it into a new record or folder."""

from __future__ import annotations

from pathlib import Path

from components.outputs.checkpoint import CHECKPOINT
from components.outputs.run_record import read_run_record
from components.reports.builds import UNKNOWN
from components.reports.records import read_configs, read_records
from components.sweep.study import RunSpec, Study
from registry import FocalppError, compose
from registry.provenance import config_digest, recorded_config_check


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
        differ = _differs(spec, configs[digests.pop()])
        if differ:
            problems.append(f"{what}: {'; '.join(differ)}")
    return problems


def drifted_runs(study: Study, folder: Path, recorded: frozenset[str] = frozenset()) -> list[str]:
    """One line per run of `study` in the output `folder` that the sweep would keep (finished:
    skipped; checkpointed: resumed from its own configuration) although a run of its row would
    not be built so today: its configuration differs (named), or its run.json cannot say (not
    readable, no effective bindings). Runs that `recorded` (a record's run names) holds whole,
    group by group, are not taken from the folder and are left out."""
    problems: list[str] = []
    configs: dict[tuple, tuple[dict, list[RunSpec]]] = {}  # a row's configuration: composed once
    for spec in _kept(study, Path(folder) / "runs", recorded):
        try:
            record = read_run_record(Path(folder) / "runs" / spec.name, doing="count as done")
        except FocalppError as e:
            problems.append(str(e))
            continue
        bindings = record.get("effective_bindings")
        if not isinstance(bindings, dict):
            problems.append(f"{spec.name}: its run.json records no effective bindings (a run "
                            "made before runs recorded them), so it cannot be shown to be this "
                            "study's")  # fmt: skip
            continue
        # keyed by the bindings' own digest, not the one the file claims: an edited file shows
        key = (spec.recipe, spec.variant, spec.env, config_digest(bindings))
        configs.setdefault(key, (bindings, []))[1].append(spec)
    for bindings, specs in configs.values():
        if differ := _differs(specs[0], bindings):
            problems.append(f"{_names(specs)}: built otherwise (today v its run.json: "
                            f"{'; '.join(differ)})")  # fmt: skip
    return problems


def _kept(study: Study, runs: Path, recorded: frozenset[str]) -> list[RunSpec]:
    """The study's runs that the sweep would keep from `runs`: finished or checkpointed (one
    with neither is removed and started afresh, components/sweep/job.py), and not among a
    process's runs that the record holds all of (those the sweep does not start)."""
    members = [{m.name for m in job.members} for job in study.jobs()]
    taken = set().union(*(names for names in members if not names <= recorded))
    return [
        spec
        for spec in study.runs()
        if spec.name in taken
        and any((runs / spec.name / name).is_file() for name in ("eval.json", CHECKPOINT))
    ]


def _names(specs: list[RunSpec]) -> str:
    names = [s.name for s in specs]
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} … {names[-1]} ({len(names)} runs)"


def _differs(spec: RunSpec, recorded: dict[str, str]) -> list[str]:
    """The bindings in which a run of `spec`, composed now, would differ from `recorded`."""
    compose(
        spec.recipe,
        env=spec.env,
        scale=spec.scale,
        seed=spec.seed,
        bindings=list(spec.bindings),
        plugins=list(spec.plugins),
    )
    return recorded_config_check(recorded)
