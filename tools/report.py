"""Tabulate finished runs: mean ± std of the final test return over seeds, per recipe and env.

    python tools/report.py RUN_DIR_OR_PARENT_OR_STUDY [...] [--markdown]

Finds every run directory (one holding run.json and eval.json) under the given paths (for a
study directory of tools/sweep.py, the runs its index.json lists; failed ones are named), groups
runs by (env, scale, recipe) and prints one row per group: seeds, the mean over seeds of each
run's mean test return (sparse where the family is sparse), the std over seeds, the mean std
over test tasks, and the mean training time. Unfinished runs (no eval.json) are listed apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# First, even if ROOT is on PYTHONPATH: this script's own folder holds tools/components.py,
# which would shadow the components package.
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from components.reporting.console import out, run_tool  # noqa: E402
from components.sweep.runner import INDEX, read_index  # noqa: E402
from registry import FocalppError  # noqa: E402

COLUMNS = ("env", "scale", "recipe", "seeds", "test return", "std over tasks", "train s")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, help="run directories or their parents")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def find_runs(paths: Sequence[Path]) -> tuple[list[dict], list[str]]:
    """Finished runs (run.json + eval.json) and notes on the others. A study directory (one
    with index.json, written by tools/sweep.py) contributes the runs its index lists."""
    finished, others = [], []
    for root in paths:
        if not root.exists():
            raise FocalppError(f"{root} does not exist")
        if root.name == INDEX or (root / INDEX).is_file():
            study_dir = root.parent if root.name == INDEX else root
            index = read_index(study_dir)
            run_dirs = []
            for entry in index["runs"]:
                if entry["status"] == "done":
                    run_dirs.append(study_dir / entry["run_dir"])
                else:
                    others.append(f"failed: {entry['name']} ({entry['reason']})")
        else:
            run_dirs = [p.parent for p in sorted(root.rglob("run.json"))]
        for run_dir in run_dirs:
            if not (run_dir / "eval.json").is_file():
                others.append(f"unfinished (no eval.json): {run_dir}")
                continue
            run = json.loads((run_dir / "run.json").read_text())
            run["eval"] = json.loads((run_dir / "eval.json").read_text())
            finished.append(run)
    return finished, others


def rows(runs: list[dict]) -> list[tuple[str, ...]]:
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for run in runs:
        groups[(run["env"], run["scale"], Path(run["recipe"]).stem)].append(run)
    table = []
    for (env, scale, recipe), group in sorted(groups.items()):
        means = np.array([r["eval"]["test_return_mean"] for r in group])
        task_std = np.mean([r["eval"]["test_return_std"] for r in group])
        seconds = [r["eval"]["train_seconds"] for r in group if "train_seconds" in r["eval"]]
        seeds = ",".join(str(s) for s in sorted(r["seed"] for r in group))
        table.append(
            (
                env,
                scale,
                recipe,
                seeds,
                f"{means.mean():.2f} ± {means.std():.2f}",
                f"{task_std:.2f}",
                f"{np.mean(seconds):.0f}" if seconds else "-",
            )
        )
    return table


def execute(args: argparse.Namespace) -> int:
    runs, unfinished = find_runs(args.paths)
    if not runs:
        raise FocalppError(f"no finished runs (run.json + eval.json) under {args.paths}")
    table_rows = rows(runs)
    if args.markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        for row in table_rows:
            print("| " + " | ".join(row) + " |")
    else:
        table = Table(title="final test return: mean ± std over seeds", title_justify="left")
        for column in COLUMNS:
            table.add_column(column)
        for row in table_rows:
            table.add_row(*row)
        out.print(table)
    for note in unfinished:
        out.print(escape(note))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
