"""Write a study's compact record (results/<study>/) from its finished run directories.

    python tools/records.py SRC [SRC ...] --out results/<study> [--logs] [--report]

SRC: a study directory of tools/sweep.py (its runs/ folder), a folder of run directories, or
run directories. Each run is named by its path under its SRC (under SRC/runs for a study).
The record keeps what the reports read: runs.jsonl (a line per run: recipe, env, scale, seed,
label, bindings, commit, dataset digest, final and last-three scores, train seconds, machine,
eval.json), meta_tests.jsonl and analyses.jsonl; `--logs` adds the per-step training logs as one
archive with its digest. A record that exists is extended: its runs are kept as recorded (a
given run it holds already is not read again). `--report` then writes OUT/report (as
tools/report.py --out). The records' layout: results/README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from components.cli.parser import ToolParser
from components.outputs.console import out, run_tool
from components.outputs.run_record import RUN_JSON
from components.reports.records import is_records, read_records, run_dirs_under, write_records
from components.reports.report import report
from components.sweep.runner import INDEX, read_index
from registry import FocalppError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "sources", nargs="+", type=Path, help="study directories, run directories or parents"
    )
    p.add_argument("--out", type=Path, required=True, help="the record's folder (results/<study>)")
    p.add_argument("--logs", action="store_true", help="keep the per-step training logs (archived)")
    p.add_argument("--report", action="store_true", help="then write the report to OUT/report")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def sources(paths: Sequence[Path]) -> list[tuple[Path, Path]]:
    """(run directory, the root its name is taken under) for every finished run of `paths`."""
    found = []
    for path in paths:
        if not path.is_dir():
            raise FocalppError(f"{path}: no such directory (expected a study or run directory)")
        if (path / INDEX).is_file():
            root = path / "runs"
            done = [e for e in read_index(path)["runs"] if e["status"] == "done" and e["run_dir"]]
            found += [(path / e["run_dir"], root) for e in done]
        elif (path / RUN_JSON).is_file():
            found.append((path, path.parent))
        else:
            root = path / "runs" if (path / "runs").is_dir() else path
            found += [(d, root) for d in run_dirs_under(path)]
    if not found:
        raise FocalppError(
            f"no finished runs (run.json + eval.json) under {', '.join(map(str, paths))}"
        )
    return found


def execute(args: argparse.Namespace) -> int:
    found = sources(args.sources)
    keep = read_records(args.out) if is_records(args.out) else []
    roots = {root for _, root in found}
    if len(roots) > 1:
        raise FocalppError(
            f"the runs come from {len(roots)} folders ({', '.join(sorted(map(str, roots)))}): "
            "record one study at a time, or name their common parent"
        )
    root, held = roots.pop(), {run["run"] for run in keep}
    new = [d for d, _ in found if d.relative_to(root).as_posix() not in held]
    if not new:
        out.print(f"{escape(str(args.out))} holds every run already: nothing written")
    else:
        count = write_records(new, args.out, root=root, logs=args.logs, keep=keep)
        out.print(
            f"wrote {escape(str(args.out))}: {count} runs ({len(keep)} kept as recorded, "
            f"{len(found) - len(new)} of the given runs among them)"
        )
    if args.report:
        report([args.out], out_dir=args.out / "report")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
