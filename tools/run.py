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
(stopped while they ran: they run now). Where the run's recipe or plugin file has moved,
`--recipe NEW_PATH` or `--plugin NEW_PATH` says where it is now. One process trains in a run
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
import contextlib
import json
import random
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from rich.markup import escape
from rich.table import Table

from components import machine
from components.algorithms.seed_records import with_seed
from components.contracts import check
from components.evaluation.analyses import analyse, check_names, scalars
from components.reporting.checkpoint import CHECKPOINT
from components.reporting.console import err, out, run_tool
from components.reporting.run_dir import (
    atomic_write_text,
    create_run_dir,
    default_run_dir,
    pending_analyses,
    run_lock,
    run_name,
)
from components.reporting.run_record import (
    compose_recorded,
    plugin_reference,
    portable,
    read_run_record,
    recorded_recipe,
    relocated_plugins,
)
from registry import (
    Composition,
    FocalppError,
    RunContext,
    compose,
    default_recipes_dir,
    get,
    operative_config,
)
from registry.constraints import check_seed
from registry.provenance import built_parts, config_digest, effective_bindings
from registry.recipes import build_algorithm, find_recipe
from registry.usage import check_used, provenance
from registry.validation import shadowed_bindings


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--recipe", help="recipe file (path, or name under recipes/)")
    p.add_argument("--env", help="environment column: recipes/envs/<NAME>.gin")
    p.add_argument("--scale", help="scale: recipes/scales/<NAME>.gin (default from recipe: cpu)")
    p.add_argument("--seed", type=int, help="random seed (default from recipe: 0)")
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
    p.add_argument("--dry-run", action="store_true", help="print the resolved choices and stop")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p.parse_args(argv)


def parse_seeds(spec: str) -> tuple[int, ...]:
    """`0-7`, `0,3,5` or `0-3,8` -> the seeds, in order, each once."""
    seeds: list[int] = []
    try:
        for part in spec.split(","):
            first, _, last = part.strip().partition("-")
            seeds += range(int(first), int(last or first) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{spec!r}: expected seeds as a range and/or a list, e.g. 0-7, 0,3,5 or 0-3,8"
        ) from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{spec!r}: expected at least one seed, each once")
    for seed in seeds:
        check_seed(seed, "--seeds")
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


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def recorded_run(args: argparse.Namespace, run_dir: Path) -> dict:
    """The run.json of `--resume RUN_DIR`, checked against any choice also given as a flag.
    `--recipe` is accepted where the recorded recipe file is not on this machine (a copied
    run directory): the checkpoint's configuration fingerprint still has to match."""
    record = read_run_record(run_dir, doing="resume")
    if args.out is not None:
        raise FocalppError("--resume continues the run in its own directory; drop --out")
    if args.recipe:
        asked = portable(find_recipe(args.recipe, default_recipes_dir()))
        if not _recipe_on_this_machine(record, run_dir):
            record = {**record, "recipe": asked}
        elif asked != portable(
            find_recipe(recorded_recipe(record, run_dir), default_recipes_dir())
        ):
            raise _mismatch(run_dir, "recipe", asked, record["recipe"])
    given = {
        "env": args.env,
        "scale": args.scale,
        "seed": args.seed,
        "device": args.device,
        "bindings": args.gin_param or None,
    }
    for key, value in given.items():
        if value is not None and value != record.get(key, []):
            raise _mismatch(run_dir, key, value, record.get(key, []))
    return {**record, "plugins": _resumed_plugins(args.plugin, record, run_dir)}


def _resumed_plugins(given: list[str], record: dict, run_dir: Path) -> list[str]:
    """The run's plugins; `--plugin` may name only them: a file at a new place where the
    recorded one moved (the same file name), or as recorded."""
    plugins = relocated_plugins(record, run_dir, given)
    if any(plugin_reference(p) not in plugins for p in given):
        raise _mismatch(run_dir, "plugins", given, record.get("plugins", []))
    return plugins


def _mismatch(run_dir: Path, key: str, value, recorded) -> FocalppError:
    return FocalppError(
        f"cannot resume {run_dir} with {key} {value!r}: it is a run of {key} {recorded!r}. A "
        "resumed run keeps its recorded choices; drop the flag, or start a new run"
    )


def _recipe_on_this_machine(record: dict, run_dir: Path) -> bool:
    try:
        recorded_recipe(record, run_dir)
    except FocalppError:
        return False
    return True


def check_dataset(algorithm, record: dict, run_dir: Path) -> None:
    """A resumed run must read the data it started on: the same build (manifest digest) or
    the same content rebuilt elsewhere (content digest; runs recorded before it have none)."""
    dataset = _dataset_of(algorithm)
    recorded = record.get("dataset", {}).get("manifest_sha256")
    content = record.get("dataset", {}).get("content_sha256")
    if dataset is None or recorded is None or recorded == dataset.digest:
        return
    if content is not None and content == dataset.content_digest:
        return
    raise FocalppError(
        f"cannot resume {run_dir}: it was trained on dataset {record['dataset']['name']} with "
        f"manifest digest {recorded[:12]}…, but {dataset.path} now has {dataset.digest[:12]}…; "
        "the dataset was rebuilt with other data or edited since. Point task_data.root at the "
        "original store, or start a new run"
    )


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
        finished = [d for d in dirs if (d / "eval.json").is_file()]
        for d in finished:
            show_finished(d)
            finish_analyses(d, args.plugin)
        dirs = [d for d in dirs if d not in finished]
        if not dirs:
            return 0
        records = [recorded_run(args, d) for d in dirs]
        check_one_recipe(records, dirs)
        comp = compose_recorded(records[0], dirs[0])
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
    show_choices(comp)
    exp = comp.experiment
    check_names(exp.analyses)  # a misspelt analysis fails before the run, not after it
    for name in exp.analyses:  # and one that breaks its kind's contract (names no section)
        check(get("analysis", name))
    if args.dry_run:
        show_bindings()
        return 0
    with contextlib.ExitStack() as locks:
        if records:
            for d in dirs:
                locks.enter_context(run_lock(d))
            if all((d / "eval.json").is_file() for d in dirs):  # finished by the locks' holders
                return max(show_finished(d) for d in dirs)
            seeds = tuple(r["seed"] for r in records)
        else:
            seeds = args.seeds or (exp.seed,)
            dirs = [create_run_dir(d) for d in new_run_dirs(args, comp, seeds)]
            for d in dirs:
                locks.enter_context(run_lock(d, doing="run in"))
        return train(args, comp, dirs, records, seeds)


def new_run_dirs(args: argparse.Namespace, comp: Composition, seeds: tuple[int, ...]) -> list[Path]:
    """A new run's directory (`--out`, else a fresh one under `--runs-root`); with `--seeds`,
    one per seed: `--out/<recipe>-<env>-s<seed>`, else each under `--runs-root`."""
    exp = comp.experiment
    if args.seeds is None:
        return [args.out or default_run_dir(args.runs_root, str(comp.recipe), exp.env, exp.seed)]
    if args.out is not None and "{seed}" in str(args.out):  # each seed's directory named
        return [Path(str(args.out).replace("{seed}", str(s))) for s in seeds]
    if args.out is not None:
        return [args.out / run_name(str(comp.recipe), exp.env, s) for s in seeds]
    return [default_run_dir(args.runs_root, str(comp.recipe), exp.env, s) for s in seeds]


def check_one_recipe(records: list[dict], dirs: list[Path]) -> None:
    """Run directories resumed together must hold runs of one recipe that differ in their
    seed only (seeds trained together)."""
    same = ("recipe", "env", "scale", "device", "bindings", "plugins", "label")
    for record, d in zip(records[1:], dirs[1:], strict=True):
        differ = [k for k in same if record.get(k) != records[0].get(k)]
        if differ:
            raise FocalppError(
                f"cannot resume {dirs[0]} and {d} together: their runs differ in "
                f"{', '.join(differ)}, not only in the seed; resume each on its own"
            )
    seeds = [r["seed"] for r in records]
    if len(set(seeds)) != len(seeds):
        raise FocalppError(f"the run directories resumed together repeat a seed ({seeds})")


def finish_analyses(run_dir: Path, plugins: Sequence[str]) -> None:
    """The end-of-run analyses a finished run asked for and has no result of: its process
    was stopped while they ran (eval.json is written before them)."""
    pending = pending_analyses(run_dir)
    if not pending:
        return
    out.print(escape(f"{run_dir}: running the analyses it has no result of: {', '.join(pending)}"))
    with run_lock(run_dir, doing="analyse"):
        run_analyses(run_dir, pending, plugins)


def run_analyses(run_dir: Path, names: Sequence[str], plugins: Sequence[str] = ()) -> None:
    """Run `names` on the finished run (into its analysis.json) and print each one's scalars."""
    results = analyse(run_dir, names, plugins=plugins)
    for name in names:
        out.print(escape(f"{name}: {scalars(results[name])}"))


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


def train(
    args: argparse.Namespace,
    comp: Composition,
    run_dirs: list[Path],
    records: list[dict],
    seeds: tuple[int, ...],
) -> int:
    """Build the algorithm in `run_dirs` (fresh ones, or `records`' runs resumed; one per seed
    for seeds trained together), train it to the end and print its headline; the caller holds
    the run directories' locks."""
    exp = comp.experiment
    resume, grouped = bool(records), len(run_dirs) > 1 or args.seeds is not None
    seed_everything(seeds[0])
    context = RunContext(
        env=exp.env,
        scale=exp.scale,
        seed=seeds[0],
        run_dir=run_dirs[0],
        device=exp.device,
        resume=resume,
        seeds=seeds if grouped else (),
        seed_dirs=tuple(run_dirs) if grouped else (),
    )
    try:
        check(exp.algorithm, "algorithm", parts=False)  # its constructor, before a build
        algorithm = build_algorithm(exp, context)
        if grouped and not getattr(algorithm, "batched", False):
            raise FocalppError(
                f"algorithm {exp.algorithm_name} cannot train several seeds in one process "
                "(--seeds): it does not read RunContext.seeds; run its seeds as single runs"
            )
        if not resume:  # a resumed run was checked when it started
            check_every_binding_used(algorithm, exp.analyses)
    except BaseException:
        if not resume:
            for d in run_dirs:
                shutil.rmtree(d)  # nothing was produced yet: leave no half-made run behind
        raise
    for warning in shadowed_bindings():
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if resume:
        for record, d in zip(records, run_dirs, strict=True):
            check_dataset(algorithm, record, d)
    else:  # a resumed run keeps its files until its checkpoint is accepted
        configuration = configuration_record(exp.analyses)
        for seed, d in zip(seeds, run_dirs, strict=True):
            atomic_write_text(d / "config.gin", seed_config(seed, grouped))
            record = {
                "recipe": portable(comp.recipe),
                "algorithm": exp.algorithm_name,
                "env": exp.env,
                "scale": exp.scale,
                "seed": seed,
                "device": exp.device,
                "bindings": list(args.gin_param),
                "label": args.label or "",
                "plugins": [plugin_reference(p) for p in args.plugin],
                "sources": [_portable_source(s) for s in comp.sources],
                "binding_sources": [binding.to_dict() for binding in provenance()],
                "analyses": list(exp.analyses),  # run at its end; --resume finishes them
                **code_and_machine(),
                "machine": machine.summary(),
                **configuration,
                **({"trained_with_seeds": list(seeds)} if grouped else {}),
                **_dataset_record(algorithm),
            }
            atomic_write_text(d / "run.json", json.dumps(record, indent=1))
    for d in run_dirs:
        out.print(f"run directory: {escape(str(d))}")
    try:
        metrics = algorithm.run() or {}
    except BaseException as e:
        if not resume and not any((d / CHECKPOINT).exists() for d in run_dirs):
            for d in run_dirs:
                shutil.rmtree(d)  # stopped before its first checkpoint: nothing to resume
            if isinstance(e, FocalppError):
                where = ", ".join(str(d) for d in run_dirs)
                verb = "was" if len(run_dirs) == 1 else "were"
                e.args = (f"{e}\n(no checkpoint had been written: {where} {verb} removed)",)
        raise
    for seed, d in zip(seeds, run_dirs, strict=True):
        atomic_write_text(d / "config.gin", seed_config(seed, grouped))
        if exp.analyses and (d / "eval.json").is_file():
            run_analyses(d, exp.analyses)
    headline = metrics.pop("headline", None)
    for key, value in metrics.items():
        out.print(escape(f"{key}: {value}"))
    if headline is not None:
        out.print(escape(str(headline)))
    return 0


def seed_config(seed: int, grouped: bool) -> str:
    """The operative configuration; of one of several seeds trained together, as that seed's
    single run would have it."""
    return with_seed(operative_config(), seed) if grouped else operative_config()


def check_every_binding_used(algorithm, analyses: Sequence[str]) -> None:
    """Before training: every binding configured a built part, or one of the analyses run at
    the end (else the run is not the one its bindings describe)."""
    try:
        check_used(later=analyses)
    except FocalppError:
        getattr(algorithm, "close", lambda: None)()
        raise


def configuration_record(analyses: Sequence[str]) -> dict:
    """What the run is built from (after its parts are built): every binding that took effect,
    their digest, and the registered parts built, by kind (registry/provenance.py)."""
    bindings = effective_bindings(later=analyses)
    return {
        "config_digest": config_digest(bindings),
        "parts": built_parts(),
        "effective_bindings": bindings,
    }


def code_and_machine() -> dict:
    """The code and machine that train the run: the commit and whether the checkout had
    uncommitted changes ('unknown' outside a git checkout), the CPU, the torch version."""
    commit = source_commit()
    return {
        "commit": commit.rstrip("+") if commit else "unknown",
        "clean": not commit.endswith("+") if commit else "unknown",
        "cpu": machine.cpu(),
        "torch": torch.__version__,
    }


def source_commit() -> str | None:
    """The git commit of the code that trains the run (`+` if it has uncommitted changes), or
    None outside a git checkout: a record names the code its numbers came from."""
    import subprocess

    here = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "components",
             "registry", "recipes", "tools"],
            cwd=here, capture_output=True, text=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def _dataset_record(algorithm) -> dict:
    """Which dataset the run trains on: its name in the store, its tag (the variant of
    collection settings; `-shards<K>` for a build in shards), its manifest digest (this build)
    and its content digest (these data, wherever built), which the resume of the run checks."""
    dataset = _dataset_of(algorithm)
    if dataset is None:
        return {}
    name = f"{dataset.path.parent.name}/{dataset.path.name}"
    tag = dataset.manifest.get("tag")
    return {
        "dataset": {
            "name": name,
            "tag": tag,
            "manifest_sha256": dataset.digest,
            "content_sha256": dataset.content_digest,
        }
    }


def _dataset_of(algorithm):
    """The store dataset an algorithm trains on: its task data's, or (an algorithm of one's
    own that loads its data itself) its own `dataset`; None if it has none."""
    data = getattr(algorithm, "data", None)
    return getattr(data, "dataset", None) or getattr(algorithm, "dataset", None)


def _portable_source(source: str) -> str:
    """A source file as a portable path; anything else (a description of bindings) as is."""
    try:
        is_file = Path(source).is_file()
    except OSError:  # e.g. a description longer than a file name may be
        is_file = False
    return portable(source) if is_file else source


def main(argv: Sequence[str] | None = None) -> int:
    return run_tool(execute, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
