"""A run's life after `run`, as library calls: `resume` a stopped run, `load` a trained one,
`analyse` a finished one. Each rebuilds the run from its run.json alone (the configuration it
keeps, never the recipe files) and checks what `tools/run.py --resume` and `tools/analyze.py`
check, which are command lines over these.

    from components.experiment import analyse, load, resume

    resume("runs/mine")                     # goes on from its last checkpoint, exactly
    agent = load("runs/mine")               # the trained algorithm, its networks loaded
    analyse("runs/mine", ["task_vectors"])  # into runs/mine/analysis.json
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import components.numerics as numerics
from components.experiment.resume import check_one_recipe, recorded_run
from components.experiment.run import Finished, train
from components.experiment.trained import analyse as _analyse
from components.experiment.trained import analyse_finished, load_trained
from components.outputs.run_dir import run_lock
from components.outputs.run_record import compose_recorded, pending_analyses
from registry import Composition, FocalppError


def resume(
    *run_dirs: str | Path,
    plugins: Sequence[str] = (),
    recipe: str | None = None,
    given: Mapping[str, Any] | None = None,
    numerics_asked: str | None = None,
) -> Finished | None:
    """Continue the stopped run in `run_dirs` (or the seeds trained together in them) from its
    last checkpoint, with its recorded choices and numerics, to the end; a finished run is left
    as it is but for the end-of-run analyses it has no result of. None where nothing was left
    to train. `plugins`: the run's plugin files at their new place, where they moved; `recipe`:
    the recipe file where the recorded one is not on this machine; `given` and
    `numerics_asked`: choices a caller also states (each must be the recorded one)."""
    dirs = list(dict.fromkeys(Path(d) for d in run_dirs))
    for d in (d for d in dirs if (d / "eval.json").is_file()):
        finish_analyses(d, plugins)
    stopped = stopped_runs(dirs, plugins, recipe, given, numerics_asked)
    return None if stopped is None else continue_runs(*stopped)


def stopped_runs(
    dirs: Sequence[Path],
    plugins: Sequence[str] = (),
    recipe: str | None = None,
    given: Mapping[str, Any] | None = None,
    numerics_asked: str | None = None,
) -> tuple[Composition, list[Path], list[dict]] | None:
    """The unfinished runs of `dirs` as `continue_runs` takes them (their composition, rebuilt
    from the first's run.json; their directories; their records), every recorded choice
    checked against what is `given`; None where every run has finished."""
    if not dirs:
        raise FocalppError("resume: name the run directory (or those of seeds trained together)")
    todo = [d for d in dirs if not (d / "eval.json").is_file()]
    if not todo:
        return None
    records = [recorded_run(d, recipe=recipe, given=given, plugins=plugins) for d in todo]
    check_one_recipe(records, todo)
    check_numerics(numerics_asked, records, todo)
    return compose_recorded(records[0], todo[0]), todo, records


def continue_runs(comp: Composition, dirs: list[Path], records: list[dict]) -> Finished | None:
    """Train the recorded runs in `dirs` (composed as `comp`) on, holding their locks; None
    where another process finished them while this one waited."""
    with contextlib.ExitStack() as locks:
        for d in dirs:
            locks.enter_context(run_lock(d))
        if all((d / "eval.json").is_file() for d in dirs):  # finished by the locks' holders
            return None
        seeds = tuple(r["seed"] for r in records)
        return train(comp, dirs, seeds=seeds, grouped=len(dirs) > 1, records=records)


def check_numerics(asked: str | None, records: list[dict], dirs: list[Path]) -> None:
    """A run goes on with the numerics it started with (others would give other bits than the
    run never stopped), and this process must have them."""
    modes = {(r.get("numerics") or {}).get("mode", numerics.FREE) for r in records}
    if len(modes) > 1:
        raise FocalppError(f"the runs {', '.join(map(str, dirs))} trained with different numerics")
    (mode,) = modes
    if asked is not None and asked != mode:
        raise FocalppError(
            f"--numerics {asked}: {dirs[0]} trained with {mode} numerics, and a run goes on with "
            f"its own (drop --numerics)"
        )
    numerics.require(mode)


def finish_analyses(run_dir: Path, plugins: Sequence[str] = ()) -> dict[str, Any]:
    """The end-of-run analyses a finished run asked for and has no result of (its process was
    stopped while they ran: eval.json is written before them), run now; their results."""
    pending = pending_analyses(run_dir)
    if not pending:
        return {}
    with run_lock(run_dir, doing="analyse"):
        results = _analyse(run_dir, pending, plugins=plugins)
    return {name: results[name] for name in pending}


def load(run_dir: str | Path, plugins: Sequence[str] = ()) -> Any:
    """The trained algorithm of the run in `run_dir`, its checkpoint's networks loaded (the
    last meta-test's, for a finished run): it acts and meta-tests."""
    return load_trained(Path(run_dir), plugins)


def analyse(
    run_dir: str | Path, names: Sequence[str], plugins: Sequence[str] = ()
) -> dict[str, Any]:
    """Run the registered analyses `names` on the finished run, into its analysis.json; their
    results by name."""
    results = analyse_finished(Path(run_dir), list(names), plugins=plugins)
    return {name: results[name] for name in names}
