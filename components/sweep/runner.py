"""Run a study through a backend, retry runs that died, and write the study's index.

The study directory holds `study.json` (the spec that made it), `runs/<name>/` (one run
directory each, as tools/run.py writes them), `logs/<name>.log` (each attempt's output) and
`index.json`: one entry per run with its status, attempts, failure reason and final numbers.
`tools/report.py` reads the index. Running a study again skips finished runs and resumes
interrupted ones, so a study can be stopped and restarted at will.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from components.json_text import loads
from components.outputs.run_dir import (
    atomic_write_text,
    make_dirs,
    missing_analyses,
)
from components.outputs.run_record import pending_analyses
from components.sweep.job import HALT, Job, Outcome, run_summary
from components.sweep.study import AnalyzeSpec, SeedGroupSpec, Study, StudyError
from registry.renames import renamed_binding

INDEX = "index.json"
# What a run's result depends on: a study directory refuses a spec that changes these.
RUN_SHAPING = ("scale", "bindings", "plugins", "numerics")  # variants may grow: runs are named


def run_study(
    study: Study,
    out: Path,
    backend: Any,
    *,
    backend_name: str,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
    recorded: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Execute every run of `study` under `out` with `backend`; returns the index written.

    Runs named in `recorded` (a compact record's, tools/sweep.py --records) are not trained
    again: the index lists them as done, `how` "recorded", with no run directory; a group of
    seeds trains unless every member is recorded.

    With `dataset_shards` = K, each environment's dataset is first built in K task shards
    (jobs on the backend, like runs) and merged; the runs then find it in the store. Runs of an
    environment whose dataset could not be built are not started and are reported failed.
    """
    out = Path(out).absolute()  # a job runs in `cwd`, which need not be the tool's own
    cwd = str(Path.cwd())
    folder = _claim(out, study)
    (out / HALT).unlink(missing_ok=True)  # a halt of an earlier invocation: fixed since
    before = {r["name"]: r for r in read_index(out)["runs"]} if (out / INDEX).is_file() else {}
    datasets: dict[str, Outcome] = {}
    if study.dataset_shards:
        for stage in (0, 1):  # all shards of all envs, then the merges
            jobs = [
                Job(spec, str(out), study.threads_per_run, cwd)
                for env in study.envs
                for spec in (
                    study.dataset_jobs(env)[0] if stage == 0 else [study.dataset_jobs(env)[1]]
                )
                if stage == 0 or all(datasets[s.name].status == "done" for s in _shards(study, env))
            ]
            final, _ = _with_retries(backend, jobs, study.retries, on_outcome)
            datasets.update(final)
    unbuilt = {
        env: outcome.reason
        for env in (study.envs if study.dataset_shards else ())
        for name, outcome in datasets.items()
        if name.startswith(f"dataset-{env}-") and outcome.status != "done"
    }
    jobs = [
        Job(spec, str(out), study.threads_per_run, cwd)
        for spec in study.jobs()
        if _env(spec) not in unbuilt and not _names(spec) <= recorded
    ]
    final, attempts = _members(*_with_retries(backend, jobs, study.retries, on_outcome), jobs, out)
    for spec in study.runs():
        if spec.name in recorded and spec.name not in final:
            final[spec.name], attempts[spec.name] = Outcome(spec.name, "done", "recorded"), 0
            on_outcome(final[spec.name])
    analysed: dict[str, Outcome] = {}
    todo = {
        spec.name: _unanalysed(out / "runs" / spec.name, study.analyses)
        for spec in study.runs()
        if final.get(spec.name)
        and final[spec.name].status == "done"
        and final[spec.name].how != "recorded"
    }
    jobs = [
        Job(
            AnalyzeSpec(
                f"analyze-{name}", str(out / "runs" / name), names, study.plugins, study.numerics
            ),
            str(out),
            study.threads_per_run,
            str(Path.cwd()),
        )
        for name, names in todo.items()
        if names
    ]
    if jobs:
        done, _ = _with_retries(backend, jobs, study.retries, on_outcome)
        analysed = {name.removeprefix("analyze-"): o for name, o in done.items()}
    for spec in study.runs():
        if spec.env in unbuilt:
            final[spec.name] = Outcome(
                spec.name, "failed", "not started", f"dataset not built: {unbuilt[spec.env]}"
            )
            attempts[spec.name] = 0
    index = _index(study, folder, backend_name, out, final, attempts, before, datasets, analysed)
    atomic_write_text(out / INDEX, json.dumps(index, indent=1))
    (out / HALT).unlink(missing_ok=True)
    return index


def _names(spec) -> set[str]:
    """The runs a job trains: its own, or its group's members'."""
    return {m.name for m in spec.members} if isinstance(spec, SeedGroupSpec) else {spec.name}


def _env(spec) -> str:
    return spec.members[0].env if isinstance(spec, SeedGroupSpec) else spec.env


def _members(final: dict[str, Outcome], attempts: dict[str, int], jobs: list[Job], out: Path):
    """Outcomes and attempts per run: a group of seeds trained together gives each member
    the group's, done where the member's run finished."""
    for job in jobs:
        spec = job.spec
        if not isinstance(spec, SeedGroupSpec):
            continue
        group, tries = final.pop(spec.name), attempts.pop(spec.name)
        for member in spec.members:
            finished = (out / "runs" / member.name / "eval.json").is_file()
            status = "done" if finished else "failed"
            reason = "" if finished else group.reason or "did not finish"
            final[member.name] = Outcome(member.name, status, group.how, reason, group.retryable)
            attempts[member.name] = tries
    return final, attempts


def _shards(study: Study, env: str):
    return study.dataset_jobs(env)[0]


def _with_retries(backend, jobs: list[Job], retries: int, on_outcome):
    """Run `jobs`; re-run (resume) the ones that died, up to `retries` times each."""
    attempts = dict.fromkeys((j.spec.name for j in jobs), 0)
    final: dict[str, Outcome] = {}
    pending = jobs
    while pending:
        outcomes = backend.run(pending, on_outcome)
        for job, outcome in zip(pending, outcomes, strict=True):
            attempts[job.spec.name] += outcome.how != "skipped"
            final[job.spec.name] = outcome
        pending = [
            job
            for job, outcome in zip(pending, outcomes, strict=True)
            if outcome.status == "failed"
            and outcome.retryable
            and attempts[job.spec.name] <= retries
        ]
    return final, attempts


def _claim(out: Path, study: Study) -> dict[str, Any]:
    """Create the study directory, or check that an existing one was made by a compatible
    spec (more recipes, envs or seeds are fine; other bindings would mix results). Returns the
    folder's spec: the study's, its recipes, envs, seeds and variants joined with those of the
    parts run into it before (`--recipes`, `--seeds`, ...)."""
    make_dirs(out, "study directory")  # a file in the way or too long a name is refused
    spec = check_claim(out, study)
    atomic_write_text(out / "study.json", json.dumps(spec, indent=1))
    return spec


def check_claim(out: Path, study: Study) -> dict[str, Any]:
    """The spec `_claim` would write for `study` in `out` (writing nothing), or the refusal of
    a folder whose runs a study with other run-shaping fields made."""
    spec_file = out / "study.json"
    if spec_file.is_file():
        before = _read_spec(spec_file)
        before["bindings"] = [renamed_binding(b) for b in before.get("bindings", [])]
        now = {**study.to_dict(), "bindings": [renamed_binding(b) for b in study.bindings]}
        changed = [k for k in RUN_SHAPING if before.get(k) != now[k]]
        old_variants = before.get("variants", {})
        if any(
            [renamed_binding(b) for b in old_variants.get(k, v)] != [renamed_binding(b) for b in v]
            for k, v in study.variants.items()
        ):
            changed.append("variants")
        if changed:
            raise StudyError(
                f"{out} holds runs of a study with other {', '.join(changed)} "
                f"({', '.join(f'{k}: {before.get(k)!r}' for k in changed)}); its finished runs "
                "would be mixed with new ones. Choose another --out"
            )
        return _joined(before, study.to_dict())
    return study.to_dict()


def _joined(before: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """`now` with the rows, environments, seeds and variants an earlier part of the study in
    the same folder ran (the earlier ones first, in their order)."""
    spec = dict(now)
    for field in ("recipes", "envs", "seeds"):
        earlier = before.get(field)
        if isinstance(earlier, list):
            spec[field] = list(dict.fromkeys([*earlier, *now[field]]))
    if isinstance(before.get("variants"), dict) and now.get("variants") is not None:
        spec["variants"] = {**before["variants"], **now["variants"]}
    return spec


def _read_spec(path: Path) -> dict[str, Any]:
    """The study.json of an existing study directory, or an error naming the damage."""
    try:
        spec = loads(path.read_bytes())
    except ValueError as e:
        raise StudyError(
            f"{path} is not valid JSON ({e}): the study directory is damaged; restore the file "
            "(tools/sweep.py writes it from the study file) or choose another --out"
        ) from e
    if not isinstance(spec, dict):
        raise StudyError(f"{path} is not a study's spec (expected a JSON object); restore it")
    return spec


def _unanalysed(run_dir: Path, names: tuple[str, ...]) -> tuple[str, ...]:
    """What a finished run still lacks: the analyses its recipe asked for at its end but did
    not finish (the process was stopped while they ran), then the study's own."""
    lacking = pending_analyses(run_dir) + missing_analyses(run_dir, names)
    return tuple(dict.fromkeys(lacking))


def _index(
    study, folder, backend_name, out, final, attempts, before, datasets, analysed
) -> dict[str, Any]:
    """The index; a run skipped as finished keeps how it got there from the previous index,
    and the runs of earlier parts of the study in this folder that this part does not name
    keep their entries (a study run in parts lists every part's runs)."""
    runs, unanalysed = [], []
    for spec in study.runs():
        outcome = final[spec.name]
        how, tries = outcome.how, attempts[spec.name]
        if how == "skipped" and spec.name in before:
            how, tries = before[spec.name]["how"], before[spec.name]["attempts"]
        entry: dict[str, Any] = {
            "name": spec.name,
            "recipe": spec.recipe,
            "env": spec.env,
            "seed": spec.seed,
            "scale": spec.scale,
            "variant": spec.variant,
            "status": outcome.status,
            "how": how,
            "attempts": tries,
            "reason": outcome.reason,
            "run_dir": str(Path("runs") / spec.name),
        }
        if how == "recorded":  # in the compact record; no run directory here
            entry["run_dir"] = None
        elif outcome.status == "done":
            entry.update(run_summary(out / entry["run_dir"]))
        if (study.analyses or spec.name in analysed) and outcome.status == "done":
            result = analysed.get(spec.name)
            entry["analyses"] = (
                "done"
                if result is None or result.status == "done"
                else (f"failed: {result.reason}")
            )
            if entry["analyses"] != "done":
                unanalysed.append(spec.name)
        runs.append(entry)
    named = {entry["name"] for entry in runs}
    runs += [entry for name, entry in before.items() if name not in named]
    unanalysed += [
        name
        for name, entry in before.items()
        if name not in named and entry.get("analyses", "done") != "done"
    ]
    failed = [r["name"] for r in runs if r["status"] != "done"]
    index = {
        "study": folder,
        "backend": backend_name,
        "done": len(runs) - len(failed),
        "failed": failed,
        "analyses_failed": unanalysed,  # trained, analyses not done: kept out of records
        "runs": runs,
    }
    if datasets:
        index["datasets"] = [
            {"name": name, "status": o.status, "reason": o.reason} for name, o in datasets.items()
        ]
    return index


def read_index(path: Path) -> dict[str, Any]:
    """A study's index (`path` is the study directory or its index.json)."""
    path = Path(path)
    if path.is_dir():
        path = path / INDEX
    try:
        index = loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise StudyError(f"cannot read the study index {path}: {e}") from e
    if not isinstance(index, dict) or not isinstance(index.get("runs"), list):
        raise StudyError(f"{path} is not a study index (no list of `runs`)")
    for entry in index["runs"]:
        if not isinstance(entry, dict) or not {"name", "status", "run_dir"} <= set(entry):
            raise StudyError(
                f"{path} lists a run without its name, status and run_dir ({entry!r}): the "
                "index is damaged; run the study again to write it anew"
            )
    return index
