"""What a stored quality must hold, checked when it is loaded.

The store's checksums say that a file is the one the manifest names; they cannot say that the
manifest's promises hold, so a consistent hand edit (an array of another dtype, flags of 2, a
count that disagrees) would train. `check_quality` holds the arrays to the transition schema
and to the manifest: every field present, dtypes and shapes as the schema says, one row per
task, counts equal to the manifest's, padding empty, no episode longer than the horizon, and
actions within the family's bounds. Finiteness is checked as each array loads (store.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from components.transitions import FIELDS

# field -> (dtype, the manifest entry naming its last dimension; None for one value per step)
SCHEMA: dict[str, tuple[str, str | None]] = {
    "obs": ("float32", "obs_dim"),
    "action": ("float32", "act_dim"),
    "reward": ("float32", None),
    "sparse_reward": ("float32", None),
    "next_obs": ("float32", "obs_dim"),
    "terminated": ("bool", None),
    "truncated": ("bool", None),
}
assert tuple(SCHEMA) == FIELDS
FLAGS = ("terminated", "truncated")


class ContentError(ValueError):
    """One promise of the schema or the manifest that the stored arrays break."""


def check_files(files: dict[str, Any]) -> None:
    """The manifest names an array for every schema field and the counts."""
    missing = [f for f in (*FIELDS, "length") if f not in files]
    if missing:
        raise ContentError(
            f"the manifest lists no array for {', '.join(missing)}; every quality holds "
            f"{', '.join((*FIELDS, 'length'))}"
        )


def check_quality(
    arrays: dict[str, np.ndarray],
    manifest: dict[str, Any],
    quality: str,
    action_bound: float | None = None,
    episodic: bool = True,
) -> None:
    """Raise ContentError naming the field, what it holds and what is expected.

    arrays: the quality's fields and `length`, loaded; manifest: the dataset's; action_bound:
    |action| ≤ bound for the family reading it (None: not checked); episodic: the rows are
    episodes in order, so none may be longer than the horizon (a relabeled pool's are not).
    """
    entry = manifest["qualities"][quality]
    part = manifest.get("block") or manifest.get("shard") or {}  # a block holds a few tasks
    tasks = part.get("tasks", manifest["tasks"])
    length = arrays["length"]
    if length.dtype != np.int64 or length.shape != (len(tasks),):
        raise ContentError(
            f"length: {length.dtype} {list(length.shape)}, expected int64 [{len(tasks)}] "
            "(one count per task)"
        )
    counts = entry.get("per_task_counts")
    if counts != length.tolist():
        raise ContentError(
            f"length: the arrays hold {_few(length.tolist())} transitions per task, the "
            f"manifest's per_task_counts say {_few(counts)}"
        )
    n = arrays["obs"].shape[1] if arrays["obs"].ndim > 1 else 0
    for field, (dtype, dim) in SCHEMA.items():
        x = arrays[field]
        shape = [len(tasks), n] + ([manifest[dim]] if dim else [])
        if str(x.dtype) != dtype or list(x.shape) != shape:
            what = f"[tasks, N, {dim}]" if dim else "[tasks, N]"
            raise ContentError(
                f"{field}: {x.dtype} {list(x.shape)}, expected {dtype} {shape} {what}"
            )
    if length.min(initial=0) < 0 or length.max(initial=0) > n:
        raise ContentError(f"length: counts {_few(length.tolist())} outside [0, {n}]")
    real = np.arange(n)[None, :] < length[:, None]  # [K, N]
    for field in FLAGS:
        if (arrays[field] & ~real).any():
            k, i = np.argwhere(arrays[field] & ~real)[0].tolist()
            raise ContentError(
                f"{field}: set at task {k}, row {i}, after the task's {length[k]} transitions "
                "(padding rows must be empty)"
            )
    if episodic:
        ends = arrays["terminated"] | arrays["truncated"]
        _check_episodes(ends, length, manifest.get("horizon"))
    if action_bound is not None:
        outside = (np.abs(arrays["action"]) > action_bound * (1 + 1e-6)) & real[..., None]
        if outside.any():
            k, i, d = np.argwhere(outside)[0].tolist()
            raise ContentError(
                f"action: {float(arrays['action'][k, i, d]):.6g} at task {k}, row {i}, "
                f"dimension {d}; expected within [-{action_bound:g}, {action_bound:g}], the "
                "family's action bounds"
            )


def _check_episodes(ends: np.ndarray, length: np.ndarray, horizon: int | None) -> None:
    """No episode runs longer than the horizon: between two episode ends (and before the
    first) at most `horizon` transitions."""
    if not horizon or ends.shape[1] == 0:
        return
    k, n = ends.shape
    index = np.broadcast_to(np.arange(n), (k, n))
    # the index of the latest end strictly before each row (-1 where none)
    previous = np.maximum.accumulate(np.where(ends, index, -1), axis=1)
    previous = np.concatenate([np.full((k, 1), -1), previous[:, :-1]], axis=1)
    steps = index - previous  # the row's step within its episode, from 1
    too_long = (steps > horizon) & (index < length[:, None])
    if too_long.any():
        task, row = np.argwhere(too_long)[0].tolist()
        raise ContentError(
            f"terminated/truncated: task {task}'s episode that reaches row {row} is longer "
            f"than the horizon of {horizon} steps (an episode end is missing)"
        )


def _few(values: Any) -> str:
    if not isinstance(values, list):
        return repr(values)
    return str(values[:6])[:-1] + (", ...]" if len(values) > 6 else "]")
