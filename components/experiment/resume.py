"""A stopped run goes on as it started: its recorded choices, its recipe and plugins (where
they moved, at their new place), the same seeds trained together, the same dataset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.experiment.facts import dataset_of
from components.outputs.run_record import (
    plugin_reference,
    portable,
    read_run_record,
    recorded_recipe,
    relocated_plugins,
)
from registry import FocalppError, default_recipes_dir
from registry.columns import find_recipe


def recorded_run(
    run_dir: Path,
    *,
    recipe: str | None = None,
    given: Mapping[str, Any] | None = None,
    plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """The run.json of the run in `run_dir`, checked against the choices also `given` (env,
    scale, seed, device, bindings: None where not given). `recipe` is accepted where the
    recorded recipe file is not on this machine (a copied run directory): the checkpoint's
    configuration fingerprint still has to match. `plugins`: the run's plugin files at their
    new place, where they moved."""
    record = read_run_record(run_dir, doing="resume")
    if recipe:
        asked = portable(find_recipe(recipe, default_recipes_dir()))
        if not _recipe_on_this_machine(record, run_dir):
            record = {**record, "recipe": asked}
        elif asked != portable(
            find_recipe(recorded_recipe(record, run_dir), default_recipes_dir())
        ):
            raise _mismatch(run_dir, "recipe", asked, record["recipe"])
    for key, value in (given or {}).items():
        if value is not None and value != record.get(key, []):
            raise _mismatch(run_dir, key, value, record.get(key, []))
    return {**record, "plugins": _resumed_plugins(list(plugins), record, run_dir)}


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


def check_dataset(algorithm: Any, record: dict, run_dir: Path) -> None:
    """A resumed run must read the data it started on: the same build (manifest digest) or
    the same content rebuilt elsewhere (content digest; runs recorded before it have none)."""
    dataset = dataset_of(algorithm)
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
