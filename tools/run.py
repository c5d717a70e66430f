"""Run one experiment from a recipe.

    python tools/run.py --recipe recipes/focalpp_seqwise.gin [--env NAME] [--scale NAME]
        [--seed N] [--device auto|cpu|cuda] [--gin_param 'name.arg = value' ...]
        [--plugin MODULE_OR_FILE ...]
        [--out DIR] [--dry-run] [--debug]

Resolves the recipe (recipe → envs/<env>.gin → scales/<scale>.gin → --seed → --gin_param), prints
the resolved choices, creates a fresh run directory, writes the operative `config.gin` and
`run.json` (recipe, env, scale, seed, device) once the algorithm has built its parts, runs it and
prints its headline last.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # running from a checkout without an install still works
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from components.reporting.console import out, run_tool  # noqa: E402
from components.reporting.run_dir import atomic_write_text, create_run_dir, default_run_dir  # noqa: E402
from registry import Composition, RunContext, compose, operative_config  # noqa: E402
from registry.recipes import build  # noqa: E402


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--recipe", required=True, help="recipe file (path, or name under recipes/)")
    p.add_argument("--env", help="environment column: recipes/envs/<NAME>.gin")
    p.add_argument("--scale", help="scale: recipes/scales/<NAME>.gin (default from recipe: cpu)")
    p.add_argument("--seed", type=int, help="random seed (default from recipe: 0)")
    p.add_argument("--device", help="auto (default: CUDA if available), cpu, cuda or cuda:N")
    p.add_argument("--gin_param", action="append", default=[], help="extra gin binding")
    p.add_argument("--plugin", action="append", default=[], help="module or .py file to import")
    p.add_argument("--out", type=Path, help="run directory (must not exist)")
    p.add_argument("--runs-root", type=Path, default=Path("runs"), help="parent of default --out")
    p.add_argument("--dry-run", action="store_true", help="print the resolved choices and stop")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


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


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def execute(args: argparse.Namespace) -> int:
    comp = compose(
        args.recipe,
        env=args.env,
        scale=args.scale,
        seed=args.seed,
        device=args.device,
        bindings=args.gin_param,
        plugins=args.plugin,
    )
    show_choices(comp)
    if args.dry_run:
        return 0
    exp = comp.experiment
    run_dir = create_run_dir(
        args.out or default_run_dir(args.runs_root, str(comp.recipe), exp.env, exp.seed)
    )
    seed_everything(exp.seed)
    context = RunContext(
        env=exp.env, scale=exp.scale, seed=exp.seed, run_dir=run_dir, device=exp.device
    )
    try:
        algorithm = build(exp.algorithm, run=context)
    except BaseException:
        shutil.rmtree(run_dir)  # nothing was produced yet: leave no half-made run behind
        raise
    atomic_write_text(run_dir / "config.gin", operative_config())
    record = {
        "recipe": str(comp.recipe),
        "algorithm": exp.algorithm_name,
        "env": exp.env,
        "scale": exp.scale,
        "seed": exp.seed,
        "device": exp.device,
        "sources": list(comp.sources),
    }
    atomic_write_text(run_dir / "run.json", json.dumps(record, indent=1))
    out.print(f"run directory: {escape(str(run_dir))}")
    metrics = algorithm.run() or {}
    atomic_write_text(run_dir / "config.gin", operative_config())
    headline = metrics.pop("headline", None)
    for key, value in metrics.items():
        out.print(escape(f"{key}: {value}"))
    if headline is not None:
        out.print(escape(str(headline)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
