"""Build (or reuse) an offline dataset, or list the cached ones.

    python tools/collect.py --env NAME [--protocol checkpoints|replay|relabeled] [--quality Q]
        [--seed N] [--scale cpu|paper] [--tag TAG] [--out DIR]
        [--gin_param 'checkpoints.env_steps = 1000']
    python tools/collect.py --env NAME --shard I/K [...]     # one shard of a build on K workers
    python tools/collect.py --env NAME --merge K [...]       # then merge the K shards
    python tools/collect.py --list [--out DIR]

Collection settings come from the same files as a run's: recipes/envs/<env>.gin, then
recipes/scales/<scale>.gin (and scales/<scale>/<env>.gin), then --gin_param, so a run and
this tool build the same dataset; where a flag is not given, the dataset a run would use is
built (the bound task_data.family, task_data.protocol, task_data.seed, task_data.tag and
task_data.root). Datasets live under --out, else $FOCALPP_DATA, else
~/.cache/focalpp/datasets. A dataset that exists is validated and reused; `--quality` loads
and checks only that quality. `--shard I/K` trains the behaviour policies of the I-th of K
task shards only (components/data/shards.py); `--merge K` joins them into the dataset (tagged
`-shards<K>`: another dataset than the build in one piece).

Progress: a bar on a terminal, else (in the background: `nohup ... > build.log &`) a line with
the rate and the time left every 30 seconds. With `behaviour_sac.resume_every` set (the
long-build scales set it), a killed build is continued by running the same command again.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from components.cli.parser import ToolParser, whole_number
from components.data.build import describe
from components.data.collect import collect, collect_shard
from components.data.store import MANIFEST, cache_root, load_dataset
from components.outputs.console import out, run_tool
from components.outputs.progress import progress_lines
from registry import FocalppError, names
from registry.constraints import SEED_RANGE, check_seed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = ToolParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--env", help="family name, e.g. sparse_point_robot")
    p.add_argument("--protocol", help="checkpoints (default), replay or relabeled")
    p.add_argument("--quality", help="check and summarise this quality")
    p.add_argument(
        "--seed",
        type=whole_number(f"an integer seed {SEED_RANGE.describe()}"),
        help="dataset seed (default: task_data.seed, 0)",
    )
    p.add_argument("--scale", default="cpu", help="recipes/scales/<NAME>.gin (default cpu)")
    p.add_argument(
        "--tag", help="store as <protocol>-s<seed>-<TAG> (default: the scale's dataset tag)"
    )
    p.add_argument("--out", type=Path, help="dataset root (default $FOCALPP_DATA or user cache)")
    p.add_argument(
        "--gin_param", action="append", default=[], help="binding, e.g. checkpoints.episodes = 10"
    )
    p.add_argument("--shard", help="I/K: build only shard I of K (then --merge K)")
    p.add_argument(
        "--merge",
        type=whole_number("the number K ≥ 2 of shards"),
        metavar="K",
        help="merge the K built shards",
    )
    p.add_argument(
        "--numerics",
        choices=("portable", "free"),
        help="portable (the default on an x86 CPU with AVX2 and FMA): the same bytes on every "
        "such CPU; free (the default elsewhere): this machine's own kernels and threads, in "
        "this process (other data; for timing against)",
    )
    p.add_argument("--list", action="store_true", help="list the cached datasets")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def list_datasets(root: Path) -> None:
    table = Table(title=f"datasets in {root}", title_justify="left")
    for column in ("family", "protocol", "seed", "qualities", "transitions", "state"):
        table.add_column(column)
    for manifest in sorted(root.glob(f"*/*/{MANIFEST}")):
        try:
            ds = load_dataset(manifest.parent)
            total = sum(sum(q["per_task_counts"]) for q in ds.manifest["qualities"].values())
            row = [ds.manifest["family"], ds.manifest["protocol"], str(ds.manifest["seed"])]
            table.add_row(*row, ", ".join(ds.qualities), f"{total:,}", "ok")
        except FocalppError as e:
            table.add_row(
                manifest.parent.parent.name, manifest.parent.name, "", "", "", escape(str(e))
            )
    out.print(table)


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    try:
        return int(index), int(count)
    except ValueError:
        raise FocalppError(f"--shard {text!r}: expected I/K, e.g. 0/4") from None


@contextmanager
def _progress(label: str):
    """A live bar with time left on a terminal; elsewhere (nohup, a log file) a plain line
    with the rate and the ETA every 30 seconds."""
    if not out.is_terminal:
        yield progress_lines(label)
        return
    columns = ("[progress.description]{task.description}", BarColumn())
    columns += ("{task.completed}/{task.total} steps", TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=out, transient=True) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def execute(args: argparse.Namespace) -> int:
    if args.list:
        list_datasets(args.out or cache_root())
        return 0
    if not args.env:
        raise FocalppError("--env is required (or --list); families: " + ", ".join(names("env")))
    if args.shard is not None and args.merge:
        raise FocalppError("--shard builds one shard and --merge joins them: give one of them")
    if args.merge is not None and args.merge < 2:
        raise FocalppError(
            f"--merge {args.merge}: expected the number K ≥ 2 of shards built with --shard I/K"
        )
    if args.seed is not None:
        check_seed(args.seed, "--seed")
    choices = {
        "scale": args.scale,
        "bindings": args.gin_param,
        "protocol": args.protocol,
        "seed": args.seed,
        "tag": args.tag,
        "root": args.out,
    }
    if args.merge is not None:
        dataset = collect(args.env, merge=args.merge, **choices)
    else:
        with _progress(f"collecting {args.env}") as progress:
            if args.shard is not None:
                index, count = _shard(args.shard)
                path = collect_shard(
                    args.env, index, count, progress=progress, numerics=args.numerics, **choices
                )
                out.print(json.dumps({"shard": f"{index}/{count}", "path": str(path)}))
                return 0
            dataset = collect(args.env, progress=progress, numerics=args.numerics, **choices)
    qualities = [args.quality] if args.quality else dataset.qualities
    for quality in qualities:
        dataset.quality(quality)  # validates every array of that quality
    table = Table(title=str(dataset.path), title_justify="left")
    for column in ("quality", "tasks", "transitions", "mean return", "mean sparse return"):
        table.add_column(column, justify="right")
    for row in describe(dataset):
        if row["quality"] not in qualities:
            continue
        table.add_row(
            row["quality"],
            str(row["tasks"]),
            f"{row['transitions']:,}",
            f"{row['mean_return']:.2f}" if "mean_return" in row else "-",
            f"{row['mean_sparse_return']:.2f}" if "mean_sparse_return" in row else "-",
        )
    out.print(table)
    out.print(json.dumps({"dataset": str(dataset.path)}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
