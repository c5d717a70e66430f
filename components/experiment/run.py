"""Train a composition to the end: build its algorithm in its run directories, record what
runs, train and meta-test, run the analyses it asked for, and return what it finished with."""

from __future__ import annotations

import contextlib
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.markup import escape

from components.contracts import check
from components.evaluation.analyses import check_names, scalars
from components.experiment.build import build_algorithm
from components.experiment.facts import configuration_record, run_facts, seed_config
from components.experiment.resume import check_dataset
from components.experiment.trained import analyse
from components.outputs.checkpoint import CHECKPOINT
from components.outputs.console import err, out
from components.outputs.run_dir import (
    atomic_write_text,
    create_run_dir,
    default_run_dir,
    run_lock,
    run_name,
)
from components.outputs.run_record import write_run_record
from registry import Composition, FocalppError, RunContext
from registry.usage import check_used
from registry.validation import shadowed_bindings


@dataclass(frozen=True)
class Finished:
    """A finished run: its directories (one per seed), its final metrics (the algorithm's own
    summary) and the headline of its final meta-test (None for an algorithm without one)."""

    run_dirs: tuple[Path, ...]
    metrics: dict[str, Any]
    headline: Any = None


def run(
    comp: Composition,
    out_dir: str | Path | None = None,
    *,
    seeds: Sequence[int] | None = None,
    label: str = "",
    runs_root: str | Path = "runs",
) -> Finished:
    """Train `comp` in a fresh run directory and meta-test it.

    Args:
        comp: what to run (`registry.compose(recipe, env=, scale=, seed=, bindings=, ...)`).
        out_dir: the run directory (must not exist); None: a fresh one under `runs_root`. With
            `seeds`, their parent, or a path with `{seed}` naming each seed's directory.
        seeds: train these seeds in one process as one seed-batched model (each gets a single
            run's directory and records); None: the composition's own seed.
        label: a name for this run's variant, kept in run.json for reports.
    """
    check_names(comp.experiment.analyses)  # a misspelt analysis fails before the run, not after
    grouped = seeds is not None
    seeds = tuple(seeds) if seeds is not None else (comp.experiment.seed,)
    where = None if out_dir is None else Path(out_dir)
    wanted = new_run_dirs(comp, where, seeds, grouped, runs_root)
    with contextlib.ExitStack() as locks:
        dirs = [create_run_dir(d) for d in wanted]
        for d in dirs:
            locks.enter_context(run_lock(d, doing="run in"))
        return train(comp, dirs, seeds=seeds, grouped=grouped, label=label)


def new_run_dirs(
    comp: Composition,
    out_dir: Path | None,
    seeds: tuple[int, ...],
    grouped: bool,
    runs_root: str | Path = "runs",
) -> list[Path]:
    """A new run's directory (`out_dir`, else a fresh one under `runs_root`); for seeds trained
    together, one per seed: `out_dir/<recipe>-<env>-s<seed>`, else each under `runs_root`."""
    exp, root = comp.experiment, Path(runs_root)
    if not grouped:
        return [out_dir or default_run_dir(root, str(comp.recipe), exp.env, exp.seed)]
    if out_dir is not None and "{seed}" in str(out_dir):  # each seed's directory named
        return [Path(str(out_dir).replace("{seed}", str(s))) for s in seeds]
    if out_dir is not None:
        return [out_dir / run_name(str(comp.recipe), exp.env, s) for s in seeds]
    return [default_run_dir(root, str(comp.recipe), exp.env, s) for s in seeds]


def train(
    comp: Composition,
    run_dirs: list[Path],
    *,
    seeds: tuple[int, ...],
    grouped: bool,
    label: str = "",
    records: Sequence[dict] = (),
) -> Finished:
    """Build the algorithm in `run_dirs` (fresh ones, or `records`' runs resumed; one per seed
    for seeds trained together), train it to the end and run its analyses; the caller holds
    the run directories' locks."""
    comp.apply()  # its own configuration, whatever was composed since
    exp = comp.experiment
    resume = bool(records)
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
            record = run_facts(
                comp,
                algorithm,
                seed,
                label=label,
                seeds=seeds if grouped else (),
                configuration=configuration,
            )
            write_run_record(d, record)
    for d in run_dirs:
        out.print(f"run directory: {escape(str(d))}")
    try:
        metrics = algorithm.run() or {}
    except BaseException as e:
        # stopped before its first checkpoint: nothing to resume (a folder replaced by a file
        # or moved away mid-run is not ours to remove)
        if not resume and all(d.is_dir() and not (d / CHECKPOINT).exists() for d in run_dirs):
            for d in run_dirs:
                shutil.rmtree(d, ignore_errors=True)
            if isinstance(e, FocalppError):
                where = ", ".join(str(d) for d in run_dirs)
                verb = "was" if len(run_dirs) == 1 else "were"
                e.args = (f"{e}\n(no checkpoint had been written: {where} {verb} removed)",)
        raise
    for seed, d in zip(seeds, run_dirs, strict=True):
        atomic_write_text(d / "config.gin", seed_config(seed, grouped))
        if exp.analyses and (d / "eval.json").is_file():
            run_analyses(d, exp.analyses)
    metrics = dict(metrics)
    headline = metrics.pop("headline", None)
    return Finished(tuple(run_dirs), metrics, headline)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def check_every_binding_used(algorithm: Any, analyses: Sequence[str]) -> None:
    """Before training: every binding configured a built part, or one of the analyses run at
    the end (else the run is not the one its bindings describe)."""
    try:
        check_used(later=analyses)
    except FocalppError:
        getattr(algorithm, "close", lambda: None)()
        raise


def run_analyses(run_dir: Path, names: Sequence[str], plugins: Sequence[str] = ()) -> None:
    """Run `names` on the finished run (into its analysis.json) and print each one's scalars."""
    results = analyse(run_dir, names, plugins=plugins)
    for name in names:
        out.print(escape(f"{name}: {scalars(results[name])}"))
