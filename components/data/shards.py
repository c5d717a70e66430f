"""One dataset built in shards of tasks on several workers, then merged into the usual store.

Behaviour training is independent per task, so a family's tasks can be split into K contiguous
shards, each trained (task-batched, as usual) by its own worker — a Ray cluster, or several
machines sharing the store — and concatenated afterwards. This pays where one machine is the
bottleneck (MuJoCo families at the paper scale: 200k behaviour steps per task); on a laptop one
task-batched build of all tasks is faster.

A build in K shards is another dataset than the build in one piece (shard seeds derive from
the dataset seed, the shard index and K, so its random draws differ), so it lives under a tag
of its own, `<tag>-shards<K>` (`shards<K>` without a tag; `sharded_tag`): two builds never
hide behind one path. Shard i of K lives in `<family>/.<dataset>.shards/<i>-of-<K>/` (a
complete dataset of its tasks, written atomically); merging validates every shard,
concatenates them task by task into `<family>/<dataset>/` (atomically) and removes the
shards; the manifest records `built_in_shards`. A run reads it with `task_data.shards = K`
(a study with `dataset_shards` binds it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

import components.numerics as numerics
from components.data.behaviour import Progress
from components.data.blocks import concatenate, one_numerics, partial_dir, write_collected
from components.data.build import build_lock, cached, dataset_header
from components.data.protocols import Collected
from components.data.store import (
    Dataset,
    DatasetError,
    Policies,
    cache_root,
    dataset_dir,
)
from registry import get


def shard_tasks(n_tasks: int, index: int, count: int) -> list[int]:
    """The task indices of shard `index` of `count` (contiguous, sizes differing by at most 1)."""
    return np.array_split(np.arange(n_tasks), count)[index].tolist()


def sharded_tag(tag: str | None, count: int) -> str:
    """The tag of a dataset built in `count` shards, from the tag of its settings."""
    return f"{tag}-shards{count}" if tag else f"shards{count}"


def shard_rebuild(family: str, protocol: str, seed: int, count: int, tag, scale, root) -> str:
    """How to build a sharded dataset again: each shard, then the merge."""
    flags = f"--env {family} --protocol {protocol} --seed {seed}"
    flags += (f" --scale {scale}" if scale else "") + (f" --tag {tag}" if tag else "")
    flags += f" --out {root}" if root is not None else ""
    return (
        f"python tools/collect.py {flags} --shard I/{count} (for I = 0..{count - 1}), then "
        f"python tools/collect.py {flags} --merge {count}"
    )


def shard_seed(seed: int, index: int, count: int) -> int:
    return int(np.random.SeedSequence([seed, index, count]).generate_state(1)[0])


def shard_dir(path: Path, index: int, count: int) -> Path:
    return path.parent / f".{path.name}.shards" / f"{index}-of-{count}"


def _check(index: int, count: int) -> None:
    if count < 2 or not 0 <= index < count:
        raise DatasetError(
            f"shard {index}/{count}: expected 0 ≤ index < count and count ≥ 2 "
            "(a build in one piece needs no shards)"
        )


def _place(index, count, family_name, protocol, seed, root, tag) -> tuple[Path, Path]:
    """The store root and the merged dataset's directory of a build in `count` shards (the
    shard `index` checked)."""
    _check(index, count)
    root = Path(root) if root is not None else cache_root()
    return root, dataset_dir(root, family_name, protocol, seed, sharded_tag(tag, count))


def build_shard(
    family_name: str,
    protocol: str,
    seed: int,
    index: int,
    count: int,
    *,
    root: Path | None = None,
    tag: str | None = None,
    scale: str | None = None,
    progress: Progress | None = None,
    mode: str | None = None,
) -> Path:
    """Build shard `index` of `count` unless it (or the merged dataset) exists; its path. The
    shard trains in this process, which must have numerics `mode` in force (by default portable
    where they can hold: `numerics.build_default`; checked, and what they do recorded in its
    manifest, before the first kernel)."""
    root, path = _place(index, count, family_name, protocol, seed, root, tag)
    target = shard_dir(path, index, count)
    builder = get("dataset", protocol)()
    if getattr(getattr(builder, "behaviour", None), "learner", "independent") != "independent":
        raise DatasetError(
            "behaviour_sac.learner = 'conditioned' trains one network on every task together: "
            "build the dataset in one piece, not in shards"
        )
    if path.exists():
        return path
    with build_lock(path, f".shard{index}-of-{count}"):
        if target.exists() or path.exists():
            return target if target.exists() else path
        # in force before the first kernel, as a block's are
        state = numerics.require(mode or numerics.build_default())
        family = get("env", family_name)(seed=seed)
        tasks = shard_tasks(len(family.all_tasks()), index, count)
        if not tasks:
            raise DatasetError(
                f"shard {index}/{count} of {family_name} has no tasks: the family has "
                f"{len(family.all_tasks())}; use fewer shards"
            )
        collected = builder.build(
            family,
            seed=shard_seed(seed, index, count),
            progress=progress,
            tasks=tasks,
            resume=partial_dir(target),
        )
        header = dataset_header(
            family_name, family, protocol, seed, collected, sharded_tag(tag, count), scale, root
        )
        header["rebuild"] = shard_rebuild(family_name, protocol, seed, count, tag, scale, root)
        header["shard"] = {"index": index, "count": count, "tasks": tasks}
        header["numerics"] = state
        write_collected(target, header, collected)
        shutil.rmtree(partial_dir(target), ignore_errors=True)
    return target


def merge_shards(
    family_name: str,
    protocol: str,
    seed: int,
    count: int,
    *,
    root: Path | None = None,
    tag: str | None = None,
    scale: str | None = None,
) -> Dataset:
    """Concatenate the `count` shards into the dataset (validated first), then remove them."""
    root, path = _place(0, count, family_name, protocol, seed, root, tag)
    builder = get("dataset", protocol)()
    family = get("env", family_name)(seed=seed)
    if path.exists():
        return cached(path, builder, family_name, family)
    with build_lock(path):
        if path.exists():
            return cached(path, builder, family_name, family)
        parts = [shard_dir(path, i, count) for i in range(count)]
        missing = [i for i, part in enumerate(parts) if not part.is_dir()]
        if missing:
            raise DatasetError(
                f"shard(s) {missing} of {count} of {path} are not built; build each with: "
                f"{shard_rebuild(family_name, protocol, seed, count, tag, scale, root)}"
            )
        # validates settings and manifests
        shards = [cached(part, builder, family_name, family) for part in parts]
        covered = [t for s in shards for t in s.manifest["shard"]["tasks"]]
        if covered != list(range(len(shards[0].tasks))):
            raise DatasetError(f"the shards under {parts[0].parent} do not cover every task once")
        if not one_numerics(shards):
            raise DatasetError(
                f"the shards under {parts[0].parent} were built with different numerics or "
                "library versions (their manifests' `numerics`): build every shard with the "
                "same settings, e.g. all with --numerics portable, then merge"
            )
        qualities, sources = {}, {}
        for name in shards[0].qualities:
            qualities[name] = concatenate([s.quality(name) for s in shards])
            sources[name] = [
                src for s in shards for src in s.manifest["qualities"][name]["sources"]
            ]
        policies = None
        if all(s.has_policies for s in shards):  # each shard's tasks side by side
            kept = [s.policies() for s in shards]
            weights = {k: np.concatenate([p.weights[k] for p in kept], 1) for k in kept[0].weights}
            policies = Policies(kept[0].checkpoint_steps, kept[0].hidden, weights)
        merged = Collected(qualities, sources, shards[0].manifest["settings"], policies)
        header = dataset_header(
            family_name, family, protocol, seed, merged, sharded_tag(tag, count), scale, root
        )
        header["rebuild"] = shard_rebuild(family_name, protocol, seed, count, tag, scale, root)
        header["built_in_shards"] = count
        header["numerics"] = shards[0].manifest.get("numerics")
        write_collected(path, header, merged)
        shutil.rmtree(parts[0].parent)
    return cached(path, builder, family_name, family)


def load_merged(
    family_name: str,
    protocol: str,
    seed: int,
    count: int,
    *,
    root: Path | None = None,
    tag: str | None = None,
    scale: str | None = None,
    family=None,
) -> Dataset:
    """The dataset built in `count` shards, checked like any cached one; never built here (a
    build in one piece would not be it): a missing one says how to build it."""
    root, path = _place(0, count, family_name, protocol, seed, root, tag)
    if not path.exists():
        how = shard_rebuild(family_name, protocol, seed, count, tag, scale, root)
        raise DatasetError(
            f"{path} does not exist: a dataset built in {count} shards is built shard by "
            f"shard, then merged: {how}"
        )
    family = family if family is not None else get("env", family_name)(seed=seed)
    return cached(path, get("dataset", protocol)(), family_name, family)
