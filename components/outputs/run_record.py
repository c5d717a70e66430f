"""run.json, a run directory's record of what ran: the one module that writes, reads, extends and
migrates it, and composes the run again from it.

A new run's fields are gathered in components/experiment/facts.py and written here
(`write_run_record`); the trainer adds what it settles later (`add_to_run_record`: the precision
'auto' chose); everything that reads a run — resume, load, analyse, reports, a study — reads it
through `read_run_record`, which checks it and migrates a record written before a field existed
(`migrate`), and a run is rebuilt from its record with `compose_recorded`. Read before torch
loads (`recorded_numerics`: which numerics a resumed run's process must be given).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from components.json_text import loads
from components.outputs.run_dir import atomic_write_text, missing_analyses
from registry import Composition, FocalppError, compose, default_recipes_dir
from registry.constraints import check_seed
from registry.recipes import compose_config

RUN_JSON = "run.json"
RECORDED = ("recipe", "env", "scale", "seed", "device")
# What a record written before a field existed means by its absence (an old run trained with
# each machine's own numerics; no bindings, plugins, label or end-of-run analyses given).
ADDED_SINCE: dict[str, Any] = {
    "numerics": {"mode": "free", "note": "recorded before numerics were"},
    "bindings": [],
    "plugins": [],
    "label": "",
    "analyses": [],
    "sources": [],
}


def write_run_record(run_dir: Path, record: dict[str, Any]) -> None:
    """Write a new run's run.json whole (a reader sees the old file or the new one, never half)."""
    atomic_write_text(Path(run_dir) / RUN_JSON, json.dumps(record, indent=1))


def migrate(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with the fields it was written without filled as their absence means
    (ADDED_SINCE); a record of today comes back equal."""
    return {**{k: copy.deepcopy(v) for k, v in ADDED_SINCE.items() if k not in record}, **record}


def portable(path: str | Path) -> str:
    """A recipe file as run.json records it: relative to the recipes directory where it lies
    inside (so the record holds on any machine and checkout), else its absolute path."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(default_recipes_dir().resolve()))
    except ValueError:
        return str(path)


def recorded_recipe(record: dict[str, Any], run_dir: Path) -> str:
    """The recipe file a record names, found on this machine: a name under the recipes
    directory; an absolute path; or, for records written by other checkouts (absolute paths
    into their recipes directory), the same file under this one's."""
    recipe = Path(record["recipe"])
    if not recipe.is_absolute() or recipe.is_file():
        return str(recipe)
    parts = recipe.parts
    if "recipes" in parts:
        tail = Path(*parts[len(parts) - parts[::-1].index("recipes") :])
        if (default_recipes_dir() / tail).is_file():
            return str(tail)
    raise FocalppError(
        f"{run_dir}/run.json names recipe {recipe}, which is not on this machine (the run "
        "directory was copied or the file moved): put it back, or resume with "
        f"`python tools/run.py --resume {run_dir} --recipe NEW_PATH` (the configuration must "
        "still be the one the run was trained with)"
    )


def read_run_record(run_dir: Path, *, doing: str = "read") -> dict[str, Any]:
    """run.json of `run_dir`, checked; errors say `cannot <doing> <run_dir>: ...`."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FocalppError(f"cannot {doing} {run_dir}: no such run directory")
    path = run_dir / RUN_JSON
    if not path.is_file():
        raise FocalppError(f"cannot {doing} {run_dir}: not a run directory (it has no run.json)")
    try:
        record = loads(path.read_bytes())
    except ValueError as e:
        raise FocalppError(f"cannot {doing} {run_dir}: {path} is not a run record ({e})") from e
    if not isinstance(record, dict):
        raise FocalppError(
            f"cannot {doing} {run_dir}: {path} is not a run record (expected a JSON object)"
        )
    missing = [k for k in RECORDED if k not in record]
    if missing:
        raise FocalppError(f"cannot {doing} {run_dir}: {path} lacks {', '.join(missing)}")
    _check_recorded_values(record, path, f"cannot {doing} {run_dir}")
    return migrate(record)


def _check_recorded_values(record: dict[str, Any], path: Path, prefix: str) -> None:
    """The recorded choices have the types tools/run.py writes (a hand edit may break them)."""
    for key in ("recipe", "env", "scale", "device"):
        if not isinstance(record[key], str):
            raise FocalppError(
                f"{prefix}: {path} has {key} {record[key]!r}, expected a string: the record "
                "is damaged"
            )
    try:
        check_seed(record["seed"], "seed")
    except FocalppError as e:
        raise FocalppError(f"{prefix}: {path} has {e}: the record is damaged") from e


def add_to_run_record(run_dir: Path, key: str, value: Any) -> None:
    """Set `key` in the run's run.json, where it has one (tools/run.py writes it; a trainer
    built elsewhere, e.g. by a benchmark, has none)."""
    path = Path(run_dir) / RUN_JSON
    if path.is_file():
        record = json.loads(path.read_text())
        if record.get(key) != value:
            atomic_write_text(path, json.dumps({**record, key: value}, indent=1))


def pending_analyses(run_dir: Path) -> tuple[str, ...]:
    """The analyses the run asked for at its end (`experiment.analyses`, kept in run.json)
    that it has no result of: the process stopped after eval.json, while they ran."""
    path = Path(run_dir) / RUN_JSON
    asked = json.loads(path.read_text()).get("analyses", []) if path.is_file() else []
    return missing_analyses(Path(run_dir), asked)


def recorded_numerics(run_dirs: Sequence[str | Path]) -> str | None:
    """The numerics the runs in `run_dirs` trained with, as their run.json says (None where
    none says: a run recorded before numerics were, or no readable record). Light on purpose:
    a command reads it before torch and numpy load, to give its process the same numerics."""
    for run_dir in run_dirs:
        try:
            record = json.loads((Path(run_dir) / RUN_JSON).read_text())
        except (OSError, ValueError):
            continue
        found = record.get("numerics") if isinstance(record, dict) else None
        if isinstance(found, dict) and found.get("mode") in ("portable", "free"):
            return found["mode"]
    return None


def plugin_reference(plugin: str) -> str:
    """A plugin file as an absolute path (a resume may start elsewhere); a module name as is."""
    path = Path(plugin).expanduser()
    return str(path.resolve()) if path.suffix == ".py" and path.is_file() else plugin


def relocated_plugins(record: dict[str, Any], run_dir: Path, given: Sequence[str] = ()) -> list:
    """The run's plugins as this machine has them: a recorded plugin file that is not here is
    replaced by the `given` file of the same name (`--plugin NEW_PATH`, as `--recipe NEW_PATH`
    for a moved recipe; the configuration fingerprint still has to match); without one, the
    message says so."""
    moved = {Path(p).name: plugin_reference(p) for p in given if str(p).endswith(".py")}
    plugins = []
    for plugin in record.get("plugins", []):
        name = Path(plugin).name
        if not str(plugin).endswith(".py") or Path(plugin).is_file():
            plugins.append(plugin)
        elif name in moved:
            plugins.append(moved[name])
        else:
            raise FocalppError(
                f"{run_dir}/run.json names plugin file {plugin}, which is not on this machine "
                "(the run directory was copied or the file moved): put it back, or say where "
                f"it is now with --plugin NEW_PATH/{name} (`python tools/run.py --resume "
                f"{run_dir} --plugin NEW_PATH/{name}`, or `python tools/analyze.py {run_dir} "
                f"--plugin NEW_PATH/{name}`; the configuration must still be the one the run "
                "was trained with)"
            )
    return plugins


def compose_recorded(
    record: dict[str, Any], run_dir: Path, bindings: tuple[str, ...] = ()
) -> Composition:
    """The run's configuration, rebuilt from its record (plus extra `bindings`): from the
    configuration run.json keeps (`config`), so that editing or deleting a recipe file after
    the run changes nothing; a run recorded before that composes its recipe files again."""
    if isinstance(record.get("config"), str):
        return compose_config(
            record["config"],
            recipe=record["recipe"],
            sources=record.get("sources", ()),
            seed=record["seed"],
            bindings=bindings,
            plugins=relocated_plugins(record, run_dir),
        )
    return compose(
        recorded_recipe(record, run_dir),
        env=record["env"],
        scale=record["scale"],
        seed=record["seed"],
        device=record["device"],
        bindings=[*record.get("bindings", []), *bindings],
        plugins=relocated_plugins(record, run_dir),
    )
