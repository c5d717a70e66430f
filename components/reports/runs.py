"""The runs a report reads: run directories, a sweep's study directory, or compact records
(results/<study>), found, read, checked (each seed once per row, one build of each dataset) and
grouped by (env, scale, recipe)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from components.outputs.console import err
from components.outputs.run_record import RUN_JSON, read_run_record
from components.reports.builds import numerics_of
from components.reports.records import (
    RUNS,
    check_analysis,
    check_numbers,
    is_records,
    read_checked_metrics,
    read_json_record,
    read_records,
)
from components.reports.tables import Groups, recipe_stem
from components.sweep.runner import INDEX, read_index
from registry import FocalppError
from registry.renames import renamed_binding


def find_runs(paths: Sequence[Path]) -> tuple[list[dict], list[str]]:
    """Finished runs (run.json + eval.json) and notes on the others. A study directory (one
    with index.json, written by tools/sweep.py) contributes the runs its index lists."""
    finished, others, seen = [], [], set()
    for root in paths:
        if not root.exists():
            raise FocalppError(f"{root} does not exist")
        records = [root] if is_records(root) else [p.parent for p in sorted(root.rglob(RUNS))]
        if records:  # compact records (results/<study>, or a folder of them)
            finished += [run for record in records for run in read_records(record)]
            continue
        if root.name == INDEX or (root / INDEX).is_file():
            study_dir = root.parent if root.name == INDEX else root
            index = read_index(study_dir)
            run_dirs = []
            for entry in index["runs"]:
                if entry["status"] == "done" and entry["run_dir"] is None:
                    others.append(f"recorded: {entry['name']} (report its compact record)")
                elif entry["status"] == "done":
                    run_dirs.append(study_dir / entry["run_dir"])
                else:
                    reason = entry.get("reason", "no reason recorded")
                    others.append(f"failed: {entry['name']} ({reason})")
        else:
            run_dirs = [p.parent for p in sorted(root.rglob(RUN_JSON))]
        for run_dir in run_dirs:
            if run_dir.resolve() in seen:  # named twice (a run and its parent): one run
                continue
            seen.add(run_dir.resolve())
            if not (run_dir / "eval.json").is_file():
                others.append(f"unfinished (no eval.json): {run_dir}")
                continue
            run = read_run_record(run_dir, doing="report")
            run["eval"] = read_json_record(run_dir / "eval.json", "test_return_mean", "the report")
            check_numbers(run["eval"], run_dir / "eval.json")
            analysis = run_dir / "analysis.json"
            run["analysis"] = (
                read_json_record(analysis, None, "the report") if analysis.is_file() else {}
            )
            check_analysis(run["analysis"], analysis)
            run["dir"] = run_dir
            finished.append(run)
    return finished, others


def check_distinct_seeds(grouped: dict[tuple[str, str, str], list[dict]]) -> None:
    """Each row counts a seed once: a copied run directory, or one seed run twice with the same
    bindings, would count as independent evidence and narrow the row's interval. Runs of one
    seed with other bindings (a probe beside a study's run) are other configurations: the row
    mixes them, and a warning says so (label them to give each its own row)."""
    for (env, scale, recipe), group in grouped.items():
        by_seed: dict[int, list[dict]] = defaultdict(list)
        for run in group:
            by_seed[run["seed"]].append(run)
        for seed, same_seed in sorted(by_seed.items()):
            by_config: dict[tuple, list[str]] = defaultdict(list)
            for run in same_seed:
                bindings = tuple(renamed_binding(b) for b in run.get("bindings") or ())
                config = (bindings, tuple(run.get("plugins") or ()))
                by_config[config].append(str(run["dir"]))
            for dirs in by_config.values():
                if len(dirs) > 1:
                    raise FocalppError(
                        f"{' and '.join(dirs)} are {'both' if len(dirs) == 2 else 'all'} seed "
                        f"{seed} of {recipe} on {env} ({scale}) with the same bindings: a row "
                        "counts each seed once (a copy, or a second run of a seed, is not "
                        "independent evidence); report one of them: name only the run "
                        "directories to report, or move the others away"
                    )
            if len(by_config) > 1:
                dirs = [str(run["dir"]) for run in same_seed]
                err.print(
                    f"warning: the row {recipe} on {env} ({scale}) mixes runs of other "
                    f"bindings, seed {seed} among them ({', '.join(escape(d) for d in dirs)}); "
                    "give a variant its own row with tools/run.py --label"
                )


def check_same_data(runs: list[dict]) -> None:
    """Rows set side by side must read the same data: runs of one dataset (env, scale, store
    name) whose content digests differ (the dataset rebuilt on another machine into other
    numbers, or edited) would compare unlike with like. Records older than the content digest
    carry none and are not checked."""
    by_dataset: dict[tuple[str, str, str], dict[str, list[str]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for run in runs:
        dataset = run.get("dataset") or {}
        if dataset.get("content_sha256"):
            key = (run["env"], run["scale"], dataset.get("name", "?"))
            by_dataset[key][dataset["content_sha256"]].append(Path(run["dir"]).name)
    for (env, scale, name), digests in sorted(by_dataset.items()):
        if len(digests) > 1:
            seen = "; ".join(
                f"{digest[:12]}… ({len(dirs)} run{'s' * (len(dirs) != 1)}: "
                f"{', '.join(escape(d) for d in dirs[:3])}{', …' if len(dirs) > 3 else ''})"
                for digest, dirs in sorted(digests.items(), key=lambda kv: -len(kv[1]))
            )
            err.print(
                f"warning: the runs of {env} ({scale}) read {len(digests)} different builds of "
                f"dataset {name} (content digests {seen}): their rows compare unlike data; rerun "
                "the fewer on the others' data"
            )


def check_same_numerics(runs: list[dict]) -> None:
    """Runs of one environment and scale set side by side with portable and with free numerics
    are the same computation only on the CPU the free ones ran on (docs/NUMERICS.md): say so."""
    by_place: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        by_place[(run["env"], run["scale"])][numerics_of(run)].append(Path(run["dir"]).name)
    for (env, scale), modes in sorted(by_place.items()):
        if len(modes) > 1:
            seen = "; ".join(
                f"{mode}: {len(dirs)} run{'s' * (len(dirs) != 1)} ({', '.join(dirs[:3])}"
                f"{', …' if len(dirs) > 3 else ''})"
                for mode, dirs in sorted(modes.items())
            )
            err.print(
                f"warning: the runs of {env} ({scale}) mix numerics ({escape(seen)}): a free "
                "run's bits are its CPU's own, a portable run's the same on every x86 CPU, so "
                "their rows compare the same computation only on the free runs' CPU"
            )


def groups(runs: list[dict]) -> Groups:
    """Runs by (env, scale, recipe), sorted; a labelled run's recipe reads `stem (label)`."""
    grouped: Groups = defaultdict(list)
    for run in runs:
        label = run.get("label") or ""
        recipe = recipe_stem(run) + (f" ({label})" if label else "")
        grouped[(run["env"], run["scale"], recipe)].append(run)
    return dict(sorted(grouped.items()))


def read_runs(paths: Sequence[Path]) -> tuple[Groups, list[str]]:
    """The finished runs under `paths`, checked and grouped, with their meta-tests; and notes
    on the unfinished or failed ones."""
    runs, unfinished = find_runs(paths)
    if not runs:
        raise FocalppError(
            f"no finished runs under {', '.join(map(str, paths))}: expected run directories "
            f"(run.json + eval.json), a study directory ({INDEX}) or a compact record ({RUNS})"
        )
    grouped = groups(runs)
    check_distinct_seeds(grouped)
    check_same_data(runs)
    check_same_numerics(runs)
    for run in runs:  # the meta-tests' logs (curves, last meta-tests): damaged fails first
        if "metrics" not in run:  # a compact record's runs come with theirs
            run["metrics"] = read_checked_metrics(run["dir"])
    return grouped, unfinished
