"""Run a study: every recipe × environment × seed of a TOML study file.

    python tools/sweep.py STUDY.toml [--out DIR] [--backend local|ray] [--workers N]
        [--address ADDR] [--retries N] [--recipes R ...] [--envs ENV ...] [--seeds SEEDS]
        [--variants V ...] [--dry-run] [--records results/<study> [--logs]]

Each run is `tools/run.py` in its own process, in `<out>/runs/<recipe>-<env>-s<seed>/`.
Finished runs are skipped and interrupted ones resumed, so running a study again continues it.
A run that dies (killed, crashed) is resumed up to `retries` times; one refused for bad input
is not retried. `<out>/index.json` lists every run's status, attempts, failure reason and final
numbers (of every part of a study run into `<out>` in parts); `python tools/report.py <out>`
tabulates it. Exit status 0 only if every run finished.
The default `--out` is runs/studies/<study name>. With `--records DIR` the study lands in one
step: runs that DIR's compact record holds are not trained again, and once the study has run,
its other finished runs are added to the record (`--logs`: with their training logs) and the
report is written to DIR/report. `--envs` runs the study on some of its environments only (a
study parameterised by a task list, each task recorded in its own folder); `--seeds 0-4` on some
of its seeds, `--recipes focal.gin` on some of its rows and `--variants brac` on some of its
variants (a study longer than a sitting, run in parts into one record). See docs/SWEEPS.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape
from rich.table import Table

import components.sweep.local  # registers the backends
import components.sweep.ray_backend  # noqa: F401
from components.cli.parser import ToolParser, whole_number
from components.cli.run import parse_seeds
from components.outputs.console import out, run_tool
from components.reports.contracts import check_analyses
from components.reports.drift import drifted_rows, drifted_runs
from components.reports.records import is_records, read_records, write_records
from components.reports.report import report
from components.sweep.job import Outcome
from components.sweep.runner import INDEX, check_claim, run_study
from components.sweep.study import (
    MAX_RETRIES,
    StudyError,
    check_products,
    check_record_folder,
    check_recorded,
    command_line,
    load_study,
)
from registry import FocalppError, get

ROOT = Path(__file__).resolve().parents[1]
MAX_WORKERS = 4096  # concurrent runs of one study


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("study", type=Path, help="study file (TOML)")
    p.add_argument("--out", type=Path, help="study directory (default runs/studies/<name>)")
    p.add_argument("--backend", default="local", help="registered backend: local (default), ray")
    p.add_argument(
        "--workers",
        type=whole_number(f"1 to {MAX_WORKERS:,}"),
        help="concurrent runs (default: cores / threads)",
    )
    p.add_argument("--address", help="Ray cluster address (ray backend; default: start Ray here)")
    p.add_argument(
        "--retries", type=whole_number(f"0 to {MAX_RETRIES}"), help="override the study's retries"
    )
    p.add_argument("--recipes", nargs="+", help="only these of the study's recipes (its rows)")
    p.add_argument("--envs", nargs="+", help="only these of the study's environments")
    p.add_argument(
        "--seeds", type=parse_seeds, help="only these of the study's seeds: 0-4, 0,3,5 or 0-3,8"
    )
    p.add_argument("--variants", nargs="+", help="only these of the study's variants")
    p.add_argument("--dry-run", action="store_true", help="list the runs and stop")
    p.add_argument("--records", type=Path, help="the study's compact record (results/<study>)")
    p.add_argument("--logs", action="store_true", help="--records keeps the training logs")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def execute(args: argparse.Namespace) -> int:
    study = load_study(args.study)
    study.check()
    check_analyses(study.analyses)  # and one that breaks its kind's contract (names no section)
    if args.retries is not None:
        if not 0 <= args.retries <= MAX_RETRIES:
            raise StudyError(f"--retries {args.retries}: expected 0 to {MAX_RETRIES}")
        study = type(study)(**{**study.__dict__, "retries": args.retries})
    for field in ("recipes", "envs", "seeds", "variants"):
        if named := getattr(args, field):
            study = type(study)(**{**study.__dict__, field: only(study, field, named)})
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise StudyError(f"--workers {args.workers}: expected 1 to {MAX_WORKERS:,}")
    backend_cls = get("backend", args.backend)
    options = {"workers": args.workers}
    if args.address is not None:
        if args.backend != "ray":
            raise StudyError("--address is for the ray backend")
        options["address"] = args.address
    backend = backend_cls(**options)
    runs = study.runs()
    target = args.out or ROOT / "runs" / "studies" / study.name
    out.print(f"study {escape(study.name)}: {len(runs)} runs → {escape(str(target))}")
    check_record_folder(study, args.records, ROOT / "results", ROOT / "studies")
    kept = read_records(args.records) if args.records and is_records(args.records) else []
    check_recorded(kept, runs, args.records)  # the choices of each recorded run of its name
    check_products(kept, study.numerics, args.records)  # and whose products its runs computed
    if drifted := drifted_rows(study, args.records) if kept else []:
        raise StudyError(  # and its row's configuration: what is done is decided by both
            f"{args.records} holds runs of rows this study would build otherwise, so they cannot "
            "count as done and new runs could not join them:\n  "
            + "\n  ".join(drifted)
            + "\nGive the changed rows a variant of their own, or record the study elsewhere"
        )
    check_claim(Path(target), study)  # a folder of another study: refused as such first
    recorded = frozenset(run["run"] for run in kept)
    if drifted := drifted_runs(study, target, recorded):
        raise StudyError(  # a finished run is skipped and a checkpointed one resumed as it was
            f"{target} holds runs that this study cannot count as done or resume:\n  "
            + "\n  ".join(drifted)
            + "\nRun the study into another --out, or move the named run folders aside (they "
            "are kept as they are); a row changed on purpose can take a variant of its own"
        )
    if args.dry_run:  # the processes the study starts: a run each, or a group of seeds each
        jobs = study.jobs()
        if len(jobs) != len(runs):
            out.print(f"{len(jobs)} processes of up to {study.seeds_per_process} seeds each")
        for spec in jobs:
            out.print(escape(f"  {spec.name}: {command_line(spec, Path(target) / 'runs')}"))
        return 0

    def show(outcome: Outcome) -> None:
        detail = f" ({outcome.reason})" if outcome.reason else ""
        out.print(escape(f"{outcome.name}: {outcome.status}, {outcome.how}{detail}"))

    index = run_study(
        study, target, backend, backend_name=args.backend, on_outcome=show, recorded=recorded
    )
    index = this_part(index, {spec.name for spec in runs})
    table = Table(title=f"{study.name} ({args.backend})", title_justify="left")
    for column in ("run", "status", "attempts", "test return", "reason"):
        table.add_column(column)
    for run in index["runs"]:
        score = f"{run['test_return_mean']:.2f}" if "test_return_mean" in run else "-"
        table.add_row(
            escape(run["name"]),
            run["status"],
            str(run["attempts"]),
            score,
            escape(run["reason"]),
        )
    out.print(table)
    out.print(f"index: {escape(str(target / INDEX))}")
    if args.records:
        record(index, target, args, kept, study.plugins)
    unanalysed = [r for r in index["runs"] if r["name"] in index["analyses_failed"]]
    if index["failed"] or unanalysed:
        said = []
        if index["failed"]:
            said.append(
                f"{len(index['failed'])} of {len(index['runs'])} runs failed: "
                + "; ".join(f"{r['name']} ({r['reason']})" for r in index["runs"] if r["reason"])
            )
        if unanalysed:  # trained, but the study's analyses did not finish: not recorded
            said.append(
                f"the analyses of {len(unanalysed)} finished runs failed: "
                + "; ".join(f"{r['name']} ({r['analyses']})" for r in unanalysed)
            )
        raise FocalppError(
            ". ".join(said) + f". Logs: {target / 'logs'}; run the study again to retry"
        )
    return 0


# what --recipes / --envs / --seeds / --variants choose from: its name in a message, how the
# named and the study's are listed
CHOSEN = {
    "recipes": ("a recipe", " ", ", "),
    "envs": ("an environment", " ", ", "),
    "seeds": ("a seed", ",", ","),
    "variants": ("a variant", " ", ", "),
}


def only(study, field: str, named: Sequence) -> tuple | dict:
    """The study's recipes, environments, seeds or variants (`field`) named by --recipes /
    --envs / --seeds / --variants, in the study's order (seed groups of `seeds_per_process` then
    form within them); one it lacks is refused, naming what it has (a study without variants has
    none to choose)."""
    listed, (what, named_sep, listed_sep) = getattr(study, field), CHOSEN[field]
    unknown = [str(item) for item in named if item not in listed]
    if unknown:
        has = listed_sep.join(map(str, listed)) if listed else "no variants"
        raise StudyError(
            f"--{field} {named_sep.join(unknown)}: not {what} of {study.source}; it has {has}"
        )
    if isinstance(listed, dict):
        return {name: extra for name, extra in listed.items() if name in named}
    return tuple(item for item in listed if item in named)


def this_part(index: dict, names: set[str]) -> dict:
    """The index narrowed to the runs this invocation named: the folder's index also lists
    the runs of the study's other parts (`--recipes`, `--seeds`, ...), whose failures,
    table rows and records are theirs."""
    return {
        **index,
        "runs": [r for r in index["runs"] if r["name"] in names],
        "failed": [name for name in index["failed"] if name in names],
        "analyses_failed": [name for name in index["analyses_failed"] if name in names],
    }


def record(index: dict, target: Path, args, kept: list[dict], plugins: Sequence[str]) -> None:
    """Add the study's finished runs to its compact record and write its report there (with
    the study's plugins' sections). A run whose analyses failed waits: recorded, it would not be
    analysed again when the study is run again."""
    recorded = {run["run"] for run in kept}  # a group's recorded members trained again: kept
    new = [
        target / r["run_dir"]
        for r in index["runs"]
        if r["status"] == "done"
        and r["run_dir"]
        and r["name"] not in recorded
        and r["name"] not in index["analyses_failed"]
    ]
    if new:
        count = write_records(new, args.records, root=target / "runs", logs=args.logs, keep=kept)
        out.print(f"record: {escape(str(args.records))} ({count} runs)")
    if new or kept:
        report([args.records], out_dir=args.records / "report", plugins=plugins)


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
