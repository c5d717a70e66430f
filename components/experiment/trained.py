"""A trained run rebuilt from its run directory: `load_trained` (the algorithm, its checkpoint's
networks loaded) and `analyse` (registered analyses run on it, into analysis.json;
`analyse_finished` from outside the run's own process). Both rebuild the run from the
configuration its run.json keeps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from components.evaluation.analyses import GIVEN, check_reach
from components.experiment.build import build_algorithm
from components.outputs.checkpoint import (
    CHECKPOINT,
    check_fingerprint,
    config_fingerprint,
    load_checkpoint,
)
from components.outputs.console import out
from components.outputs.run_dir import ANALYSIS, atomic_write_text, run_lock
from components.outputs.run_record import compose_recorded, read_run_record, relocated_plugins
from registry import FocalppError, RunContext, get
from registry.parsing import parse_bindings
from registry.validation import check_bindings


def load_trained(run_dir: Path, plugins: Sequence[str] = ()):
    """The algorithm of a run with its checkpoint's networks (the last meta-test's, for a
    finished run): built from the recorded configuration, which must match the checkpoint's.
    `plugins`: where the run's plugin files are now, if they moved (`relocated_plugins`)."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir, doing="analyse")
    record = {**record, "plugins": relocated_plugins(record, run_dir, plugins)}
    exp = compose_recorded(record, run_dir).experiment
    context = RunContext(
        env=exp.env, scale=exp.scale, seed=exp.seed, run_dir=run_dir, device=exp.device
    )
    algorithm = build_algorithm(exp, context)
    if not hasattr(algorithm, "load_weights"):
        raise FocalppError(f"algorithm {exp.algorithm_name} of {run_dir} cannot load a checkpoint")
    state = load_checkpoint(run_dir)
    if "config_fingerprint" not in state:
        out.print(
            f"note: {run_dir}'s checkpoint predates configuration fingerprints; it is read "
            "with the recipe files as they are now"
        )
    else:
        check_fingerprint(state, config_fingerprint(), run_dir / CHECKPOINT)
    algorithm.load_weights(state)
    return algorithm


def analyse(
    run_dir: Path, names: Sequence[str], bindings: Sequence[str] = (), plugins: Sequence[str] = ()
) -> dict:
    """Rebuild a finished run from its record and checkpoint, run `names` on it and merge
    their results into run_dir/analysis.json (written after each); figures go to
    run_dir/figures/. `plugins`: where the run's plugin files are now, if they moved."""
    trained = load_trained(run_dir, plugins)
    parse_bindings(list(bindings), GIVEN)  # the run's own were read as `--gin_param`
    check_bindings()
    check_reach(names)
    figures = run_dir / "figures"
    created = not figures.exists()
    figures.mkdir(exist_ok=True)
    path = run_dir / ANALYSIS
    results = json.loads(path.read_text()) if path.is_file() else {}
    try:
        for name in names:
            analysis = get("analysis", name)()
            results[name] = analysis(trained, figures)
            atomic_write_text(path, json.dumps(results, indent=1))
    except BaseException:
        if created and not any(figures.iterdir()):  # nothing drawn: leave no empty folder
            figures.rmdir()
        raise
    finally:
        trained.loop.meta_test.close()
    return results


def analyse_finished(
    run_dir: Path, names: Sequence[str], bindings: Sequence[str] = (), plugins: Sequence[str] = ()
) -> dict:
    """`analyse` asked from outside the run's own process (tools/analyze.py, the library):
    refused where the run has not finished, since its checkpoint is then not its final state
    and the run would later merge its own results beside these, and done holding the run's
    lock, so that no process trains or analyses it meanwhile."""
    run_dir = Path(run_dir)
    read_run_record(run_dir, doing="analyse")  # a folder that is no run says so first
    if not (run_dir / "eval.json").is_file():
        raise FocalppError(
            f"cannot analyse {run_dir}: the run has not finished (it has no eval.json), so its "
            f"checkpoint is not its final state; finish it first (python tools/run.py --resume "
            f"{run_dir}), or wait for the process that trains it"
        )
    with run_lock(run_dir, doing="analyse"):
        return analyse(run_dir, names, bindings, plugins)
