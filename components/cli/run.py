"""Run one experiment from a recipe.

    python tools/run.py --recipe recipes/focalpp_seqwise.gin [--env NAME] [--scale NAME]
        [--seed N] [--device auto|cpu|cuda] [--gin_param 'name.arg = value' ...]
        [--plugin MODULE_OR_FILE ...]
        [--out DIR] [--label NAME] [--dry-run] [--debug]
    python tools/run.py --recipe RECIPE --seeds 0-7 [--out PARENT] ...
    python tools/run.py --resume RUN_DIR [RUN_DIR ...]

Resolves the recipe (recipe → envs/<env>.gin → scales/<scale>.gin → --seed → --gin_param), prints
the resolved choices, creates a fresh run directory, writes the operative `config.gin` and
`run.json` (recipe, env, scale, seed, device) once the algorithm has built its parts, runs it and
prints its headline last.

A recipe (or `--gin_param`) may bind `experiment.analyses = ['context_grid', ...]`: registered
analyses of `tools/analyze.py`, run on the finished run and merged into its analysis.json (the
successors' recipes ask for the context grid).

`--resume RUN_DIR` continues a run that was stopped (Ctrl-C, SIGTERM, a crash, a killed
machine) from its last checkpoint, with the choices recorded in its run.json; a finished run is
reported, and left alone but for the end-of-run analyses it asked for and has no result of
(stopped while they ran: they run now). The run is rebuilt from the configuration its run.json
keeps, whatever became of its recipe files since; where a plugin file (or, for a run recorded
before run.json kept its configuration, the recipe) has moved, `--plugin NEW_PATH` or
`--recipe NEW_PATH` says where it is now. One process trains in a run
directory at a time: a run holds RUN_DIR/.lock while it trains, and a second resume of it is
refused.

`--seeds 0-7` (or `0,3,5`, `0-3,8`) trains the recipe with each of these seeds in one process,
as one seed-batched model (components/seeds; docs/SWEEPS.md says when it pays). Each seed gets
a run directory of its own (`PARENT/<recipe>-<env>-s<seed>` with `--out PARENT`, the name given
with `--out 'DIR/NAME-s{seed}'`, else under `--runs-root` as a single run's) holding a single
run's records, so reports and analyses read the K runs as K runs. `--resume` with those
directories continues them together.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.markup import escape
from rich.table import Table

import components.numerics as numerics
from components.cli.parser import ToolParser, whole_number
from components.evaluation.analyses import scalars
from components.experiment.lifecycle import continue_runs, stopped_runs
from components.experiment.lifecycle import finish_analyses as finish
from components.experiment.run import Finished, run
from components.outputs.console import err, out, run_tool
from components.outputs.run_record import portable
from components.reports.contracts import check_analyses
from registry import Composition, FocalppError, compose
from registry.constraints import SEED_RANGE, check_seed
from registry.usage import provenance


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--recipe", help="recipe file (path, or name under recipes/)")
    p.add_argument("--env", help="environment column: recipes/envs/<NAME>.gin")
    p.add_argument("--scale", help="scale: recipes/scales/<NAME>.gin (default from recipe: cpu)")
    p.add_argument(
        "--seed",
        type=whole_number(f"an integer seed {SEED_RANGE.describe()}"),
        help="random seed (default from recipe: 0)",
    )
    p.add_argument(
        "--seeds", type=parse_seeds, help="train these seeds in one process, e.g. 0-7 or 0,3,5"
    )
    p.add_argument("--device", help="auto (default: CUDA if available), cpu, cuda or cuda:N")
    p.add_argument("--gin_param", action="append", default=[], help="extra gin binding")
    p.add_argument("--plugin", action="append", default=[], help="module or .py file to import")
    p.add_argument(
        "--out",
        type=Path,
        help="run directory (must not exist); with --seeds their parent, or a name with {seed}",
    )
    p.add_argument("--label", help="a name for this run's variant, kept in run.json for reports")
    p.add_argument("--runs-root", type=Path, default=Path("runs"), help="parent of default --out")
    p.add_argument(
        "--resume",
        type=Path,
        nargs="+",
        help="continue the run in this directory (or the seeds trained together in these)",
    )
    p.add_argument(
        "--numerics",
        choices=numerics.MODES,
        help="portable: the same bits on every x86 CPU with AVX2 and FMA (the CPU, one thread, "
        "fp32; every study's; docs/NUMERICS.md); free: each machine's fastest kernels "
        "(default: free, 1.3-1.5× faster a step; a resumed run: its own)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the resolved choices and stop")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


MAX_SEEDS = 1000  # seeds one command names: more is a typo, not a study


def parse_seeds(spec: str) -> tuple[int, ...]:
    """`0-7`, `0,3,5` or `0-3,8` -> the seeds, in order, each once; every bound checked
    against a seed's range before a range is made (a typo must not fill the memory)."""
    seeds: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last if dash else first)  # '5-' is no range: refused
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{spec!r}: expected seeds as a range and/or a list, e.g. 0-7, 0,3,5 or 0-3,8"
            ) from None
        for bound in (low, high):
            try:
                check_seed(bound, "--seeds")
            except FocalppError as e:
                raise argparse.ArgumentTypeError(str(e)) from None
        if high < low:
            raise argparse.ArgumentTypeError(
                f"{spec!r}: the range {part.strip()} runs backwards; expected FIRST-LAST with "
                "FIRST ≤ LAST"
            )
        if len(seeds) + high - low + 1 > MAX_SEEDS:
            raise argparse.ArgumentTypeError(
                f"{spec!r}: {len(seeds) + high - low + 1:,} seeds; expected at most {MAX_SEEDS:,}"
            )
        seeds += range(low, high + 1)
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{spec!r}: expected at least one seed, each once")
    return tuple(seeds)


def show_choices(comp: Composition) -> None:
    exp = comp.experiment
    table = Table(title="resolved recipe", show_header=False, title_justify="left")
    for key, value in (
        ("recipe", str(comp.recipe)),
        ("algorithm", exp.algorithm_name),
        ("env", exp.env),
        ("scale", exp.scale),
        ("seed", str(exp.seed)),
        ("device", exp.device),
    ):
        table.add_row(key, escape(value))
    for i, source in enumerate(comp.sources, 1):
        table.add_row(f"source {i}", escape(source))
    out.print(table)
    for said in comp.overridden:
        err.print(
            f"warning: {escape(said)} (a column or scale file changed the row's own binding; "
            "write `# overrides: name.argument` in that file if it is meant)"
        )


def show_bindings() -> None:
    """--dry-run: every binding, the file and line (or flag) that set it, and what it overrode
    (shipped recipe files named relative to the recipes directory)."""
    table = Table(title="bindings (later files win)", title_justify="left")
    for column in ("binding", "set by", "overrode"):
        table.add_column(column)
    for binding in provenance():
        overrode = "; ".join(f"{_where(s)}: {s.text}" for s in binding.overrode)
        table.add_row(escape(binding.source.text), escape(_where(binding.source)), escape(overrode))
    out.print(table)


def _where(source) -> str:
    if not source.line:  # a flag, or the run's resolved choices
        return source.where
    return f"{portable(source.where)}:{source.line}"


def execute(args: argparse.Namespace) -> int:
    if args.resume is None and args.recipe is None:
        raise FocalppError("choose a recipe with --recipe, or a run to continue with --resume")
    if args.seed is not None:
        check_seed(args.seed, "--seed")
    if args.seeds is not None and (args.seed is not None or args.resume is not None):
        raise FocalppError(
            "--seeds trains new runs of those seeds: drop --seed (and resume seeds trained "
            "together with --resume and their run directories)"
        )
    records: list[dict] = []
    if args.resume is not None:
        dirs = list(dict.fromkeys(args.resume))
        for d in dirs:
            if (d / "eval.json").is_file():
                show_finished(d)
                finish_analyses(d, args.plugin)
        if args.out is not None and any(not (d / "eval.json").is_file() for d in dirs):
            raise FocalppError("--resume continues the run in its own directory; drop --out")
        given = {
            "env": args.env,
            "scale": args.scale,
            "seed": args.seed,
            "device": args.device,
            "bindings": args.gin_param or None,
        }
        stopped = stopped_runs(dirs, args.plugin, args.recipe, given, args.numerics)
        if stopped is None:
            return 0
        comp, dirs, records = stopped
    else:
        comp = compose(
            args.recipe,
            env=args.env,
            scale=args.scale,
            seed=args.seeds[0] if args.seeds else args.seed,
            device=args.device,
            bindings=args.gin_param,
            plugins=args.plugin,
        )
    if not records:
        # the default is what tools/run.py pinned before torch loaded (free unless asked);
        # a caller that loaded torch itself runs with the numerics it loaded
        numerics.require(args.numerics or numerics.mode())
    show_choices(comp)
    exp = comp.experiment
    check_analyses(exp.analyses)  # misspelt or broken: refused before the run, not after it
    if args.dry_run:
        show_bindings()
        return 0
    if not records:  # a new run, as the library runs one
        label, root = args.label or "", args.runs_root
        return show_result(run(comp, args.out, seeds=args.seeds, label=label, runs_root=root))
    finished = continue_runs(comp, dirs, records)  # as the library's `resume` goes on
    if finished is None:  # finished by another process while this one waited for it
        return max(show_finished(d) for d in dirs)
    return show_result(finished)


def finish_analyses(run_dir: Path, plugins: Sequence[str]) -> None:
    """The end-of-run analyses a finished run asked for and has no result of, run now (its
    process was stopped while they ran), each one's scalars printed."""
    results = finish(run_dir, plugins)
    if results:
        out.print(escape(f"{run_dir}: ran the analyses it had no result of: {', '.join(results)}"))
    for name, result in results.items():
        out.print(escape(f"{name}: {scalars(result)}"))


def show_finished(run_dir: Path) -> int:
    """What `--resume` of a finished run says: its headline."""
    result = json.loads((run_dir / "eval.json").read_text())
    out.print(f"{escape(str(run_dir))} has finished; nothing to resume")
    if "test_return_mean" in result:
        paper = (
            f", paper-comparable ({result['paper_formula']}) "
            f"{result['paper_return_mean']:.2f} ± {result['paper_return_std']:.2f}"
            if "paper_return_mean" in result
            else ""
        )
        out.print(
            f"test return {result['test_return_mean']:.2f} ± "
            f"{result.get('test_return_std', 0.0):.2f}{paper} "
            f"after {result.get('steps')} steps"
        )
    return 0


def show_result(finished: Finished) -> int:
    """The run's metrics, then its headline last."""
    for key, value in finished.metrics.items():
        out.print(escape(f"{key}: {value}"))
    if finished.headline is not None:
        out.print(escape(str(finished.headline)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
