"""Build a dataset once and reuse it: `ensure_dataset(family, protocol, seed)`.

The family and the protocol are built from the registry (so gin bindings apply). A cached dataset
is reused only if it was built with the same protocol settings; otherwise the error says so.
"""

from __future__ import annotations

import fcntl
import sys
from contextlib import contextmanager
from pathlib import Path

from components.data.behaviour import Progress
from components.data.store import (
    Dataset,
    DatasetError,
    cache_root,
    dataset_dir,
    load_dataset,
    rebuild_command,
    write_dataset,
)
from components.reporting.console import out
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
) -> Dataset:
    """Load the cached dataset, or build, store and load it.

    `tag` names a variant built with other settings (a directory of its own); `scale` is
    recorded in the rebuild command.
    """
    root = Path(root) if root is not None else cache_root()
    path = dataset_dir(root, family_name, protocol, seed, tag)
    builder = get("dataset", protocol)()
    if path.exists():  # only ever renamed into place complete: no lock needed to read it
        return cached(path, builder)
    with build_lock(path):
        if path.exists():  # another process built it while this one waited
            return cached(path, builder)
        return _build(path, family_name, protocol, seed, builder, progress, tag, scale, root)


def cached(path: Path, builder) -> Dataset:
    dataset = load_dataset(path)  # raises for half-written or unreadable datasets
    built_with = dataset.manifest.get("settings")
    if built_with != _jsonable(builder.settings()):
        raise DatasetError(
            f"{path} was built with other settings than this run asks for:\n"
            f"  stored:    {built_with}\n  requested: {_jsonable(builder.settings())}\n"
            "use another --out (or $FOCALPP_DATA) or --tag, or delete it to rebuild"
        )
    return dataset


@contextmanager
def build_lock(path: Path, part: str = ""):
    """An exclusive lock on `<root>/.locks/<family>-<dataset dir><part>.lock`: of several
    processes that need the same missing dataset (or shard of one), one builds it, the others
    wait and load it. The kernel drops the lock if its holder dies, so a killed build blocks
    nobody. Lock files stay (deleting one while another process waits on it would let two
    build)."""
    locks = path.parent.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    lock_path = locks / f"{path.parent.name}-{path.name}{part}.lock"
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


def _build(path, family_name, protocol, seed, builder, progress, tag, scale, root) -> Dataset:
    family = get("env", family_name)(seed=seed)
    collected = builder.build(family, seed=seed, progress=progress)
    header = dataset_header(
        family_name, family, protocol, seed, collected.settings, tag, scale, root
    )
    write_dataset(path, header=header, qualities=collected.qualities, sources=collected.sources)
    return load_dataset(path)


def dataset_header(family_name, family, protocol, seed, settings, tag, scale, root) -> dict:
    """The manifest entries that describe what a dataset is and how to build it again."""
    train, test = family.split_indices()
    return {
        "family": family_name,
        "protocol": protocol,
        "seed": seed,
        "goal_radius": family.goal_radius,
        "obs_dim": family.obs_dim,
        "act_dim": family.act_dim,
        "horizon": family.horizon,
        "tasks": family.all_tasks(),
        "split": {"train": train, "test": test},
        "settings": _jsonable(settings),
        "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else "(python api)",
        "tag": tag,
        "rebuild": rebuild_command(family_name, protocol, seed, root, tag, scale),
    }


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
