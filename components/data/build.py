"""Build a dataset once and reuse it: `ensure_dataset(family, protocol, seed)`.

The family and the protocol are built from the registry (so gin bindings apply). A cached dataset
is reused only if it was built with the same protocol settings, and only if its manifest agrees
with the family that reads it (`check_manifest`): the arrays are checksummed, and the manifest
says what they mean — which tasks are for training, the horizon, each task's goal, the radius of
the sparse rewards — so a hand-edited manifest must not be trusted either.
"""

from __future__ import annotations

import fcntl
import math
import shutil
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from components.data.behaviour import Progress
from components.data.blocks import blocks_of, build_in_blocks
from components.data.store import (
    Dataset,
    DatasetError,
    cache_root,
    dataset_dir,
    load_dataset,
    rebuild_command,
)
from components.envs.family import EnvFamily
from components.numerics import build_default
from components.outputs.console import out
from components.outputs.run_dir import check_name_lengths
from registry import get


def ensure_dataset(
    family_name: str,
    protocol: str,
    seed: int = 0,
    *,
    root: Path | None = None,
    progress: Progress | None = None,
    tag: str | None = None,
    scale: str | None = None,
    family: EnvFamily | None = None,
    numerics: str | None = None,
) -> Dataset:
    """Load the cached dataset, or build, store and load it.

    `tag` names a variant built with other settings (a directory of its own); `scale` is
    recorded in the rebuild command; `family` is the reader's family (built from the registry
    with `seed` if not given), which the manifest must agree with. `numerics` 'free' builds in
    this process with its own kernels (data of this machine only; components/numerics.py);
    by default portable, where they can hold (`components.numerics.build_default`).
    """
    root = Path(root) if root is not None else cache_root()
    path = dataset_dir(root, family_name, protocol, seed, tag)
    check_name_lengths(path, "dataset")
    builder = get("dataset", protocol)()
    family = family if family is not None else get("env", family_name)(seed=seed)
    if path.exists():  # only ever renamed into place complete: no lock needed to read it
        return cached(path, builder, family_name, family)
    with build_lock(path):
        if path.exists():  # another process built it while this one waited
            return cached(path, builder, family_name, family)
        header = dataset_header(family_name, family, protocol, seed, None, tag, scale, root)
        build_in_blocks(
            path,
            family_name,
            protocol,
            seed,
            len(family.all_tasks()),
            header,
            blocks_of(builder),
            progress=progress,
            load=lambda part: cached(part, builder, family_name, family),
            mode=numerics or build_default(),
        )
        return cached(path, builder, family_name, family)


def cached(path: Path, builder, family_name: str, family: EnvFamily) -> Dataset:
    dataset = load_dataset(path)  # raises for half-written or unreadable datasets
    check_manifest(dataset, family_name, family)
    # what the quality checks need of the reader (components/data/content.py)
    episodic = getattr(builder, "episodic", True)
    dataset = replace(dataset, action_bound=family.action_bound, episodic=episodic)
    built_with = dataset.manifest.get("settings")
    if built_with != _jsonable(builder.settings()):
        raise DatasetError(
            f"{path} was built with other settings than this run asks for: "
            f"{_differences(built_with or {}, _jsonable(builder.settings()))}. Collection "
            "settings (behaviour_sac.*, the protocol's) configure a dataset only while it is "
            "built, and this one exists: drop those bindings to use it, or build another in "
            "another store or under another tag (a run: task_data.root, task_data.tag; "
            "tools/collect.py: --out or $FOCALPP_DATA, --tag), or delete it to rebuild"
        )
    return dataset


def _differences(stored: dict, requested: dict) -> str:
    keys = sorted(k for k in {**stored, **requested} if stored.get(k) != requested.get(k))
    return "; ".join(f"{k} is {stored.get(k)!r} there, {requested.get(k)!r} here" for k in keys)


@contextmanager
def build_lock(path: Path, part: str = ""):
    """An exclusive lock on `<root>/.locks/<family>-<dataset dir><part>.lock`: of several
    processes that need the same missing dataset (or shard of one), one builds it, the others
    wait and load it. The kernel drops the lock if its holder dies, so a killed build blocks
    nobody. Lock files stay (deleting one while another process waits on it would let two
    build), except that a store this build created is removed again if the build fails with
    nothing in it."""
    root = path.parent.parent
    created = not root.exists()
    locks = root / ".locks"
    try:
        locks.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DatasetError(
            f"cannot create the dataset store {root}: {e.strerror}; choose a writable --out "
            "(or $FOCALPP_DATA)"
        ) from e
    lock_path = locks / f"{path.parent.name}-{path.name}{part}.lock"
    try:
        with open(lock_path, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                out.print(f"waiting for another process to finish building {path}")
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except BaseException:
        if created and not any(p.is_file() for p in root.rglob("*") if p.parent != locks):
            shutil.rmtree(root, ignore_errors=True)
        raise


def dataset_header(family_name, family, protocol, seed, collected, tag, scale, root) -> dict:
    """The manifest entries that describe what a dataset is and how to build it again
    (`collected`: what was built, whose settings are recorded; None: the protocol's as
    bound, which a build records before it starts)."""
    train, test = family.split_indices()
    return {
        "family": family_name,
        "protocol": protocol,
        "seed": seed,
        "goal_radius": family.goal_radius,  # of the stored sparse rewards
        "obs_dim": family.obs_dim,
        "act_dim": family.act_dim,
        "horizon": family.horizon,
        "tasks": family.all_tasks(),
        "split": {"train": train, "test": test},
        "settings": _jsonable(
            collected.settings if collected is not None else get("dataset", protocol)().settings()
        ),
        "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else "(python api)",
        "tag": tag,
        "rebuild": rebuild_command(family_name, protocol, seed, root, tag, scale),
        **({"simulators": family.simulator_versions()} if family.simulator_versions() else {}),
    }


def check_manifest(dataset: Dataset, family_name: str, family: EnvFamily) -> None:
    """Refuse a dataset whose manifest disagrees with the family reading it: another family or
    shape, a horizon, a task's parameters, a task split that is not the family's (disjoint
    where the family's is: the Fwd-Back families test on their two training tasks), or sparse
    rewards of another goal radius."""
    m, where = dataset.manifest, dataset.path / "manifest.json"
    rebuild = f"delete {dataset.path} and rebuild it ({m.get('rebuild', 'tools/collect.py')})"
    expected = {
        "family": family_name,
        "obs_dim": family.obs_dim,
        "act_dim": family.act_dim,
        "horizon": family.horizon,
    }
    for key, value in expected.items():
        if m.get(key) != value:
            raise DatasetError(
                f"{where}: {key} is {m.get(key)!r} but {family_name} has {value!r}; the "
                f"manifest was edited or belongs to another dataset: {rebuild}"
            )
    tasks = family.all_tasks()
    if len(m["tasks"]) != len(tasks):
        raise DatasetError(
            f"{where}: {len(m['tasks'])} tasks, but {family_name} (seed {m.get('seed')}) has "
            f"{len(tasks)}: {rebuild}"
        )
    for i, (stored, own) in enumerate(zip(m["tasks"], tasks, strict=True)):
        if not _same(stored, _jsonable(own)):
            raise DatasetError(
                f"{where}: task {i} is {stored} but {family_name} (seed {m.get('seed')}) "
                f"draws {_jsonable(own)}: the manifest was edited; {rebuild}"
            )
    split = m["split"]
    train, test = (list(split.get(k, [])) for k in ("train", "test"))
    covered = sorted(set(train) | set(test))
    if covered != list(range(len(tasks))) or len(set(train)) < len(train) or not test:
        raise DatasetError(
            f"{where}: the task split must name each of the {len(tasks)} tasks once per split "
            f"and leave some for testing; it has train {train[:5]}... ({len(train)}) and test "
            f"{test[:5]}... ({len(test)}); {rebuild}"
        )
    own_train, own_test = family.split_indices()
    if train != list(own_train) or test != list(own_test):
        moved = sorted(set(train) ^ set(own_train))
        raise DatasetError(
            f"{where}: the task split differs from {family_name}'s (tasks {moved[:5]} moved "
            f"between train and test): a run would train on test tasks or test on training "
            f"ones; {rebuild}"
        )
    for simulator, version in family.simulator_versions().items():
        built_with = m.get("simulators", {}).get(simulator)
        if built_with != version:
            raise DatasetError(
                f"{where}: built with {simulator} {built_with}, but {simulator} {version} is "
                f"installed: its simulation and tasks may differ. Install {simulator}=="
                f"{built_with} to use this dataset, or {rebuild}"
            )
    stored = m.get("goal_radius")
    if not _same(stored, family.goal_radius):
        raise DatasetError(
            f"{where}: the stored sparse rewards use goal radius {stored}, but this run's "
            f"{family_name} scores with {family.goal_radius}; bind "
            f"{family_name}.goal_radius = {stored} (or use the env column made for this data, "
            f"e.g. sparse_point_robot_relabeled), or {rebuild}"
        )


def _same(a, b) -> bool:
    """Equal JSON values, floats within 1e-9 (a JSON round trip keeps them exact anyway)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _jsonable(value):
    """Settings as they read back from JSON (tuples become lists)."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def describe(dataset: Dataset) -> list[dict]:
    """One row per quality: counts and mean returns of its sources (for tools and reports)."""
    rows = []
    for name, entry in dataset.manifest["qualities"].items():
        counts = entry["per_task_counts"]
        row = {"quality": name, "tasks": len(counts), "transitions": int(sum(counts))}
        returns = [r for src in entry["sources"] for r in src.get("mean_sparse_return", [])]
        dense = [r for src in entry["sources"] for r in src.get("mean_return", [])]
        if returns and dataset.manifest.get("goal_radius") is not None:
            row["mean_sparse_return"] = sum(returns) / len(returns)
        if dense:
            row["mean_return"] = sum(dense) / len(dense)
        rows.append(row)
    return rows
