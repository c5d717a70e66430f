"""Measure trained runs: embedding variance, attention AUC, t-SNE, distribution shift.

    python tools/analyze.py RUN_DIR [...] [--analyses NAME,...] [--gin_param 'name.arg = v']
        [--plugin MODULE_OR_FILE]

Rebuilds each finished run's algorithm from its run.json and checkpoint (the last meta-test's
state; a run still training, or stopped before its end, is refused), runs the chosen analyses
(registered analyses; default: all below) and merges their results into RUN_DIR/analysis.json;
figures go to RUN_DIR/figures/. `tools/report.py` tabulates them. `--plugin` loads analyses of
one's own, and says where a run's plugin file is now if it moved (a plugin file of the same name
as the one run.json records).

  embedding_variance   Table 2: variance of task vectors over context batches
  task_vectors         can the task be read from z: ridge read-out error, identification,
                       within/between-task variance, goal-holding error
  attention_auc        Figure 4c: AUC and densities of batch weights, rewarded vs not
  tsne                 Figure 3 (right): t-SNE of query embeddings by task
  distribution_shift   Table 3: test return with test contexts of every dataset quality
  ood_context          test return with context from other tasks' behaviour (CORRO/UNICORN)
  context_grid         the meta-test per (split, context source): own data, each other
                       quality, another task's behaviour policy rolled out anew, the run's
                       own online collection
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape

from components.cli.parser import ToolParser
from components.evaluation.analyses import NAMES as ANALYSES  # registers them
from components.evaluation.analyses import scalars
from components.experiment.trained import analyse_finished
from components.outputs.console import out, run_tool
from components.reports.contracts import check_analyses
from registry import FocalppError, load_plugin


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="run directories")
    p.add_argument("--analyses", default=",".join(ANALYSES), help="comma-separated names")
    p.add_argument("--gin_param", action="append", default=[], help="binding for an analysis")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        help="module or .py file with analyses; or where a run's moved plugin file is now",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def execute(args: argparse.Namespace) -> int:
    for plugin in args.plugin:
        load_plugin(plugin)  # a new analysis outside the package registers itself here
    names = [n.strip() for n in args.analyses.split(",") if n.strip()]
    if not names:
        raise FocalppError(
            f"--analyses {args.analyses!r} names no analysis; give comma-separated names, "
            f"e.g. --analyses {ANALYSES[0]},{ANALYSES[1]} (leave the flag out for all of them)"
        )
    check_analyses(names)  # misspelt, or breaking its kind's contract (names no section)
    for run_dir in args.runs:
        results = analyse_finished(run_dir, names, args.gin_param, args.plugin)
        out.print(f"[bold]{escape(str(run_dir))}[/]")
        for name in names:
            out.print(escape(f"  {name}: {scalars(results[name])}"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
