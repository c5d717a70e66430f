"""Tabulate finished runs like the paper's tables, with the paper's numbers beside ours.

    python tools/report.py PATH [PATH ...] [--markdown] [--out DIR] [--plugin FILE_OR_MODULE]
    python tools/report.py --headline results/headline.toml
    python tools/report.py --verdicts results/verdicts.toml

PATH: a compact record (results/<study>) or a folder of them, a study directory of
tools/sweep.py (the runs its index.json lists; failed ones are named), run directories or their
parents. Runs are grouped by (env, scale, recipe), a labelled run's recipe reading
`stem (label)`, and every registered report section (kind `report_section`, in its `order`)
turns them into tables and figures: Table 1 beside the paper's numbers with interval estimates
(rliable), the paper's orders as P(X beats Y) with verdicts, Meta-World's scores, ceilings, the
analyses' tables (Tables 2 and 3, Figure 4c, task vectors, the context grid, ...). What each
column means: docs/REPORTS.md. `--out DIR` also writes report.md and the figures (PNG) there;
`--plugin` loads sections (and analyses) of one's own. Unfinished runs are listed apart; runs of
one dataset trained on builds of other content are named in a warning. `--headline` prints the
one table that answers "does FOCAL++ beat FOCAL, and where?" from the records a headline file
names (components/reports/headline.py); `--verdicts` the table of every order claim of the paper
with its verdict, from the records a verdicts file names (components/reports/verdicts.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from components.cli.parser import ToolParser, whole_number
from components.outputs.console import run_tool
from components.reports.headline import headline
from components.reports.intervals import REPS
from components.reports.report import report
from components.reports.verdicts import verdicts

MAX_REPS = 1_000_000  # a bootstrap keeps reps × seeds numbers per interval


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("paths", nargs="*", type=Path, help="records, study or run directories")
    p.add_argument("--markdown", action="store_true", help="print Markdown tables")
    p.add_argument("--out", type=Path, help="also write report.md and figures (PNG) here")
    p.add_argument(
        "--reps",
        type=whole_number(f"100 to {MAX_REPS:,} bootstrap replications"),
        default=REPS,
        help=f"bootstrap replications of the intervals (default {REPS})",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        help="a module or .py file registering report sections or analyses (repeatable)",
    )
    p.add_argument(
        "--headline",
        type=Path,
        help="print the headline of a headline file (results/headline.toml) instead",
    )
    p.add_argument(
        "--verdicts",
        type=Path,
        help="print the verdict table of a verdicts file (results/verdicts.toml) instead",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    args = p.parse_args(argv)
    if sum(map(bool, (args.paths, args.headline, args.verdicts))) != 1:
        p.error("give the paths to report, --headline FILE or --verdicts FILE (one of them)")
    if not 100 <= args.reps <= MAX_REPS:
        p.error(
            f"--reps {args.reps}: expected 100 to {MAX_REPS:,} bootstrap replications "
            f"(more only costs memory and time; rliable's default is 50,000)"
        )
    return args


def execute(args: argparse.Namespace) -> int:
    if args.headline:
        print(headline(args.headline).markdown())
        return 0
    if args.verdicts:
        print(verdicts(args.verdicts).markdown())
        return 0
    report(
        args.paths, out_dir=args.out, reps=args.reps, markdown=args.markdown, plugins=args.plugin
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
