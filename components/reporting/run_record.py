"""A run directory's record (run.json) and the trained algorithm it describes.

`tools/run.py --resume` continues a run from its record; `tools/analyze.py` rebuilds the trained
algorithm from the record and its checkpoint to measure it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.reporting.checkpoint import (
    CHECKPOINT,
    check_fingerprint,
    config_fingerprint,
    load_checkpoint,
)
from components.reporting.console import out
from registry import Composition, FocalppError, RunContext, compose
from registry.recipes import build

RECORDED = ("recipe", "env", "scale", "seed", "device")


def read_run_record(run_dir: Path, *, doing: str = "read") -> dict[str, Any]:
    """run.json of `run_dir`, checked; errors say `cannot <doing> <run_dir>: ...`."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FocalppError(f"cannot {doing} {run_dir}: no such run directory")
    path = run_dir / "run.json"
    if not path.is_file():
        raise FocalppError(f"cannot {doing} {run_dir}: not a run directory (it has no run.json)")
    try:
        record = json.loads(path.read_text())
        missing = [k for k in RECORDED if k not in record]
    except (json.JSONDecodeError, TypeError) as e:
        raise FocalppError(f"cannot {doing} {run_dir}: {path} is not a run record ({e})") from e
    if missing:
        raise FocalppError(f"cannot {doing} {run_dir}: {path} lacks {', '.join(missing)}")
    return record


def compose_recorded(record: dict[str, Any], bindings: tuple[str, ...] = ()) -> Composition:
    """The run's configuration, composed again from its record (plus extra `bindings`)."""
    return compose(
        record["recipe"],
        env=record["env"],
        scale=record["scale"],
        seed=record["seed"],
        device=record["device"],
        bindings=[*record.get("bindings", []), *bindings],
        plugins=record.get("plugins", []),
    )


def load_trained(run_dir: Path):
    """The algorithm of a run with its checkpoint's networks (the last meta-test's, for a
    finished run): built from the recorded configuration, which must match the checkpoint's."""
    run_dir = Path(run_dir)
    record = read_run_record(run_dir, doing="analyse")
    exp = compose_recorded(record).experiment
    context = RunContext(
        env=exp.env, scale=exp.scale, seed=exp.seed, run_dir=run_dir, device=exp.device
    )
    algorithm = build(exp.algorithm, run=context)
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
