"""The dataset store: one directory per (family, protocol, seed), validated on every load.

Layout:
    <root>/<family>/<protocol>-s<seed>/
        manifest.json                 format, family, tasks and split, qualities, per-task
                                      counts, shapes, dtypes, checksums, the command and
                                      version that built it
        <quality>/<field>.npy         [n_tasks, N, dim] arrays (ragged tasks padded)
        <quality>/length.npy          [n_tasks] real transitions per task

A dataset is written into a hidden temporary directory next to its final place and renamed into
place only when complete, so a reader never sees half a dataset. `<root>` is $FOCALPP_DATA, or
focalpp/datasets under the user's cache directory ($XDG_CACHE_HOME, else ~/.cache).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from components.data.content import ContentError, check_files, check_quality
from components.json_text import loads
from components.transitions import FIELDS, Transitions
from registry import FocalppError, WriteError

FORMAT = "focalpp-dataset/1"
MANIFEST = "manifest.json"
# Manifest entries that say how and where a build ran, not what it holds: two builds of the
# same data by different commands, stores, versions or machines differ only in these (the
# numerics a build ran with are recorded, components/numerics.py, but the data are the arrays).
PROVENANCE = ("command", "rebuild", "focalpp_version", "numerics")


class DatasetError(FocalppError, ValueError):
    """A dataset that is missing, half-written, corrupted or asked for something it lacks."""


def cache_root() -> Path:
    """Where datasets live: $FOCALPP_DATA, else <user cache dir>/focalpp/datasets."""
    if os.environ.get("FOCALPP_DATA"):
        return Path(os.environ["FOCALPP_DATA"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "focalpp" / "datasets"


def dataset_dir(root: Path, family: str, protocol: str, seed: int, tag: str | None = None) -> Path:
    """`<root>/<family>/<protocol>-s<seed>[-<tag>]`; a tag keeps data of other collection
    settings (e.g. a scale's) beside the default ones."""
    check_tag(tag)
    suffix = f"-{tag}" if tag else ""
    return Path(root) / family / f"{protocol}-s{seed}{suffix}"


def check_tag(tag: str | None) -> None:
    """A dataset tag is part of one directory's name: a path in it (`../x`) would put the
    dataset outside the store."""
    if not tag or (re.fullmatch(r"[\w.-]+", tag) and tag.strip(".")):
        return
    raise DatasetError(
        f"dataset tag {tag!r} (--tag, or task_data.tag) must be a plain name: letters, "
        "digits, '.', '_' and '-', no path separators and not only dots"
    )


def rebuild_command(
    family: str,
    protocol: str,
    seed: int | str,
    root: Path | None = None,
    tag: str | None = None,
    scale: str | None = None,
) -> str:
    out = f" --out {root}" if root is not None else ""
    extra = (f" --scale {scale}" if scale else "") + (f" --tag {tag}" if tag else "")
    return f"python tools/collect.py --env {family} --protocol {protocol} --seed {seed}{extra}{out}"


@dataclass(frozen=True)
class QualityData:
    """One quality's arrays: transitions [n_tasks, N, ...] and real counts `length` [n_tasks]."""

    transitions: Transitions
    length: np.ndarray


@dataclass(frozen=True)
class Policies:
    """The behaviour policies a dataset came from: each task's actor at each checkpoint.

    checkpoint_steps: [C] behaviour steps of the checkpoints; hidden: the actors' widths;
    weights: the task-batched actor's state, each array [C, K, ...] (checkpoint, task), or,
    where one conditioned actor served every task, [C, 1, ...] with `task_features` [K, P],
    what it was told of each task (`TaskConditionedSAC`)."""

    checkpoint_steps: list[int]
    hidden: list[int]
    weights: dict[str, np.ndarray]
    task_features: np.ndarray | None = None


@dataclass(frozen=True)
class Dataset:
    path: Path
    manifest: dict[str, Any]
    digest: str = ""  # SHA-256 of manifest.json, which holds every array's SHA-256
    # |action| bound of the family that read it (components.data.build.cached); None: unchecked
    action_bound: float | None = None
    episodic: bool = True  # rows in episode order (not a relabeled pool): lengths checked

    @property
    def content_digest(self) -> str:
        """SHA-256 of the manifest without its provenance (PROVENANCE): equal for two builds of
        the same data on different machines or by different commands, where `digest` differs;
        it still covers every array's SHA-256, the tasks, the split and the settings."""
        content = {k: v for k, v in self.manifest.items() if k not in PROVENANCE}
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    @property
    def qualities(self) -> list[str]:
        return list(self.manifest["qualities"])

    @property
    def tasks(self) -> list[dict[str, Any]]:
        return self.manifest["tasks"]

    def split_indices(self, split: str) -> list[int]:
        if split not in self.manifest["split"]:
            raise DatasetError(
                f"{self.path}: no split {split!r}; it has {sorted(self.manifest['split'])}"
            )
        return list(self.manifest["split"][split])

    def quality(self, name: str) -> QualityData:
        """Load, check and return one quality (every file validated against the manifest)."""
        if name not in self.manifest["qualities"]:
            raise DatasetError(
                f"{self.path} has no quality {name!r}; it has {self.qualities}. Build another "
                "protocol or check the quality name"
            )
        files = self.manifest["qualities"][name].get("files", {})
        try:
            check_files(files)
            arrays = {key: _load_array(self.path, files[key]) for key in (*FIELDS, "length")}
            check_quality(arrays, self.manifest, name, self.action_bound, self.episodic)
        except ContentError as e:
            raise DatasetError(
                f"{self.path}, quality {name!r}: {e}; the dataset is not what its manifest "
                f"promises: delete it and {self.manifest.get('rebuild', 'rebuild it')}"
            ) from e
        length = arrays.pop("length")
        return QualityData(Transitions(**{f: arrays[f] for f in FIELDS}), length)

    @property
    def has_policies(self) -> bool:
        return "policies" in self.manifest

    def policies(self) -> Policies:
        """The behaviour policies, every file validated against the manifest."""
        entry = self.manifest.get("policies")
        if entry is None:
            raise DatasetError(
                f"{self.path} keeps no behaviour policies (built before datasets kept them, or "
                f"by a protocol that does not); {self.manifest.get('rebuild', 'rebuild it')} "
                "after moving it away"
            )
        weights = {k: _load_array(self.path, f) for k, f in entry["files"].items()}
        features = entry.get("task_features")
        return Policies(
            list(entry["checkpoint_steps"]),
            list(entry["hidden"]),
            weights,
            None if features is None else _load_array(self.path, features),
        )


def write_dataset(
    path: Path,
    *,
    header: dict[str, Any],
    qualities: dict[str, QualityData],
    sources: dict,
    policies: Policies | None = None,
) -> Path:
    """Write atomically; if another writer finished `path` first, keep theirs and return it.

    Args:
        path: the final dataset directory.
        header: manifest entries (family, protocol, seed, tasks, split, builder settings, ...).
        qualities: quality name -> its arrays.
        sources: quality name -> per-task provenance (checkpoint steps, mean returns).
        policies: the behaviour policies the data came from, or None.
    """
    tmp = path.parent / f".tmp-{path.name}-{uuid.uuid4().hex[:8]}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        manifest = {
            "format": FORMAT,
            **header,
            "focalpp_version": _version(),
            "qualities": {},
        }
        for name, data in qualities.items():
            (tmp / name).mkdir()
            files = {
                f: _save_array(tmp, f"{name}/{f}.npy", getattr(data.transitions, f)) for f in FIELDS
            }
            files["length"] = _save_array(tmp, f"{name}/length.npy", data.length.astype(np.int64))
            manifest["qualities"][name] = {
                "per_task_counts": data.length.tolist(),
                "files": files,
                "sources": sources.get(name, []),
            }
        if policies is not None:
            (tmp / "policies").mkdir()
            manifest["policies"] = {
                "checkpoint_steps": policies.checkpoint_steps,
                "hidden": policies.hidden,
                "files": {
                    k: _save_array(tmp, f"policies/{k}.npy", v) for k, v in policies.weights.items()
                },
            }
            if policies.task_features is not None:
                manifest["policies"]["task_features"] = _save_array(
                    tmp, "policies/task_features.npy", policies.task_features
                )
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
        try:
            tmp.rename(path)
        except OSError:
            if not (path / MANIFEST).is_file():
                raise
            shutil.rmtree(tmp)  # someone else completed the same dataset first
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):  # a full disk, a file-size limit, a folder made a file
            raise WriteError(path, e, "No part of the dataset was left behind.") from e
        raise
    return path


def load_dataset(path: Path) -> Dataset:
    """Open a dataset directory and validate its manifest (arrays are checked when loaded)."""
    path = Path(path)
    protocol, _, seed = path.name.rpartition("-s")
    seed, _, tag = seed.partition("-")
    command = rebuild_command(path.parent.name, protocol, seed, path.parent.parent, tag or None)
    if not path.is_dir():
        raise DatasetError(f"no dataset at {path}; build it with: {command}")
    rebuild = f"rebuild with: {command}"
    manifest_path = path / MANIFEST
    if not manifest_path.is_file():
        raise DatasetError(
            f"{path} is half-written (no {MANIFEST}: an interrupted build?); "
            f"delete it and {rebuild}"
        )
    raw = manifest_path.read_bytes()
    try:
        manifest = loads(raw)
    except ValueError as e:
        raise DatasetError(f"{manifest_path} is not valid JSON ({e}); {rebuild}") from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise DatasetError(
            f"{manifest_path}: unknown dataset format {found!r} "
            f"(this focalpp reads {FORMAT}); {rebuild}"
        )
    for key in ("family", "tasks", "split", "qualities"):
        if key not in manifest:
            raise DatasetError(f"{manifest_path}: missing field {key!r}; {rebuild}")
    manifest.setdefault("rebuild", rebuild)
    return Dataset(path, manifest, hashlib.sha256(raw).hexdigest())


def _save_array(root: Path, relative: str, array: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(array)
    np.save(root / relative, array, allow_pickle=False)
    return {
        "path": relative,
        "shape": list(array.shape),
        "dtype": str(array.dtype),
        "sha256": _sha256(root / relative),
    }


def _load_array(root: Path, entry: dict[str, Any]) -> np.ndarray:
    file = root / entry["path"]
    fix = f"delete {root} and rebuild it"
    if not file.is_file():
        raise DatasetError(f"{file} is missing; {fix}")
    if _sha256(file) != entry["sha256"]:
        raise DatasetError(f"{file}: checksum mismatch (changed or truncated since written); {fix}")
    try:
        array = np.load(file, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise DatasetError(f"{file} cannot be read ({e}); {fix}") from e
    if list(array.shape) != entry["shape"] or str(array.dtype) != entry["dtype"]:
        raise DatasetError(
            f"{file}: shape {list(array.shape)} dtype {array.dtype}, manifest says "
            f"{entry['shape']} {entry['dtype']}; {fix}"
        )
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        where = np.argwhere(~np.isfinite(array))[0].tolist()
        raise DatasetError(f"{file}: non-finite value (NaN or inf) at index {where}; {fix}")
    return array


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _version() -> str:
    try:
        return metadata.version("focalpp")
    except metadata.PackageNotFoundError:
        return "unknown"
